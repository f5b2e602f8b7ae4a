"""Our hybrid policy: max(Erlang-C steady state, trend, backlog drain), then the constraints.

DESIGN.md section 4. Pure: the snapshot, settings, state and `now` come in; a decision record
and the next controller state go out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import NamedTuple

from queue_autoscale.core import recurrence, sla_loop
from queue_autoscale.core.drain import (
    WARNING_USAGE,
    backlog_at_landing,
    growth_arrival_rate,
    safety_margin,
    workers_at_landing,
)
from queue_autoscale.core.measures import Measures, input_problems, measure
from queue_autoscale.core.models import (
    Action,
    Constraint,
    ControllerState,
    Decision,
    Evaluation,
    QueueSettings,
    QueueSnapshot,
    Sample,
    Terms,
    TrendModel,
    Winner,
)
from queue_autoscale.core.queueing import workers_for_sla
from queue_autoscale.core.trend import persistent_forecast_rate

POLICY = "hybrid"
MAX_SAMPLES = 512
"""Bound on the samples kept in the state item (a 5 s interval over 40 minutes)."""


@dataclass(frozen=True, slots=True)
class _Step:
    """One constraint that changed (or pinned) the target."""

    code: Constraint
    words: str


def decide(
    snapshot: QueueSnapshot,
    settings: QueueSettings,
    state: ControllerState,
    now: float,
    model: TrendModel | None = None,
) -> Evaluation:
    """One tick of the hybrid controller for one queue.

    Bounded work for every finite input: each sizing term stops searching just past the cap
    (max_allowed, M workers of k jobs each), so the worst case is O(M k) float steps in the
    Erlang C walk (about 8 M k; see servers_for_sla) plus O(samples) <= MAX_SAMPLES for the
    trend and stabilization; a term above the cap reads as cap + 1 ("more than the cap").
    """
    m = measure(snapshot, settings)
    problems = input_problems(snapshot, settings, now)
    if problems:
        return hold_on_bad_inputs(snapshot, settings, state, now, m, problems, POLICY)
    m = _loose_sla_rate(m, snapshot, settings)
    loop = sla_loop.update(state, snapshot.pickups, settings, now)
    cap = max_allowed(settings)  # every term's search stops just past it: bounded work
    need = workers_for_sla(
        m.arrival_rate,
        m.mean_job_seconds,
        settings.worker_concurrency,
        settings.sla_seconds,
        settings.percentile,
        max_workers=cap,
    )
    rec = recurrence.update(state, need, m.arrival_rate, m.mean_job_seconds, settings, now)
    headroom = _spent_headroom(loop, rec, settings, now)
    steady, lam = need, m.arrival_rate
    if headroom > 0:  # the SLA loop: more headroom, capacity kept longer after bursts
        window = settings.stabilization_window_seconds * loop.hold_factor
        settings = replace(settings, stabilization_window_seconds=window)
        lam = m.arrival_rate * (1.0 + headroom)
        steady = workers_for_sla(
            lam,
            m.mean_job_seconds,
            settings.worker_concurrency,
            settings.sla_seconds,
            settings.percentile,
            max_workers=cap,
        )
    elif rec.over:  # delayed off: hold one lead; a recurring burst is anticipated, not held
        hold = settings.provisioning_lead_seconds + settings.evaluation_interval_seconds
        window = min(settings.stabilization_window_seconds, hold)
        settings = replace(settings, stabilization_window_seconds=window, scale_down_percent=100.0)
    forecast = persistent_forecast_rate(state.samples, lam, now, settings, model)
    trend = (
        steady
        if forecast == lam
        else workers_for_sla(
            forecast,
            m.mean_job_seconds,
            settings.worker_concurrency,
            settings.sla_seconds,
            settings.percentile,
            max_workers=cap,
        )
    )
    plan = _drain_plan(m, state, settings, now, cap)
    drain = plan.workers
    terms = Terms(steady=steady, trend=trend, drain=drain)
    raw, winner = _winner(terms)
    why = _term_words(winner, terms, m, forecast, settings, plan)

    recommendation, floors, remembered = _bounds(raw, terms, m, snapshot, state, settings)
    if rec.floor > recommendation and Constraint.POISON_GUARD not in (f.code for f in floors):
        recommendation = min(rec.floor, cap)
        if rec.recurring:
            remembered = max(remembered, recommendation)  # kept through the onset
            floors.append(_Step(Constraint.ANTICIPATION, _anticipation_words(rec, recommendation)))
        else:
            floors.append(
                _Step(
                    Constraint.BURST_HOLD,
                    f"delayed off: the last bursts began {rec.held_for or 0:.0f} s apart; kept "
                    f"{recommendation} workers, the last one's need, until that gap plus a "
                    f"provisioning lead has passed since its onset",
                )
            )
    target, moves = _movement(recommendation, m.current, snapshot, state, settings, now)
    steps = floors + moves
    if headroom > 0:
        why += (
            f"; SLA loop: realized compliance {loop.compliance:.3%} under "
            f"{settings.percentile:.1%}, sizing for {1 + headroom:.2f} x the rate and "
            f"holding capacity {window:g} s"
            if loop.compliance is not None
            else ""
        )
    elif rec.over:
        next_one = (
            f"bursts recur every {rec.period:.0f} s, the next is anticipated"
            if rec.period is not None
            else "no recurrence seen: a one-off surge decays"
        )
        why += f"; the last burst is over: its capacity kept {window:g} s, "
        why += f"not stepped down ({next_one})"
    decision = build_decision(
        snapshot=snapshot,
        settings=settings,
        now=now,
        measures=m,
        terms=terms,
        raw=raw,
        winner=winner,
        forecast=forecast,
        target=target,
        why=why,
        steps=steps,
        policy=POLICY,
        realized_compliance=loop.compliance,
        headroom=headroom,
    )
    loop_state = {
        "realized_started": loop.started,
        "realized_late": loop.late,
        "realized_through": loop.through,
        "headroom": loop.headroom,
        "bursts": rec.bursts,
    }
    return Evaluation(
        decision, next_state(state, settings, now, m, remembered, decision, loop_state)
    )


def _loose_sla_rate(m: Measures, snapshot: QueueSnapshot, settings: QueueSettings) -> Measures:
    """With an SLA at least as long as the long rate window, size on that window alone.

    The short window exists to see a rise within a minute. When the SLA is longer than the
    long window, the lag of the long window is absorbed by the SLA itself (and a surge still
    shows in the backlog's growth, which the drain reads), while the short window's noise only
    keeps the fleet a worker or two above the Erlang-C size: on a loose SLA the fleet runs hot.
    """
    long = snapshot.arrival_rate
    if long is None or settings.sla_seconds < snapshot.rate_window_seconds:
        return m
    if not math.isfinite(long) or long < 0 or long >= m.arrival_rate:
        return m
    return m._replace(arrival_rate=long)


def _spent_headroom(
    loop: sla_loop.LoopReading, rec: recurrence.Recurrence, settings: QueueSettings, now: float
) -> float:
    """The SLA loop's headroom, spent only when no burst began within the loop's window.

    Misses right after a surge's onset are the reaction bound's: a bigger steady fleet cannot
    prevent the next one-off surge's, and recurring bursts are anticipated instead (the floor of
    core/recurrence.py). So after an onset the loop keeps counting but the fleet decays as
    without it; its headroom applies to misses the sizing terms could have prevented.
    """
    if loop.headroom <= 0:
        return 0.0
    if rec.bursts and now - rec.bursts[-1].at < sla_loop.window_seconds(settings):
        return 0.0
    return loop.headroom


def _anticipation_words(rec: recurrence.Recurrence, floor: int) -> str:
    when = rec.expected_in or 0.0
    due = f"due in {when:.0f} s" if when >= 0 else f"{-when:.0f} s overdue"
    return (
        f"anticipation: bursts recur every {rec.period or 0:.0f} s, the next {due}; kept at "
        f"least {floor} workers, its expected need, so they run when it starts"
    )


class _DrainPlan(NamedTuple):
    """The drain term and what it rests on, for the decision's words (a tuple: built every
    tick, and a frozen dataclass costs several times more to make)."""

    workers: int
    arrival_rate: float
    """lambda the drain used, jobs/s (a surge seen in the backlog's growth, if higher)."""
    at_landing: float
    """Jobs expected to wait when workers ordered now land."""
    ordered: int
    """Workers asked for earlier and not running yet."""
    lands_in: float | None
    """Seconds until those land (None: overdue or unknown, not counted)."""
    kept: bool
    """True when the drain keeps earlier orders that are needed when they land."""


def _drain_plan(
    m: Measures, state: ControllerState, settings: QueueSettings, now: float, cap: int
) -> _DrainPlan:
    """The backlog-drain term, counting workers already ordered (seeds 000/001, FIFO-aware)."""
    rate = _drain_rate(m, state, settings, now)
    ordered, lands_in = _ordered(m, state, settings, now)
    if m.visible <= 0:
        return _DrainPlan(0, rate, 0.0, ordered, lands_in, False)
    lead = settings.provisioning_lead_seconds
    mu, sla, horizon = m.service_rate, settings.sla_seconds, settings.recovery_horizon
    at_landing = backlog_at_landing(
        backlog=m.visible,
        arrival_rate=rate,
        service_rate=mu,
        lead_seconds=lead,
        running=m.running,
        ordered=ordered,
        ordered_lands_in=lands_in,
    )
    age = m.oldest_age_seconds
    workers = workers_at_landing(
        at_landing=at_landing,
        oldest_age_seconds=age,
        arrival_rate=rate,
        service_rate=mu,
        sla_seconds=sla,
        recovery_horizon_seconds=horizon,
        lead_seconds=lead,
        max_workers=cap,
    )
    kept = False
    if lands_in is not None:
        # the workers already ordered land first: keep as many as are needed when they do
        then = backlog_at_landing(
            backlog=m.visible,
            arrival_rate=rate,
            service_rate=mu,
            lead_seconds=lands_in,
            running=m.running,
        )
        needed_then = workers_at_landing(
            at_landing=then,
            oldest_age_seconds=age,
            arrival_rate=rate,
            service_rate=mu,
            sla_seconds=sla,
            recovery_horizon_seconds=horizon,
            lead_seconds=lands_in,
            max_workers=cap,
        )
        needed_then = min(needed_then, m.current)
        kept = needed_then > workers
        workers = max(workers, needed_then)
    return _DrainPlan(workers, rate, at_landing, ordered, lands_in, kept)


def _drain_rate(m: Measures, state: ControllerState, settings: QueueSettings, now: float) -> float:
    """lambda for the drain: the windowed rate, or a surge seen in the backlog's growth since
    the last tick (within two intervals) when that is higher."""
    last = state.samples[-1] if state.samples else None
    if last is None or now - last.at > 2 * settings.evaluation_interval_seconds:
        return m.arrival_rate
    grown = growth_arrival_rate(
        visible=m.visible,
        previous_visible=last.visible,
        seconds=now - last.at,
        running=m.running,
        service_rate=m.service_rate,
    )
    return m.arrival_rate if grown is None else max(m.arrival_rate, grown)


def _ordered(
    m: Measures, state: ControllerState, settings: QueueSettings, now: float
) -> tuple[int, float | None]:
    """Workers asked for but not running yet, and seconds until they should take jobs.

    They were ordered by the last scale-up at the latest, so they land one lead after it; once
    that moment has passed without them they are not counted (None) until they run.
    """
    ordered = max(0, m.current - m.running)
    last_up = state.last_scale_up_at
    if ordered == 0 or last_up is None:
        return ordered, None
    lands_in = last_up + settings.provisioning_lead_seconds - now
    return ordered, lands_in if lands_in >= 0 else None


def _winner(terms: Terms) -> tuple[int, Winner]:
    name, value = Winner.STEADY, terms.steady  # first of equals: steady, then trend
    if terms.trend > value:
        name, value = Winner.TREND, terms.trend
    if terms.drain > value:
        name, value = Winner.DRAIN, terms.drain
    return (value, name) if value > 0 else (0, Winner.NONE)


def _term_words(
    winner: Winner,
    terms: Terms,
    m: Measures,
    forecast: float,
    settings: QueueSettings,
    plan: _DrainPlan,
) -> str:
    sla = settings.sla_seconds
    if winner is Winner.STEADY:
        return (
            f"steady won: {terms.steady} workers keep P(pickup > {sla:g} s) <= "
            f"{1 - settings.percentile:.0%} at {m.arrival_rate:.2f} jobs/s "
            f"(Erlang C, {m.service_rate:.3g} jobs/s per worker){m.prior_note}"
        )
    if winner is Winner.TREND:
        return (
            f"trend won: {forecast:.2f} jobs/s forecast in "
            f"{settings.forecast_horizon_seconds:g} s (now {m.arrival_rate:.2f}) needs "
            f"{terms.trend} workers{m.prior_note}"
        )
    if winner is Winner.DRAIN:
        return _drain_words(terms, m, settings, plan)
    return "no work: nothing waiting or arriving"


def _drain_words(terms: Terms, m: Measures, settings: QueueSettings, plan: _DrainPlan) -> str:
    sla = settings.sla_seconds
    lead = settings.provisioning_lead_seconds
    horizon = settings.recovery_horizon
    aim = max(0.0, sla - horizon)
    if m.oldest_age_seconds > sla:
        state = f"SLA breached (oldest {m.oldest_age_seconds:.1f} s > {sla:g} s)"
    else:
        state = f"oldest {m.oldest_age_seconds:.1f} s of {sla:g} s"
    landing = f"new workers land in {lead:g} s" if lead > 0 else "new workers start at once"
    earlier = ""
    if plan.ordered > 0 and plan.lands_in is not None:
        earlier = f", after the {plan.ordered} ordered earlier (in {plan.lands_in:.0f} s)"
    rate = ""
    if plan.arrival_rate > m.arrival_rate:
        rate = f"; backlog growth shows {plan.arrival_rate:.2f} jobs/s arriving"
    kept = ""
    if plan.kept:
        kept = "; keeping the workers already ordered: they are needed when they land"
    margin = ""
    if m.sla_usage >= WARNING_USAGE:
        margin = f", safety margin x{safety_margin(m.sla_usage):.2f}"
    return (
        f"drain won: {terms.drain} workers; {state}, {m.visible} waiting; {landing}{earlier} "
        f"and find about {plan.at_landing:.0f} waiting; every job up to {aim:g} s old then "
        f"(at least the {horizon:g} s recovery horizon left) is picked up in time{rate}{kept}"
        f"{margin}{m.prior_note}"
    )


def _bounds(
    raw: int,
    terms: Terms,
    m: Measures,
    snapshot: QueueSnapshot,
    state: ControllerState,
    settings: QueueSettings,
) -> tuple[int, list[_Step], int]:
    """Caps and floors that hold whatever the fleet did before: the recommendation.

    Also returns what the stabilization window remembers: the sustained need, max(steady,
    trend) within min_workers and the caps. Not the drain term: the workers it adds clear a
    backlog and are not needed once it is gone (remembering them kept spike-sized fleets for a
    whole window). Not the in-flight floor: whenever every worker happens to be busy at a tick
    (often, at a high utilization) the window would record the current size and never let the
    fleet shrink.
    """
    steps: list[_Step] = []
    target = raw
    if target > m.current and _poison_suspected(snapshot, state, settings, m):
        held = max(m.current, 1 if m.visible > 0 else 0)
        if held < target:
            steps.append(
                _Step(
                    Constraint.POISON_GUARD,
                    f"poison guard: jobs fail or stall while in flight, so not climbing "
                    f"past {held} (more workers would only feed the DLQ)",
                )
            )
            target = held
    cap = max_allowed(settings)
    if target > cap:
        limit = _binding_cap(settings, cap)
        wanted = f"more than {cap}" if target == cap + 1 else str(target)
        steps.append(_Step(limit, f"capped at {limit} {cap} (wanted {wanted})"))
        target = cap
    if target < settings.min_workers:
        steps.append(_Step(Constraint.MIN_WORKERS, f"raised to min_workers {settings.min_workers}"))
        target = settings.min_workers
    remembered = min(max(terms.steady, terms.trend, settings.min_workers), cap)
    waiting = m.visible + m.in_flight
    if m.current == 0 and target > 0 and waiting < settings.activation_threshold:
        if _late_at_zero(m, settings):
            steps.append(
                _Step(
                    Constraint.ACTIVATION,
                    f"scale from zero below the activation threshold "
                    f"{settings.activation_threshold}: the oldest of {waiting} waiting "
                    f"({m.oldest_age_seconds:.0f} s) would pass its {settings.sla_seconds:g} s "
                    f"SLA before a worker ordered at the next tick lands",
                )
            )
        else:
            steps.append(
                _Step(
                    Constraint.ACTIVATION,
                    f"staying at zero: {waiting} jobs waiting is below the activation "
                    f"threshold {settings.activation_threshold}",
                )
            )
            target = 0
    elif (
        m.current == 0
        and target == 0
        and m.visible > 0
        and (m.visible >= settings.activation_threshold or _late_at_zero(m, settings))
    ):
        steps.append(
            _Step(
                Constraint.ACTIVATION,
                f"scale from zero: {m.visible} jobs waiting; cold start accepted",
            )
        )
        target = min(1, cap)
    busy = math.ceil(m.in_flight / settings.worker_concurrency)
    if target < busy:
        busy = min(busy, cap)
        steps.append(
            _Step(Constraint.IN_FLIGHT, f"kept {busy} workers busy with {m.in_flight} jobs")
        )
        target = busy
    return target, steps, remembered


def _late_at_zero(m: Measures, settings: QueueSettings) -> bool:
    """True when a job waiting at zero workers would pass its SLA if the fleet waited one more
    tick: age + interval + provisioning lead >= SLA (activation never strands a job)."""
    lead = settings.evaluation_interval_seconds + settings.provisioning_lead_seconds
    return m.visible > 0 and m.oldest_age_seconds + lead >= settings.sla_seconds


def _movement(  # noqa: PLR0911 - a constraint that pins the fleet ends it
    recommendation: int,
    current: int,
    snapshot: QueueSnapshot,
    state: ControllerState,
    settings: QueueSettings,
    now: float,
) -> tuple[int, list[_Step]]:
    """Cooldowns, stabilization and the step limit: how far to move toward the recommendation."""
    target = recommendation
    if target > current:
        unmet = state.unmet_since
        running = snapshot.running or 0
        if unmet is not None and running < current and now - unmet >= settings.stuck_after:
            return current, [
                _Step(
                    Constraint.FLEET_STUCK,
                    f"fleet stuck: {running} of {current} tasks running for {now - unmet:.0f} s "
                    f"(quota, capacity or failing tasks?); not asking for more until they start",
                )
            ]
        last_up = state.last_scale_up_at
        if last_up is not None and now - last_up < settings.scale_up_cooldown_seconds:
            wait = settings.scale_up_cooldown_seconds - (now - last_up)
            return current, [_Step(Constraint.UP_COOLDOWN, f"up-cooldown: {wait:.0f} s left")]
        return target, []
    if target == current:
        return target, []
    if snapshot.deployment_in_progress:
        return current, [_Step(Constraint.DEPLOYMENT, "no scale-down while a deployment rolls")]
    window = settings.stabilization_window_seconds
    seen = [s.raw_target for s in state.samples if now - s.at <= window]
    covered = bool(state.samples) and now - state.samples[0].at >= window
    highest = max(seen, default=recommendation)
    if not covered:
        highest = max(highest, current)
    if highest >= current:
        why = (
            f"stabilization: {highest} workers recommended within the last {window:g} s"
            if covered
            else f"stabilization: less than {window:g} s of history, not scaling down yet"
        )
        return current, [_Step(Constraint.STABILIZATION, why)]
    steps: list[_Step] = []
    if highest > target:
        steps.append(
            _Step(
                Constraint.STABILIZATION,
                f"down only to {highest}, the highest in the last {window:g} s",
            )
        )
        target = highest
    last_down = state.last_scale_down_at
    if last_down is not None and now - last_down < settings.scale_down_cooldown_seconds:
        wait = settings.scale_down_cooldown_seconds - (now - last_down)
        return current, [_Step(Constraint.DOWN_COOLDOWN, f"down-cooldown: {wait:.0f} s left")]
    step = max(settings.scale_down_step, math.ceil(current * settings.scale_down_percent / 100))
    if target < current - step:
        steps.append(_Step(Constraint.STEP, f"step limit: down by at most {step}"))
        target = current - step
    return target, steps


def _poison_suspected(
    snapshot: QueueSnapshot, state: ControllerState, settings: QueueSettings, m: Measures
) -> bool:
    """Seed 003's trap: adding workers cannot help when jobs fail or never finish."""
    last = state.samples[-1] if state.samples else None
    dlq_grew = last is not None and m.dlq_depth > last.dlq_depth
    failure_rate = snapshot.failure_rate or 0.0  # unknown: no failures seen
    failing = m.in_flight > 0 and failure_rate >= settings.poison_failure_ratio
    stalled = (
        snapshot.completion_rate == 0
        and snapshot.mean_job_seconds is not None
        and m.in_flight > 0
        and 3 * snapshot.mean_job_seconds <= snapshot.rate_window_seconds
    )
    return dlq_grew or failing or stalled


def max_allowed(settings: QueueSettings) -> int:
    """The hard ceiling: max_workers, or the capacity or partition cap when lower (never below
    min_workers: config.py rejects a cap under the minimum, this keeps the core total anyway)."""
    if settings.capacity_cap is None and settings.partition_cap is None:
        return settings.max_workers  # the common case, three times a tick
    caps = [c for c in (settings.capacity_cap, settings.partition_cap) if c is not None]
    return max(settings.min_workers, min(settings.max_workers, *caps))


def _binding_cap(settings: QueueSettings, cap: int) -> Constraint:
    """The constraint code of the ceiling `cap` (the partition cap wins a tie: it says why)."""
    if settings.partition_cap is not None and settings.partition_cap <= cap:
        return Constraint.PARTITION_CAP
    if settings.capacity_cap is not None and settings.capacity_cap <= cap:
        return Constraint.CAPACITY_CAP
    return Constraint.MAX_WORKERS


_VERBS = {Action.UP: "scale up", Action.DOWN: "scale down", Action.HOLD: "hold"}


def _action(current: int, target: int) -> Action:
    if target > current:
        return Action.UP
    if target < current:
        return Action.DOWN
    return Action.HOLD


def build_decision(  # noqa: PLR0913 - keyword-only, one per record field
    *,
    snapshot: QueueSnapshot,
    settings: QueueSettings,
    now: float,
    measures: Measures,
    terms: Terms,
    raw: int,
    winner: Winner,
    forecast: float,
    target: int,
    why: str,
    steps: list[_Step] | list[tuple[Constraint, str]],
    policy: str,
    inputs_ok: bool = True,
    clamp: bool = True,
    realized_compliance: float | None = None,
    headroom: float = 0.0,
) -> Decision:
    """Assemble the decision record; the target is finally clamped to [min, max] (unless
    `clamp` is False: a hold on an unknown fleet size asks nothing of ECS).

    `raw` and `winner` are the largest term and its name, `forecast` the trend's rate (jobs/s),
    `target` the count after the constraints in `steps`, `why` the winning term's words.
    """
    m = measures
    pairs = [(s.code, s.words) if isinstance(s, _Step) else s for s in steps]
    clamped = min(max(target, settings.min_workers), max_allowed(settings)) if clamp else target
    if clamped != target:
        code = Constraint.MAX_WORKERS if clamped < target else Constraint.MIN_WORKERS
        pairs.append((code, f"kept {clamped}"))
    action = _action(m.current, clamped)
    words = [why, *(w for _, w in pairs)]
    verb = _VERBS[action]
    reason = f"{verb} {m.current} -> {clamped}: " + "; ".join(words)
    return Decision(
        queue=snapshot.queue,
        at=now,
        policy=policy,
        current=m.current,
        target=clamped,
        action=action,
        terms=terms,
        raw_target=raw,
        winner=winner,
        reason=reason,
        constraints=tuple(dict.fromkeys(code for code, _ in pairs)),
        urgency=m.urgency,
        sla_usage=m.sla_usage,
        load_ratio=m.load_ratio,
        overloading=m.overloading,
        overloaded=m.overloaded,
        backlog_per_instance=m.backlog_per_instance,
        predicted_pickup_seconds=m.predicted_pickup_seconds,
        predicted_breach_seconds=m.predicted_breach_seconds,
        arrival_rate=m.arrival_rate,
        forecast_rate=forecast,
        service_rate=m.service_rate,
        oldest_age_seconds=m.oldest_age_seconds,
        oldest_age_source=snapshot.oldest_age_source,
        inputs_ok=inputs_ok,
        fleet_usage=m.current / settings.max_workers if settings.max_workers > 0 else None,
        sla_seconds=settings.sla_seconds,
        percentile=settings.percentile,
        realized_compliance=realized_compliance,
        headroom=headroom,
    )


def next_state(
    state: ControllerState,
    settings: QueueSettings,
    now: float,
    m: Measures,
    recommendation: int,
    decision: Decision,
    more: Mapping[str, object] | None = None,
) -> ControllerState:
    """Remember this tick: a sample, the time of any scaling action, and `more` fields of the
    state a policy keeps (set in the same copy: a state is copied once per tick)."""
    keep = max(settings.stabilization_window_seconds, settings.trend_window_seconds)
    keep += settings.evaluation_interval_seconds
    sample = Sample(
        at=now,
        arrival_rate=m.arrival_rate,
        visible=m.visible,
        raw_target=recommendation,
        dlq_depth=m.dlq_depth,
    )
    kept = state.samples
    if kept and kept[-1].at >= now:  # a replayed tick: drop what this one supersedes
        kept = tuple(s for s in kept if s.at < now)
    start = 0
    while start < len(kept) and now - kept[start].at > keep:  # samples are oldest first
        start += 1
    samples = (*kept[start:], sample)[-MAX_SAMPLES:]
    changes: dict[str, object] = {"samples": samples}
    if decision.action is Action.UP:
        changes["last_scale_up_at"] = now
    elif decision.action is Action.DOWN:
        changes["last_scale_down_at"] = now
    if decision.action is not Action.HOLD:
        changes["last_set_desired"] = decision.target
        changes["last_set_at"] = now
    if m.running >= m.current:
        changes["unmet_since"] = None
    elif state.unmet_since is None:
        changes["unmet_since"] = now
    if more:
        changes.update(more)
    return replace(state, **changes)  # type: ignore[arg-type]


def hold_on_bad_inputs(
    snapshot: QueueSnapshot,
    settings: QueueSettings,
    state: ControllerState,
    now: float,
    m: Measures,
    problems: list[str],
    policy: str,
) -> Evaluation:
    """Missing, stale or impossible inputs: keep the current count and remember nothing.

    The one exception is the configured bounds, which hold whatever was measured: a fleet
    above max_workers (or the capacity cap) after the max was lowered comes down to it, one
    below min_workers goes up to it, and the reason says so. When the fleet size itself is
    unknown (neither desired nor running could be read) the target is the unknown count and
    the action is hold: nothing is asked of ECS.
    """
    why = "inputs unusable (" + "; ".join(problems) + "): holding the current count"
    steps: list[tuple[Constraint, str]] = []
    target = m.current
    fleet_known = snapshot.desired is not None or snapshot.running is not None
    cap = max_allowed(settings)
    if fleet_known and m.current > cap:
        limit = Constraint.CAPACITY_CAP if cap < settings.max_workers else Constraint.MAX_WORKERS
        steps.append((limit, f"except the lowered {limit} {cap}, which is still enforced"))
        target = cap
    elif fleet_known and m.current < settings.min_workers:
        steps.append(
            (
                Constraint.MIN_WORKERS,
                f"except min_workers {settings.min_workers}, which is still enforced",
            )
        )
        target = settings.min_workers
    decision = build_decision(
        snapshot=snapshot,
        settings=settings,
        now=now,
        measures=m,
        terms=Terms(0, 0, 0),
        raw=m.current,
        winner=Winner.NONE,
        forecast=m.arrival_rate,
        target=target,
        why=why,
        steps=steps,
        policy=policy,
        inputs_ok=False,
        clamp=fleet_known,
    )
    return Evaluation(decision, state)
