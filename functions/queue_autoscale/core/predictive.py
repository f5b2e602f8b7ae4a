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

import math
from collections.abc import Callable, Sequence
from functools import partial
from typing import NamedTuple

from queue_autoscale.core import falls, onsets, orders, pickup, sla_loop
from queue_autoscale.core import predictive_knobs as knobs
from queue_autoscale.core.constraints import bounds, max_allowed, movement
from queue_autoscale.core.decision import (
    build_decision,
    hold_on_bad_inputs,
    largest_term,
    next_state,
)
from queue_autoscale.core.dispersion import (
    HorizonReading,
    effective_sla,
    horizon_error,
    horizon_reading,
    long_window_dispersion,
    read_horizon,
    short_window_dispersion,
)
from queue_autoscale.core.drain import growth_arrival_rate
from queue_autoscale.core.measures import Measures, input_problems, measure
from queue_autoscale.core.models import (
    ControllerState,
    Evaluation,
    Fall,
    Order,
    QueueSettings,
    QueueSnapshot,
    Terms,
    TrendModel,
    Winner,
)
from queue_autoscale.core.predictive_words import (
    band_words,
    fall_words,
    fleet_words,
    surge_words,
    words,
)
from queue_autoscale.core.queueing import (
    hot_workers,
    walk_quantile,
    workers_for_sla,
)
from queue_autoscale.core.snapshot import watched_seconds, watched_since, watched_view
from queue_autoscale.core.trend import persistent_forecast_rate, rise_slope

POLICY = "predictive"


class Sizing(NamedTuple):
    """How this tick sizes the steady state: each a mechanism (`knobs.MECHANISMS`) with its test."""

    rise_in_backlog: bool
    """"backlog-rise", S > L + I: a rise (the short window's, the trend's forecast, or a forecast
    burst starting within the reach) is not read into the steady state: the backlog shows it
    within an interval, and the workers the horizon's plan orders for it land before its jobs
    are due. The horizon's plan still forecasts its arrivals at the higher rate."""
    at_load: bool
    """"load-steady", S > L + I: the steady state sizes at the load and the delayed off keeps
    the workers that serve it: a fleet a worker short of the load builds a backlog the plan
    orders for before its jobs are due. The burst model tests its onsets and ends against
    what this steady plan serves."""
    walk_seconds: float
    """"walk": the window W the rate's noise is read over where the steady state may run hot
    (`_steady`; 0: Erlang C alone)."""
    band_seconds: float
    """"load-band", where `at_load`: the window W the load's lower bound is read over, so that
    its noise neither orders a worker nor keeps one (0: the load as measured)."""
    fall_sigmas: float
    """Where `at_load`, how many standard deviations below the load the kept need reads its
    lower bound (`_kept`): the move tests' (`Knobs.move_sigmas`). There the kept need only
    tells a fall from the load's noise, and a false fall stops a worker the backlog orders back
    (a flap), so it reads at the move tests' false-alarm rate; the percentile is the plan's."""
    reach_seconds: float
    """The reach L + I the walk holds a fleet over until a correction lands, s."""
    load_window: bool
    """"load-window", where `at_load`: the kept need holds the load R + W ahead (`_kept`)."""
    held_seconds: float
    """"kept-window": R + W, how far ahead the delayed off's kept need also holds its walk
    (`_kept`; at the load, "load-window") and keeps a forecast burst's fleet (`_remembered`), s:
    as far ahead as its rate was measured back, plus the reach a re-order takes to land; 0: the
    reach alone."""


def _sizing(k: knobs.Knobs, off: frozenset[str], window: float) -> Sizing:
    """The tick's sizing mechanisms, each on where its test holds and it is not switched off;
    `window` is the long rate window W, s."""
    at_load = k.correctable and "load-steady" not in off
    return Sizing(
        rise_in_backlog=k.correctable and "backlog-rise" not in off,
        at_load=at_load,
        walk_seconds=window if "walk" not in off else 0.0,
        band_seconds=window if at_load and "load-band" not in off else 0.0,
        fall_sigmas=k.move_sigmas,
        reach_seconds=k.reach_seconds,
        load_window=at_load and "load-window" not in off,
        held_seconds=k.reach_seconds + window if "kept-window" not in off else 0.0,
    )


