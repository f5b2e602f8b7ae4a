"""The predictive policy: named cases, its knobs, and hypothesis invariants."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from queue_autoscale.core import (
    ControllerState,
    CounterRow,
    QueueSettings,
    Sample,
    window_rates,
    workers_for_sla,
)
from queue_autoscale.core.constraints import max_allowed
from queue_autoscale.core.dispersion import long_window_dispersion
from queue_autoscale.core.models import Action, Constraint, Order, Winner
from queue_autoscale.core.predictive import POLICY, ablated, decide_predictive
from queue_autoscale.core.predictive_knobs import FALSE_ALARM_SECONDS, chance_level, derive
from queue_autoscale.core.trend import rise_slope
from tests.unit.core.builders import NOW, settings, snapshot
from tests.unit.core.test_invariants import configs, snapshots


def _decide(state: ControllerState | None = None, cfg: QueueSettings | None = None, **snap: Any):
    cfg = cfg or settings()
    return decide_predictive(snapshot(**snap), cfg, state or ControllerState("jobs"), NOW).decision


STEADY_20 = {"arrival_rate": 20.0, "running": 21, "desired": 21, "in_flight": 18, "visible": 2}


def test_steady_poisson_traffic_runs_hot_where_the_walk_allows_and_erlang_c_caps_it() -> None:
    # GIVEN 20 jobs/s of 1 s jobs, SLA 30 s at p95, the fleet at Erlang C's size (21)
    want = workers_for_sla(20.0, 1.0, 1, 30.0, 0.95)
    # WHEN the predictive policy decides, and with the walk switched off
    d = _decide(**STEADY_20)
    erlang = ablated("walk")(snapshot(**STEADY_20), settings(), ControllerState("jobs"), NOW)
    # THEN the plan is the load, 20: the load's lower bound is 20 - 1.645 sqrt(2 x 20 / 300) =
    # 19.4 jobs/s, and 20 workers' backlog after the reach (70 s), drifting at the upper rate
    # 20.42 jobs/s, is 2 + 0.42 x 70 + 1.645 sqrt(40.42 x 70) = 119 jobs, within 20 x 30 s;
    # Erlang C alone asks 21. The delayed off holds the fleet at 21; the record says so
    assert d.raw_target == 20 and erlang.decision.raw_target == want == 21
    assert d.target == 21 and d.action is Action.HOLD
    assert d.policy == POLICY and d.inputs_ok
    assert d.winner is Winner.STEADY
    assert "predicted miss share" in d.reason and "level 5.00%" in d.reason


def test_a_backlog_workers_cannot_clear_by_its_deadline_orders_workers() -> None:
    # GIVEN 3,000 jobs waiting, the oldest 20 s of a 60 s SLA, 20 jobs/s and 20 workers
    d = _decide(
        cfg=settings(sla_seconds=60.0, provisioning_lead_seconds=30.0),
        arrival_rate=20.0,
        visible=3_000,
        oldest_age_seconds=20.0,
        running=20,
        desired=20,
        in_flight=20,
        completion_rate=20.0,
    )
    # THEN the plan is bound by the jobs due within the horizon and goes well past the load
    assert d.winner is Winner.DRAIN
    assert d.target > 40 and d.action is Action.UP
    assert "bound by the jobs due before the horizon" in d.reason


def test_unusable_inputs_hold_through_the_shared_hold() -> None:
    d = _decide(visible=None, running=5, desired=5)
    assert not d.inputs_ok and d.target == 5 and d.action is Action.HOLD
    assert "inputs unusable (visible unknown)" in d.reason


def test_poison_guard_stops_the_climb() -> None:
    # GIVEN jobs failing in flight (80 %) and a backlog that would ask for more workers
    d = _decide(
        arrival_rate=20.0,
        visible=3_000,
        oldest_age_seconds=25.0,
        running=5,
        desired=5,
        in_flight=5,
        failure_rate=0.8,
    )
    assert d.target == 5 and Constraint.POISON_GUARD in d.constraints


def test_never_below_the_work_in_flight() -> None:
    # GIVEN 30 workers all busy and almost nothing arriving
    state = ControllerState("jobs", samples=(Sample(NOW - 400, 0.1, 0, 1),))
    d = _decide(state, arrival_rate=0.1, running=30, desired=30, in_flight=30)
    assert d.target == 30 and Constraint.IN_FLIGHT in d.constraints


def test_no_scale_down_while_a_deployment_rolls() -> None:
    state = ControllerState("jobs", samples=(Sample(NOW - 400, 0.1, 0, 1),))
    d = _decide(state, arrival_rate=0.1, running=30, desired=30, deployment_in_progress=True)
    assert d.target == 30 and Constraint.DEPLOYMENT in d.constraints


def test_delayed_off_keeps_a_worker_needed_within_lead_plus_interval() -> None:
    # GIVEN 30 workers, 5 jobs/s now, and a plan of 30 remembered 60 s ago (lead 60 + 30 s)
    cfg = settings()
    held = derive(cfg).delayed_off_seconds
    recent = ControllerState(
        "jobs", samples=(Sample(NOW - held - 30, 5.0, 0, 6), Sample(NOW - 60, 30.0, 0, 30))
    )
    old = ControllerState("jobs", samples=(Sample(NOW - held - 30, 5.0, 0, 6),))
    quiet = {"arrival_rate": 5.0, "running": 30, "desired": 30, "in_flight": 5}
    # THEN the recent need holds the fleet; once it is older than the delayed off it goes at once
    kept = _decide(recent, cfg, **quiet)
    assert kept.target == 30 and Constraint.STABILIZATION in kept.constraints
    released = _decide(old, cfg, **quiet)
    assert released.target == released.raw_target < 30 and released.constraints == ()


def test_the_cap_binds_and_says_so() -> None:
    d = _decide(
        cfg=settings(max_workers=8),
        arrival_rate=20.0,
        visible=3_000,
        oldest_age_seconds=25.0,
        running=8,
        desired=8,
        in_flight=8,
        completion_rate=8.0,
    )
    assert d.target == 8 and Constraint.MAX_WORKERS in d.constraints
    # the plan past the cap is quoted at the cap, the most the decision can order: 8 workers
    # starting 8 jobs/s behind 3,000 waiting, with 20 arriving, leave most jobs due late
    assert d.raw_target == 9
    assert "plan more than the 8 allowed (at 8: predicted miss share 93.75%" in d.reason
    assert "capped at max_workers 8 (wanted more than 8)" in d.reason


@pytest.mark.parametrize(
    ("started", "late", "level"),
    [
        pytest.param(10.0, 0.0, 0.05, id="too-few-jobs-to-tell: the budget"),
        pytest.param(1_000.0, 0.0, 0.10, id="none-late: spends the saved budget"),
        pytest.param(1_000.0, 50.0, 0.05, id="at-budget: the budget"),
        pytest.param(1_000.0, 80.0, 0.02, id="over-budget: pays it back"),
        pytest.param(1_000.0, 500.0, 0.001, id="far-over: one job of those counted"),
        pytest.param(100_000.0, 50_000.0, 0.00001, id="far-over, more counted: a finer floor"),
    ],
)
def test_chance_level_moves_with_realized_compliance(
    started: float, late: float, level: float
) -> None:
    # at rest (integral term 1, no time passed) the level is b + (b - m) at once
    chance = chance_level(0.05, started, late, late, 1.0, 0.0, 1_800.0)
    assert chance.level == pytest.approx(level)


def test_the_level_keeps_tightening_while_every_miss_stays_over_budget() -> None:
    # GIVEN 1,000 jobs counted at a 5 % budget: 3 % late that count against it (b + (b - m) =
    # 7 %) and 8 % late in all (the rest excused: no order could have saved them)
    gain, level = 1.0, 0.0
    for _ in range(180):  # 30 minutes of 10 s ticks, the loop's window T = 1,800 s
        gain, level = chance_level(0.05, 1_000.0, 30.0, 80.0, gain, 10.0, 1_800.0)[::-1]
    # THEN the integral term moved by exp((b - M) / b x t / T) = exp(-0.6): the level tightened
    assert gain == pytest.approx(math.exp(-0.6))
    assert level == pytest.approx(math.exp(-0.6) * 0.07)


def test_the_integral_term_returns_to_rest_once_the_share_is_within_budget() -> None:
    # GIVEN a tightened loop (g = 0.5), and a window now with no misses at all
    chance = chance_level(0.05, 1_000.0, 0.0, 0.0, 0.5, 1_800.0, 1_800.0)
    # THEN g grows by e (capped at 1): the level is the proportional law's 2b again
    assert chance.gain == 1.0
    assert chance.level == pytest.approx(0.10)
    # AND with too few jobs to tell a share of b the level is b and g is kept
    assert chance_level(0.05, 10.0, 5.0, 5.0, 0.5, 10.0, 1_800.0) == (0.05, 0.5)


def test_a_tighter_level_after_misses_asks_for_more_workers() -> None:
    # GIVEN 20 jobs/s at a 2 s SLA, once after a window that met its budget, once after one
    # that overspent it (pickups of 4 s in every counted second)
    cfg = settings(sla_seconds=2.0)
    fine = tuple((int(NOW) - 200 + s, 20, 20 * 100) for s in range(180))
    late = tuple((int(NOW) - 200 + s, 20, 20 * 4_000) for s in range(180))
    d_fine = _decide(cfg=cfg, **STEADY_20, pickups=fine)
    d_late = _decide(cfg=cfg, **STEADY_20, pickups=late)
    # THEN the level moves (10 % -> its floor, one of the 3,600 jobs counted: 0.03 %) and only
    # the level: 21 -> 23 (the walk's size at each level)
    assert (d_fine.raw_target, d_late.raw_target) == (21, 23)
    assert "level 10.00%" in d_fine.reason
    assert "level 0.03%" in d_late.reason


def test_the_loops_integral_term_is_carried_to_the_next_tick() -> None:
    # GIVEN the overspent window above, the last tick 10 s ago and the term at rest
    cfg = settings(sla_seconds=2.0)
    late = tuple((int(NOW) - 200 + s, 20, 20 * 4_000) for s in range(180))
    state = ControllerState("jobs", samples=(Sample(NOW - 10.0, 20.0, 2, 21),))
    after = decide_predictive(snapshot(**STEADY_20, pickups=late), cfg, state, NOW).state
    # THEN the term moved by exp((b - M) / b x 10 s / T), M = 1 (every counted job late) and
    # T = (L + S) / b = 1,240 s
    assert after.chance_gain == pytest.approx(math.exp((0.05 - 1.0) / 0.05 * 10.0 / 1_240.0))
    # AND with the loop switched off (the ablation) it stays at rest
    off = ablated("loop")(snapshot(**STEADY_20, pickups=late), cfg, state, NOW).state
    assert off.chance_gain == 1.0


def test_knobs_are_derived_from_lead_interval_and_sla() -> None:
    cfg = settings(provisioning_lead_seconds=60.0, evaluation_interval_seconds=10.0)
    k = derive(cfg)
    assert k.landing_seconds == 65.0 and k.reach_seconds == k.delayed_off_seconds == 70.0
    assert derive(cfg, frozenset({"mean-landing"})).landing_seconds == 60.0
    assert k.horizon_seconds == 100.0 and k.budget == pytest.approx(0.05)


@pytest.mark.parametrize(
    ("interval", "sigmas"), [(5.0, 3.197), (10.0, 2.991), (60.0, 2.394), (7200.0, 0.0)]
)
def test_move_tests_read_past_one_false_alarm_an_hour(interval: float, sigmas: float) -> None:
    # GIVEN an evaluation interval: the two upward move tests read it 3,600 / I times an hour
    k = derive(settings(evaluation_interval_seconds=interval))
    # THEN each reads a move past the normal quantile of half a false alarm an hour
    assert k.move_sigmas == pytest.approx(sigmas, abs=1e-3)
    if sigmas > 0:
        tail = 0.5 * math.erfc(k.move_sigmas / math.sqrt(2.0))
        assert 2 * tail * (FALSE_ALARM_SECONDS / interval) == pytest.approx(1.0)


@hsettings(max_examples=150, deadline=None)
@given(st.data())
def test_plan_respects_min_max_and_never_goes_below_work_in_flight(data: st.DataObject) -> None:
    cfg = data.draw(configs())
    snap = data.draw(snapshots(cfg))
    d = decide_predictive(snap, cfg, ControllerState("jobs"), NOW).decision
    assert cfg.min_workers <= d.target <= max_allowed(cfg)
    busy = -(-(snap.in_flight or 0) // cfg.worker_concurrency)
    assert d.target >= min(busy, max_allowed(cfg))


_SLAS = st.sampled_from([10.0, 30.0, 60.0, 300.0])
_PERCENTILES = st.sampled_from([0.9, 0.95, 0.99, 0.999])


@hsettings(max_examples=150, deadline=None)
@given(st.floats(0.0, 300.0), st.floats(0.0, 300.0), st.integers(1, 200), _SLAS, _PERCENTILES)
def test_plan_never_falls_as_the_rate_rises(
    rate_a: float, rate_b: float, running: int, sla: float, percentile: float
) -> None:
    # GIVEN no backlog (a backlog's share of the horizon's jobs falls as more arrive: the
    # budget is a share of every job, so more traffic may spare a worker of a backlog's drain)
    cfg = settings(sla_seconds=sla, percentile=percentile, max_workers=500)
    low_rate, high_rate = sorted((rate_a, rate_b))
    common = {"running": running, "desired": running}
    low = _decide(cfg=cfg, arrival_rate=low_rate, **common)
    high = _decide(cfg=cfg, arrival_rate=high_rate, **common)
    assert low.raw_target <= high.raw_target


@hsettings(max_examples=150, deadline=None)
@given(
    st.floats(0.0, 300.0),
    st.integers(0, 5_000),
    st.integers(0, 5_000),
    st.floats(0.0, 60.0),
    st.integers(1, 200),
    _SLAS,
    _PERCENTILES,
)
def test_plan_never_falls_as_the_backlog_rises(
    rate: float,
    backlog_a: int,
    backlog_b: int,
    age: float,
    running: int,
    sla: float,
    percentile: float,
) -> None:
    cfg = settings(sla_seconds=sla, percentile=percentile, max_workers=500)
    low_backlog, high_backlog = sorted((backlog_a, backlog_b))
    common = {"running": running, "desired": running, "oldest_age_seconds": age}
    low = _decide(cfg=cfg, arrival_rate=rate, visible=low_backlog, **common)
    high = _decide(cfg=cfg, arrival_rate=rate, visible=high_backlog, **common)
    assert low.raw_target <= high.raw_target


@pytest.mark.parametrize(
    ("long", "short", "sized"),
    [
        pytest.param(20.0, 20.8, 20.0, id="short-window-noise: the long window"),
        pytest.param(20.0, 19.2, 20.0, id="noise-below: the long window"),
        pytest.param(20.0, 21.2, 20.0, id="past-z-within-3-sd: the long window"),
        pytest.param(20.0, 18.8, 20.0, id="below-past-z-within-3-sd: the long window"),
        pytest.param(20.0, 21.9, 21.9, id="a-rise-past-3-sd: the short window"),
        pytest.param(20.0, 30.0, 30.0, id="a-rise-past-the-noise: the short window"),
        pytest.param(20.0, 5.0, 5.0, id="a-fall-past-the-noise: the short window"),
    ],
)
def test_the_plan_sizes_on_one_rate_window(long: float, short: float, sized: float) -> None:
    # GIVEN a 60 s short window at p95: the noise of 20 jobs/s (21.9 at most) is 0.58 (0.60)
    # jobs/s, so 1.64 sd (z of p) is 0.95 jobs/s and 2.99 sd (`Knobs.move_sigmas`, I = 10 s)
    # 1.73-1.80
    d = _decide(arrival_rate=long, arrival_rate_short=short, running=21, desired=21)
    # THEN the plan's rate is the long window's unless the short one moved past 3 sd
    assert d.arrival_rate == pytest.approx(sized)


def test_a_step_within_the_window_is_not_read_as_dispersion() -> None:
    # GIVEN 300 s of arrivals: 240 s at 10 jobs/s, then 60 s at 50 (long 18, short 50), each
    # second Poisson: the counts' variance is the step's 256 plus the noise's 18, D = 15.2
    step = {"arrival_rate": 18.0, "arrival_rate_short": 50.0, "running": 50, "desired": 50}
    d = _decide(arrival_dispersion=(256.0 + 18.0) / 18.0, **step)
    # THEN the plan reads the noise's dispersion, 1 (Poisson)
    assert "dispersion 1.00" in d.reason
    # AND a dispersion that is noise, not a step, is read as measured
    noisy = _decide(arrival_dispersion=4.0, arrival_rate=18.0, arrival_rate_short=18.0)
    assert "dispersion 4.00" in noisy.reason


def test_a_fall_after_a_burst_is_read_against_the_short_windows_own_noise() -> None:
    # GIVEN 300 s SLA at p99 (z = 2.326), 4.59 jobs/s over the long window, whose per-second
    # counts still hold a burst that ended before the short window began (D = 21.45), and
    # 2 jobs/s over the short window, whose own counts are Poisson-like (D = 1)
    cfg = settings(sla_seconds=300.0, percentile=0.99, evaluation_interval_seconds=10.0)
    after = {"arrival_rate": 4.59, "arrival_rate_short": 2.0, "running": 3, "desired": 3}
    own = _decide(cfg=cfg, arrival_dispersion=21.45, arrival_dispersion_short=1.0, **after)
    unknown = _decide(cfg=cfg, arrival_dispersion=21.45, **after)
    # THEN the short rate's noise is its own: 2.326 sqrt(1 x 4.59 / 60) = 0.64 jobs/s, and the
    # fall of 2.59 jobs/s is read; with only the long window's index (21.08 once the move at
    # the windows' boundary is taken out) the bar is 2.326 sqrt(21.08 x 4.59 / 60) = 2.95 jobs/s
    # and the plan sizes on the long window's 4.59
    assert own.arrival_rate == pytest.approx(2.0)
    assert unknown.arrival_rate == pytest.approx(4.59)


def test_a_rise_inside_the_short_window_is_read_against_the_long_windows_noise() -> None:
    # GIVEN 10 s SLA at p99.9 (z = 3.09): the long window reads 2.1 jobs/s with D = 3.858, of
    # which the move at the windows' boundary is 6.0 / 2.1 (rest 0.875 jobs/s against the short
    # window's 7.0), leaving D = 1.0; the short window holds a step (its own D = 24)
    cfg = settings(sla_seconds=10.0, percentile=0.999, evaluation_interval_seconds=10.0)
    onset = {"arrival_rate": 2.1, "arrival_rate_short": 7.0, "running": 3, "desired": 3}
    d = _decide(cfg=cfg, arrival_dispersion=3.858, arrival_dispersion_short=24.0, **onset)
    # THEN the smaller index counts: the bar is 3.09 sqrt(1.0 x 7 / 60) = 1.06 jobs/s and the
    # rise of 4.9 is read; the short window's own 24 would set it at 5.17 and miss the rise
    assert d.arrival_rate == pytest.approx(7.0)


@pytest.mark.parametrize(
    ("measured", "percentile", "read"),
    [
        (0.90, 0.95, 1.00),  # within 1.64 sd of Poisson's 1: noise, read as Poisson
        (0.80, 0.95, 0.80),  # 2.4 sd below 1: a smoother stream, read as measured
        (0.80, 0.999, 1.00),  # at p99.9 (z = 3.09) the same window is not evidence enough
        (0.20, 0.999, 0.20),  # a metronome-like producer is, at any percentile
        (1.10, 0.999, 1.10),  # above 1 it is read as measured, the cautious side
    ],
)
def test_a_stream_is_read_smoother_than_poisson_only_beyond_its_sampling_error(
    measured: float, percentile: float, read: float
) -> None:
    # GIVEN 300 s of arrivals at 18 jobs/s, flat (no step to take out), whose per-second counts
    # show `measured` variance / mean: for Poisson counts that estimate has a standard
    # deviation of sqrt((2 + 1 / 18) / 300) = 0.083
    cfg = replace(settings(), percentile=percentile)
    flat = {"arrival_rate": 18.0, "arrival_rate_short": 18.0, "running": 20, "desired": 20}
    # WHEN the plan reads the dispersion
    d = _decide(cfg=cfg, arrival_dispersion=measured, **flat)
    # THEN it is Poisson's 1 unless the window shows otherwise past z of the percentile
    assert f"dispersion {read:.2f}" in d.reason


def test_a_young_queue_reads_a_step_inside_its_watch_as_a_move_not_as_noise() -> None:
    # GIVEN a queue counted for 46 s, its controller ticking every 5 s (lead 10 s, SLA 30 s at
    # p95): 40 s of about 2 jobs a second (0, 2, 4, 2, ...), then 6 s of about 10, while one
    # worker of 2.13 jobs/s let the backlog grow from 12 to 55 since the last tick
    start = int(NOW) - 46
    counts = [(0, 2, 4, 2)[i % 4] for i in range(40)] + [6, 14, 7, 13, 6, 14]
    rates = window_rates(
        [CounterRow(second=start + i, queued=q) for i, q in enumerate(counts)], NOW
    )
    cfg = settings(evaluation_interval_seconds=5.0, provisioning_lead_seconds=10.0)
    state = ControllerState(
        "jobs", samples=tuple(Sample(NOW - 45 + 5 * i, 2.0, 12, 1) for i in range(9))
    )
    young = snapshot(
        visible=55, in_flight=1, oldest_age_seconds=10.7, mean_job_seconds=0.47,
        completion_rate=1.9 * 46 / 300,  # the worker's completions, over the 300 s window
        first_counter_second=float(start), arrival_rate=rates.arrival_rate,
        arrival_rate_short=rates.arrival_rate_short, arrival_dispersion=rates.arrival_dispersion,
        arrival_dispersion_short=rates.arrival_dispersion_short,
        arrival_dispersion_steps=rates.arrival_dispersion_steps,
    )  # fmt: skip
    # WHEN it decides, and again with only the windows' variance to read the noise from
    d = decide_predictive(young, cfg, state, NOW).decision
    variance = decide_predictive(replace(young, arrival_dispersion_steps=None), cfg, state, NOW)
    # THEN both windows span the same 46 s, so no split takes the step out of the variance:
    # it reads 3.54 where the successive differences read 1.58, and the growth test's line,
    # 3.20 sqrt((D x 10.73 + 2.13) x 5 s), is 31 jobs at 1.58 and 45 at 3.54: the 43 jobs
    # grown are read as 2.13 + 43 / 5 = 10.73 jobs/s, and 3 workers are ordered, not 2
    assert "arrivals 10.73 jobs/s, dispersion 1.58" in d.reason
    assert d.target == 3
    assert "arrivals 3.04 jobs/s, dispersion 3.54" in variance.decision.reason
    assert variance.decision.target == 2


@pytest.mark.parametrize(
    ("watched", "rate", "steps", "read"),
    [
        (10.0, 21.8, 1.28, 1.00),  # within 3.09 x sqrt(3.05 / 10) = 1.71 of 1: noise
        (46.0, 3.0, 2.11, 2.11),  # past 3.09 x sqrt(3.33 / 46) = 0.83: read as measured
        (46.0, 3.0, 0.10, 0.10),  # a smoother stream, past the same error below
        (300.0, 3.0, 0.10, 4.00),  # a queue watched past w splits its windows' variance instead
    ],
)
def test_a_young_queues_steps_index_is_read_off_poisson_only_past_its_sampling_error(
    watched: float, rate: float, steps: float, read: float
) -> None:
    # GIVEN a queue watched for `watched` s at `rate` jobs/s, flat (variance index 4 over W),
    # its successive differences reading `steps`, at p99.9 (z = 3.09)
    windows = {"rate_window_seconds": watched, "short_window_seconds": min(watched, 60.0)}
    young = snapshot(
        arrival_rate=rate, arrival_rate_short=rate, arrival_dispersion=4.0,
        arrival_dispersion_steps=steps, **windows,
    )  # fmt: skip
    # THEN the steps index stands for the noise only where both windows hold the same seconds,
    # and off Poisson's 1 only past z of its error sqrt((3 + 1 / lambda) / s), either way
    assert long_window_dispersion(young, 0.999) == pytest.approx(read)


def test_backlog_growth_since_the_last_tick_raises_the_plan_at_once() -> None:
    # GIVEN the rate windows still at 2 jobs/s, 3 workers, and 1,000 jobs waiting that were
    # not there 10 s ago (a step the windows have not seen yet)
    cfg = settings(evaluation_interval_seconds=10.0, max_workers=1_000)
    grew = ControllerState("jobs", samples=(Sample(NOW - 10, 2.0, 0, 3),))
    stood = ControllerState("jobs", samples=(Sample(NOW - 10, 2.0, 1_000, 3),))
    surge = {"arrival_rate": 2.0, "visible": 1_000, "oldest_age_seconds": 10.0, "running": 3}
    busy = {"desired": 3, "in_flight": 3, "completion_rate": 3.0}
    d_grew = _decide(grew, cfg, **busy, **surge)
    d_stood = _decide(stood, cfg, **busy, **surge)
    # THEN the plan forecasts the growth's rate, 1,000 / 10 s + 3 workers x 1 job/s, and asks
    # for more than the same backlog standing
    assert "arrivals 103.00 jobs/s" in d_grew.reason
    assert "arrivals 2.00 jobs/s" in d_stood.reason
    assert d_grew.target == d_grew.raw_target > d_stood.raw_target
    assert d_grew.winner is Winner.DRAIN


def _ticks(cfg: QueueSettings, snaps: list[dict[str, Any]], fleet: int) -> list[int]:
    """The targets of consecutive ticks 10 s apart from a fresh state, the fleet following each
    target at once (desired = running = the last target)."""
    state, targets = ControllerState("jobs"), []
    for i, snap in enumerate(snaps):
        now = NOW + 10 * i
        given = snapshot(taken_at=now, running=fleet, desired=fleet, **snap)
        evaluation = decide_predictive(given, cfg, state, now)
        state, fleet = evaluation.state, evaluation.decision.target
        targets.append(fleet)
    return targets


def test_workers_ordered_for_a_drained_backlog_are_released_without_the_delayed_off() -> None:
    # GIVEN 40 jobs/s on 48 workers, then for one tick 3,000 jobs waiting (the plan orders
    # well past the load for them), then the backlog gone
    cfg = settings(evaluation_interval_seconds=10.0, max_workers=1_000)
    load = {"arrival_rate": 40.0, "completion_rate": 40.0, "in_flight": 40}
    burst = {**load, "visible": 3_000, "oldest_age_seconds": 20.0, "in_flight": 48}
    targets = _ticks(cfg, [load] * 9 + [burst] + [load] * 3, 48)
    # THEN the fleet ordered for the backlog goes at the next tick, not a delayed off later
    assert targets[9] > 100
    assert targets[10] < 60


@pytest.mark.parametrize(
    ("off", "kept"),
    [pytest.param((), 23, id="walk"), pytest.param(("walk",), 25, id="erlang-c-alone")],
)
def test_rate_noise_alone_does_not_release_a_worker(off: tuple[str, ...], kept: int) -> None:
    # GIVEN 20 jobs/s measured over 300 s, 1 s jobs, SLA 1 s at p99, the fleet at 25: Erlang C
    # asks 24 at 20 jobs/s and 25 at 20 + z x sqrt(20 / 300) = 20.6 jobs/s; the walk 23 at both
    # (at 20.6 + 0.6: 22 workers leave (21.2 - 22) x 70 + 2.33 sqrt(43.2 x 70) = 72 jobs > 22 x 1 s,
    # 23 leave 3 <= 23)
    cfg = settings(sla_seconds=1.0, percentile=0.99)
    assert workers_for_sla(20.0, 1.0, 1, 1.0, 0.99) == 24
    steady = {"arrival_rate": 20.0, "completion_rate": 20.0, "in_flight": 20}
    state, fleet, targets = ControllerState("jobs"), 25, []
    for i in range(20):
        given = snapshot(taken_at=NOW + 10 * i, running=fleet, desired=fleet, **steady)
        evaluation = ablated(*off)(given, cfg, state, NOW + 10 * i)
        state, fleet = evaluation.state, evaluation.decision.target
        targets.append(fleet)
    # THEN the fleet comes down once, after the delayed off (70 s), to what a rate within its
    # noise asks for, and keeps it: the noise alone never stops a worker and orders it back
    assert targets == ([25] * 9 + [kept] * 11 if kept < 25 else [25] * 20)


def test_a_hot_fleet_keeps_the_worker_its_walk_asks_back_within_the_long_window() -> None:
    # GIVEN 20 jobs/s of 1 s jobs measured over W = 300 s, SLA 10 s at p95, 21 workers and
    # nothing waiting
    cfg = settings(sla_seconds=10.0, evaluation_interval_seconds=10.0)
    load = {"arrival_rate": 20.0, "completion_rate": 20.0, "running": 21, "desired": 21}

    def kept(*off: str) -> tuple[int, int]:
        """The plan, and the need the delayed off remembers (what it stops workers below)."""
        evaluation = ablated(*off)(
            snapshot(**load, in_flight=19), cfg, ControllerState("jobs"), NOW
        )
        return evaluation.decision.raw_target, evaluation.state.samples[-1].raw_target

    # WHEN the policy decides, and with "kept-window" off
    # THEN the plan runs hot at 20: at the rate's upper bound 20 + 2 x 1.645 sqrt(20 / 300) =
    # 20.85 jobs/s, 20 workers' backlog a reach (70 s) on is 0.85 x 70 + 1.645 sqrt(40.85 x 70)
    # = 147 jobs, within 20 x 10 s. The delayed off keeps 21: R + W = 370 s on, the walk at the
    # measured rate (drifting at its upper bound 20.42) leaves 0.42 x 370 + 1.645
    # sqrt(40.42 x 370) = 358 jobs, past 200 (a walk with no drift left orders the worker back
    # within minutes), where 21 leave -214 + 204 <= 210. Held at the reach alone the delayed
    # off keeps 20: the worker is stopped and ordered back
    assert kept() == (20, 21)
    assert kept("kept-window") == (20, 20)


@pytest.mark.xfail(
    strict=True,
    reason=(
        "the plan credits the waiting jobs the held fleet serves in time; jobs already past "
        "their deadline are late under every plan, so at 11 s of a 5 s SLA 234 waiting jobs "
        "ask for 9 workers where at 0 s they ask for 10 (found by the hypothesis invariant, "
        "which now holds the age within the SLA)"
    ),
)
def test_an_older_backlog_never_asks_for_fewer_workers() -> None:
    # GIVEN 234 jobs waiting at 17 jobs/s on 21 workers of 4 slots, SLA 5 s at p90
    cfg = settings(
        sla_seconds=5.0,
        percentile=0.9,
        min_workers=0,
        max_workers=21,
        worker_concurrency=4,
        evaluation_interval_seconds=10.0,
    )
    given = {
        "visible": 234,
        "arrival_rate": 17.0,
        "running": 21,
        "desired": 21,
        "mean_job_seconds": None,
        "completion_rate": None,
    }
    state = ControllerState("jobs", samples=(Sample(NOW - 600.0, 0.0, 0, 0),))
    # WHEN the oldest job has waited 0 s, and 11 s
    fresh = decide_predictive(snapshot(**given, oldest_age_seconds=0.0), cfg, state, NOW)
    aged = decide_predictive(snapshot(**given, oldest_age_seconds=11.0), cfg, state, NOW)
    # THEN the older backlog asks for at least as many workers
    assert aged.decision.target >= fresh.decision.target


def test_misses_no_order_can_prevent_are_excused_from_the_level() -> None:
    # GIVEN a backlog whose jobs are due before any order can land (SLA 10 s, lead 60 s)
    cfg = settings(sla_seconds=10.0, provisioning_lead_seconds=60.0)
    snap = snapshot(arrival_rate=5.0, visible=500, oldest_age_seconds=8.0, running=2, desired=2)
    after = decide_predictive(snap, cfg, ControllerState("jobs"), NOW).state
    # THEN the tick remembers it as the anchor of the reaction bound's misses
    assert after.surge_at == NOW
    quiet = snapshot(arrival_rate=5.0, running=6, desired=6)
    assert decide_predictive(quiet, cfg, ControllerState("jobs"), NOW).state.surge_at is None


def test_the_loop_and_its_excuse_switch_off_for_the_ablation() -> None:
    # GIVEN a window of 10,000 jobs counted, 400 of them late, 200 of those the reaction bound's
    state = ControllerState(
        "jobs", realized_started=10_000.0, realized_late=400.0, realized_excused=200.0
    )
    snap = snapshot(**STEADY_20)
    cfg = settings()  # b = 5 %

    def level(*off: str) -> str:
        return ablated(*off)(snap, cfg, state, NOW).decision.reason.split("level ")[1][:5]

    # THEN the level spends what the window saved: 5 % + (5 % - 200 / 10,000) = 8 %; with
    # every late start counted, 5 % + (5 % - 4 %) = 6 %; without the loop, the budget
    assert (level(), level("excused"), level("loop")) == ("8.00%", "6.00%", "5.00%")


def test_where_a_plan_is_corrected_within_the_sla_the_backlog_carries_the_noise() -> None:
    # GIVEN 20.5 jobs/s of 1 s jobs on 21 workers, lead 60 s + interval 10 s
    load = {"arrival_rate": 20.5, "completion_rate": 20.5, "running": 21, "desired": 21}
    loose = settings(sla_seconds=300.0, evaluation_interval_seconds=10.0)
    tight = settings(sla_seconds=60.0, evaluation_interval_seconds=10.0)
    # WHEN the SLA (300 s) exceeds lead + interval, and when it does not (60 s)
    carried = _decide(cfg=loose, **load)
    erlang = ablated("load-steady")(snapshot(**load), loose, ControllerState("jobs"), NOW).decision
    held = _decide(cfg=tight, **load)
    # THEN the first sizes at the load's lower bound, 20.5 - 1.645 sqrt(2 x 20.5 / 300) = 19.89
    # jobs/s: 19 busy workers (the rest of the load waits in the backlog, which the horizon's
    # plan orders for); switched off, and at 60 s, the steady state reads Erlang C's model and
    # runs hot at that lower bound: 20 workers
    assert carried.raw_target == 19 and "the backlog carries the noise" in carried.reason
    assert erlang.raw_target == 20 < workers_for_sla(20.5, 1.0, 1, 300.0, 0.95)
    assert "(Erlang C)" in erlang.reason
    assert held.raw_target == 20 and "(Erlang C)" in held.reason


def test_where_the_backlog_carries_the_noise_the_kept_need_is_the_loads_lower_bound() -> None:
    # GIVEN 20.5 jobs/s of 1 s jobs on 21 workers at SLA 300 s (> lead 60 s + interval 10 s)
    cfg = settings(sla_seconds=300.0, evaluation_interval_seconds=10.0)
    load = {"arrival_rate": 20.5, "completion_rate": 20.5, "running": 21, "desired": 21}
    # the oldest waited 240 s, past S - (L + I) = 300 - (60 + 10) = 230 s: a re-order lands late
    waiting = {"visible": 400, "oldest_age_seconds": 240.0}
    standing = {"visible": 400, "oldest_age_seconds": 230.0}  # a re-order still lands in time

    def kept(*off: str, **snap: Any) -> int:
        """The need the delayed off remembers for the tick (what it stops workers below)."""
        evaluation = ablated(*off)(snapshot(**load, **snap), cfg, ControllerState("jobs"), NOW)
        return evaluation.state.samples[-1].raw_target

    # WHEN nothing waits, a backlog stands that a re-order still saves, and one it does not
    # THEN with nothing waiting, or a backlog whose oldest job a re-order (landing within
    # L + I = 70 s) still saves, the delayed off keeps ceil(19.39) = 20 (the load's lower bound,
    # 20.5 - 2.99 sqrt(2 x 20.5 / 300)), so a worker can go and the backlog stands; with
    # "load-band" off it keeps ceil(20.5) = 21; with the oldest job past 230 s the fleet keeps
    # 21 as measured
    assert kept() == 20
    assert kept(**standing) == 20
    assert kept("load-band") == 21
    assert kept(**waiting) == 21


@pytest.mark.parametrize("percentile", [0.95, 0.99, 0.999])
def test_where_the_backlog_carries_the_noise_the_kept_need_reads_a_fall_at_the_move_tests_line(
    percentile: float,
) -> None:
    # GIVEN 20 jobs/s of 1 s jobs on 21 workers, nothing waiting, at SLA 300 s (> L + I = 70 s)
    cfg = settings(sla_seconds=300.0, evaluation_interval_seconds=10.0, percentile=percentile)
    load = {"arrival_rate": 20.0, "completion_rate": 20.0, "running": 21, "desired": 21}
    # WHEN the delayed off reads the need it keeps
    evaluation = decide_predictive(snapshot(**load), cfg, ControllerState("jobs"), NOW)
    # THEN at every percentile it reads the load's lower bound 2.99 sd below it (the move tests'
    # one false alarm an hour at I = 10 s: a false fall stops a worker the backlog orders back),
    # 20 - 2.99 sqrt(2 x 20 / 300) = 18.91 jobs/s: 19 workers. Read at p95's own 1.645 sd it
    # was 19.40: 20 workers, so p95 kept more than p99.9 (a diurnal day cost 0.3 % more)
    assert evaluation.state.samples[-1].raw_target == 19


def test_where_the_backlog_carries_the_noise_no_stop_is_asked_back_within_the_kept_window() -> None:
    # GIVEN 2 jobs/s of 1 s jobs on 2 workers at SLA 300 s p99.9 (> lead 60 s + interval 10 s)
    cfg = settings(sla_seconds=300.0, evaluation_interval_seconds=10.0, percentile=0.999)
    load = {"arrival_rate": 2.0, "completion_rate": 2.0, "running": 2, "desired": 2}

    def kept(dispersion: float, *off: str) -> int:
        """The need the delayed off remembers for the tick (what it stops workers below)."""
        snap = snapshot(**load, arrival_dispersion=dispersion)
        return ablated(*off)(snap, cfg, ControllerState("jobs"), NOW).state.samples[-1].raw_target

    # WHEN the arrivals are bursty (D = 30), and Poisson
    # THEN bursty, the load's lower bound is 2 - 2.99 sqrt(31 x 2 / 300) = 0.64 jobs/s: one
    # worker. With one, a backlog growing at 2 - 1 jobs/s ages to S - R = 230 s in 230 s, within
    # R + W = 370 s: the worker stopped would be ordered back (a flap). The delayed off keeps
    # the fewest n > 2 x 370 / (300 + 300) = 1.23: 2 ("load-window"; off, 1)
    assert kept(30.0) == 2
    assert kept(30.0, "load-window") == 1
    # AND at Poisson the lower bound, 2 - 2.99 sqrt(2 x 2 / 300) = 1.65, keeps 2 either way
    assert kept(1.0) == kept(1.0, "load-window") == 2


def test_where_the_backlog_carries_the_noise_a_rise_is_read_in_the_backlog_a_fall_at_once() -> None:
    cfg = settings(sla_seconds=300.0, evaluation_interval_seconds=10.0)
    base = {"completion_rate": 20.0, "running": 21, "desired": 21}
    # a short window 50 % above the long one: not sized on (nothing waits yet)
    up = _decide(cfg=cfg, arrival_rate=20.0, arrival_rate_short=30.0, **base)
    # a short window half the long one: sized on
    down = _decide(cfg=cfg, arrival_rate=20.0, arrival_rate_short=10.0, **base)
    # each at the load's lower bound: 20 - 1.645 sqrt(2 x 20 / 300) = 19.40 and
    # 10 - 1.645 sqrt(2 x 10 / 300) = 9.58 jobs/s
    assert up.raw_target == 19 and down.raw_target == 9


def test_each_use_of_the_correctable_test_is_its_own_mechanism() -> None:
    # GIVEN a short window 50 % above the long one at SLA 300 s > lead 60 s + interval 10 s
    cfg = settings(sla_seconds=300.0, evaluation_interval_seconds=10.0)
    snap = snapshot(arrival_rate=20.0, arrival_rate_short=30.0, completion_rate=20.0, running=21)
    state = ControllerState("jobs")

    def plan(*off: str) -> int:
        return ablated(*off)(snap, cfg, state, NOW).decision.raw_target

    # WHEN one mechanism is switched off at a time
    # THEN only "backlog-rise" off reads the rise (30 jobs/s at the load's lower bound,
    # 30 - 1.645 sqrt(2 x 30 / 300) = 29.26: 29 workers), only "load-band" off sizes at the load
    # as measured (20), and only "load-steady" off sizes by Erlang C's model (at 20 jobs/s 21
    # workers, or 20 running hot)
    assert plan() == 19
    assert plan("backlog-rise") == 29
    assert plan("load-band") == 20
    assert plan("load-steady", "walk") == workers_for_sla(20.0, 1.0, 1, 300.0, 0.95) == 21
    assert plan("load-steady") == 20


def test_a_scale_up_is_remembered_as_an_order_with_its_time() -> None:
    # GIVEN the backlog test's 3,000 jobs and 20 workers
    cfg = settings(sla_seconds=60.0, provisioning_lead_seconds=30.0)
    load = {"arrival_rate": 20.0, "visible": 3_000, "oldest_age_seconds": 20.0}
    busy = {"running": 20, "desired": 20, "in_flight": 20, "completion_rate": 20.0}
    evaluation = decide_predictive(snapshot(**load, **busy), cfg, ControllerState("jobs"), NOW)
    # THEN the workers it orders are one order placed now
    d = evaluation.decision
    assert d.action is Action.UP
    assert evaluation.state.orders == (Order(NOW, d.target - 20),)


def _ramp_samples(start: float, slope: float, seconds: int = 300) -> tuple[Sample, ...]:
    """A tick every 10 s over the last `seconds` (oldest first), the rate rising at `slope`
    jobs/s a second to `start` + slope x seconds now."""
    return tuple(
        Sample(NOW - age, start + slope * (seconds - age), 0, 0) for age in range(seconds, 0, -10)
    )


@pytest.mark.parametrize(
    ("samples", "rate", "rise"),
    [
        pytest.param(_ramp_samples(27.0, 0.01), 30.0, 0.01, id="a-ramp-going-on"),
        pytest.param(_ramp_samples(30.0, 0.0), 30.0, 0.0, id="level"),
        pytest.param(_ramp_samples(33.0, -0.01), 30.0, 0.0, id="a-fall"),
        pytest.param(_ramp_samples(30.0, 0.001), 30.3, 0.0, id="within-the-noise"),
        pytest.param(
            (*_ramp_samples(10.0, 0.0, 300)[:24], *_ramp_samples(30.0, 0.0, 70)),
            30.0,
            0.0,
            id="a-step-that-levelled-off",
        ),
    ],
)
def test_a_rise_is_read_only_where_it_goes_on_past_the_noise(
    samples: tuple[Sample, ...], rate: float, rise: float
) -> None:
    # GIVEN the ticks' rates over the trend window (300 s), Poisson arrivals, p95
    cfg = settings()
    # THEN only a rise beyond z of a flat rate's slope error that the last fifth carries on
    # counts, as its slope
    assert rise_slope(samples, rate, 1.0, cfg, NOW) == pytest.approx(rise, rel=0.02, abs=1e-9)


def test_the_delayed_off_keeps_what_a_rise_asks_back_before_a_reorder_lands() -> None:
    # GIVEN 30 jobs/s over the long window, rising 0.01 jobs/s a second for 300 s, 1 s jobs,
    # SLA 30 s at p95, lead 60 s and interval 30 s (delayed off 90 s)
    cfg = settings()
    state = ControllerState("jobs", samples=_ramp_samples(27.0, 0.01))
    ramp = snapshot(arrival_rate=30.0, completion_rate=30.0, running=33, desired=33)
    # WHEN the need it remembers is read with the rise and without it
    kept = decide_predictive(ramp, cfg, state, NOW).state.samples[-1].raw_target
    alone = ablated("rise-kept")(ramp, cfg, state, NOW).state.samples[-1].raw_target
    # THEN it keeps the steady state at the rate the rise reaches by the delayed off's end plus
    # a lead, read from the long window's middle: 30 + 0.01 x (150 + 90 + 60) = 33 jobs/s; 33
    # workers running hot there (the floor 33 - 1.645 sqrt(66 / 300) = 32.2; their backlog
    # 0.55 x 70 + 1.645 sqrt(66.5 x 70) = 150 jobs <= 33 x 30 s), Erlang C's 34 with the walk off
    erlang = ablated("walk")(ramp, cfg, state, NOW).state.samples[-1].raw_target
    assert kept == 33 > alone
    assert erlang == workers_for_sla(33.0, 1.0, 1, 30.0, 0.95) == 34


def test_where_the_backlog_carries_a_rise_the_steady_state_reads_no_forecast() -> None:
    # GIVEN a step from 10 to 50 jobs/s that the 300 s rate window smears into a ramp: the
    # ticks' rates rose 10 -> 48 over the last 300 s, 50 jobs/s now, SLA 300 s (> lead 60 s +
    # interval 10 s), the fleet at the load
    cfg = settings(sla_seconds=300.0, evaluation_interval_seconds=10.0)
    rising = tuple(Sample(NOW - 300 + 10 * i, 10.0 + 38.0 * i / 29, 0, 50) for i in range(30))
    state = ControllerState("jobs", samples=rising)
    load = {"arrival_rate": 50.0, "arrival_rate_short": 50.0, "running": 50, "desired": 50}
    d = decide_predictive(snapshot(**load, completion_rate=50.0), cfg, state, NOW).decision
    off = ablated("backlog-rise")(snapshot(**load, completion_rate=50.0), cfg, state, NOW)
    # THEN the forecast extrapolates the ramp to 59.2 jobs/s, and only the horizon's plan reads
    # it: the steady state stays at the load's lower bound, 50 - 1.645 sqrt(2 x 50 / 300) =
    # 49.05 jobs/s (49 workers), where with backlog-rise off the trend term sizes for the
    # forecast's, 59.2 - 1.645 sqrt(2 x 59.2 / 300) = 58.17 (58)
    assert d.forecast_rate == pytest.approx(59.2, abs=0.01)
    assert d.terms.trend == d.terms.steady == 49 and d.raw_target == 49
    assert off.decision.terms.trend == 58


def test_the_short_window_test_reads_the_noise_of_the_window_measured() -> None:
    # GIVEN 20 jobs/s over the long window and 22 over the short one (Poisson, p95: 3 sd)
    measured = snapshot(
        arrival_rate=20.0,
        arrival_rate_short=22.0,
        arrival_dispersion=1.0,
        running=22,
        desired=22,
        completion_rate=20.0,
        in_flight=20,
    )
    # WHEN it was measured over 60 s: noise sqrt(22 / 60) = 0.61, 2 > 3 x 0.61 = 1.82
    sixty = decide_predictive(measured, settings(), ControllerState("jobs"), NOW).decision
    # THEN the load moved, and the plan sizes on the short window's rate
    assert sixty.arrival_rate == pytest.approx(22.0)
    # WHEN over 30 s (the simulator's --short-window 30): noise 0.86, 2 < 3 x 0.86 = 2.57
    thirty = replace(measured, short_window_seconds=30.0)
    again = decide_predictive(thirty, settings(), ControllerState("jobs"), NOW).decision
    # THEN the same difference is that window's noise, and the long window's rate stands
    assert again.arrival_rate == pytest.approx(20.0)


def test_a_short_window_rise_left_to_the_backlog_still_reaches_the_horizons_arrivals() -> None:
    # GIVEN S 300 s > L + I = 70 s (the backlog carries the noise), 2 jobs/s over the long
    # window and 10 over the short one: a rise far past the short window's noise
    cfg = settings(
        sla_seconds=300.0, provisioning_lead_seconds=60.0, evaluation_interval_seconds=10.0
    )
    rising = snapshot(
        arrival_rate=2.0,
        arrival_rate_short=10.0,
        arrival_dispersion=1.0,
        running=2,
        desired=2,
        completion_rate=2.0,
        in_flight=2,
    )
    d = decide_predictive(rising, cfg, ControllerState("jobs"), NOW).decision
    # THEN the steady state leaves the rise to the backlog (it sizes on the long window's rate)
    assert d.arrival_rate == pytest.approx(2.0)
    # AND the jobs the rise brings within the horizon are forecast at the short window's rate
    assert "forecast: arrivals 10.00 jobs/s" in d.reason


def test_a_tick_keeps_the_short_windows_rate_for_the_step_test() -> None:
    # GIVEN a tick whose short window read 20.3 jobs/s (within its noise of the long window's
    # 20: the sizing rate stays 20), and one whose short window was unknown
    cfg = settings()
    known = decide_predictive(
        snapshot(**STEADY_20, arrival_rate_short=20.3), cfg, ControllerState("jobs"), NOW
    )
    unknown = decide_predictive(snapshot(**STEADY_20), cfg, ControllerState("jobs"), NOW)
    # THEN the sample remembers the short rate as read beside the sizing rate, and None where
    # there was none
    assert known.state.samples[-1].short_rate == 20.3
    assert known.state.samples[-1].arrival_rate == 20.0
    assert unknown.state.samples[-1].short_rate is None


def test_the_short_rate_is_kept_only_where_the_step_test_reads_it() -> None:
    # GIVEN samples every 10 s over the last 300 s, each with its short window's rate
    cfg = settings(evaluation_interval_seconds=10.0)
    old = tuple(Sample(NOW - age, 20.0, 0, 20, short_rate=20.0) for age in range(300, 0, -10))
    # WHEN a tick remembers itself
    after = decide_predictive(
        snapshot(**STEADY_20, arrival_rate_short=20.3),
        cfg,
        ControllerState("jobs", samples=old),
        NOW,
    ).state.samples
    # THEN the short rates of the last 120 s (two short windows) stay, older ones are dropped
    kept = [NOW - s.at for s in after if s.short_rate is not None]
    assert kept == [float(age) for age in range(120, 0, -10)] + [0.0]
    assert all(s.short_rate is None for s in after if NOW - s.at > 120)
    assert [s.arrival_rate for s in after[:-1]] == [s.arrival_rate for s in old]


NOISE_BAND = {
    "running": 21,
    "desired": 21,
    "in_flight": 20,
    "visible": 20,
    "oldest_age_seconds": 1.0,
    "completion_rate": 20.0,
    "arrival_dispersion": 1.0,
}
"""21 workers of 1 s jobs, 20 waiting (the oldest 1 s): a steady queue at its Erlang C size."""


@pytest.mark.parametrize(
    ("percentile", "rate", "short", "snap", "steady", "ablated_steady"),
    [
        pytest.param(0.999, 20.0, 20.0, {}, 21, 21, id="at-the-fleets-size"),
        pytest.param(0.999, 20.6, 20.6, {}, 21, 22, id="within-the-noise-held"),
        pytest.param(0.999, 22.0, 22.0, {}, 23, 23, id="past-the-noise-raised"),
        pytest.param(0.99, 20.0, 22.0, {}, 22, 22, id="the-short-window-moved"),
        pytest.param(
            0.999,
            20.6,
            20.6,
            {"visible": 400, "oldest_age_seconds": 8.0},
            22,
            22,
            id="a-backlog-late",
        ),
    ],
)
def test_the_rates_noise_raises_no_worker_while_every_other_reading_is_quiet(
    percentile: float,
    rate: float,
    short: float,
    snap: dict[str, Any],
    steady: int,
    ablated_steady: int,
) -> None:
    # GIVEN 21 workers at SLA 10 s, lead 60 s, interval 10 s, and the long window reading
    # `rate`, the short one `short`; at p99.9 Erlang C asks 22 from about 20.5 jobs/s
    cfg = settings(
        sla_seconds=10.0,
        percentile=percentile,
        provisioning_lead_seconds=60.0,
        evaluation_interval_seconds=10.0,
        max_workers=100,
    )
    inputs = snapshot(**{**NOISE_BAND, **snap, "arrival_rate": rate, "arrival_rate_short": short})
    # WHEN the policy decides, and with "up-band" switched off
    d = decide_predictive(inputs, cfg, ControllerState("jobs"), NOW).decision
    off = ablated("up-band")(inputs, cfg, ControllerState("jobs"), NOW).decision
    # THEN at 20.6 jobs/s the steady state's 22 is within the rate's noise: its lower bound,
    # 20.6 - 3.09 sqrt(2 x 20.6 / 300) = 19.5 jobs/s, asks no more than 21, so the fleet holds;
    # at 22 jobs/s (lower bound 20.8) it goes up. A move read in the short window (22 against
    # 20 jobs/s, past the move tests' line) is sized as it is, though at p99 its lower bound,
    # 21.1 jobs/s, asks no more than 21; so is the steady state while the held fleet leaves the
    # horizon's jobs late past the level (400 waiting, the oldest 8 s)
    assert (d.terms.steady, off.terms.steady) == (steady, ablated_steady)
    assert ("within the rate's noise" in d.reason) is (steady < ablated_steady)
    assert d.target == off.target or (d.target, off.target) == (21, 22)
