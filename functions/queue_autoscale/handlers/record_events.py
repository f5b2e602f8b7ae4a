"""record_events: the events-queue consumer (SQS trigger, ReportBatchItemFailures).

Parse the SQS records, run the batch's one pass (`ingest.batch.ingest`: validate, dead-letter,
archive, count), publish the per-queue event metrics, and report the records whose writes did
not finish (SQS redelivers exactly those; a rejection is final and never retried).
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from queue_autoscale.adapters.aws import make_clients
from queue_autoscale.ingest.batch import deadline_of, ingest, publish
from queue_autoscale.ingest.parse import failures_response, messages_of
from queue_autoscale.ingest.runtime import RecordRuntime, build_runtime
from queue_autoscale.settings import RecordSettings
from queue_autoscale.telemetry import logger

__all__ = ["build_runtime", "get_runtime", "handler", "logger", "set_runtime"]

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


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """SQS entry point: one pass over the batch; returns {"batchItemFailures": [...]}."""
    runtime = get_runtime()
    messages = messages_of(event)
    now = runtime.clock()
    result = ingest(messages, runtime, now, deadline_of(context, now))
    publish(runtime, result)
    logger.info(
        "batch recorded",
        records=len(messages),
        accepted=result.accepted,
        rejected=result.rejected,
        failed=len(result.failed),
        counter_writes=result.counter_writes,
        archive_key=result.archive_key,
        jump_ticks=result.jumps,
    )
    return dict(failures_response(messages, result.failed))