class _Tick(NamedTuple):
    """One tick's inputs and what its measure step derived from them, read by every later step."""

    snapshot: QueueSnapshot
    settings: QueueSettings
    state: ControllerState
    now: float
    off: frozenset[str]
    m: Measures
    """The measures, with the one rate the steady state sizes on (`_sizing_rate`)."""
    seen: float
    """The rate the horizon's arrivals are forecast at, jobs/s (`_sizing_rate`)."""
    k: knobs.Knobs
    loop: sla_loop.LoopReading
    level: float
    """The chance level: the predicted miss share a plan may have."""
    dispersion: float
    """The long window's index of dispersion D (`dispersion.long_window_dispersion`), the noise
    the tests of a move read (a rise, a growth, a burst's onset)."""
    spread: float
    """The index of dispersion the sizing reads (the steady state, the kept need, the horizon's
    arrivals): D, or where no correction lands within the SLA the horizon's, where higher
    ("horizon", `dispersion.read_horizon`): the arrivals' spread over a reach, which a
    per-second index does not see where the rate moves over minutes."""
    horizon: HorizonReading
    """The horizon's dispersion with this tick's reading, kept for the next tick."""
    sizing: Sizing
    cap: int
    """The most workers the decision can order (`constraints.max_allowed`)."""
    gain: float
    """The SLA loop's integral term, kept for the next tick (`knobs.chance_level`)."""
    falls: falls.FallReading
    """The fall memory with this tick's rates, kept for the next tick (core/falls.py)."""
    noise: Callable[[float], float]
    """z of p of a rate's noise over the short window, jobs/s (`_short_noise`): what the fall
    memory and the burst model read a move of the short rate against."""


class _Plan(NamedTuple):
    """The choose step's outcome: the terms, the plan and what bound it, and its reason."""

    terms: Terms
    raw: int
    winner: Winner
    forecast: float
    """The forecast rate the record keeps, jobs/s."""
    why: str
    size: Callable[[float], int]
    """The steady state at a rate, with the tick's measures and sizing (`_steady`)."""
    plans: pickup.Plans
    reading: onsets.Onsets
    """The recurring-burst model's reading: its memory for the next state and any forecast."""
    held: int
    """Workers the delayed off keeps for a fall's return (`_held`; 0: none)."""


def decide_predictive(
    snapshot: QueueSnapshot,
    settings: QueueSettings,
    state: ControllerState,
    now: float,
    model: TrendModel | None = None,
    off: frozenset[str] = frozenset(),
) -> Evaluation:
    """One tick of the predictive controller for one queue; `off` names mechanisms
    (`knobs.MECHANISMS`) switched off for an ablation (none in production). Bounded work for
    every finite input: Erlang C walks and random-walk sizes stopped past the cap M (about 8 M k
    float steps each, queueing.servers_for_sla and hot_workers) and O(log M) evaluations of the
    plan's miss share, each over `COHORT_POINTS` cohorts; the trend's step test is O(n^2) in the
    samples within two short windows (`trend.step_onset`; n at most `decision.MAX_SAMPLES`)."""
    window = snapshot.rate_window_seconds  # W whole: the history kept and the mechanisms' spans
    history = onsets.history_seconds(window, settings.forecast_horizon_seconds)
    snapshot = watched_view(snapshot, watched_seconds(snapshot, state, now))
    m = measure(snapshot, settings)
    problems = input_problems(snapshot, settings, now)
    if problems:
        return hold_on_bad_inputs(snapshot, settings, state, now, m, problems, POLICY)
    t = _measure(snapshot, settings, state, now, off, m, window)  # 1. measure
    plan = _choose(t, model)  # 2-4. forecast, predict each plan's misses, choose
    recommendation, steps, _ = bounds(plan.raw, plan.terms, t.m, snapshot, state, settings)
    target, moves = movement(
        recommendation,
        t.m.current,
        snapshot,
        state,
        settings,
        now,
        t.k.delayed_off_seconds,
        knobs.down_cooldown(off),
    )
    decision = build_decision(
        snapshot=snapshot,
        settings=settings,
        now=now,
        measures=t.m,
        terms=plan.terms,
        raw=plan.raw,
        winner=plan.winner,
        forecast=plan.forecast,
        target=target,
        why=plan.why,
        steps=steps + moves,
        policy=POLICY,
        realized_compliance=t.loop.compliance,
    )
    remembered = _remembered(t, plan)  # what the delayed off keeps
    after = next_state(
        state, settings, now, t.m, remembered, decision, _policy_state(t, plan, target), history
    )
    return Evaluation(decision, after)


