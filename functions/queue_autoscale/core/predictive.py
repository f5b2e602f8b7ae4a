"""The predictive policy: one chance-constrained choice of fleet per tick (docs/decision.md).

Measure; forecast the arrivals over the horizon as a distribution; predict which jobs due
within it each fleet plan leaves late (core/pickup.py) and the steady state's tail after it
(Erlang C); choose the fewest workers whose predicted miss share fits the chance level, which
the realized compliance alone moves (core/predictive_knobs.py chance_level). The safety
constraints are the hybrid's own functions (`constraints.bounds`, `constraints.movement`), and
the record is `decision.build_decision`'s. Pure: the snapshot, settings, state and `now` in; a
decision record and the next state out.
"""

from __future__ import annotations

from queue_autoscale.core import pickup, sla_loop
from queue_autoscale.core import predictive_knobs as knobs
from queue_autoscale.core.constraints import bounds, max_allowed, movement
from queue_autoscale.core.decision import (
    build_decision,
    hold_on_bad_inputs,
    largest_term,
    next_state,
)
from queue_autoscale.core.measures import Measures, input_problems, measure
from queue_autoscale.core.models import (
    ControllerState,
    Evaluation,
    QueueSettings,
    QueueSnapshot,
    Terms,
    TrendModel,
    Winner,
)
from queue_autoscale.core.queueing import wait_exceeds_probability, workers_for_sla
from queue_autoscale.core.trend import persistent_forecast_rate

POLICY = "predictive"


def decide_predictive(
    snapshot: QueueSnapshot,
    settings: QueueSettings,
    state: ControllerState,
    now: float,
    model: TrendModel | None = None,
) -> Evaluation:
    """One tick of the predictive controller for one queue.

    Bounded work for every finite input: two Erlang C walks stopped past the cap M (about 8 M k
    float steps each, see queueing.servers_for_sla) and O(log M) evaluations of the plan's miss
    share, each over `COHORT_POINTS` cohorts."""
    m = measure(snapshot, settings)
    problems = input_problems(snapshot, settings, now)
    if problems:
        return hold_on_bad_inputs(snapshot, settings, state, now, m, problems, POLICY)
    k = knobs.derive(settings)
    loop = sla_loop.update(state, snapshot.pickups, settings, now)
    level = knobs.chance_level(k.budget, loop.started, loop.late, k.level_floor)
    forecast = persistent_forecast_rate(state.samples, m.arrival_rate, now, settings, model)
    rate = max(m.arrival_rate, forecast)  # a forecast only ever raises the plan's rate
    dispersion = max(knobs.DISPERSION_FLOOR, snapshot.arrival_dispersion or 0.0)
    cap = max_allowed(settings)
    steady = _steady(m.arrival_rate, m, settings, dispersion, level, cap)
    trend = steady if rate == m.arrival_rate else _steady(rate, m, settings, dispersion, level, cap)
    fleet = _fleet(m, state, k, now)
    outlook = pickup.Outlook(
        backlog=float(m.visible),
        oldest_age_seconds=m.oldest_age_seconds,
        rate=rate,
        dispersion=dispersion,
        rate_window_seconds=snapshot.rate_window_seconds,
        service_rate=m.service_rate,
        sla_seconds=settings.sla_seconds,
        landing_seconds=k.landing_seconds,
        reach_seconds=k.reach_seconds,
        horizon_seconds=k.horizon_seconds,
    )
    due = pickup.cohorts(outlook, knobs.COHORT_POINTS)
    hold = pickup.hold_late(fleet, outlook, due)
    guess = max(steady, trend)
    transient, share = pickup.smallest_plan(fleet, outlook, due, hold, level, cap, guess)
    terms = Terms(steady=steady, trend=trend, drain=transient)
    raw, winner = largest_term(terms)
    if raw != transient:  # the steady state asks for more: the horizon's share at its plan
        share = pickup.miss_share(raw, fleet, outlook, due, hold)
    why = _words(raw, share, level, k, loop.compliance, m, rate, dispersion, settings, winner)
    recommendation, steps, _ = bounds(raw, terms, m, snapshot, state, settings)
    remembered = min(max(raw, settings.min_workers), cap)  # the delayed off reads the plan
    held = knobs.movement_settings(settings, k)
    target, moves = movement(recommendation, m.current, snapshot, state, held, now)
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
        steps=steps + moves,
        policy=POLICY,
        realized_compliance=loop.compliance,
    )
    loop_state = {
        "realized_started": loop.started,
        "realized_late": loop.late,
        "realized_excused": 0.0,
        "realized_through": loop.through,
    }
    after = next_state(state, settings, now, m, remembered, decision, loop_state)
    return Evaluation(decision, after)


