"""Evaluate shards: how many, who starts them, and each shard's lock.

The scheduled invocation (an event without `shard`) is the dispatcher. It plans the shard
count N (`core.shard.plan_shards`: EVALUATE_SHARDS when set, else derived from the queue
count and the per-queue tick cost, at most MAX_EVALUATE_SHARDS), queues N - 1 asynchronous
invocations of its own function with `{"shard": i, "shards": N}` (i = 1 .. N - 1) and runs
shard 0 itself. Each shard holds its lock item (`SHARD#<i>` / `LOCK` in the load table) for
its minute, so a delayed or repeated invocation of the same shard never ticks beside it; a
shard whose lock is still held waits up to one interval for it, then gives its minute up.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from queue_autoscale.adapters.errors import AdapterError, StateConflict
from queue_autoscale.controller.runtime import EvaluateRuntime
from queue_autoscale.controller.tick import DECIDE_SHARE, MINUTE_SECONDS, QueueOutcome, run
from queue_autoscale.core.shard import Shard, ShardPlan, plan_shards, vcpus_for_memory
from queue_autoscale.telemetry import logger

LOCK_POLL_SECONDS = 1.0
"""How often a shard asks again for a lock that is still held."""
MAX_FAN_OUT_THREADS = 16


@dataclass
class ShardRun:
    """What one invocation did: its shard, the shards it started, its ticks."""

    shard: Shard
    plan: ShardPlan | None = None
    """The dispatcher's plan (None in a shard started by the dispatcher)."""
    started: list[int] = field(default_factory=list)
    """Shard indexes queued by this (dispatcher) invocation."""
    ticks: list[list[QueueOutcome]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    locked: bool = False
    """True when this invocation held the shard's lock and ran its ticks."""
    due: float | None = None
    """Tick mode: the due time of the tick this invocation stands for (epoch s)."""
    scheduled: list[float] = field(default_factory=list)
    """Tick mode: the due times this (scheduled) invocation queued on the tick queue."""
    skipped: str | None = None
    """Tick mode: why this invocation ran no tick (a stale or already claimed one)."""


def plan_for(runtime: EvaluateRuntime) -> ShardPlan:
    """The shard count for the configured queues at this function's memory and interval (logs
    an error when that many cannot tick every queue within the interval)."""
    settings = runtime.settings
    plan = plan_shards(
        len(runtime.queues(runtime.clock())),
        budget_seconds=DECIDE_SHARE * settings.evaluation_interval_seconds,
        max_shards=settings.max_shards,
        fixed=settings.shards,
        vcpus=vcpus_for_memory(settings.memory_mb),
        concurrency=runtime.max_concurrency,
    )
    if not plan.fits:
        logger.error(
            "the shards cannot tick every queue within the interval",
            queues=plan.queues,
            shards=plan.count,
            needed=plan.needed,
            capacity_per_shard=plan.capacity,
        )
    return plan


def fan_out(
    runtime: EvaluateRuntime, plan: ShardPlan, function_name: str, options: Mapping[str, Any]
) -> tuple[list[int], list[str]]:
    """Queue shards 1 .. N - 1 (asynchronous Invoke, concurrently); (started, errors). The
    queues of a shard not started count as UndecidedQueues (`report_unstarted`)."""
    indexes = list(range(1, plan.count))
    if not indexes:
        return [], []
    if runtime.invoker is None:
        report_unstarted(runtime, plan, indexes)
        return [], [f"shards {indexes[0]}..{indexes[-1]} not started: no Lambda client"]
    invoker = runtime.invoker

    def start(index: int) -> str | None:
        payload = {**options, "shard": index, "shards": plan.count}
        try:
            invoker.invoke_async(function_name, payload)
        except AdapterError as error:
            logger.error("shard not started", shard=f"{index}/{plan.count}", error=str(error))
            return f"shard {index}/{plan.count} not started: {error}"
        return None

    with ThreadPoolExecutor(max_workers=min(MAX_FAN_OUT_THREADS, len(indexes))) as pool:
        answers = list(pool.map(start, indexes))
    started = [index for index, error in zip(indexes, answers, strict=True) if error is None]
    report_unstarted(runtime, plan, [index for index in indexes if index not in started])
    return started, [error for error in answers if error is not None]


def report_unstarted(runtime: EvaluateRuntime, plan: ShardPlan, unstarted: list[int]) -> None:
    """Publish the queues of the `unstarted` shards as the fleet's UndecidedQueues: their own
    shard, which would have published them, never ran."""
    report_undecided(runtime, [Shard(index, plan.count) for index in unstarted])


def report_undecided(runtime: EvaluateRuntime, shards: Sequence[Shard]) -> None:
    """Publish the configured queues of `shards`, which no tick decides this time, as the
    fleet's UndecidedQueues: the queue-silent alarm reads it."""
    if not shards:
        return
    queues = runtime.queues(runtime.clock())
    count = sum(1 for config in queues if any(shard.owns(config.queue) for shard in shards))
    runtime.publish_fleet_metrics({"UndecidedQueues": float(count)})


def hold_lock(runtime: EvaluateRuntime, shard: Shard, owner: str, until: float) -> bool:
    """Take `shard`'s lock until `until` (epoch seconds); wait up to one interval while another
    invocation holds it. False when it is still held (its holder ticks the shard), or the table
    cannot be written (the shard's queues are then published as undecided)."""
    polls = math.ceil(runtime.settings.evaluation_interval_seconds / LOCK_POLL_SECONDS)
    for attempt in range(polls + 1):  # bounded in attempts, whatever the clock does
        try:
            runtime.table.acquire_lock(shard.label, shard.index, owner, runtime.clock(), until)
            return True
        except StateConflict:
            if attempt < polls:
                runtime.sleep(LOCK_POLL_SECONDS)
        except AdapterError as error:  # nobody ticks the shard: its queues are undecided
            logger.error("shard lock unavailable", shard=shard.label, error=str(error))
            report_undecided(runtime, [shard])
            return False
    logger.warning("shard lock still held: leaving this minute", shard=shard.label)
    return False


def run_shard(
    runtime: EvaluateRuntime,
    shard: Shard,
    *,
    owner: str | None = None,
    max_ticks: int | None = None,
    deadline: float | None = None,
    result: ShardRun | None = None,
) -> ShardRun:
    """Hold `shard`'s lock, run its minute of ticks (`tick.run`), release the lock."""
    outcome = result or ShardRun(shard=shard)
    me = owner or uuid.uuid4().hex
    until = deadline if deadline is not None else runtime.clock() + MINUTE_SECONDS
    if not hold_lock(runtime, shard, me, until):
        outcome.errors.append(f"shard {shard.label}: lock held by another invocation")
        return outcome
    outcome.locked = True
    try:
        outcome.ticks = run(runtime, max_ticks=max_ticks, deadline=deadline, shard=shard)
    finally:
        try:
            runtime.table.release_lock(shard.label, shard.index, me, runtime.clock())
        except AdapterError as error:  # the lease ends at `until` anyway
            logger.warning("shard lock not released", shard=shard.label, error=str(error))
    return outcome


def dispatch(
    runtime: EvaluateRuntime,
    function_name: str,
    options: Mapping[str, Any],
    *,
    owner: str | None = None,
    max_ticks: int | None = None,
    deadline: float | None = None,
) -> ShardRun:
    """The scheduled invocation: plan N, start shards 1 .. N - 1, run shard 0."""
    plan = plan_for(runtime)
    result = ShardRun(shard=Shard(0, plan.count), plan=plan)
    result.started, result.errors = fan_out(runtime, plan, function_name, options)
    return run_shard(
        runtime, result.shard, owner=owner, max_ticks=max_ticks, deadline=deadline, result=result
    )
