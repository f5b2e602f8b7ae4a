"""Jump ticks: after a batch's counters, ask for a tick of each queue whose arrivals since its
last clock tick jumped past what that tick sized on (`core.jump`, docs/decision.md).

Per queue with `queued` events in the batch, once its counters are written: read its jump line
(one GetItem); if the batch queued jobs since the line's second, count the jobs queued from that
second until now in the counters (one strongly consistent Query: this batch's writes and every
finished batch's, each message once); when the count passes the line, claim the line (one
conditional UpdateItem, so one batch asks once) and queue a tick of that queue on the tick
queue. Counting by the second each job was queued, not by when its event arrives here, keeps the
seconds the clock tick already read out of the count.

A jump is the controller's shortcut, never a batch's duty: a failed read or write, a malformed
line or a refused message is logged and costs only that queue's jump tick; no message fails.
"""

from __future__ import annotations

import math
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
JumpRequest = dict[str, Any]
"""The tick-queue message of a jump: {"jump": queue, "line": {...}, "arrived": n, "until": s}."""


def queued_by_queue(
    accepted: Sequence[tuple[str, Event]], failed: Mapping[str, str]
) -> dict[str, QueuedSeconds]:
    """Per queue, the queued events of the messages that did not fail, by their second."""
    counts: dict[str, QueuedSeconds] = defaultdict(lambda: defaultdict(int))
    for message_id, event in accepted:
        if event.type == "queued" and message_id not in failed:
            counts[event.queue][event.second] += 1
    return {queue: dict(seconds) for queue, seconds in counts.items()}


def jump_of(
    runtime: RecordRuntime, queue: str, seconds: QueuedSeconds, now: float
) -> JumpRequest | None:
    """The tick request for `queue` when the jobs queued from its line's second to `now` (epoch
    s), this batch's among them, passed the line and this batch claimed it; else None."""
    assert runtime.jumps is not None
    raw = runtime.jumps.jump_line(queue)
    if raw is None or raw.get("fired_at") is not None:
        return None
    try:
        line = line_from_dict(raw)
    except ValueError as error:
        logger.warning("jump line unusable", queue=queue, error=str(error))
        return None
    if max(seconds) < line.since or not line.since < now <= line.expires_at:
        return None  # nothing new to count, or no line to count against
    arrived = runtime.jumps.queued(queue, int(line.since), math.floor(now))
    if not line.passed(arrived, now):
        return None
    if not runtime.jumps.claim_jump(queue, line.since, now):
        return None
    return {"jump": queue, "line": line_to_dict(line), "arrived": arrived, "until": now}


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

    def check(queue: str) -> JumpRequest | None:
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
