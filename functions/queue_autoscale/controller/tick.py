"""One evaluate tick: gather, decide per queue through the core, act, publish.

A tick stores each queue's controller state under optimistic concurrency, sets desiredCount
(unless dry-run, hold, or another controller won the state race), and publishes metrics,
decision events and the decision log. One queue's trouble stays that queue's: its failed or
slow reads are None (the core holds), its bug or slow action is an error on its own outcome,
and every tick publishes what it has within its time budget (reads by half of it, decisions by
four fifths), counting each queue's errors in ControllerErrors.

A tick serves one shard (`core.shard`): the queues the shard owns. The STATE item records
which shard ticked the queue and when; a shard leaves a queue another shard ticked less than
an interval ago (two shard layouts overlap only while the shard count changes).
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from queue_autoscale.adapters.dynamodb import JUMP_FIELD
from queue_autoscale.adapters.ecs import ServiceRef
from queue_autoscale.adapters.errors import AdapterError, StateConflict
from queue_autoscale.adapters.eventbridge import MAX_ENTRIES, DecisionEvent, EntryFailure
from queue_autoscale.config import QueueConfig
from queue_autoscale.constants import BREACH_EVENT, DECISION_EVENT, SCALED_EVENT
from queue_autoscale.controller.gather import Inputs, gather
from queue_autoscale.controller.runtime import EvaluateRuntime
from queue_autoscale.core import (
    POLICIES,
    Action,
    ControllerState,
    Decision,
    Policy,
    QueueSettings,
    QueueSnapshot,
    TrendModel,
    build_snapshot,
    decision_to_dict,
    model_from_dict,
    state_from_dict,
    state_to_dict,
)
from queue_autoscale.core.jump import (
    TICKED_ON_JUMPS,
    JumpLine,
    clock_line,
    keep_readings,
    line_to_dict,
    moved,
)
from queue_autoscale.core.shard import WHOLE, Shard, yields_to
from queue_autoscale.telemetry import logger, tracer

MINUTE_SECONDS = 60.0
"""The scheduler fires once a minute; ticks fill that minute."""
READ_SHARE = 0.5
"""Reads still running after this share of the tick's budget count as failed."""
DECIDE_SHARE = 0.8
"""A queue not decided and acted on by this share of the budget is left out of the tick; the
rest of the budget is for publishing."""


class JumpTick(NamedTuple):
    """A tick the record path asked for (`ingest.jumps`): one queue, between its clock ticks."""

    queue: str
    line: JumpLine
    """The line its arrivals passed (drawn by the queue's last clock tick)."""
    arrived: float | None = None
    """The arrivals counted since the line's second (jobs), as the record path counted them."""


@dataclass(frozen=True, slots=True)
class TickBudget:
    """When a tick's phases must end, as `time.monotonic()` instants."""

    reads_until: float
    decisions_until: float

    @classmethod
    def starting_now(cls, seconds: float) -> TickBudget:
        """The phases of a tick that may take `seconds` from now."""
        start = time.monotonic()
        return cls(start + READ_SHARE * seconds, start + DECIDE_SHARE * seconds)


@dataclass
class QueueOutcome:
    """One queue's result of one tick."""

    queue: str
    decision: Decision | None = None
    running: int | None = None
    desired_before: int | None = None
    applied: bool = False
    """True when UpdateService set the new desiredCount."""
    dry_run: bool = False
    conflict: bool = False
    """Another controller wrote the state first: this one did not act."""
    errors: list[str] = field(default_factory=list)
    yielded_to: str | None = None
    """The shard that ticked this queue within the interval: this tick leaves it alone."""
    news: bool = True
    """The decision says something the queue's last ScalingDecisionMade did not (`headline`)."""

    def record(self) -> dict[str, Any]:
        """The decision-log line: decision_to_dict plus what the handler did."""
        base: dict[str, Any] = (
            decision_to_dict(self.decision) if self.decision else {"queue": self.queue}
        )
        base.update(
            running=self.running,
            applied=self.applied,
            dry_run=self.dry_run,
            conflict=self.conflict,
            errors=list(self.errors),
        )
        return base

    @property
    def says_something(self) -> bool:
        """The tick is news for this queue: its decision's headline changed, it acted, it lost
        the state race or it has errors. Such a tick publishes ScalingDecisionMade and logs its
        decision at INFO; a quiet one logs it at DEBUG (the decision log keeps every one)."""
        return self.news or self.applied or self.conflict or bool(self.errors)


