"""What producers and workers import to emit job events (DESIGN section 3).

Producer::

    recorder = EventRecorder(events_queue_url=EVENTS_URL)
    send_job(sqs, WORK_URL, body, recorder, queue="orders")   # sends the job, records `queued`

Worker (a message from ReceiveMessage with AttributeNames=["All"], or a Lambda SQS record)::

    with recorder.job(message, queue="orders"):   # records `started` with the pickup time
        handle(message)                            # then `completed`, or `failed` if it raises

Events are buffered and sent as JSON arrays of up to 100 events per message, up to 10
messages per SendMessageBatch, by a background thread every PRODUCER_FLUSH_SECONDS (1 s): an
event leaves the process at most that long after it was recorded, part of the bound on how late
the controller's counters may be (`ingest.lateness`). Nothing here raises into the caller's
job: a failed send is logged, counted in `stats`, and retried with the next flush while the
buffer has room. A process that ends (a Lambda invocation, a script) calls flush() or close().
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from queue_autoscale.adapters.aws import PRODUCER_CONFIG, make_client
from queue_autoscale.adapters.errors import AdapterError
from queue_autoscale.adapters.sqs import MAX_BATCH_ENTRIES, SqsQueues
from queue_autoscale.events import Event
from queue_autoscale.ingest.lateness import PRODUCER_FLUSH_SECONDS

LOG = logging.getLogger("queue_autoscale.client")
MAX_EVENTS_PER_MESSAGE = 100
MAX_MESSAGE_CHARS = 64 * 1024
"""A message body is closed at this size so 10 of them fit one SendMessageBatch."""


@dataclass
class RecorderStats:
    """Counters of what the recorder did (events unless named otherwise)."""

    recorded: int = 0
    sent: int = 0
    send_failures: int = 0
    """Failed SendMessageBatch calls or refused entries."""
    dropped: int = 0
    """Events given up on (buffer full, or refused as the sender's fault)."""
    errors: int = 0
    """Unexpected errors swallowed to protect the caller."""


@dataclass
class JobRun:
    """What the worker helper measured about one job."""

    job_id: str
    queue: str
    attempt: int
    pickup_ms: int | None
    """Started-at minus SentTimestamp, ms (None when the message had no SentTimestamp)."""
    started_at_ms: int


def _now_ms(clock: Callable[[], float]) -> int:
    return int(clock() * 1000)


def elapsed_ms(began: float, ended: float) -> int:
    """A job's duration in whole ms from two perf_counter readings (seconds), rounded up and at
    least 1: a job shorter than a millisecond is still a completion with a duration, never 0."""
    return max(1, math.ceil((ended - began) * 1000 - 1e-6))  # 1e-6 ms: float noise


def pack_messages(
    events: list[dict[str, Any]],
    max_events: int = MAX_EVENTS_PER_MESSAGE,
    max_chars: int = MAX_MESSAGE_CHARS,
) -> list[tuple[str, int]]:
    """Events -> (JSON array body, event count) messages within both limits, in order."""
    messages: list[tuple[str, int]] = []
    current: list[str] = []
    size = 2
    for event in events:
        text = json.dumps(event, separators=(",", ":"))
        if current and (len(current) >= max_events or size + len(text) + 1 > max_chars):
            messages.append(("[" + ",".join(current) + "]", len(current)))
            current, size = [], 2
        current.append(text)
        size += len(text) + 1
    if current:
        messages.append(("[" + ",".join(current) + "]", len(current)))
    return messages


class EventRecorder:
    """Buffers job events and sends them to the events queue in batches.

    `background=True` (the default): a daemon thread flushes every `flush_interval_seconds`,
    and at once when 1000 events (10 full messages) are buffered, so record() never makes a
    network call on the caller's thread and no event waits longer than that.
    `background=False`: a record() call flushes when the oldest buffered event is older than
    `flush_interval_seconds`, and whenever 1000 events are buffered; an event recorded last
    waits for the next record() or flush(). close() (or
    leaving a `with` block) flushes what is left.
    """

    def __init__(
        self,
        sqs_client: Any | None = None,
        events_queue_url: str = "",
        *,
        flush_interval_seconds: float = PRODUCER_FLUSH_SECONDS,
        max_buffered_events: int = 10_000,
        background: bool = True,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not events_queue_url:
            raise ValueError("events_queue_url is empty: pass the events queue URL")
        self._queues = SqsQueues(sqs_client or make_client("sqs", config=PRODUCER_CONFIG))
        self.events_queue_url = events_queue_url
        self.flush_interval_seconds = flush_interval_seconds
        self.max_buffered_events = max_buffered_events
        self._clock = clock
        self._buffer: deque[dict[str, Any]] = deque()
        self._oldest_at: float | None = None
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()
        self.stats = RecorderStats()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        if background:
            self._thread = threading.Thread(target=self._run, name="event-recorder", daemon=True)
            self._thread.start()

    # -- recording -------------------------------------------------------------------------

    def record(
        self,
        event_type: str,
        queue: str,
        job_id: str,
        *,
        at_ms: int | None = None,
        duration_ms: int | None = None,
        pickup_ms: int | None = None,
        attempt: int = 1,
    ) -> None:
        """Buffer one event (never raises); `at_ms` defaults to now, epoch ms."""
        try:
            # the wire form of the one Event model; validated by record_events, not here, so a
            # producer's bad event reaches the events DLQ with its reason instead of vanishing
            event = Event.model_construct(
                type=event_type,
                queue=queue,
                job_id=str(job_id),
                at=at_ms if at_ms is not None else _now_ms(self._clock),
                duration_ms=None if duration_ms is None else max(0, int(duration_ms)),
                pickup_ms=None if pickup_ms is None else max(0, int(pickup_ms)),
                attempt=int(attempt),
            ).model_dump(exclude_defaults=True)
            with self._lock:
                if len(self._buffer) >= self.max_buffered_events:
                    self._buffer.popleft()
                    self.stats.dropped += 1
                self._buffer.append(event)
                self.stats.recorded += 1
                if self._oldest_at is None:
                    self._oldest_at = self._clock()
                due = len(self._buffer) >= MAX_EVENTS_PER_MESSAGE * MAX_BATCH_ENTRIES or (
                    self._clock() - self._oldest_at >= self.flush_interval_seconds
                )
            if due and self._thread is None:
                self.flush()
            elif due:  # a full batch waits for no interval: the thread sends it now
                self._wake.set()
        except Exception:  # the caller's job must never break on telemetry
            self.stats.errors += 1
            LOG.exception("event not recorded (queue=%s job_id=%s)", queue, job_id)

    def queued(self, queue: str, job_id: str, *, at_ms: int | None = None) -> None:
        """A job was put on `queue`."""
        self.record("queued", queue, job_id, at_ms=at_ms)

    def started(
        self,
        queue: str,
        job_id: str,
        *,
        pickup_ms: int | None = None,
        attempt: int = 1,
        at_ms: int | None = None,
    ) -> None:
        """A worker started the job; `pickup_ms` = started-at minus enqueued-at."""
        self.record("started", queue, job_id, pickup_ms=pickup_ms, attempt=attempt, at_ms=at_ms)

    def completed(
        self,
        queue: str,
        job_id: str,
        duration_ms: int,
        *,
        attempt: int = 1,
        at_ms: int | None = None,
    ) -> None:
        """The job finished after `duration_ms`."""
        self.record(
            "completed", queue, job_id, duration_ms=duration_ms, attempt=attempt, at_ms=at_ms
        )

    def failed(
        self,
        queue: str,
        job_id: str,
        duration_ms: int,
        *,
        attempt: int = 1,
        at_ms: int | None = None,
    ) -> None:
        """The job raised after `duration_ms`."""
        self.record("failed", queue, job_id, duration_ms=duration_ms, attempt=attempt, at_ms=at_ms)

    @contextmanager
    def job(
        self, message: Mapping[str, Any], queue: str, *, job_id: str | None = None
    ) -> Iterator[JobRun]:
        """Record started on entry, completed on a normal exit, failed if the body raises.

        Durations are whole milliseconds rounded up (see `elapsed_ms`): a sub-millisecond job
        reports 1 ms, so it always counts as completed work.

        `message` is a ReceiveMessage message (MessageId, Attributes) or a Lambda SQS
        record (messageId, attributes); SentTimestamp gives the pickup time and
        ApproximateReceiveCount the attempt. The job's own exception propagates.
        """
        run = self._begin(message, queue, job_id)
        began = time.perf_counter()
        try:
            yield run
        except BaseException:
            elapsed = elapsed_ms(began, time.perf_counter())
            self.failed(queue, run.job_id, elapsed, attempt=run.attempt)
            raise
        elapsed = elapsed_ms(began, time.perf_counter())
        self.completed(queue, run.job_id, elapsed, attempt=run.attempt)

    def _begin(self, message: Mapping[str, Any], queue: str, job_id: str | None) -> JobRun:
        attributes = message.get("Attributes") or message.get("attributes") or {}
        chosen = job_id or str(message.get("MessageId") or message.get("messageId") or "")
        now_ms = _now_ms(self._clock)
        pickup: int | None = None
        attempt = 1
        try:
            sent = attributes.get("SentTimestamp")
            if sent is not None:
                pickup = max(0, now_ms - int(sent))
            attempt = max(1, int(attributes.get("ApproximateReceiveCount", 1)))
        except (TypeError, ValueError):
            self.stats.errors += 1
            LOG.warning("message attributes unreadable: %r", attributes)
        run = JobRun(chosen, queue, attempt, pickup, now_ms)
        self.started(queue, chosen, pickup_ms=pickup, attempt=attempt, at_ms=now_ms)
        return run

    # -- sending ---------------------------------------------------------------------------

    def flush(self) -> int:
        """Send everything buffered; return how many events were sent (never raises)."""
        with self._send_lock:
            with self._lock:
                events = list(self._buffer)
                self._buffer.clear()
                self._oldest_at = None
            if not events:
                return 0
            try:
                return self._send(events)
            except Exception:
                self.stats.errors += 1
                LOG.exception("event flush failed; %d events re-buffered", len(events))
                self._requeue(events)
                return 0

    def _send(self, events: list[dict[str, Any]]) -> int:
        messages = pack_messages(events)
        bodies = [body for body, _ in messages]
        starts = []
        position = 0
        for _, count in messages:
            starts.append(position)
            position += count
        try:
            refused = self._queues.send_batch(self.events_queue_url, bodies)
        except AdapterError as error:
            self.stats.send_failures += 1
            LOG.warning(
                "events not sent (%s); %d events kept for the next flush", error, len(events)
            )
            self._requeue(events)
            return 0
        retry: list[dict[str, Any]] = []
        lost = 0
        for failure in refused:
            self.stats.send_failures += 1
            start = starts[failure.index]
            chunk = events[start : start + messages[failure.index][1]]
            if failure.sender_fault:
                lost += len(chunk)
                LOG.error("events refused by SQS (%s %s): dropped", failure.code, failure.message)
            else:
                retry.extend(chunk)
        self.stats.dropped += lost
        if retry:
            self._requeue(retry)
        sent = len(events) - lost - len(retry)
        self.stats.sent += sent
        return sent

    def _requeue(self, events: list[dict[str, Any]]) -> None:
        with self._lock:
            room = self.max_buffered_events - len(self._buffer)
            keep = events[-room:] if room > 0 else []
            self.stats.dropped += len(events) - len(keep)
            self._buffer.extendleft(reversed(keep))
            if keep and self._oldest_at is None:
                self._oldest_at = self._clock()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.flush_interval_seconds)
            self._wake.clear()
            if not self._stop.is_set():
                self.flush()

    def close(self) -> None:
        """Stop the background thread (if any) and flush what is left."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.flush()

    @property
    def buffered(self) -> int:
        """Events waiting to be sent."""
        return len(self._buffer)

    def __enter__(self) -> EventRecorder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def send_job(
    sqs_client: Any,
    queue_url: str,
    body: str,
    recorder: EventRecorder,
    queue: str,
    **send_kwargs: Any,
) -> str:
    """Send one job to the work queue and record `queued` (job_id = the SQS MessageId).

    The job send itself raises as boto3 does (the producer must know its job was not
    enqueued); only the event recording is best-effort.
    """
    response = sqs_client.send_message(QueueUrl=queue_url, MessageBody=body, **send_kwargs)
    message_id = str(response["MessageId"])
    recorder.queued(queue, message_id)
    return message_id
