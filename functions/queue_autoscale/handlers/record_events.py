"""record_events: the events-queue consumer (SQS trigger, ReportBatchItemFailures).

One pass per batch: validate every event (any failure to read or validate a body or an
event is that body's or event's rejection); send rejections to the events DLQ with their
reason; archive the accepted events as one gzipped JSON-lines object; ADD them to the load
table, one UpdateItem per distinct (queue, second). Only the records an AWS failure touched
are reported as failed, so SQS redelivers exactly those (a rejection is final and never
retried). Counters are at-least-once: a redelivered record can count twice; the archive is
exact after de-duplication by event_id.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.parser import parse
from aws_lambda_powertools.utilities.parser.models import SqsModel
from aws_lambda_powertools.utilities.typing import LambdaContext

from queue_autoscale.adapters.aws import AwsClients, make_clients
from queue_autoscale.adapters.dynamodb import LoadTable
from queue_autoscale.adapters.errors import AdapterError
from queue_autoscale.adapters.s3 import Archive
from queue_autoscale.adapters.sqs import MAX_MESSAGE_BYTES, DeadLetters, SqsQueues, dead_letter_body
from queue_autoscale.config import QueueConfig
from queue_autoscale.controller.config_loader import QueueConfigLoader, build_loader
from queue_autoscale.controller.ports import CounterTable, DeadLetterQueue, EventArchive
from queue_autoscale.events import Event, ParsedBody, Rejection, ValidationContext, parse_body
from queue_autoscale.handlers._common import Clock, MetricsSink, emf_metrics
from queue_autoscale.settings import RecordSettings

logger = Logger(service=os.environ.get("POWERTOOLS_SERVICE_NAME") or "queue-autoscale")

DLQ_INLINE_LIMIT = 200 * 1024
"""A DLQ wrapper larger than this keeps the original body in the archive instead."""


@dataclass
class RecordRuntime:
    """What the handler uses, built once per cold start (tests and the demo build their own)."""

    settings: RecordSettings
    table: CounterTable
    archive: EventArchive
    dead_letters: DeadLetterQueue
    clock: Clock = time.time
    publish_metrics: MetricsSink = emf_metrics
    config: QueueConfigLoader | None = None
    """Where the queue list (the events allowlist) comes from (None: the settings' fixed
    $QUEUES_CONFIG)."""

    def __post_init__(self) -> None:
        if self.config is None:
            self.config = build_loader(self.settings)

    def queues(self, now: float) -> tuple[QueueConfig, ...]:
        """The configured queues at `now` (epoch s), the config store's last good document."""
        assert self.config is not None  # set by __post_init__
        return self.config.load(now)


def build_runtime(
    settings: RecordSettings, clients: AwsClients, clock: Clock = time.time
) -> RecordRuntime:
    """Wire adapters from clients and settings."""
    return RecordRuntime(
        settings=settings,
        table=LoadTable(clients.dynamodb, settings.load_table),
        archive=Archive(clients.s3, settings.archive_bucket),
        dead_letters=DeadLetters(SqsQueues(clients.sqs), settings.events_dlq_url),
        clock=clock,
        config=build_loader(settings, clients),
    )


_runtime: RecordRuntime | None = None


def get_runtime() -> RecordRuntime:
    """The cached runtime; the first call reads the environment (a bad one fails here)."""
    global _runtime  # noqa: PLW0603 - one runtime per Lambda container, by design
    if _runtime is None:
        _runtime = build_runtime(RecordSettings.from_environ(), make_clients())
    return _runtime


def set_runtime(runtime: RecordRuntime | None) -> None:
    """Replace the cached runtime (tests, the demo); None makes the next call rebuild it."""
    global _runtime  # noqa: PLW0603
    _runtime = runtime


@dataclass(frozen=True, slots=True)
class Message:
    """One SQS record as the ingest logic needs it."""

    message_id: str
    body: str


@dataclass
class IngestResult:
    """What one batch did. `failed` maps message id -> why (those are redelivered)."""

    accepted: int = 0
    rejected: int = 0
    failed: dict[str, str] = field(default_factory=dict)
    archive_key: str | None = None
    counter_writes: int = 0
    accepted_by_queue: dict[str, int] = field(default_factory=dict)
    rejected_by_queue: dict[str, int] = field(default_factory=dict)


CounterKey = tuple[str, int]
"""(queue, epoch second)."""