def _trend_model(outcome: QueueOutcome, raw: dict[str, Any] | None) -> TrendModel | None:
    """The stored trend model; a malformed one costs only the trend term (and is an error)."""
    if not raw:
        return None
    try:
        return model_from_dict(raw)
    except (KeyError, TypeError, ValueError) as error:
        outcome.errors.append(f"trend model unusable, deciding without it: {error!r}")
        return None


def evaluate_queue(
    runtime: EvaluateRuntime,
    config: QueueConfig,
    inputs: Inputs,
    now: float,
    decided_at: float | None = None,
    shard: Shard = WHOLE,
    jump: JumpTick | None = None,
) -> QueueOutcome:
    """Decide, store the state, act for one queue (raises only on a bug; AWS errors are kept).

    `now` is when the inputs were read (the snapshot's time), `decided_at` when the core
    decides (default `now`), both epoch seconds: inputs older than the core's stale limit
    at decision time make it hold. `shard` is the shard ticking it. A `jump` tick keeps the
    clock tick's readings and its shard and time (`core.jump.keep_readings`), and is left
    undone once the queue was ticked on the clock after the line was drawn.
    """
    settings = config.settings(
        runtime.settings.evaluation_interval_seconds, inputs.partitions.get(config.queue)
    )
    dry_run = runtime.settings.dry_run or config.dry_run
    if dry_run and not settings.dry_run:
        settings = replace(settings, dry_run=True)
    queue = config.queue
    service = inputs.services.get(queue)
    outcome = QueueOutcome(
        queue=queue,
        running=service.running if service else None,
        desired_before=service.desired if service else None,
        dry_run=dry_run,
        errors=list(inputs.errors.get(queue, [])),
    )
    if not inputs.documents_ok:
        outcome.errors.append("controller state unavailable: not deciding")
        return outcome
    stored = inputs.states.get(queue)
    outcome.yielded_to = _left_to(runtime, stored, shard, now, jump)
    if outcome.yielded_to is not None:
        return outcome
    state = state_from_dict(stored) if stored else ControllerState(queue=queue)
    model = _trend_model(outcome, inputs.models.get(queue))
    snapshot = build_snapshot(queue, now, inputs.readings(queue))
    policy: Policy = POLICIES[runtime.policy]
    evaluation = policy(snapshot, settings, state, now if decided_at is None else decided_at, model)
    decision = evaluation.decision
    notes = list(inputs.notes.get(queue, []))
    if jump is not None:
        notes.append(jump_note(jump))
    if notes:
        decision = replace(decision, reason="; ".join([decision.reason, *notes]))
    outcome.decision = decision
    announced = headline(decision)
    outcome.news = not stored or stored.get(ANNOUNCED) != announced
    try:
        if jump is not None and stored:  # the clock tick's readings, shard and time stay
            kept = keep_readings(state, evaluation.state)
            where = {"shard": stored.get("shard"), "ticked_at": stored.get("ticked_at")}
        else:
            kept, where = evaluation.state, {"shard": shard.label, "ticked_at": now}
        line = _jump_line(runtime, decision, settings, snapshot, state, now, jump)
        document = {
            **state_to_dict(kept),
            **where,
            ANNOUNCED: announced,
            **({} if line is None else {JUMP_FIELD: line}),
        }
        runtime.table.write_state(queue, document, state.version)
    except StateConflict:
        outcome.conflict = True
        logger.info("state race lost: another controller acts this tick", queue=queue)
        return outcome
    except AdapterError as error:
        outcome.errors.append(f"state not stored, not acting: {error}")
        return outcome
    wants_change = (
        decision.action is not Action.HOLD
        and service is not None
        and decision.target != service.desired
    )
    if wants_change and not dry_run:
        try:
            runtime.ecs.set_desired(ServiceRef(config.cluster, config.service), decision.target)
            outcome.applied = True
        except AdapterError as error:
            outcome.errors.append(str(error))
    return outcome


def _left_to(
    runtime: EvaluateRuntime,
    stored: dict[str, Any] | None,
    shard: Shard,
    now: float,
    jump: JumpTick | None,
) -> str | None:
    """Who this tick leaves the queue to, None when it ticks it: a jump tick yields to a clock
    tick that ran after its line was drawn; a clock tick yields to another shard that ticked the
    queue within the interval (`core.shard.yields_to`)."""
    ticked_at = None if not stored or stored.get("ticked_at") is None else stored["ticked_at"]
    if jump is not None:
        if ticked_at is None or abs(float(ticked_at) - jump.line.ticked_at) > TICKED_AT_TOLERANCE:
            return f"the clock tick at {ticked_at}"
        return None
    if not stored:
        return None
    ticked_by = stored.get("shard")
    interval = runtime.settings.evaluation_interval_seconds
    ticked = None if ticked_at is None else float(ticked_at)
    if yields_to(None if ticked_by is None else str(ticked_by), ticked, shard, now, interval):
        return str(ticked_by)
    return None


