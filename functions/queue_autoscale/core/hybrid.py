"""Our hybrid policy: max(Erlang-C steady state, trend, backlog drain), then the constraints.

DESIGN.md section 4. Pure: the snapshot, settings, state and `now` come in; a decision record
and the next controller state go out.
"""

from __future__ import annotations

import math
from dataclasses import replace

from queue_autoscale.core import hot as hot_terms
from queue_autoscale.core import recurrence, sla_loop
from queue_autoscale.core.constraints import (
    Step,
    bounds,
    burst_floor,
    confirm_reorder,
    history_covers,
    load_release,
    max_allowed,
    movement,
)
from queue_autoscale.core.decision import (
    build_decision,
    hold_on_bad_inputs,
    largest_term,
    next_state,
)
from queue_autoscale.core.drain import carried_backlog_workers, carried_wait_seconds
from queue_autoscale.core.drain_plan import drain_plan
from queue_autoscale.core.measures import Measures, input_problems, measure
from queue_autoscale.core.models import (
    DRAIN,
    STEADY,
    Constraint,
    ControllerState,
    Evaluation,
    QueueSettings,
    QueueSnapshot,
    Terms,
    TrendModel,
)
from queue_autoscale.core.queueing import workers_for_sla
from queue_autoscale.core.trend import persistent_forecast_rate
from queue_autoscale.core.words import loop_words, term_words

POLICY = "hybrid"
MIN_EARLY_RELEASE = 2
"""Workers above the sustained need before a budget-paid early release (`_held_settings`): one
idle worker is the rate window's noise (Erlang C moves 21..23 at a steady 20 jobs/s), and
releasing it early tripled the flaps on steady traffic (the bench steady run at SLA 10 s, p95:
6 -> 20)."""


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
    # the sizing rate: the long window alone on a loose SLA, the settled load where it applies,
    # the short window alone between recurring bursts
    m, settled = hot_terms.settled_measures(
        state, snapshot, _loose_sla_rate(m, snapshot, settings), settings, now
    )
    m = _between_bursts_rate(m, snapshot, state, settings, now)
    loop = sla_loop.update(
        state, snapshot.pickups, settings, now, recurrence.last_onset(state.bursts), state.surge_at
    )
    cap = max_allowed(settings)  # every term's search stops just past it: bounded work
    carry = carried_wait_seconds(settings)  # > 0 on a loose SLA (the held settings' too)
    need = _workers(m.arrival_rate, m, settings, cap, carry)
    rec = recurrence.update(state, need, m.arrival_rate, m.mean_job_seconds, settings, now)
    headroom = _spent_headroom(loop, rec, settings, now)
    steady, lam = need, m.arrival_rate
    hot = headroom <= 0 and hot_terms.allowed(loop, rec, snapshot, settings, now, settled)
    if headroom > 0:  # the SLA loop: sized for a higher rate
        lam = m.arrival_rate * (1.0 + headroom)
        steady = _workers(lam, m, settings, cap, carry)
    elif hot:  # the SLA loop: budget to spare, so run hotter than Erlang C (core/hot.py)
        steady = min(need, hot_terms.workers(lam, m, snapshot, settings, cap))
    forecast = persistent_forecast_rate(state.samples, lam, now, settings, model)
    trend = steady if forecast == lam else _workers(forecast, m, settings, cap, carry)
    if hot and forecast != lam:
        trend = min(trend, hot_terms.workers(forecast, m, snapshot, settings, cap))
    # the holds of the constraints below (no sizing term reads them)
    base = settings
    fresh = carry > 0 and not history_covers(state, settings.stabilization_window_seconds, now)
    settings, paid = _held_settings(settings, loop, rec, headroom, m, max(need, trend), fresh)
    plan = drain_plan(m, state, settings, now, cap, loop.started, hot_terms.dispersion(snapshot))
    surge = hot_terms.surging(plan.arrival_rate, m, snapshot, settings)
    drain = plan.workers  # running hot, a drain that is no surge is held to the hot size
    if hot and not surge:
        drain = min(
            drain,
            max(steady, trend, hot_terms.workers(plan.arrival_rate, m, snapshot, settings, cap)),
        )
    # a backlog standing when a burst begins costs the burst's first jobs (core/hot.py)
    onset = 0 if surge else hot_terms.onset_workers(m, snapshot, loop.spare, base, cap)
    terms = Terms(steady=max(steady, onset), trend=trend, drain=drain)
    raw, winner = largest_term(terms)
    why = term_words(winner, terms, m, forecast, settings, plan)
    if winner is STEADY and (onset > steady or steady < need):  # not Erlang C's size
        why = hot_terms.steady_words(need, steady, onset, m, loop.spare, base)
    why += loop_words(headroom, loop.compliance, rec, settings)
    recommendation, steps, remembered = bounds(raw, terms, m, snapshot, state, settings)
    recommendation, remembered = _floors(
        rec, recommendation, remembered, m, snapshot, cap, steps, carry
    )
    # the stabilization window reads the reaction spans only on a scale-down (`movement`)
    unread = _reaction_spans(state, rec, settings, now) if recommendation < m.current else ()
    target, moves = movement(recommendation, m.current, snapshot, state, settings, now, unread)
    if paid is not None:  # the budget pays for only `paid` of the idle workers
        held = movement(recommendation, m.current, snapshot, state, base, now, unread)
        target, moves = _paid_release(target, moves, held, m.current, paid)
    target, confirm = confirm_reorder(
        target,
        m.current,
        state,
        settings,
        now,
        spare=loop.spare,
        service_rate=m.service_rate,
        bursty=not hot_terms.poisson_like(snapshot),
    )
    if confirm is not None:
        moves = [*moves, confirm]
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
        headroom=headroom,
    )
    loop_state = {
        "realized_started": loop.started,
        "realized_late": loop.late,
        "realized_excused": loop.excused,
        "realized_through": loop.through,
        "headroom": loop.headroom,
        "bursts": rec.bursts,
        "burst_ends": rec.ends,
        "reorder_deferred_at": now if confirm is not None else None,
        "settled": settled,
        "surge_at": _surge_at(
            state,
            rec,
            winner is DRAIN and surge,
            target > m.current,
            settings,
            now,
        ),
    }
    return Evaluation(decision, next_state(state, base, now, m, remembered, decision, loop_state))


