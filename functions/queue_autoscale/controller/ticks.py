"""Tick mode: one evaluate invocation per tick, billed for the tick's work, not the minute's sleep.

The once-a-minute schedule is the keeper. Its invocation stands for the minute it was scheduled
for (`scheduled_time`): it runs the minute's tick that is due now and queues the minute's later
ticks on the tick queue, each delayed until it is due (SQS DelaySeconds); the queue's event
source (batch size 1) invokes the function with each. Every tick dispatches: it starts shards
1 .. N - 1 for its due time (`shards.fan_out`) and ticks shard 0.

Each shard claims (shard, due time) before it ticks: a conditional write that succeeds only
for a due time later than the shard's last claimed one (`StateTable.claim_tick`). A duplicate
(SQS, the scheduler and asynchronous Invoke all deliver at least once), a retried keeper, or a
tick redelivered after an error or a timeout therefore decides nothing. A tick that arrives
once the next one is due is stale and dropped: the next one is queued already. Only the keeper
queues ticks and only after winning its claim, so a failed tick costs that tick alone, a
duplicate cannot multiply, and a lost minute's ticks come back with the next minute's keeper.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from queue_autoscale.adapters.errors import AdapterError, StateConflict
from queue_autoscale.controller.request import EvaluateRequest
from queue_autoscale.controller.runtime import EvaluateRuntime
from queue_autoscale.controller.shards import (
    ShardRun,
    dispatch,
    fan_out,
    plan_for,
    report_undecided,
    run_shard,
)
from queue_autoscale.controller.tick import JumpTick, run_tick, tick_budget, tick_count
from queue_autoscale.core.shard import WHOLE, Shard
from queue_autoscale.settings import TickMode
from queue_autoscale.telemetry import logger


def minute_dues(start: float, interval_seconds: float, max_ticks: int | None = None) -> list[float]:
    """The due times (epoch s) of the minute starting at `start`: one every interval."""
    return [
        start + index * interval_seconds for index in range(tick_count(interval_seconds, max_ticks))
    ]


def is_stale(due: float, now: float, interval_seconds: float) -> bool:
    """True once the next tick is due: a tick this late is left to that one."""
    return now >= due + interval_seconds


def claim(
    runtime: EvaluateRuntime,
    shard: Shard,
    due: float,
    result: ShardRun,
    covers: Sequence[Shard] = (),
) -> bool:
    """Claim `shard`'s tick at `due` (epoch s); False, with `result.skipped` saying why, when it
    is stale, already claimed, or the claim cannot be written. In that last case no invocation
    ticks the queues of `covers` (default: `shard`'s), so they are published as undecided."""
    now = runtime.clock()
    interval = runtime.settings.evaluation_interval_seconds
    if is_stale(due, now, interval):
        result.skipped = f"stale: due at {due:.3f}, now {now:.3f}, interval {interval:g} s"
    else:
        try:
            runtime.table.claim_tick(shard.label, shard.index, round(due * 1000), now)
            return True
        except StateConflict:
            result.skipped = f"tick due at {due:.3f} already claimed by another invocation"
        except AdapterError as error:
            result.skipped = f"tick claim not written, not ticking: {error}"
            result.errors.append(result.skipped)
            report_undecided(runtime, covers or [shard])
    logger.info("tick skipped", shard=shard.label, due=due, why=result.skipped)
    return False


def _tick(runtime: EvaluateRuntime, result: ShardRun, deadline: float | None) -> ShardRun:
    now = runtime.clock()
    result.ticks = [run_tick(runtime, now, tick_budget(runtime, now, deadline), result.shard)]
    return result


def run_due(
    runtime: EvaluateRuntime, shard: Shard, due: float, deadline: float | None = None
) -> ShardRun:
    """A started shard: claim (shard, due), then tick once."""
    result = ShardRun(shard=shard, due=due)
    return _tick(runtime, result, deadline) if claim(runtime, shard, due, result) else result


def dispatch_due(
    runtime: EvaluateRuntime,
    function_name: str,
    due: float,
    *,
    later: tuple[float, ...] = (),
    deadline: float | None = None,
) -> ShardRun:
    """A tick: claim (shard 0, due); then queue `later` ticks (the keeper's), start the other
    shards for `due`, and tick shard 0."""
    plan = plan_for(runtime)
    result = ShardRun(shard=Shard(0, plan.count), plan=plan, due=due)
    every = [Shard(index, plan.count) for index in range(plan.count)]
    if not claim(runtime, result.shard, due, result, every):  # no shard starts without it
        return result
    if later:
        _schedule(runtime, later, result)
    result.started, errors = fan_out(runtime, plan, function_name, {"due": due})
    result.errors.extend(errors)
    return _tick(runtime, result, deadline)


def _schedule(runtime: EvaluateRuntime, dues: tuple[float, ...], result: ShardRun) -> None:
    """Queue a tick for each due time, delayed until then; refusals are `result.errors`."""
    if runtime.ticks is None:
        result.errors.append(f"{len(dues)} later tick(s) not queued: no tick queue configured")
        return
    now = runtime.clock()
    ticks: list[tuple[Mapping[str, Any], float]] = [({"due": due}, due - now) for due in dues]
    try:
        refused = {failure.index for failure in runtime.ticks.schedule(ticks)}
    except AdapterError as error:
        result.errors.append(f"later ticks not queued: {error}")
        return
    result.scheduled = [due for index, due in enumerate(dues) if index not in refused]
    if refused:
        result.errors.append(f"{len(refused)} later tick(s) refused by the tick queue")


def keep(
    runtime: EvaluateRuntime,
    request: EvaluateRequest,
    function_name: str,
    deadline: float | None = None,
) -> ShardRun:
    """The scheduled invocation in tick mode: tick the minute's tick due now (the latest one not
    in the future), queue the rest of the minute."""
    now = runtime.clock()
    start = request.scheduled_time.timestamp() if request.scheduled_time else now
    dues = minute_dues(start, runtime.settings.evaluation_interval_seconds, request.max_ticks)
    current = max([due for due in dues if due <= now], default=dues[0])
    later = tuple(due for due in dues if due > current)
    return dispatch_due(runtime, function_name, current, later=later, deadline=deadline)


def run_jump(runtime: EvaluateRuntime, jump: JumpTick, deadline: float | None = None) -> ShardRun:
    """A jump tick the record path asked for (`ingest.jumps`): tick its one queue now, unless its
    line's inputs are stale by now (then the next clock tick, due already, reads the jump)."""
    result = ShardRun(shard=WHOLE)
    now = runtime.clock()
    if now > jump.line.expires_at:
        result.skipped = (
            f"stale: {jump.queue}'s jump line expired at {jump.line.expires_at:.3f}, now {now:.3f}"
        )
        logger.info("jump tick skipped", queue=jump.queue, why=result.skipped)
        return result
    result.ticks = [run_tick(runtime, now, tick_budget(runtime, now, deadline), jump=jump)]
    return result


def serve(
    runtime: EvaluateRuntime,
    request: EvaluateRequest,
    *,
    function_name: str,
    owner: str | None = None,
    deadline: float | None = None,
) -> ShardRun:
    """Run what `request` asks: a jump tick (`run_jump`), a queued tick or a shard of one (tick
    mode), the keeper (a scheduled invocation in tick mode), else the minute's loop
    (`shards.dispatch`/`run_shard`; also `once`, the demo's and tests' single tick under the
    shard lock)."""
    line = request.jump_line()
    if request.jump is not None and line is not None:
        return run_jump(runtime, JumpTick(request.jump, line, request.arrived), deadline)
    shard = None
    if request.shard is not None and request.shards is not None:
        shard = Shard(request.shard, request.shards)
    if request.due is not None:
        if shard is not None:
            return run_due(runtime, shard, request.due, deadline)
        return dispatch_due(runtime, function_name, request.due, deadline=deadline)
    max_ticks = 1 if request.once else request.max_ticks
    if shard is not None:
        return run_shard(runtime, shard, owner=owner, max_ticks=max_ticks, deadline=deadline)
    if runtime.settings.tick_mode is TickMode.TICK and not request.once:
        return keep(runtime, request, function_name, deadline)
    return dispatch(
        runtime,
        function_name,
        request.options(),
        owner=owner,
        max_ticks=max_ticks,
        deadline=deadline,
    )