TICKED_AT_TOLERANCE = 1e-3
"""Seconds within which a jump line's `ticked_at` is the stored state's (both one float)."""


def jump_note(jump: JumpTick) -> str:
    """The words a jump tick adds to its decision's reason."""
    line = jump.line
    counted = "" if jump.arrived is None else f"{jump.arrived:g} "
    return (
        f"jump tick: {counted}arrivals since {line.since:.0f} passed the line of "
        f"{line.rate:.3g} jobs/s (dispersion {line.dispersion:.3g}, {line.sigmas:.3g} sigmas)"
    )


def _jump_line(
    runtime: EvaluateRuntime,
    decision: Decision,
    settings: QueueSettings,
    snapshot: QueueSnapshot,
    read: ControllerState,
    now: float,
    jump: JumpTick | None,
) -> dict[str, float] | None:
    """The line this tick leaves the record path in the STATE item (`core.jump`): a clock tick's
    from its arrival rate and the snapshot's dispersion (none on the queue's first tick: the
    state it `read` holds no sample), a jump tick's line moved to now. None
    where jumps cannot help (S > L + I), without jump ticks, for a policy that keeps the clock,
    or when the tick held on its inputs."""
    if not runtime.jump_lines or runtime.policy not in TICKED_ON_JUMPS or not decision.inputs_ok:
        return None
    if jump is not None:
        line: JumpLine | None = moved(jump.line, now)
    else:
        line = clock_line(settings, snapshot, read, decision.arrival_rate, now)
    return None if line is None else line_to_dict(line)


SLA_FIELDS = ("sla_seconds", "percentile", "predicted_pickup_seconds")
"""Every decision event carries the SLA aimed at and the pickup time predicted (seed 001)."""
ANNOUNCED = "announced"
"""The STATE item's field holding the `headline` of the last ScalingDecisionMade it led to."""


def headline(decision: Decision) -> list[Any]:
    """What a subscriber of ScalingDecisionMade acts on: the target and action, whether the
    inputs were usable, the overloading and overloaded flags, the urgency and whether a breach
    is predicted. A tick whose headline equals the last published one adds only drifting
    numbers (rates, ages), which the decision log and the log lines keep."""
    return [
        decision.target,
        decision.action.value,
        decision.inputs_ok,
        decision.overloading,
        decision.overloaded,
        decision.urgency.value,
        decision.predicted_breach_seconds is not None,
    ]


def decision_events(outcome: QueueOutcome) -> list[DecisionEvent]:
    """ScalingDecisionMade when its headline changed, it acted, or it has errors or lost the
    state race; WorkersScaled when applied; SlaBreachPredicted when predicted."""
    if outcome.decision is None:
        return []
    decision = outcome.decision
    record = decision_to_dict(decision)
    sla = {name: record[name] for name in SLA_FIELDS}
    events = [DecisionEvent(DECISION_EVENT, outcome.record())] if outcome.says_something else []
    if outcome.applied:
        events.append(
            DecisionEvent(
                SCALED_EVENT,
                {
                    "queue": decision.queue,
                    "at": decision.at,
                    "from": outcome.desired_before,
                    "to": decision.target,
                    "action": decision.action.value,
                    "reason": decision.reason,
                    **sla,
                },
            )
        )
    if decision.predicted_breach_seconds is not None:
        events.append(
            DecisionEvent(
                BREACH_EVENT,
                {
                    "queue": decision.queue,
                    "at": decision.at,
                    "predicted_breach_seconds": decision.predicted_breach_seconds,
                    "urgency": decision.urgency.value,
                    "oldest_age_seconds": decision.oldest_age_seconds,
                    "sla_usage": decision.sla_usage,
                    "current": decision.current,
                    "target": decision.target,
                    **sla,
                },
            )
        )
    return events


