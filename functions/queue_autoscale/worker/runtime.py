"""The worker loop: receive, run, heartbeat, delete or back off, drain on SIGTERM.

Threads: a receiver long-polls SQS while there is room (concurrency + prefetch messages held);
the main loop protects the task, starts jobs (one daemon thread each, so a hung job cannot block
the exit), extends the visibility of every held message every `heartbeat_seconds` and enforces
the hard job limit; each job thread records its events and deletes its message on success or
sets a back-off visibility on failure. `request_stop` (the SIGTERM/SIGINT handler) starts the
drain: no more receives, prefetched messages returned at once, jobs in flight finished within
`drain_seconds`, the rest released, events flushed, protection dropped.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from queue_autoscale.adapters.errors import NotFound, translate
from queue_autoscale.client import EventRecorder
from queue_autoscale.worker.protection import TaskProtection
from queue_autoscale.worker.settings import WorkerSettings

LOG = logging.getLogger("queue_autoscale.worker")
LOOP_SECONDS = 0.1
"""The main loop's longest sleep: how soon a stop request or a free slot is acted on."""
EXIT_OK = 0
EXIT_HUNG = 2
"""A job passed the hard limit: its message was released; the process asks to be replaced."""
EXIT_NO_QUEUE = 3
"""SQS answered that the queue does not exist: no poll can succeed, so the worker stops (ECS
shows the task exiting, not running idle) instead of retrying every second forever."""


@dataclass(frozen=True)
class Job:
    """One message as the job function sees it."""

    body: str
    message_id: str
    attempt: int
    """ApproximateReceiveCount: 1 on the first delivery."""
    attributes: Mapping[str, str]
    message_attributes: Mapping[str, Any]

    @classmethod
    def from_message(cls, message: Mapping[str, Any]) -> Job:
        """A ReceiveMessage message (AttributeNames=["All"]) as a Job."""
        attributes = message.get("Attributes") or {}
        return cls(
            body=str(message.get("Body", "")),
            message_id=str(message.get("MessageId", "")),
            attempt=receive_count(message),
            attributes=attributes,
            message_attributes=message.get("MessageAttributes") or {},
        )


JobFunction = Callable[[Job], object]
"""The user's job: returns normally on success, raises on failure."""


def receive_count(message: Mapping[str, Any]) -> int:
    """ApproximateReceiveCount (1 when absent or unreadable)."""
    try:
        return max(1, int((message.get("Attributes") or {}).get("ApproximateReceiveCount", 1)))
    except (TypeError, ValueError):
        return 1