def _floors(
    rec: recurrence.Recurrence,
    recommendation: int,
    remembered: int,
    m: Measures,
    snapshot: QueueSnapshot,
    cap: int,
    steps: list[Step],
    carry: float,
) -> tuple[int, int]:
    """(recommendation, remembered) after the burst floor, or on a loose SLA (`carry`, the
    carried wait, > 0), whose backlog carries a burst's onset and the load, after the load
    release instead."""
    if carry == 0:
        return burst_floor(rec, recommendation, remembered, m.current, cap, steps)
    return load_release(recommendation, m, snapshot, steps), remembered


def _workers(rate: float, m: Measures, settings: QueueSettings, cap: int, carry: float) -> int:
    """Workers for `rate` jobs/s at the measured job time: on a loose SLA (`carry`, the
    carried wait `carried_wait_seconds`, > 0) those that let the backlog carry the load within
    it (core/drain.py), else Erlang C (the search stops past `cap`)."""
    if carry > 0:
        return carried_backlog_workers(
            backlog=m.visible,
            arrival_rate=rate,
            service_rate=m.service_rate,
            running=m.running,
            carry_seconds=carry,
            horizon_seconds=settings.forecast_horizon_seconds,
            max_workers=cap,
        )
    return workers_for_sla(
        rate,
        m.mean_job_seconds,
        settings.worker_concurrency,
        settings.sla_seconds,
        settings.percentile,
        max_workers=cap,
    )


def _held_settings(
    settings: QueueSettings,
    loop: sla_loop.LoopReading,
    rec: recurrence.Recurrence,
    headroom: float,
    m: Measures,
    need: int,
    fresh: bool,
) -> tuple[QueueSettings, int | None]:
    """The settings this tick's constraints use, and how many idle workers a partly paid early
    release may let go (None: no such limit): with SLA-loop headroom, capacity is kept
    `hold_factor` x longer after bursts; once a burst is over (delayed off), it is held one
    provisioning lead plus an interval and then released at once. A burst that recurs on a
    period is released after one interval: the burst floor brings its capacity back a lead
    before the next is due, so none of it would be re-ordered within a lead (the delayed-off
    rule keeps only such workers).

    Otherwise idle capacity (the fleet above the sustained `need`, max(steady, trend) without
    headroom, workers) is held only the delayed-off time, a lead plus an interval, instead of
    the stabilization window, when a mistake is paid for: were it needed again at once, the
    `need` fleet absorbs what it would have served for the lead it takes to come back within
    the SLA (idle x lead <= need x SLA: that backlog waits at most an SLA), the loop's unspent
    miss budget covers the jobs a mistake makes late (idle x mu x T <= spare, T = lead +
    interval - SLA, at least an interval: a job queued for a released worker waits the reaction
    time until it is back, late for the part past its SLA), and more than one worker is idle
    (`MIN_EARLY_RELEASE`). When the budget pays for only some of the idle workers (at least
    `MIN_EARLY_RELEASE`), those go too (never slower than without the budget), at the
    down-cooldown's pace, so one such bet is outstanding per cooldown. A tight target has
    little to spend, a loose one a lot. When the SLA is at least a lead, a step down taken in
    error keeps a job waiting about a lead, within its SLA, until the workers are back, so a
    whole release also steps every interval instead of every down-cooldown.

    On a loose SLA a `fresh` state (samples spanning less than the stabilization window) releases
    nothing early: the early release shortens the hold of capacity shown idle, not the cold
    start's, which keeps the fleet until the window is covered. Until then the long rate window
    the loose SLA sizes on (and the load release reads) may not be full: a new queue's counters
    start with it, and the seconds before read as no arrivals (the bench's diurnal, p95: 24.6 of
    35 jobs/s 210 s in, released 34 -> 27; the backlog the fleet under the load then built, 2,800
    jobs, was served in the scored window).
    """
    if headroom > 0:
        window = settings.stabilization_window_seconds * loop.hold_factor
        return replace(settings, stabilization_window_seconds=window), None
    lead, interval = settings.provisioning_lead_seconds, settings.evaluation_interval_seconds
    hold = settings.forecast_horizon_seconds  # the delayed off: a lead plus an interval
    if rec.over:
        if rec.recurring:
            hold = interval
        window = min(settings.stabilization_window_seconds, hold)
        return replace(
            settings, stabilization_window_seconds=window, scale_down_percent=100.0
        ), None
    if fresh:
        return settings, None
    idle = m.current - need  # workers above the sustained need
    late_for = max(interval, settings.forecast_horizon_seconds - settings.sla_seconds)
    paid = math.floor(loop.spare / (m.service_rate * late_for)) if loop.spare > 0 else 0
    absorbable = need * settings.sla_seconds / lead if lead > 0 else math.inf
    absorbed = math.floor(absorbable) if math.isfinite(absorbable) else idle  # lead ~ 0: all
    releasable = min(idle, paid) if idle <= absorbed else 0
    if releasable < MIN_EARLY_RELEASE:
        return settings, None
    window = min(settings.stabilization_window_seconds, hold)
    if releasable < idle:  # the budget pays for part of it: decide() lets that part go
        return replace(settings, stabilization_window_seconds=window), releasable
    cooldown = settings.scale_down_cooldown_seconds
    if sla_loop.covers_lead(settings):
        cooldown = min(cooldown, settings.evaluation_interval_seconds)
    return replace(
        settings, stabilization_window_seconds=window, scale_down_cooldown_seconds=cooldown
    ), None