def queue_metrics(outcome: QueueOutcome) -> dict[str, float]:
    """The QUEUE_METRICS values of one outcome (ControllerErrors always, 0 when none)."""
    values: dict[str, float] = {"ControllerErrors": float(len(outcome.errors))}
    decision = outcome.decision
    if decision is None:
        return values
    values.update(
        LoadRatio=decision.load_ratio,
        ArrivalRate=decision.arrival_rate,
        ServiceRate=decision.service_rate,
        BacklogPerInstance=decision.backlog_per_instance,
        OldestJobAgeSeconds=decision.oldest_age_seconds,
        SlaUsage=decision.sla_usage,
        CurrentWorkers=float(outcome.running if outcome.running is not None else decision.current),
        TargetWorkers=float(decision.target),
    )
    if decision.predicted_pickup_seconds is not None:
        values["PredictedPickupSeconds"] = decision.predicted_pickup_seconds
    if decision.realized_compliance is not None:
        values["RealizedCompliance"] = decision.realized_compliance
    if decision.fleet_usage is not None:  # seed 003's per-queue 80%-of-max alarm reads this
        values["FleetUsage"] = decision.fleet_usage
    return values


def fleet_metrics(outcomes: Sequence[QueueOutcome]) -> dict[str, float]:
    """The FLEET_METRICS of one tick over the queues it ticked: the highest LoadRatio (0 when
    none decided), SlaUsage and FleetUsage, the sum of ControllerErrors, the queues with no
    decision."""
    decisions = [outcome.decision for outcome in outcomes if outcome.decision is not None]
    usages = [d.fleet_usage for d in decisions if d.fleet_usage is not None]
    return {
        "MaxLoadRatio": max((d.load_ratio for d in decisions), default=0.0),
        "MaxSlaUsage": max((d.sla_usage for d in decisions), default=0.0),
        "MaxFleetUsage": max(usages, default=0.0),
        "QueueErrors": float(sum(len(outcome.errors) for outcome in outcomes)),
        "UndecidedQueues": float(len(outcomes) - len(decisions)),
    }


def _outcome(config: QueueConfig, call: Future[QueueOutcome]) -> QueueOutcome:
    """The queue's outcome; a bug or a queue still deciding at the deadline is its error only."""
    if not call.done():
        logger.error("queue evaluation past the tick's budget", queue=config.queue)
        # Its thread may still store state and act later; the state's version keeps that safe.
        return QueueOutcome(
            queue=config.queue, errors=["evaluation not finished within the tick's budget"]
        )
    error = call.exception()
    if error is not None:  # one queue's bug must not stop the others
        logger.error("queue evaluation failed", queue=config.queue, exc_info=error)
        return QueueOutcome(queue=config.queue, errors=[f"evaluation failed: {error!r}"])
    return call.result()


def _decide_all(
    runtime: EvaluateRuntime,
    queues: Sequence[QueueConfig],
    pool: Executor,
    now: float,
    budget: TickBudget,
    shard: Shard,
    jump: JumpTick | None = None,
) -> list[QueueOutcome]:
    started = runtime.clock()
    inputs = gather(runtime, queues, now, pool, budget.reads_until)
    # A gather slowed by timeouts and retries read the world as it was at `now`: the core
    # judges that snapshot's age when it decides (stale after 2 intervals: hold).
    decided_at = now + max(0.0, runtime.clock() - started)
    calls = [
        pool.submit(evaluate_queue, runtime, config, inputs, now, decided_at, shard, jump)
        for config in queues
    ]
    wait(calls, timeout=max(0.0, budget.decisions_until - time.monotonic()))
    return [_outcome(config, call) for config, call in zip(queues, calls, strict=True)]


def _publish_events(
    runtime: EvaluateRuntime, events: Sequence[DecisionEvent]
) -> list[tuple[Sequence[DecisionEvent], list[EntryFailure] | AdapterError]]:
    """PutEvents in calls of MAX_ENTRIES, concurrently on up to max_concurrency threads: each
    chunk with its refused entries (indexes into the chunk) or the error of its call."""
    chunks = [events[first : first + MAX_ENTRIES] for first in range(0, len(events), MAX_ENTRIES)]

    def send(chunk: Sequence[DecisionEvent]) -> list[EntryFailure] | AdapterError:
        try:
            return runtime.events.publish(chunk)
        except AdapterError as error:
            return error

    if len(chunks) <= 1:
        return [(chunk, send(chunk)) for chunk in chunks]
    threads = max(1, min(runtime.max_concurrency, len(chunks)))
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="events") as pool:
        return list(zip(chunks, pool.map(send, chunks), strict=True))