@dataclass
class WorkerStats:
    """Counts of what the worker did (messages unless named otherwise)."""

    received: int = 0
    started: int = 0
    completed: int = 0
    """Jobs that succeeded and whose message was deleted."""
    failed: int = 0
    """Jobs that raised; their message got a back-off visibility for a retry (or the DLQ)."""
    returned_on_drain: int = 0
    """Received but not started when the drain began: made visible again at once."""
    released_at_deadline: int = 0
    """Jobs still running at the drain deadline: released for another worker."""
    hung: int = 0
    """Jobs past the hard limit: released (with the failure back-off)."""
    delete_failures: int = 0
    heartbeat_failures: int = 0
    drain_seconds: float | None = None
    """How long the drain took, seconds (None until a drain)."""

    @property
    def interrupted(self) -> int:
        """Jobs that did not finish on this worker although they started here."""
        return self.released_at_deadline + self.hung

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe, with `interrupted`."""
        return {**asdict(self), "interrupted": self.interrupted}


@dataclass(eq=False)
class Held:
    """A received message this worker holds (prefetched or running)."""

    message: Mapping[str, Any]
    received_at: float
    started_at: float | None = None
    finished: bool = False
    """The job returned; its delete or back-off is under way (no more heartbeats)."""
    abandoned: bool = False
    """Released by the worker (deadline or hard limit); the job thread must not touch it."""

    @property
    def receipt(self) -> str:
        """The receipt handle."""
        return str(self.message["ReceiptHandle"])

    @property
    def job_id(self) -> str:
        """The SQS MessageId (the events' job_id)."""
        return str(self.message.get("MessageId", ""))


@dataclass
class _Shared:
    """State shared between the threads, guarded by `cond`."""

    cond: threading.Condition = field(default_factory=threading.Condition)
    prefetched: deque[Held] = field(default_factory=deque)
    running: dict[str, Held] = field(default_factory=dict)


class Worker:
    """Runs `job` on messages from `settings.queue_url` until stopped; `run()` returns the exit
    code (0 after a clean drain, 2 after a hung job, 3 when the queue does not exist)."""

    def __init__(
        self,
        settings: WorkerSettings,
        job: JobFunction,
        sqs: Any,
        *,
        recorder: EventRecorder | None = None,
        protection: TaskProtection | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self.job = job
        self.sqs = sqs
        self.recorder = recorder
        self.protection = protection or TaskProtection(
            settings.ecs_agent_uri, settings.protection_minutes
        )
        self._clock = clock
        self._pid = os.getpid()
        self._shared = _Shared()
        self._stop = threading.Event()
        self._hung = False
        self._no_queue = False
        self.stats = WorkerStats()

    # -- control -----------------------------------------------------------------------------

    def request_stop(self, *_: object) -> None:
        """Begin the drain (safe to call from a signal handler: it only sets an event)."""
        self._stop.set()

    @property
    def stopping(self) -> bool:
        """True once a stop was requested."""
        return self._stop.is_set()

    def run(self) -> int:
        """Work until a stop request (or a hung job), drain, and return the exit code."""
        s = self.settings
        LOG.info(
            "worker on %s: concurrency %d, prefetch %d, visibility %d s, drain %g s",
            s.queue,
            s.concurrency,
            s.prefetch,
            s.visibility_timeout_seconds,
            s.drain_seconds,
        )
        receiver = threading.Thread(target=self._receive_loop, name="receiver", daemon=True)
        receiver.start()
        next_beat = self._clock() + s.heartbeat_seconds
        shared = self._shared
        while not self._stop.is_set():
            with shared.cond:
                shared.cond.wait(LOOP_SECONDS)
                holding = bool(shared.prefetched or shared.running)
            self.protection.set_busy(holding)
            self._dispatch()
            if self._clock() >= next_beat:
                self._heartbeat()
                next_beat = self._clock() + s.heartbeat_seconds
            if self._enforce_job_limit():
                LOG.error("a job passed the hard limit of %g s: draining", s.job_timeout_seconds)
                break
        return self._drain(receiver)

    # -- receiving and running ---------------------------------------------------------------

    def _room(self) -> int:
        shared = self._shared
        held = len(shared.prefetched) + len(shared.running)
        return self.settings.concurrency + self.settings.prefetch - held

    def _receive_loop(self) -> None:
        s = self.settings
        shared = self._shared
        while not self._stop.is_set():
            with shared.cond:
                room = self._room()
                if room <= 0:
                    shared.cond.wait(LOOP_SECONDS)
                    continue
            try:
                answer = self.sqs.receive_message(
                    QueueUrl=s.queue_url,
                    MaxNumberOfMessages=min(10, room),
                    WaitTimeSeconds=s.wait_seconds,
                    VisibilityTimeout=s.visibility_timeout_seconds,
                    AttributeNames=["All"],
                    MessageAttributeNames=["All"],
                )
            except Exception as error:  # throttling, a network blip: retry after a pause
                if isinstance(translate(error, "ReceiveMessage", s.queue_url), NotFound):
                    LOG.error("the queue %s does not exist: stopping (%s)", s.queue_url, error)
                    self._no_queue = True
                    self._stop.set()
                    return
                LOG.warning("receive failed: %s", error)
                self._stop.wait(1.0)
                continue
            messages = answer.get("Messages", [])
            if not messages:
                continue
            now = self._clock()
            with shared.cond:
                self.stats.received += len(messages)
                late = self._stop.is_set()
                if not late:
                    shared.prefetched.extend(Held(m, now) for m in messages)
                    shared.cond.notify_all()
            if late:  # the drain began during this poll: hand them straight back
                self.stats.returned_on_drain += self._set_visibility(messages, 0)

    def _dispatch(self) -> None:
        shared = self._shared
        with shared.cond:
            while (
                shared.prefetched
                and len(shared.running) < self.settings.concurrency
                and not self._stop.is_set()
            ):
                held = shared.prefetched.popleft()
                held.started_at = self._clock()
                shared.running[held.receipt] = held
                self.stats.started += 1
                threading.Thread(
                    target=self._run_job, args=(held,), name=f"job-{held.job_id}", daemon=True
                ).start()

    def _events(self, held: Held) -> contextlib.AbstractContextManager[Any]:
        if self.recorder is None:
            return contextlib.nullcontext()
        return self.recorder.job(held.message, queue=self.settings.queue)

    def _call(self, held: Held) -> None:
        """Run the job; a process the job forked and that returns here ends at once (os._exit)
        instead of running the worker's code, whose locks other threads held at the fork."""
        try:
            self.job(Job.from_message(held.message))
        except BaseException:
            if os.getpid() != self._pid:
                os._exit(1)
            raise
        if os.getpid() != self._pid:
            os._exit(0)

    def _run_job(self, held: Held) -> None:
        ok = True
        try:
            with self._events(held):
                self._call(held)
                # the delete holds the slot too: inside the recorded run, the completed event's
                # duration is the slot's time per job, the capacity the controller sizes on
                if not self._finish(held, succeeded=True):
                    return
        # the job's failure is this message's failure only, whatever it raised: SystemExit or
        # KeyboardInterrupt from a job thread would otherwise end the thread with its slot held
        except BaseException as error:
            ok = False
            LOG.warning("job %s failed: %s: %s", held.job_id, type(error).__name__, error)
        shared = self._shared
        if not ok:
            if not self._finish(held):
                return
            backoff = self.settings.retry_backoff_seconds(receive_count(held.message))
            self._set_visibility([held.message], backoff)
        with shared.cond:
            if ok:
                self.stats.completed += 1
            else:
                self.stats.failed += 1
            shared.running.pop(held.receipt, None)
            shared.cond.notify_all()

    def _finish(self, held: Held, *, succeeded: bool = False) -> bool:
        """Mark the job returned (no more heartbeats); False when the worker released it
        meanwhile. A job that succeeded has its message deleted here."""
        with self._shared.cond:
            if held.abandoned:
                return False
            held.finished = True
        if succeeded:
            self._delete(held)
        return True

    def _delete(self, held: Held) -> None:
        try:
            self.sqs.delete_message(QueueUrl=self.settings.queue_url, ReceiptHandle=held.receipt)
        except Exception as error:  # the message comes back after its visibility timeout
            self.stats.delete_failures += 1
            LOG.error("delete of %s failed (it will be redelivered): %s", held.job_id, error)

    # -- visibility --------------------------------------------------------------------------

    def _set_visibility(self, messages: Sequence[Mapping[str, Any]], seconds: int) -> int:
        """ChangeMessageVisibilityBatch in tens; returns how many the queue accepted."""
        accepted = 0
        for start in range(0, len(messages), 10):
            chunk = messages[start : start + 10]
            entries = [
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"], "VisibilityTimeout": seconds}
                for i, m in enumerate(chunk)
            ]
            try:
                answer = self.sqs.change_message_visibility_batch(
                    QueueUrl=self.settings.queue_url, Entries=entries
                )
            except Exception as error:
                self.stats.heartbeat_failures += len(chunk)
                LOG.warning("visibility change of %d messages failed: %s", len(chunk), error)
                continue
            failed = answer.get("Failed", [])
            for failure in failed:
                LOG.warning("visibility change refused: %s", failure)
            self.stats.heartbeat_failures += len(failed)
            accepted += len(chunk) - len(failed)
        return accepted

    def _heartbeat(self) -> None:
        """Keep every held message invisible for another visibility timeout."""
        shared = self._shared
        with shared.cond:
            held = list(shared.prefetched) + [
                h for h in shared.running.values() if not (h.finished or h.abandoned)
            ]
        if held:
            seconds = self.settings.visibility_timeout_seconds
            self._set_visibility([h.message for h in held], seconds)

    def _abandon(self, held: Held, visibility: int) -> bool:
        """Release a running job's message (`visibility` s from now) and record it failed."""
        shared = self._shared
        with shared.cond:
            if held.finished or held.abandoned:
                return False
            held.abandoned = True
            shared.running.pop(held.receipt, None)
            shared.cond.notify_all()
        self._set_visibility([held.message], visibility)
        if self.recorder is not None and held.started_at is not None:
            elapsed_ms = int((self._clock() - held.started_at) * 1000)
            self.recorder.failed(
                self.settings.queue,
                held.job_id,
                elapsed_ms,
                attempt=receive_count(held.message),
            )
        return True

    def _enforce_job_limit(self) -> bool:
        now = self._clock()
        limit = self.settings.job_timeout_seconds
        with self._shared.cond:
            over = [
                h
                for h in self._shared.running.values()
                if h.started_at is not None and now - h.started_at > limit
            ]
        for held in over:
            backoff = self.settings.retry_backoff_seconds(receive_count(held.message))
            if self._abandon(held, backoff):
                self.stats.hung += 1
                self._hung = True
                LOG.error("job %s hung past %g s: released", held.job_id, limit)
        return self._hung

    # -- drain -------------------------------------------------------------------------------

    def _drain(self, receiver: threading.Thread) -> int:
        s = self.settings
        began = self._clock()
        deadline = began + s.drain_seconds
        self._stop.set()
        shared = self._shared
        with shared.cond:
            waiting = list(shared.prefetched)
            shared.prefetched.clear()
            shared.cond.notify_all()
        if waiting:
            self.stats.returned_on_drain += self._set_visibility([h.message for h in waiting], 0)
        LOG.info(
            "draining: %d prefetched returned, %d jobs in flight, deadline %g s",
            len(waiting),
            len(shared.running),
            s.drain_seconds,
        )
        next_beat = self._clock() + s.heartbeat_seconds
        for running in self._until(deadline):
            self.protection.set_busy(bool(running))
            if self._clock() >= next_beat:
                self._heartbeat()
                next_beat = self._clock() + s.heartbeat_seconds
        with shared.cond:
            left = list(shared.running.values())
        for held in left:
            if self._abandon(held, 0):
                self.stats.released_at_deadline += 1
                LOG.warning("job %s did not finish by the drain deadline: released", held.job_id)
        # A poll that began before the stop may still bring messages; the receiver returns them.
        receiver.join(timeout=max(0.5, deadline - self._clock()))
        self.protection.set_busy(False)
        if self.recorder is not None:
            self.recorder.close()
        self.stats.drain_seconds = round(self._clock() - began, 3)
        LOG.info("drained in %.2f s: %s", self.stats.drain_seconds, self.stats.to_dict())
        if self._no_queue:
            return EXIT_NO_QUEUE
        return EXIT_HUNG if self._hung else EXIT_OK

    def _until(self, deadline: float) -> Iterator[int]:
        """Yield the running count every loop pass until none runs or the deadline passes."""
        shared = self._shared
        while True:
            with shared.cond:
                running = len(shared.running)
                remaining = deadline - self._clock()
                if running == 0 or remaining <= 0:
                    return
                shared.cond.wait(min(LOOP_SECONDS, remaining))
            yield running
