"""Rejected events to the events DLQ, each with its reason (a large body goes to S3)."""

from __future__ import annotations

from collections.abc import Sequence

from queue_autoscale.adapters.errors import AdapterError
from queue_autoscale.adapters.sqs import MAX_MESSAGE_BYTES, dead_letter_body
from queue_autoscale.events import Rejection
from queue_autoscale.ingest.result import IngestResult
from queue_autoscale.ingest.runtime import RecordRuntime
from queue_autoscale.telemetry import logger

DLQ_INLINE_LIMIT = 200 * 1024
"""A DLQ wrapper larger than this keeps the original body in the archive instead."""


def dead_letter(
    runtime: RecordRuntime,
    rejected: Sequence[tuple[str, Rejection]],
    now: float,
    result: IngestResult,
) -> None:
    """Send (message id, rejection) pairs to the events DLQ; a message whose rejection could not
    be stored or sent is marked failed in `result` (SQS redelivers it). `now` epoch seconds."""
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