def _measure(
    snapshot: QueueSnapshot,
    settings: QueueSettings,
    state: ControllerState,
    now: float,
    off: frozenset[str],
    m: Measures,
    rate_window: float,
) -> _Tick:
    """Step 1: the knobs, the realized compliance and the chance level it sets, the arrivals'
    dispersion, the sizing mechanisms and the one rate the steady state sizes on. The sizing
    mechanisms span the long window W whole (`rate_window`, s) even while the queue is younger:
    their rates are read over the time watched, but a thinner sample must not widen the band a
    release waits for, nor shorten what is held (a worker a full window keeps stays)."""
    k = knobs.derive(settings, off)
    loop = sla_loop.update(state, snapshot.pickups, settings, now, surge_at=state.surge_at)
    late = loop.late - loop.excused if "excused" not in off else loop.late
    chance = knobs.ChanceLevel(k.budget, 1.0)
    window = knobs.loop_window_seconds(settings)  # the loop's, and the horizon reading's memory
    if "loop" not in off:
        chance = knobs.chance_level(
            k.budget, loop.started, late, loop.late, state.chance_gain, loop.seconds, window
        )
    dispersion = long_window_dispersion(snapshot, settings.percentile)
    short_window = snapshot.short_window_seconds
    interval = settings.evaluation_interval_seconds
    error = horizon_error(
        state.samples, m.short_rate, now, short_window, rate_window, interval / 2.0
    )
    previous = HorizonReading(state.horizon_dispersion, state.horizon_weight)
    horizon = horizon_reading(
        previous, error, loop.seconds, window, dispersion, settings.percentile
    )
    spread = dispersion
    if not k.correctable and "horizon" not in off:
        spread = read_horizon(
            dispersion, horizon, short_window, k.uncorrected_seconds, interval, rate_window, window
        )
    sizing = _sizing(k, off, rate_window)
    m, seen = _sizing_rate(
        m, snapshot, dispersion, settings.percentile, k.move_sigmas, sizing.rise_in_backlog
    )
    span = k.reach_seconds + rate_window  # R + W
    noise = _short_noise(snapshot, settings.percentile, dispersion)
    # an open fall stays evidence for the loop window: a return the hold missed is a late job
    # the loop still counts
    fell = falls.read(snapshot, state, noise, span, window, now, m.arrival_rate)
    if fell.lull and "lulls" in off:  # the ablation: only a fall that came back vouches
        fell = fell._replace(held_rate=None, lull=False)
    cap = max_allowed(settings)
    return _Tick(
        snapshot,
        settings,
        state,
        now,
        off,
        m,
        seen,
        k,
        loop,
        chance.level,
        dispersion,
        spread,
        horizon,
        sizing,
        cap,
        chance.gain,
        fell,
        noise,
    )


def _short_noise(
    snapshot: QueueSnapshot, percentile: float, dispersion: float
) -> Callable[[float], float]:
    """z of p of a rate's noise over the short window w, jobs/s: z sqrt(D lambda / w), D the
    long window's index of dispersion. What the burst model (core/onsets.py) and the fall memory
    (core/falls.py) read a move of the short rate against."""
    z = walk_quantile(percentile)
    short = snapshot.short_window_seconds

    def noise(rate: float) -> float:
        return z * math.sqrt(dispersion * rate / short)

    return noise


def _walk_error(rate: float, dispersion: float, window: float, level: float) -> float:
    """z of the chance level of the error of a rate read over `window` W seconds,
    sqrt(D lambda / W), jobs/s: how far above the measured rate a walk drifts."""
    return walk_quantile(1.0 - level) * math.sqrt(dispersion * rate / window)


def _held(t: _Tick, surge: onsets.Surge | None) -> int:
    """Workers the delayed off keeps through an open fall as deep as the last that came back
    ("returns", core/falls.py), or below any rate read before ("lulls"): the fewest whose
    backlog, over the span tau = L + I / 2 + w - S after the rate returns to the fall's, is
    still picked up within the SLA (`queueing.hot_workers` from an empty queue over tau, at the
    chance level, drifting at the rate's upper bound as the steady state's walk does). A return
    is read in full only once the short window w holds it, and workers ordered then land
    L + I / 2 later, so the jobs of its first tau are due before they do. 0 without such a
    fall, where L + I / 2 <= S (an order placed as the return shows lands before its first jobs
    are due), or where the recurring-burst model forecasts the next burst (`surge`,
    core/onsets.py): its back-tested forecast orders the return's workers to land before it, so
    a hold would only keep them idle through the lull."""
    rate, uncorrected = t.falls.held_rate, t.k.uncorrected_seconds
    if rate is None or not uncorrected > 0 or surge is not None or "returns" in t.off:
        return 0
    span = uncorrected + t.snapshot.short_window_seconds
    error = _walk_error(rate, t.spread, t.snapshot.rate_window_seconds, t.level)
    held = hot_workers(
        arrival_rate=rate + error,
        least_rate=0.0,
        backlog=0.0,
        service_rate_per_worker=t.m.service_rate,
        sla_seconds=t.settings.sla_seconds,
        reaction_seconds=span,
        percentile=1.0 - t.level,
        max_workers=t.cap,
        dispersion=t.spread,
    )
    fall = t.falls.fall  # the estimates' noise through a lull lowers no hold: the most so far
    return min(max(held, fall.held if fall is not None else 0), t.cap)


