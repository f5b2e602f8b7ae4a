"""Counter increments to the load table: one conditional ADD per distinct (queue, second),
idempotent per message, written concurrently and never started past the batch's deadline."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from queue_autoscale.adapters.errors import AdapterError
from queue_autoscale.events import Event
from queue_autoscale.ingest.aggregate import CounterKey, aggregate
from queue_autoscale.ingest.result import IngestResult
from queue_autoscale.ingest.runtime import RecordRuntime
from queue_autoscale.telemetry import logger

Contributions = dict[CounterKey, dict[str, dict[str, int]]]
"""Per (queue, second): message id -> that message's counter increments there."""


def contributions(accepted: Sequence[tuple[str, Event]]) -> Contributions:
    """Each message's increments per (queue, second) (a message is counted, or not, whole)."""
    by_message: dict[str, list[Event]] = defaultdict(list)
    for message_id, event in accepted:
        by_message[message_id].append(event)
    keyed: Contributions = defaultdict(dict)
    for message_id, events in by_message.items():
        for key, counts in aggregate(events).items():
            keyed[key][message_id] = counts
    return dict(keyed)


def write_counters(
    runtime: RecordRuntime,
    accepted: Sequence[tuple[str, Event]],
    result: IngestResult,
    deadline: float | None = None,
) -> None:
    """ADD the accepted (message id, event) pairs' counters, at most `runtime.max_concurrency`
    writes at once; no write starts at or after `deadline` (epoch s, the runtime's clock). The
    messages a failed or unstarted write touched are marked failed in `result`: SQS
    redelivers them, and the writes of theirs that did land are not applied again."""
    keyed = contributions(accepted)
    ttl = runtime.settings.counter_ttl_seconds
    keys = sorted(keyed)

    def write(key: CounterKey) -> None:
        queue, second = key
        runtime.table.add_counters_once(queue, second, keyed[key], expires_at=second + ttl)

    def settle(future: Future[None], key: CounterKey) -> None:
        try:
            future.result()
            result.counter_writes += 1
        except AdapterError as error:
            logger.error("counter write failed", queue=key[0], second=key[1], error=str(error))
            for message_id in keyed[key]:
                result.failed.setdefault(message_id, f"counter write failed: {error}")

    unstarted: list[CounterKey] = []
    workers = max(1, min(runtime.max_concurrency, len(keys)))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="counters") as pool:
        pending: dict[Future[None], CounterKey] = {}
        for position, key in enumerate(keys):
            while len(pending) >= workers:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    settle(future, pending.pop(future))
            if deadline is not None and runtime.clock() >= deadline:
                unstarted = keys[position:]
                break
            pending[pool.submit(write, key)] = key
        for future in list(pending):
            settle(future, pending.pop(future))
    if unstarted:
        logger.warning("counter writes left for the redelivery", unstarted=len(unstarted))
    for key in unstarted:
        for message_id in keyed[key]:
            result.failed.setdefault(
                message_id, "counter writes not finished before the invocation's deadline"
            )
