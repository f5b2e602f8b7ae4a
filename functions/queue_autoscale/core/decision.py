"""The decision record and the next controller state, shared by every policy in the core:
`build_decision` (reason, constraint codes, final clamp) over `decision_record` (the one
builder of a Decision, the simulator's peers' too), `largest_term` (the winning term),
`next_state` (the sample and the scaling times remembered) and `hold_on_bad_inputs`. Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import fields, replace

from queue_autoscale.core.constraints import binding_cap, max_allowed
from queue_autoscale.core.measures import Measures
from queue_autoscale.core.models import (
    DRAIN,
    RATE_WINDOW_SECONDS,
    STEADY,
    TREND,
    Action,
    Constraint,
    ControllerState,
    Decision,
    Evaluation,
    QueueSettings,
    QueueSnapshot,
    Sample,
    Terms,
    Winner,
)
from queue_autoscale.core.trend import step_span_seconds

MAX_SAMPLES = 512
"""Bound on the samples kept in the state item (a 5 s interval over 40 minutes)."""

_UP, _DOWN, _HOLD = Action.UP, Action.DOWN, Action.HOLD
"""The actions as module constants, read every tick: an enum member read through its class costs
~70 ns on Python 3.11 (`EnumType.__getattr__`), a module constant ~15 ns."""
_VERBS = {_UP: "scale up", _DOWN: "scale down", _HOLD: "hold"}
_STATE_FIELDS = tuple(f.name for f in fields(ControllerState))


def action_for(current: int, target: int) -> Action:
    """Up, down or hold from the `current` worker count to the `target`."""
    if target > current:
        return _UP
    if target < current:
        return _DOWN
    return _HOLD


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
    steps: Sequence[tuple[Constraint, str]],
    policy: str,
    inputs_ok: bool = True,
    clamp: bool = True,
    realized_compliance: float | None = None,
) -> Decision:
    """Assemble the decision record; the target is finally clamped to [min, max] (unless
    `clamp` is False: a hold on an unknown fleet size asks nothing of ECS).

    `raw` and `winner` are the largest term and its name, `forecast` the trend's rate (jobs/s),
    `target` the count after the constraints in `steps`, `why` the winning term's words.
    """
    m = measures
    clamped = min(max(target, settings.min_workers), max_allowed(settings)) if clamp else target
    if clamped != target:
        code = Constraint.MAX_WORKERS if clamped < target else Constraint.MIN_WORKERS
        steps = [*steps, (code, f"kept {clamped}")]
    verb = _VERBS[action_for(m.current, clamped)]
    reason = f"{verb} {m.current} -> {clamped}: {why}"
    if steps:
        reason += "; " + "; ".join([words for _, words in steps])
    return decision_record(
        snapshot=snapshot,
        settings=settings,
        now=now,
        measures=m,
        policy=policy,
        target=clamped,
        terms=terms,
        raw=raw,
        winner=winner,
        reason=reason,
        forecast=forecast,
        inputs_ok=inputs_ok,
        constraints=tuple(dict.fromkeys([code for code, _ in steps])) if steps else (),
        realized_compliance=realized_compliance,
    )


def decision_record(  # noqa: PLR0913 - keyword-only, one per record field a policy sets
    *,
    snapshot: QueueSnapshot,
    settings: QueueSettings,
    now: float,
    measures: Measures,
    policy: str,
    target: int,
    terms: Terms,
    raw: int,
    winner: Winner,
    reason: str,
    forecast: float,
    inputs_ok: bool,
    constraints: tuple[Constraint, ...] = (),
    predicts: bool = True,
    realized_compliance: float | None = None,
) -> Decision:
    """The decision record, field by field: the one place a Decision is built (our policies
    through `build_decision`, the simulator's peers through `sim.peers._record`).

    The measured fields come from `measures`, the action from `current` to `target`.
    `predicts` False (a peer: it predicts no pickup and sizes against no fleet cap) leaves the
    predicted pickup and breach (s) and the fleet usage (share of max_workers) out.
    """
    m = measures
    return Decision(
        queue=snapshot.queue,
        at=now,
        policy=policy,
        current=m.current,
        target=target,
        action=action_for(m.current, target),
        terms=terms,
        raw_target=raw,
        winner=winner,
        reason=reason,
        constraints=constraints,
        urgency=m.urgency,
        sla_usage=m.sla_usage,
        load_ratio=m.load_ratio,
        overloading=m.overloading,
        overloaded=m.overloaded,
        backlog_per_instance=m.backlog_per_instance,
        predicted_pickup_seconds=m.predicted_pickup_seconds if predicts else None,
        predicted_breach_seconds=m.predicted_breach_seconds if predicts else None,
        arrival_rate=m.arrival_rate,
        forecast_rate=forecast,
        service_rate=m.service_rate,
        oldest_age_seconds=m.oldest_age_seconds,
        oldest_age_source=snapshot.oldest_age_source,
        inputs_ok=inputs_ok,
        fleet_usage=(
            m.current / settings.max_workers if predicts and settings.max_workers > 0 else None
        ),
        sla_seconds=settings.sla_seconds,
        percentile=settings.percentile,
        realized_compliance=realized_compliance,
    )


def _short_rates_read(samples: tuple[Sample, ...], now: float) -> tuple[Sample, ...]:
    """The samples with the short window's rate kept only where the trend's step test reads
    it (`trend.step_span_seconds` back from `now`): older rates would add a float a row to the
    STATE item (a write unit a tick past 1 KB). Samples are oldest first, and older ones
    were cleared at earlier ticks, so this walks back only past the span to the first one
    cleared."""
    span = step_span_seconds()
    end = len(samples)
    while end > 0 and now - samples[end - 1].at <= span:
        end -= 1
    start = end
    while start > 0 and samples[start - 1].short_rate is not None:
        start -= 1
    if start == end:
        return samples
    cleared = tuple(replace(s, short_rate=None) for s in samples[start:end])
    return (*samples[:start], *cleared, *samples[end:])


def next_state(
    state: ControllerState,
    settings: QueueSettings,
    now: float,
    m: Measures,
    recommendation: int,
    decision: Decision,
    more: Mapping[str, object] | None = None,
    history_seconds: float = 0.0,
) -> ControllerState:
    """Remember this tick: a sample, the time of any scaling action, and `more` fields of the
    state a policy keeps (set in the same copy: a state is copied once per tick).

    Samples are kept for the longest window a rule reads: the trend's, the long rate window W,
    or `history_seconds`, what the policy itself reads further back (s; predictive: the burst
    model's W + 2R, which covers the delayed off's R).

    A scale-down starts the down-cooldown only when it stops running workers (target below
    `running`): cancelling orders still starting stops none, and a cooldown started by trimming
    a drain's pending order held the whole drained fleet past its release (bursty at 60 s,
    p99.9, seed 1: 268 workers for 30 s more)."""
    keep = max(RATE_WINDOW_SECONDS, history_seconds)
    keep += settings.evaluation_interval_seconds
    sample = Sample(
        at=now,
        arrival_rate=m.window_rate,
        visible=m.visible,
        raw_target=recommendation,
        dlq_depth=m.dlq_depth,
        short_rate=m.short_rate,
    )
    kept = state.samples
    if kept and kept[-1].at >= now:  # a replayed tick: drop what this one supersedes
        kept = tuple(s for s in kept if s.at < now)
    start = 0
    while start < len(kept) and now - kept[start].at > keep:  # samples are oldest first
        start += 1
    samples = _short_rates_read((*kept[start:], sample)[-MAX_SAMPLES:], now)
    changes: dict[str, object] = {"samples": samples}
    action = decision.action
    if action is not _HOLD:
        changes["last_set_desired"] = decision.target
        if action is _UP:
            changes["last_scale_up_at"] = now
        elif decision.target < m.running:  # down
            changes["last_scale_down_at"] = now
    if m.running >= m.current:
        changes["unmet_since"] = None
    elif state.unmet_since is None:
        changes["unmet_since"] = now
    if more:
        changes.update(more)
    for name in _STATE_FIELDS:  # dataclasses.replace without its per-field checks: every tick
        if name not in changes:
            changes[name] = getattr(state, name)
    return ControllerState(**changes)  # type: ignore[arg-type]


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
        limit = binding_cap(settings, cap)
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


def largest_term(terms: Terms) -> tuple[int, Winner]:
    """The largest term, workers, and its name (0 and `Winner.NONE` when every term is 0)."""
    name, value = STEADY, terms.steady  # first of equals: steady, then trend
    if terms.trend > value:
        name, value = TREND, terms.trend
    if terms.drain > value:
        name, value = DRAIN, terms.drain
    return (value, name) if value > 0 else (0, Winner.NONE)