def _steady(
    rate: float,
    m: Measures,
    settings: QueueSettings,
    dispersion: float,
    level: float,
    cap: int,
) -> int:
    """Workers whose steady state keeps P(pickup > SLA) within `level` at `rate` jobs/s: Erlang
    C, its wait tail's decay scaled by the Poisson variance over the measured one (2 / (1 + D)
    near the load: Kingman's heavy-traffic scaling), so bursty arrivals ask for more."""
    return workers_for_sla(
        rate,
        m.mean_job_seconds,
        settings.worker_concurrency,
        _effective_sla(settings.sla_seconds, dispersion),
        1.0 - level,
        max_workers=cap,
    )


def _effective_sla(sla_seconds: float, dispersion: float) -> float:
    """The SLA the Poisson model is asked about so its tail matches arrivals of `dispersion` D:
    S x 2 / (1 + D), seconds."""
    return sla_seconds * 2.0 / (1.0 + dispersion)


def _fleet(m: Measures, state: ControllerState, k: knobs.Knobs, now: float) -> pickup.Fleet:
    """The fleet now: running, and the pending workers with when they land (the last scale-up's
    order a lead after it; unknown: a whole lead from now)."""
    pending = m.current - m.running if m.current > m.running else 0
    lands = k.landing_seconds
    if pending and state.last_scale_up_at is not None:
        lands = min(lands, max(0.0, state.last_scale_up_at + k.landing_seconds - now))
    return pickup.Fleet(running=m.running, pending=pending, pending_lands_in=lands)


def _words(  # noqa: PLR0913 - the numbers the reason quotes, each computed once a tick
    plan: int,
    share: float,
    level: float,
    k: knobs.Knobs,
    compliance: float | None,
    m: Measures,
    rate: float,
    dispersion: float,
    settings: QueueSettings,
    winner: Winner,
) -> str:
    """The reason in words: the plan, its predicted miss share against the level and budget,
    what bound it, and what was forecast."""
    realized = "none counted yet" if compliance is None else f"realized {compliance:.2%}"
    binding = {
        "drain": "the jobs due before the horizon (backlog and arrivals until workers land)",
        "trend": "the steady state at the forecast rate (Erlang C)",
        "steady": "the steady state at the measured rate (Erlang C)",
    }.get(str(winner), "nothing waiting or arriving")
    return (
        f"plan {plan} (predicted miss share {share:.2%} of the jobs due within "
        f"{k.horizon_seconds:g} s, level {level:.2%}: budget {k.budget:.2%}, {realized}); "
        f"bound by {binding}; forecast {rate:.2f} jobs/s, dispersion {dispersion:.2f}, "
        f"{m.visible} waiting (oldest {m.oldest_age_seconds:.0f} s), "
        f"{m.service_rate:.3g} jobs/s per worker{m.prior_note}; steady-state P(pickup > "
        f"{settings.sla_seconds:g} s) {_steady_tail(plan, m, rate, settings, dispersion):.2%}"
    )


def _steady_tail(
    plan: int, m: Measures, rate: float, settings: QueueSettings, dispersion: float
) -> float:
    """The steady state's P(pickup > SLA) with `plan` workers at `rate` (1 at or past the load)."""
    return wait_exceeds_probability(
        plan * settings.worker_concurrency,
        rate,
        m.mean_job_seconds,
        _effective_sla(settings.sla_seconds, dispersion),
    )
