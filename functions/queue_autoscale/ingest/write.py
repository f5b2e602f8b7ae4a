"""Counter increments to the load table: one ADD per distinct (queue, second)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from queue_autoscale.adapters.errors import AdapterError
from queue_autoscale.events import Event
from queue_autoscale.ingest.aggregate import CounterKey, aggregate
from queue_autoscale.ingest.result import IngestResult
from queue_autoscale.ingest.runtime import RecordRuntime
from queue_autoscale.telemetry import logger


def write_counters(
    runtime: RecordRuntime, accepted: Sequence[tuple[str, Event]], result: IngestResult
) -> None:
    """ADD the accepted (message id, event) pairs' counters; the messages a failed write
    touched are marked failed in `result`."""
    contributors: dict[CounterKey, set[str]] = defaultdict(set)
    for message_id, event in accepted:
        contributors[(event.queue, event.second)].add(message_id)
    ttl = runtime.settings.counter_ttl_seconds
    for (queue, second), counts in sorted(aggregate(event for _, event in accepted).items()):
        try:
            runtime.table.add_counters(queue, second, counts, expires_at=second + ttl)
            result.counter_writes += 1
        except AdapterError as error:
            logger.error("counter write failed", queue=queue, second=second, error=str(error))
            for message_id in contributors[(queue, second)]:
                result.failed.setdefault(message_id, f"counter write failed: {error}")