def publish(runtime: EvaluateRuntime, now: float, outcomes: Sequence[QueueOutcome]) -> None:
    """Decision events, the decision log, the fleet metrics and each queue's log lines of
    whatever the tick has."""
    events = [event for outcome in outcomes for event in decision_events(outcome)]
    by_queue = {outcome.queue: outcome for outcome in outcomes}
    for chunk, answer in _publish_events(runtime, events):
        if isinstance(answer, AdapterError):  # that call's queues only
            for queue in dict.fromkeys(str(event.detail.get("queue", "")) for event in chunk):
                if queue in by_queue:
                    by_queue[queue].errors.append(f"decision events not published: {answer}")
            continue
        for failure in answer:
            queue = str(chunk[failure.index].detail.get("queue", ""))
            if queue in by_queue:
                by_queue[queue].errors.append(f"event refused: {failure.code} {failure.message}")
    tick_id = f"{int(now)}-{uuid.uuid4().hex[:12]}"
    try:
        runtime.archive.put_decisions(now, tick_id, [outcome.record() for outcome in outcomes])
    except AdapterError as error:
        for outcome in outcomes:
            outcome.errors.append(f"decision log not archived: {error}")
    runtime.publish_fleet_metrics(fleet_metrics(outcomes))
    for outcome in outcomes:
        runtime.publish_metrics(outcome.queue, queue_metrics(outcome))
        if outcome.errors:
            logger.error("queue tick had errors", queue=outcome.queue, errors=outcome.errors)
        if outcome.decision is not None:
            log = logger.info if outcome.says_something else logger.debug
            log(
                "decision",
                queue=outcome.queue,
                current=outcome.decision.current,
                target=outcome.decision.target,
                action=outcome.decision.action.value,
                applied=outcome.applied,
                reason=outcome.decision.reason,
            )


@tracer.capture_method
def run_tick(
    runtime: EvaluateRuntime,
    now: float,
    budget_seconds: float | None = None,
    shard: Shard = WHOLE,
    jump: JumpTick | None = None,
) -> list[QueueOutcome]:
    """One evaluation of every queue `shard` owns at `now` (epoch seconds), within
    `budget_seconds` of wall clock (default: the runtime's tick budget, else the interval).
    Queues another shard ticked this interval are left out (logged, not published). A `jump`
    tick evaluates its one queue."""
    if jump is not None:
        queues = [config for config in runtime.queues(now) if config.queue == jump.queue]
    else:
        queues = [config for config in runtime.queues(now) if shard.owns(config.queue)]
    seconds = budget_seconds or runtime.tick_budget_seconds
    budget = TickBudget.starting_now(seconds or runtime.settings.evaluation_interval_seconds)
    workers = max(1, min(runtime.max_concurrency, len(queues) + 3))
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tick")
    try:
        outcomes = _decide_all(runtime, queues, pool, now, budget, shard, jump)
    finally:
        # A call still hanging keeps its thread; the tick does not wait for it.
        pool.shutdown(wait=False, cancel_futures=True)
    ticked = [outcome for outcome in outcomes if outcome.yielded_to is None]
    for outcome in outcomes:
        if outcome.yielded_to is not None:
            logger.info(
                "queue ticked by another shard this interval"
                if jump is None
                else "jump tick left to the clock tick that ran since",
                queue=outcome.queue,
                shard=shard.label,
                ticked_by=outcome.yielded_to,
            )
    publish(runtime, now, ticked)
    return ticked


def tick_count(interval_seconds: float, max_ticks: int | None = None) -> int:
    """Ticks starting within one minute at this interval (ticks at 0, interval, ... < 60 s)."""
    count = max(1, math.ceil(MINUTE_SECONDS / interval_seconds))
    return min(count, max_ticks) if max_ticks else count


def run(
    runtime: EvaluateRuntime,
    max_ticks: int | None = None,
    deadline: float | None = None,
    shard: Shard = WHOLE,
) -> list[list[QueueOutcome]]:
    """Run `shard`'s ticks every interval until the minute (or `deadline`, epoch seconds by the
    runtime's clock: the Lambda's remaining time) is used; a tick never runs past the deadline."""
    interval = runtime.settings.evaluation_interval_seconds
    start = runtime.clock()
    ticks: list[list[QueueOutcome]] = []
    for index in range(tick_count(interval, max_ticks)):
        due = start + index * interval
        if index and deadline is not None and due > deadline:
            break
        wait_seconds = due - runtime.clock()
        if wait_seconds > 0:
            runtime.sleep(wait_seconds)
        now = runtime.clock()
        ticks.append(run_tick(runtime, now, tick_budget(runtime, now, deadline), shard))
    return ticks


def tick_budget(runtime: EvaluateRuntime, now: float, deadline: float | None) -> float:
    """Seconds a tick starting at `now` may take: the runtime's tick budget (else the interval),
    never past `deadline` (epoch s by the runtime's clock), at least one second."""
    budget = runtime.tick_budget_seconds or runtime.settings.evaluation_interval_seconds
    return budget if deadline is None else max(1.0, min(budget, deadline - now))