def _choose(t: _Tick, model: TrendModel | None) -> _Plan:
    """Steps 2-4: forecast the arrivals (the trend's and the recurring burst's, each only
    raising the rate), size the steady state at the measured and the forecast rate, predict the
    miss share of each plan over the horizon, and take the largest of the three terms."""
    m, settings, state, off, sizing = t.m, t.settings, t.state, t.off, t.sizing
    # the step test's noise, z sqrt(D)
    noise = walk_quantile(settings.percentile) * math.sqrt(t.dispersion)
    forecast = persistent_forecast_rate(
        state.samples, m.arrival_rate, t.now, settings, model, noise, m.short_rate
    )
    rate = max(m.arrival_rate, forecast)  # a forecast only ever raises the plan's rate
    reading = _onsets(t)
    surge = reading.surge
    if surge is not None and surge.starts_in < t.k.reach_seconds and not sizing.rise_in_backlog:
        forecast = max(forecast, surge.rate)  # the steady state past the reach is the burst's
    ahead = max(rate, forecast)
    size = partial(  # the steady state at a rate, with the tick's measures and sizing
        _steady,
        m=m,
        settings=settings,
        dispersion=t.spread,
        level=t.level,
        cap=t.cap,
        sizing=sizing,
    )
    fleet = _fleet(m, state.orders if "orders" not in off else (), state, t.k, t.now)
    # where the backlog carries a rise, it carries a burst's too: its onset shows within an
    # interval, and the workers ordered then land before its jobs are due
    ahead_of = surge if not sizing.rise_in_backlog or "burst-backlog" in off else None
    outlook = pickup.Outlook(
        backlog=float(m.visible),
        oldest_age_seconds=m.oldest_age_seconds,
        rate=max(rate, t.seen, _growth_rate(m, state, settings, t.dispersion, t.now, t.k)),
        dispersion=t.spread,
        rate_window_seconds=t.snapshot.rate_window_seconds,
        service_rate=m.service_rate,
        sla_seconds=settings.sla_seconds,
        landing_seconds=t.k.landing_seconds,
        reach_seconds=t.k.reach_seconds,
        horizon_seconds=t.k.horizon_seconds,
        surge_in=math.inf if ahead_of is None else ahead_of.starts_in,
        surge_rate=0.0 if ahead_of is None else ahead_of.rate,
    )
    plans = pickup.Plans(fleet, outlook, pickup.cohorts(outlook, knobs.COHORT_POINTS))
    # the estimates' noise raises no worker while holding keeps the horizon within the level
    quiet = plans.share(fleet.current) <= t.level and surge is None
    steady, banded = _up_band(t, size, m.arrival_rate, quiet)
    trend = steady  # where the backlog carries a rise, the steady state reads no forecast
    if ahead != m.arrival_rate and not sizing.rise_in_backlog:
        trend, ahead_banded = _up_band(t, size, ahead, quiet)
        banded = banded or ahead_banded
    transient, share = plans.smallest(t.level, t.cap, max(steady, trend))
    terms = Terms(steady=steady, trend=trend, drain=transient)
    raw, winner = largest_term(terms)
    if raw != transient:  # the steady state asks for more: the horizon's share at its plan
        share = plans.share(min(raw, t.cap))
    why = words(
        raw,
        share,
        t.level,
        t.k,
        t.loop.compliance,
        m,
        outlook,
        settings,
        winner,
        sizing.at_load,
        t.dispersion,
    )
    held = _held(t, surge)
    why += fleet_words(fleet) + surge_words(surge, ahead_of is not None) + fall_words(t.falls, held)
    if banded:
        why += band_words(m.current)
    return _Plan(terms, raw, winner, forecast, why, size, plans, reading, held)