def aggregate(events: Iterable[Event]) -> dict[CounterKey, dict[str, int]]:
    """Counter increments per (queue, second): counts per type, busy_ms, pickup_ms, pickups."""
    totals: dict[CounterKey, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for event in events:
        counts = totals[(event.queue, event.second)]
        counts[event.type] += 1
        if event.duration_ms is not None:
            counts["busy_ms"] += event.duration_ms
        if event.pickup_ms is not None:
            counts["pickup_ms"] += event.pickup_ms
            counts["pickups"] += 1
    return {key: dict(value) for key, value in totals.items()}


def batch_id(message_ids: Sequence[str]) -> str:
    """A stable id for a set of messages (a redelivered batch overwrites its own object)."""
    digest = hashlib.sha256("\n".join(sorted(message_ids)).encode("utf-8")).hexdigest()
    return digest[:32]


def _dead_letter(
    runtime: RecordRuntime, rejected: list[tuple[str, Rejection]], now: float, result: IngestResult
) -> None:
    wrappers: list[tuple[str, str]] = []
    owners: list[str] = []
    for message_id, rejection in rejected:
        wrapper = dead_letter_body(rejection.payload, rejection.reason, message_id)
        if len(wrapper.encode("utf-8")) > min(DLQ_INLINE_LIMIT, MAX_MESSAGE_BYTES):
            suffix = "body" if rejection.index is None else str(rejection.index)
            try:
                key = runtime.archive.put_rejected(now, f"{message_id}-{suffix}", rejection.payload)
            except AdapterError as error:
                logger.error("rejected body not stored", message_id=message_id, error=str(error))
                result.failed[message_id] = f"rejected body not stored: {error}"
                continue
            wrapper = dead_letter_body(rejection.payload, rejection.reason, message_id, key)
        wrappers.append((wrapper, rejection.reason))
        owners.append(message_id)
    if not wrappers:
        return
    try:
        refused = runtime.dead_letters.reject_many(wrappers)
    except AdapterError as error:
        logger.error("events DLQ send failed", error=str(error))
        for message_id in owners:
            result.failed.setdefault(message_id, f"events DLQ send failed: {error}")
        return
    for failure in refused:
        result.failed.setdefault(
            owners[failure.index], f"events DLQ refused entry: {failure.code} {failure.message}"
        )


def ingest(messages: Sequence[Message], runtime: RecordRuntime, now: float) -> IngestResult:  # noqa: PLR0912 - one pass, in the order of DESIGN 3
    """Validate, dead-letter, archive and count one batch; `now` is epoch seconds."""
    settings, queues = runtime.settings, runtime.queues(now)
    context = ValidationContext(
        queues=frozenset(q.queue for q in queues),
        now_ms=int(now * 1000),
        max_skew_seconds=settings.max_clock_skew_seconds,
        max_duration_ms={q.queue: int(q.max_job_seconds * 1000) for q in queues},
    )
    result = IngestResult()
    accepted: list[tuple[str, Event]] = []
    rejected: list[tuple[str, Rejection]] = []
    for message in messages:
        try:
            parsed = parse_body(message.body, context)
        except Exception as error:  # a bug's exception must not fail the batch: reject this one
            logger.exception("body could not be validated", message_id=message.message_id)
            why = f"body could not be validated: {type(error).__name__}: {error}"
            parsed = ParsedBody(rejected=[Rejection(why[:500], message.body)])
        accepted.extend((message.message_id, event) for event in parsed.accepted)
        rejected.extend((message.message_id, rejection) for rejection in parsed.rejected)
    for message_id, rejection in rejected:
        logger.warning("event rejected", message_id=message_id, reason=rejection.reason)
    _dead_letter(runtime, rejected, now, result)

    if accepted:
        owners = sorted({message_id for message_id, _ in accepted})
        try:
            result.archive_key = runtime.archive.put_events(
                now, batch_id(owners), [event.record() for _, event in accepted]
            )
        except AdapterError as error:
            logger.error("archive write failed", error=str(error))
            for message_id in owners:
                result.failed.setdefault(message_id, f"archive write failed: {error}")
            accepted = []

    contributors: dict[CounterKey, set[str]] = defaultdict(set)
    for message_id, event in accepted:
        contributors[(event.queue, event.second)].add(message_id)
    ttl = settings.counter_ttl_seconds
    for (queue, second), counts in sorted(aggregate(event for _, event in accepted).items()):
        try:
            runtime.table.add_counters(queue, second, counts, expires_at=second + ttl)
            result.counter_writes += 1
        except AdapterError as error:
            logger.error("counter write failed", queue=queue, second=second, error=str(error))
            for message_id in contributors[(queue, second)]:
                result.failed.setdefault(message_id, f"counter write failed: {error}")

    for message_id, event in accepted:
        if message_id not in result.failed:
            result.accepted += 1
            result.accepted_by_queue[event.queue] = result.accepted_by_queue.get(event.queue, 0) + 1
    for message_id, rejection in rejected:
        if message_id not in result.failed:
            result.rejected += 1
            result.rejected_by_queue[rejection.queue] = (
                result.rejected_by_queue.get(rejection.queue, 0) + 1
            )
    return result


def publish(runtime: RecordRuntime, result: IngestResult) -> None:
    """AcceptedEvents and RejectedEvents per queue (rejections of unknown queues: 'unknown')."""
    queues = set(result.accepted_by_queue) | set(result.rejected_by_queue)
    for queue in sorted(queues):
        values: dict[str, float] = {}
        if queue in result.accepted_by_queue:
            values["AcceptedEvents"] = result.accepted_by_queue[queue]
        if queue in result.rejected_by_queue:
            values["RejectedEvents"] = result.rejected_by_queue[queue]
        runtime.publish_metrics(queue, values)


def messages_of(event: Mapping[str, Any]) -> list[Message]:
    """The (message id, body) pairs of an SQS Lambda event, validated with Powertools Parser."""
    parsed = parse(event=dict(event), model=SqsModel)
    return [Message(record.messageId, str(record.body)) for record in parsed.Records]


def failures_response(
    messages: Sequence[Message], result: IngestResult
) -> PartialItemFailureResponse:
    """The ReportBatchItemFailures answer, in record order: the records whose writes did not
    finish (SQS redelivers exactly those; when that is every record, the whole batch)."""
    failed = [m.message_id for m in messages if m.message_id in result.failed]
    return {"batchItemFailures": [{"itemIdentifier": message_id} for message_id in failed]}


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """SQS entry point: one pass over the batch; returns {"batchItemFailures": [...]}."""
    runtime = get_runtime()
    messages = messages_of(event)
    result = ingest(messages, runtime, runtime.clock())
    publish(runtime, result)
    logger.info(
        "batch recorded",
        records=len(messages),
        accepted=result.accepted,
        rejected=result.rejected,
        failed=len(result.failed),
        counter_writes=result.counter_writes,
        archive_key=result.archive_key,
    )
    return dict(failures_response(messages, result))


__all__ = [
    "IngestResult",
    "Message",
    "RecordRuntime",
    "build_runtime",
    "get_runtime",
    "handler",
    "ingest",
    "set_runtime",
]
