"""One batch, one pass (DESIGN section 3): validate, dead-letter, archive, count, publish."""

from __future__ import annotations

from collections.abc import Sequence

from queue_autoscale.adapters.aws import LAMBDA_CONNECT_TIMEOUT_SECONDS, LAMBDA_READ_TIMEOUT_SECONDS
from queue_autoscale.adapters.errors import AdapterError
from queue_autoscale.events import Event, ParsedBody, Rejection, ValidationContext, parse_body
from queue_autoscale.ingest.aggregate import batch_id
from queue_autoscale.ingest.jumps import ask_for_jump_ticks
from queue_autoscale.ingest.parse import Message
from queue_autoscale.ingest.reject import dead_letter
from queue_autoscale.ingest.result import IngestResult
from queue_autoscale.ingest.runtime import RecordRuntime
from queue_autoscale.ingest.write import write_counters
from queue_autoscale.telemetry import logger


def validate(
    messages: Sequence[Message], context: ValidationContext
) -> tuple[list[tuple[str, Event]], list[tuple[str, Rejection]]]:
    """(accepted, rejected) as (message id, event or rejection) pairs; never raises."""
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
    return accepted, rejected


def _archive(
    runtime: RecordRuntime, accepted: list[tuple[str, Event]], now: float, result: IngestResult
) -> list[tuple[str, Event]]:
    """Archive the accepted events; on failure their messages are failed and nothing counts."""
    if not accepted:
        return accepted
    owners = sorted({message_id for message_id, _ in accepted})
    try:
        result.archive_key = runtime.archive.put_events(
            now, batch_id(owners), [event.record() for _, event in accepted]
        )
    except AdapterError as error:
        logger.error("archive write failed", error=str(error))
        for message_id in owners:
            result.failed.setdefault(message_id, f"archive write failed: {error}")
        return []
    return accepted


def _tally(
    accepted: list[tuple[str, Event]], rejected: list[tuple[str, Rejection]], result: IngestResult
) -> None:
    """Count what finished: events and rejections of the messages that did not fail."""
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


def ingest(
    messages: Sequence[Message], runtime: RecordRuntime, now: float, deadline: float | None = None
) -> IngestResult:
    """Validate, dead-letter, archive and count one batch, then ask for the jump ticks its
    arrivals call for; `now` is epoch seconds, and no counter write or jump test starts at or
    after `deadline` (epoch s; None: no limit)."""
    settings, queues = runtime.settings, runtime.queues(now)
    context = ValidationContext(
        queues=frozenset(q.queue for q in queues),
        now_ms=int(now * 1000),
        max_skew_seconds=settings.max_clock_skew_seconds,
        max_duration_ms={q.queue: int(q.max_job_seconds * 1000) for q in queues},
    )
    result = IngestResult()
    accepted, rejected = validate(messages, context)
    for message_id, rejection in rejected:
        logger.warning("event rejected", message_id=message_id, reason=rejection.reason)
    dead_letter(runtime, rejected, now, result)
    accepted = _archive(runtime, accepted, now, result)
    write_counters(runtime, accepted, result, deadline)
    ask_for_jump_ticks(runtime, accepted, result, now, deadline)
    _tally(accepted, rejected, result)
    return result


DEADLINE_MARGIN_SECONDS = float(LAMBDA_CONNECT_TIMEOUT_SECONDS + LAMBDA_READ_TIMEOUT_SECONDS)
"""No counter write starts within this much of the invocation's end: one attempt's connect
and read timeouts, so the writes in flight finish and the rest are reported failed before
Lambda stops the invocation (which would redeliver the whole batch)."""


def deadline_of(context: object, now: float) -> float | None:
    """When the last counter write may start, epoch s: the Lambda context's remaining time less
    DEADLINE_MARGIN_SECONDS (None without a context that says)."""
    remaining_ms = getattr(context, "get_remaining_time_in_millis", None)
    if not callable(remaining_ms):
        return None
    return now + float(remaining_ms()) / 1000.0 - DEADLINE_MARGIN_SECONDS


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