def _up_band(t: _Tick, size: Callable[[float], int], rate: float, quiet: bool) -> tuple[int, bool]:
    """The steady state at `rate` jobs/s (`size`), and whether the rate's noise held it at the
    fleet ("up-band"): a steady state above the fleet raises it only where the load's lower
    bound, `rate` less z_p of the error of a rate read over the long window W
    (`_least_rate`), still asks for more than the fleet has. The delayed off lowers the fleet
    only below what a rate within its noise asks for (`_kept`, at the upper bound), so the two
    make one band around the estimate, and the noise of the rate and job-time estimates moves
    no worker either way (Erlang C moving 21 <-> 22 at a steady 20 jobs/s flapped a worker
    every few minutes; a tuned KEDA holds 21). Only where every other reading is quiet
    (`quiet`: holding the fleet keeps the horizon's predicted miss share within the level, and
    no recurring burst is forecast), the sizing rate is the long window's (no move was read in
    the short one), and S <= L + I (past it the load's lower bound is already the steady
    state's, "load-band")."""
    full = size(rate)
    current = t.m.current
    if full <= current or not quiet or "up-band" in t.off or t.k.correctable:
        return full, False
    if t.m.arrival_rate != t.snapshot.arrival_rate:  # the short window moved: no noise
        return full, False
    z = walk_quantile(t.settings.percentile)
    low = _least_rate(rate, t.spread, t.snapshot.rate_window_seconds, z)
    if size(low) > current:
        return full, False
    return current, True


def _remembered(t: _Tick, plan: _Plan) -> int:
    """The sustained need the delayed off keeps this tick, workers: the kept need (`_kept`) or
    the trend's, at least the floor and at most the cap; with "rise-kept", also what a rise
    asks back before a re-order could land; and the steady state at a forecast burst's rate
    when it starts within R + W ("kept-window", `Sizing.held_seconds`), where the plan reads
    the burst (not where the backlog carries a rise): a worker stopped now would be ordered
    back for it within the flap window. It only holds workers; it orders none."""
    m, settings = t.m, t.settings
    kept = _kept(m, t.snapshot, settings, t.spread, t.level, t.cap, t.sizing)
    remembered = min(max(kept, plan.terms.trend, settings.min_workers), t.cap)
    if "rise-kept" not in t.off:  # a worker the rise asks back before a re-order lands stays
        back = _returning_rate(
            m.arrival_rate, t.snapshot, t.state, settings, t.dispersion, t.k, t.now
        )
        returns = plan.terms.steady if back == m.arrival_rate else plan.size(back)  # no rise: sized
        remembered = min(max(remembered, returns), t.cap)
    remembered = max(remembered, plan.held)  # a fall as deep came back: for its return
    surge = plan.reading.surge  # a forecast burst asks a stopped worker back within R + W
    held = t.sizing.held_seconds if not t.sizing.rise_in_backlog else 0.0
    if surge is not None and surge.starts_in < held:
        remembered = min(max(remembered, plan.size(surge.rate)), t.cap)
    return remembered


def _policy_state(t: _Tick, plan: _Plan, target: int) -> dict[str, object]:
    """The state the policy keeps past the shared sample: the realized compliance's counts,
    the last surge no order could save, the burst model's memory and the orders in flight."""
    return {
        "realized_started": t.loop.started,
        "realized_late": t.loop.late,
        "realized_excused": t.loop.excused,
        "realized_through": t.loop.through,
        "chance_gain": t.gain,
        "horizon_dispersion": t.horizon.mean,
        "horizon_weight": t.horizon.weight,
        "surge_at": t.now if plan.plans.missing_anyway else t.state.surge_at,
        "bursts": plan.reading.bursts,
        "burst_ends": plan.reading.ends,
        "fall": _fall_held(t, plan),
        "fall_returned": t.falls.returned,
        "fall_returned_after": t.falls.after,
        "lowest_rate": t.falls.lowest,
        "orders": orders.placed(
            t.state.orders,
            plan.plans.fleet.pending,
            t.m.current,
            target,
            t.now,
            orders.kept_limit(t.k.landing_seconds, t.settings.evaluation_interval_seconds),
        ),
    }


def _fall_held(t: _Tick, plan: _Plan) -> Fall | None:
    """The open fall for the next state, with the most workers held for its return so far."""
    fall = t.falls.fall
    if fall is None or plan.held <= fall.held:
        return fall
    return fall._replace(held=plan.held)


def ablated(*off: str) -> Callable[..., Evaluation]:
    """`decide_predictive` with the named mechanisms (`knobs.MECHANISMS`) switched off, for the
    ablation (sim/verdict.py runs each variant on the validation set)."""
    unknown = set(off) - set(knobs.MECHANISMS)
    if unknown:
        raise ValueError(f"unknown mechanisms {sorted(unknown)}: known {knobs.MECHANISMS}")
    return partial(decide_predictive, off=frozenset(off))