def _reaction_spans(
    state: ControllerState, rec: recurrence.Recurrence, settings: QueueSettings, now: float
) -> tuple[tuple[float, float], ...]:
    """The spans (epoch s, [start, end)) whose recommendations the stabilization window no
    longer reads: the reaction time (`sla_loop.reaction_seconds`) after the last burst onset
    and after the last surge ordered for (`surge_at`), once it has passed, where the SLA covers
    a lead (`sla_loop.covers_lead`).

    Those ticks sized for the burst while the fleet was its reaction (their misses spend no
    budget); past it, the window keeps what the traffic after the reaction asks for. With the
    SLA at least a lead, a fleet let go too early is back, and the backlog picked up, within
    the SLA (NASA x10 60 s p99.9: 543,190 -> 538,721 worker-s at 100 %)."""
    if not sla_loop.covers_lead(settings):
        return ()
    reaction = sla_loop.reaction_seconds(settings)
    anchors = (recurrence.last_onset(rec.bursts), state.surge_at)
    return tuple((a, a + reaction) for a in anchors if a is not None and now - a >= reaction)


def _paid_release(
    target: int, moves: list[Step], held: tuple[int, list[Step]], current: int, paid: int
) -> tuple[int, list[Step]]:
    """Where the budget pays for only `paid` of the idle workers: the target and steps, going no
    lower than `held` (the unstretched window and cooldown's move) or `current - paid` allow."""
    held_target, held_moves = held
    floor = min(held_target, current - paid)
    if target >= floor:
        return target, moves
    step = Step(
        Constraint.STABILIZATION,
        f"early release: down by at most {paid}, the idle workers the miss budget pays for",
    )
    return floor, [*held_moves, step]


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
    return m._replace(arrival_rate=long, window_rate=long)


def _between_bursts_rate(
    m: Measures,
    snapshot: QueueSnapshot,
    state: ControllerState,
    settings: QueueSettings,
    now: float,
) -> Measures:
    """With bursts recurring on a period (`recurrence.regular`), size on the short window
    alone.

    The long window then averages a burst with the quiet gap after it: its rate is neither's
    sustained load, and after a burst it keeps the fleet near the burst's size for the whole
    window (300 s). The next burst's need comes back from the anticipation floor, a lead
    before it is due; a rise the recurrence did not expect still shows in the short window.
    """
    short = snapshot.arrival_rate_short
    if short is None or not math.isfinite(short) or short < 0 or short >= m.arrival_rate:
        return m
    if not recurrence.regular(state.bursts, settings, now):
        return m
    return m._replace(arrival_rate=short, window_rate=short)


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
    if sla_loop.after_onset(recurrence.last_onset(rec.bursts), settings, now):
        return 0.0
    return loop.headroom


def _surge_at(
    state: ControllerState,
    rec: recurrence.Recurrence,
    drain_surge: bool,
    going_up: bool,
    settings: QueueSettings,
    now: float,
) -> float | None:
    """When the last surge was ordered for on the backlog's growth alone (epoch s): now, if the
    drain won on a surge (`hot.surging`), the fleet goes up for it and no onset or surge came
    within the refractory time (`recurrence.surge_onset`); else the one remembered."""
    if (
        drain_surge
        and going_up
        and recurrence.surge_onset(rec.bursts, state.surge_at, settings, now)
    ):
        return now
    return state.surge_at
