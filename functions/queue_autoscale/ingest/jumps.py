"""Jump ticks: after a batch's counters, ask for a tick of each queue whose arrivals since its
last clock tick jumped past what that tick sized on (`core.jump`, docs/decision.md).

Per queue with `queued` events in the batch: read its jump line (one GetItem); add the batch's
arrivals queued at or after the line's second to the line's count (one conditional UpdateItem,
which returns the count); when the count passes the line, claim the line (one conditional
UpdateItem, so one batch asks once) and queue a tick of that queue on the tick queue. Counting
by the second each job was queued, not by when its event arrives here, keeps the events of the
seconds the clock tick already read out of the count.

A jump is the controller's shortcut, never a batch's duty: a failed read or write, a malformed
line or a refused message is logged and costs only that queue's jump tick; no message fails.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from queue_autoscale.adapters.errors import AdapterError
from queue_autoscale.core.jump import line_from_dict, line_to_dict
from queue_autoscale.events import Event
from queue_autoscale.ingest.result import IngestResult
from queue_autoscale.ingest.runtime import RecordRuntime
from queue_autoscale.telemetry import logger

QueuedSeconds = dict[int, int]
"""Epoch second -> `queued` events of the batch queued in it."""


def queued_by_queue(
    accepted: Sequence[tuple[str, Event]], failed: Mapping[str, str]
) -> dict[str, QueuedSeconds]:
    """Per queue, the queued events of the messages that did not fail, by their second."""
    counts: dict[str, QueuedSeconds] = defaultdict(lambda: defaultdict(int))
    for message_id, event in accepted:
        if event.type == "queued" and message_id not in failed:
            counts[event.queue][event.second] += 1
    return {queue: dict(seconds) for queue, seconds in counts.items()}


def jump_of(runtime: RecordRuntime, queue: str, seconds: QueuedSeconds, now: float) -> Any:
    """The tick request for `queue` when its arrivals since its line's second, with this
    batch's, passed the line (and this batch claimed it); else None. `now` epoch s."""
    assert runtime.jumps is not None
    raw = runtime.jumps.jump_line(queue)
    if raw is None or raw.get("fired_at") is not None:
        return None
    try:
        line = line_from_dict(raw)
    except ValueError as error:
        logger.warning("jump line unusable", queue=queue, error=str(error))
        return None
    arrived = sum(count for second, count in seconds.items() if second >= line.since)
    until = min(now, max(seconds) + 1.0)  # the newest second counted, whole
    if not arrived or until > line.expires_at:
        return None
    total = runtime.jumps.count_arrivals(queue, line.since, arrived)
    if total is None or not line.passed(total, until):
        return None
    if not runtime.jumps.claim_jump(queue, line.since, now):
        return None
    return {"jump": queue, "line": line_to_dict(line), "arrived": total, "until": until}


def ask_for_jump_ticks(
    runtime: RecordRuntime,
    accepted: Sequence[tuple[str, Event]],
    result: IngestResult,
    now: float,
    deadline: float | None = None,
) -> None:
    """Test each queue of the batch's counted arrivals against its line and queue a tick for
    each that jumped (`result.jumps`); none without a tick queue, none started at or after
    `deadline` (epoch s by the runtime's clock)."""
    if runtime.jumps is None or runtime.ticks is None:
        return
    queued = queued_by_queue(accepted, result.failed)
    if not queued:
        return

    def check(queue: str) -> Any:
        if deadline is not None and runtime.clock() >= deadline:
            return None
        try:
            return jump_of(runtime, queue, queued[queue], now)
        except AdapterError as error:
            logger.warning("jump test not made", queue=queue, error=str(error))
            return None

    queues = sorted(queued)
    workers = max(1, min(runtime.max_concurrency, len(queues)))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="jumps") as pool:
        requests = [request for request in pool.map(check, queues) if request is not None]
    if not requests:
        return
    asked = [request["jump"] for request in requests]
    try:
        failures = runtime.ticks.schedule([(request, 0.0) for request in requests])
    except AdapterError as error:
        logger.warning("jump ticks not queued", queues=asked, error=str(error))
        return
    refused = {failure.index for failure in failures}
    if refused:
        logger.warning("jump ticks refused", queues=[asked[index] for index in sorted(refused)])
    result.jumps = [queue for index, queue in enumerate(asked) if index not in refused]
    for request in requests:
        logger.info(
            "jump tick asked",
            queue=request["jump"],
            arrived=request["arrived"],
            since=request["line"]["since"],
            until=request["until"],
            rate=request["line"]["rate"],
        )