def _onsets(t: _Tick) -> onsets.Onsets:
    """The recurring-burst model's reading (core/onsets.py): a rate's noise is z of its sd
    sqrt(D lambda / w) over the short window w (`_Tick.noise`), and the steady plan serves its
    workers x mu (`Sizing.at_load`: a fleet at the load as measured, the steady state's sizing).
    The plan tested against is Erlang C's alone (`_steady` with no window to walk over): its
    workers x mu is what it serves, where a plan the random walk sized serves more than its
    workers x mu (it runs hot, a backlog absorbing the noise), and its c mu read a quiet rate's
    noise as an onset."""
    m, state, settings, sizing = t.m, t.state, t.settings, t.sizing
    if "recurrence" in t.off:
        return onsets.Onsets(state.bursts, state.burst_ends, None)
    plain = sizing._replace(walk_seconds=0.0, band_seconds=0.0)

    def serves(rate: float) -> float:
        return _steady(rate, m, settings, t.dispersion, t.level, t.cap, plain) * m.service_rate

    return onsets.update(
        state.bursts,
        state.burst_ends,
        state.samples,
        m.arrival_rate,
        t.noise,
        serves,
        t.k.reach_seconds,
        t.snapshot.rate_window_seconds,
        t.now,
    )


def _steady(
    rate: float,
    m: Measures,
    settings: QueueSettings,
    dispersion: float,
    level: float,
    cap: int,
    sizing: Sizing,
    through: float = 0.0,
) -> int:
    """Workers whose steady state keeps P(pickup > SLA) within `level` at `rate` jobs/s.

    Erlang C, its wait tail's decay scaled by the Poisson variance over the measured one
    (2 / (1 + D) near the load: Kingman's heavy-traffic scaling), so bursty arrivals ask for
    more; or fewer where the fleet may run hot ("walk", `Sizing.walk_seconds` W > 0 to read
    the rate's noise over): near rho = 1 the backlog is a random walk, and a fleet whose walk
    over the reach L + I, drifting at the rate's upper bound lambda + z_level sqrt(D lambda /
    W), still leaves the backlog within the SLA (`queueing.hot_workers`) holds until a
    correction lands.
    With `through` past the reach, the walk also holds over that many seconds (the kept need's
    R + W, `_kept`): the larger of the two fleets, so a drift that drains a backlog by then
    does not excuse one that is late at the reach.
    Its floor is the load's lower bound (`_least_rate`), so the noise of the rate and job time
    estimates does not move a fleet at the load by a worker each way. Where the backlog carries
    the noise (`Sizing.at_load`: S > L + I, so a plan is corrected within the SLA), the load
    alone, floor(lambda E[S] / k), at the load's lower bound ("load-band", read over
    `Sizing.band_seconds`): the jobs its noise leaves waiting are the horizon's
    (core/pickup.py), which orders for them when they would be late, and noise alone orders no
    worker."""
    z = walk_quantile(settings.percentile)
    if sizing.at_load:
        low = _least_rate(rate, dispersion, sizing.band_seconds, z)
        return _load_workers(low, m, settings, cap, math.floor)
    window = sizing.walk_seconds
    erlang = workers_for_sla(
        rate,
        m.mean_job_seconds,
        settings.worker_concurrency,
        effective_sla(settings.sla_seconds, dispersion),
        1.0 - level,
        max_workers=cap,
    )
    if not window > 0 or not rate > 0:  # no window to read the rate's noise over
        return erlang
    error = _walk_error(rate, dispersion, window, level)
    walk = partial(
        hot_workers,
        arrival_rate=rate + error,
        least_rate=_least_rate(rate, dispersion, window, z),
        backlog=float(m.visible),
        service_rate_per_worker=m.service_rate,
        sla_seconds=settings.sla_seconds,
        percentile=1.0 - level,
        max_workers=cap,
        dispersion=dispersion,
    )
    hot = walk(reaction_seconds=sizing.reach_seconds)
    if through > sizing.reach_seconds and hot < erlang:  # held there as well
        hot = max(hot, walk(reaction_seconds=through))
    return min(erlang, hot)


def _least_rate(rate: float, dispersion: float, window: float, z: float) -> float:
    """The load's lower bound, jobs/s (>= 0): `rate` less `z` (the percentile's normal quantile
    z_p, or `Sizing.fall_sigmas`) standard deviations of the error of a load read over `window`
    W seconds, sqrt((D + 1) lambda / W): the arrivals' counts (D lambda / W) and the mean of
    about lambda W exponential job times (Erlang C's own service model). `rate` itself with no
    window (0) or no rate."""
    if not window > 0 or not rate > 0:
        return rate
    least = rate - z * math.sqrt((dispersion + 1.0) * rate / window)
    return least if least > 0 else 0.0


def _load(rate: float, m: Measures, settings: QueueSettings) -> float:
    """The load at `rate` jobs/s in workers kept busy, lambda E[S] / k."""
    return rate * m.mean_job_seconds / settings.worker_concurrency


def _load_workers(
    rate: float,
    m: Measures,
    settings: QueueSettings,
    cap: int,
    rounding: Callable[[float], int],
) -> int:
    """Workers the load lambda E[S] / k keeps busy, rounded by `rounding` (cap + 1: past the
    cap, or not finite)."""
    load = _load(rate, m, settings)
    if not load < cap:
        return cap + 1
    return rounding(load) if load > 0 else 0


def _kept(
    m: Measures,
    snapshot: QueueSnapshot,
    settings: QueueSettings,
    dispersion: float,
    level: float,
    cap: int,
    sizing: Sizing,
) -> int:
    """The sustained need the delayed off remembers, workers: the steady state at the measured
    rate raised by the percentile's normal quantile of that rate's own noise, sd sqrt(D lambda /
    W) over the long window W. Where the backlog carries the noise (`Sizing.at_load`) the
    workers that serve the load, ceil(lambda E[S] / k): the plan sizes at the floor and orders
    more when the backlog asks, and a worker is stopped only while the rest still serve the load
    (below that the backlog grows and orders it back: a flap). While every waiting job can still
    be saved by a re-order (the oldest has waited at most S - (L + I): workers ordered now land
    within the reach, before it is due), that load is its lower bound ("load-band",
    `Sizing.fall_sigmas` below it: the move tests' false-alarm rate, since a false fall here is
    a flap): a worker goes once the rest serve it, so the fleet follows a falling load down at
    its estimate's error rather than a worker above it, and a fleet a fraction of a worker above
    the load lets a backlog stand instead of emptying the queue and idling; a noise that stops a
    worker must then also order it back past the same bound, or the horizon's plan orders it
    before the backlog's jobs are due. A fleet goes up at the measured rate and comes down only
    below what a rate within its noise asks for: the rate's noise alone (Erlang C moving 22 <->
    23 at a steady 20 jobs/s) never stops a worker and orders it back. At least the fewest
    workers under which the backlog a stop grows at the measured load is not due within R + W
    ("load-window", `_load_window`). Where the fleet may run hot, the kept need is also the
    steady state whose walk at the measured rate holds R + W ahead ("kept-window",
    `Sizing.held_seconds`): a walk with no drift left reaches the backlog that orders a worker
    within minutes, so a fleet that holds only until a correction lands (20 workers at a steady
    20 jobs/s and a 10 s SLA) stops a worker and orders it back; the rate read over W is
    forecast as far ahead as it was measured back. That walk drifts at the rate's upper bound
    already (`_steady`), so it reads the measured rate: raised by its noise twice, it held 21
    workers at a steady 20 jobs/s and a 30 s SLA at p99.9, where 20 keep every job within it.
    Not the drain: workers ordered for a backlog are not needed once it is gone.
    """
    rate = m.arrival_rate
    if not rate > 0:
        return 0
    if sizing.at_load:
        line = settings.sla_seconds - sizing.reach_seconds
        if m.oldest_age_seconds <= line:
            rate = _least_rate(rate, dispersion, sizing.band_seconds, sizing.fall_sigmas)
        kept = _load_workers(rate, m, settings, cap, math.ceil)
        if sizing.load_window and sizing.held_seconds > 0:
            kept = max(kept, _load_window(m, settings, cap, line, sizing.held_seconds))
        return kept
    noise = math.sqrt(dispersion * rate / snapshot.rate_window_seconds)
    high = rate + walk_quantile(settings.percentile) * noise
    held = _steady(rate, m, settings, dispersion, level, cap, sizing, sizing.held_seconds)
    return max(_steady(high, m, settings, dispersion, level, cap, sizing), held)


def _load_window(m: Measures, settings: QueueSettings, cap: int, line: float, ahead: float) -> int:
    """The fewest workers n under which a backlog growing at the measured load rho = lambda E[S]
    / k takes longer than `ahead` seconds (R + W) to age to `line` (S - R, where the plan
    re-orders): from an empty queue the oldest's wait grows at (rho - n) / n s a second, so
    n > rho x ahead / (line + ahead); at most ceil(rho) and the cap. A worker stopped below it
    is asked back within R + W ("load-window")."""
    load = _load(m.arrival_rate, m, settings)
    if not (math.isfinite(load) and load > 0):
        return 0
    least = math.floor(load * ahead / (line + ahead)) + 1
    return min(least, math.ceil(load), cap)


def _sizing_rate(
    m: Measures,
    snapshot: QueueSnapshot,
    dispersion: float,
    percentile: float,
    sigmas: float,
    in_backlog: bool,
) -> tuple[Measures, float]:
    """The measures with the one rate the steady state sizes on, and the rate the horizon's
    arrivals are forecast at, jobs/s. The first is the long window's, unless the short window's
    differs from it by more than `sigmas` (`Knobs.move_sigmas`; or the percentile's normal quantile,
    where more) of the short window's noise (sd sqrt(D_w lambda / w), w the short window and
    D_w the smaller of its own counts' index and the long window's,
    `dispersion.short_window_dispersion`), when the load has moved and the short window's is
    taken. The short window's noise alone then never moves the fleet (on steady traffic the
    higher of the two windows flapped a worker up and down, and at z of p = 1.64 the test
    failed on one tick in ten), and a real step shows in it within a short window (and in the
    backlog's growth within an interval). Where the backlog carries the noise (`in_backlog`)
    the steady state reads no rise there: it shows in the backlog, which the horizon's plan
    orders for before its jobs are due; a fall still is read (idle workers leave no backlog to
    show them). The horizon's arrivals take the moved rate either way: the jobs a rise brings
    are due within the horizon."""
    long, short = snapshot.arrival_rate, snapshot.arrival_rate_short
    if long is None or short is None or not math.isfinite(long) or not math.isfinite(short):
        return m, m.arrival_rate
    if long < 0 or short < 0:
        return m, m.arrival_rate
    own = short_window_dispersion(snapshot, dispersion, percentile)
    noise = math.sqrt(own * max(long, short) / snapshot.short_window_seconds)
    line = max(walk_quantile(percentile), sigmas)
    seen = short if abs(short - long) > line * noise else long
    rate = long if in_backlog and seen > long else seen
    return m._replace(arrival_rate=rate, window_rate=rate), seen


def _returning_rate(
    rate: float,
    snapshot: QueueSnapshot,
    state: ControllerState,
    settings: QueueSettings,
    dispersion: float,
    k: knobs.Knobs,
    now: float,
) -> float:
    """The arrival rate a rise brings back before a worker stopped now could be ordered again
    and land, jobs/s: `rate` carried along the rise (`trend.rise_slope`) from the middle of the
    window it was read over (the long window W, or the short one w when the plan sized on it:
    on a rise a window's mean is the rate of half its length ago) to the end of the delayed
    off plus the mean landing L + I / 2, when a worker re-ordered at the delayed off's end
    would land. A stopped task that must start again within a lead bills the lead without
    serving (the delayed off's own reason), so the delayed off keeps what the rise asks for by
    then; `rate` itself without a rise."""
    # a tick at the watch's start read no counters: its rate is no reading to fit a rise from
    since = watched_since(snapshot, state)
    samples = state.samples if since is None else [s for s in state.samples if s.at > since]
    slope = rise_slope(samples, rate, dispersion, settings, now)
    if not slope > 0:
        return rate
    short = snapshot.arrival_rate_short
    window = snapshot.short_window_seconds if rate == short else snapshot.rate_window_seconds
    return rate + slope * (window / 2.0 + k.delayed_off_seconds + k.landing_seconds)


def _growth_rate(
    m: Measures,
    state: ControllerState,
    settings: QueueSettings,
    dispersion: float,
    now: float,
    k: knobs.Knobs,
) -> float:
    """The arrival rate the backlog's growth since the last tick implies, jobs/s (0 when it did
    not grow past the noise of D-dispersed arrivals, or the last tick is stale): the rate
    windows lag a step by most of their length, the backlog shows it within an interval
    (`drain.growth_arrival_rate`)."""
    last = state.samples[-1] if state.samples else None
    if last is None or not 0 < now - last.at <= settings.stale_after:
        return 0.0
    grown = growth_arrival_rate(
        visible=m.visible,
        previous_visible=last.visible,
        seconds=now - last.at,
        running=m.running,
        service_rate=m.service_rate,
        sigmas=k.move_sigmas,
        dispersion=dispersion,
    )
    return 0.0 if grown is None else grown


def _fleet(
    m: Measures, placed: Sequence[Order], state: ControllerState, k: knobs.Knobs, now: float
) -> pickup.Fleet:
    """The fleet now: running, and the pending workers with when each of the `placed` orders
    lands (a lead after it was placed, core/orders.py; one no order accounts for, a lead after
    the last scale-up)."""
    pending = m.current - m.running if m.current > m.running else 0
    landing = orders.landings(placed, pending, k.landing_seconds, state.last_scale_up_at, now)
    return pickup.Fleet(running=m.running, landing=landing)
