"""The SLA loop and the burst memory in the simulator: quiet on steady traffic, recurring
bursts anticipated once seen."""

from __future__ import annotations

from dataclasses import replace
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest

from queue_autoscale.core import hybrid
from queue_autoscale.core.models import Winner
from queue_autoscale.sim.arrivals import read_trace, scenario
from queue_autoscale.sim.bench import SweepOptions, bench_spec
from queue_autoscale.sim.frontier import WINDOW_SECONDS, sweep_window
from queue_autoscale.sim.honest import run_flaps
from queue_autoscale.sim.runner import Comparison, RunSpec, compare


def test_no_oscillation_on_steady_traffic() -> None:
    # GIVEN an hour of steady 20 jobs/s that the sizing terms already serve within the SLA
    counts = scenario("steady").counts(seed=3, length_seconds=3600)
    # WHEN hybrid runs it with every decision recorded
    run = compare("steady", counts, ["hybrid"], RunSpec(seed=3), record_decisions=True)
    decisions = run.decisions["hybrid"]
    scored = [d for d in decisions if d.at - decisions[0].at >= 600]
    # THEN the loop never adds headroom, reads 100 % realized compliance, and the fleet stays
    # within a worker or two of the Erlang-C size (no limit cycle)
    assert all(d.headroom == 0.0 for d in decisions)
    assert scored[-1].realized_compliance == 1.0
    targets = [d.target for d in scored]
    assert max(targets) - min(targets) <= 3
    assert run.scores[0].sla_compliance == 1.0


def test_recurring_bursts_are_anticipated_once_seen() -> None:
    # GIVEN on/off traffic (5 min at 40 jobs/s, 10 min at 2) whose bursts outrun a 60 s lead
    counts = scenario("bursty").counts(seed=0, length_seconds=7200)
    spec = RunSpec(seed=0, provision_jitter_seconds=10.0)
    run = compare("bursty", counts, ["hybrid"], spec, record_decisions=True)
    result, decisions = run.results[0], run.decisions["hybrid"]
    warm = run.workload.warmup_seconds
    arrivals = np.asarray(run.workload.arrivals)
    late = ~(np.asarray(result.starts) - arrivals <= spec.sla_seconds)
    scored = arrivals >= warm
    per_burst = np.bincount(((arrivals[scored] - warm) // 900).astype(int), late[scored])
    # THEN the first burst meets the warmed-up fleet; the next pays the reaction bound (the
    # first onset seen); the third finds the fleet held: the warm-up's burst ended 900 s before
    # the second did, so the third is due 900 s after the second's onset ("bursts recurred
    # within T: hold until T + lead", T read from the two ends around the only onset seen);
    # the fourth is held from two onsets; and from the fifth on (the recurrence known from
    # three evenly spaced onsets) each is anticipated: the fleet is there when it starts
    assert per_burst[0] == 0 and per_burst[1] > 100
    assert len(per_burst) == 8 and per_burst[2:].sum() == 0
    held = [d.at - decisions[0].at - warm for d in decisions if "burst_hold" in d.constraints]
    assert held and 900 < min(held) < 2 * 900
    anticipated = [d for d in decisions if "anticipation" in d.constraints]
    assert anticipated and min(d.at for d in anticipated) - decisions[0].at > warm + 3 * 900
    # AND the misses of the first bursts do not buy a bigger steady fleet, and between bursts
    # the fleet comes down near the quiet size (it is not held at the burst's)
    assert all(d.headroom == 0.0 for d in decisions)
    base = decisions[0].at
    gaps = [d.target for d in decisions if 4 * 900 + 450 <= d.at - base - warm < 4 * 900 + 700]
    assert min(gaps) <= 10
    # AND the hold after two onsets lets go between them too: it keeps the need only from a
    # lead before the third is due (not through the whole quiet gap)
    held_gap = [d.target for d in decisions if 2 * 900 + 450 <= d.at - base - warm < 2 * 900 + 700]
    assert min(held_gap) <= 10
    ends_gap = [d.target for d in decisions if 900 + 450 <= d.at - base - warm < 900 + 700]
    assert min(ends_gap) <= 10


def test_bursty_at_10s_p95_meets_its_target_for_less_than_static_48_less_20_percent() -> None:
    # GIVEN the bench's bursty cell at SLA 10 s, hybrid configured for 95 %: static 48 meets it
    # with 345,600 worker-s, so the goal is at most 80 % of that, 276,480
    counts = scenario("bursty").counts(seed=0, length_seconds=None)
    spec = replace(bench_spec(SweepOptions(), 0), sla_seconds=10.0, percentile=0.95)
    score = compare("bursty", counts, ["hybrid"], spec).scores[0]
    # THEN with the second burst held from the ends seen (the first onset's is the reaction
    # bound's, about 2,840 of the 5,309 late jobs the budget allows) it meets both: 97.05 % at
    # 258,570 worker-s (94.33 % at 274,220 before, with the second burst unanticipated)
    assert score.sla_compliance >= 0.95
    assert score.worker_seconds <= 0.8 * 345_600


@pytest.mark.parametrize(
    ("sla", "percentile", "static"),
    [
        pytest.param(10.0, 0.95, 41, id="10s-p95"),
        pytest.param(30.0, 0.95, 40, id="30s-p95"),
        pytest.param(60.0, 0.95, 39, id="60s-p95"),
        pytest.param(60.0, 0.99, 39, id="60s-p99"),
        pytest.param(60.0, 0.999, 39, id="60s-p99.9"),
    ],
)
def test_bursty_meets_its_target_for_less_than_the_least_static_less_20_percent(
    sla: float, percentile: float, static: int
) -> None:
    # GIVEN the bench's bursty cell: `static` is the least static size meeting the target, so
    # the goal is at most 80 % of its 7,200 s (static 41 / 40 / 39: 236,160 / 230,400 /
    # 224,640 worker-s)
    counts = scenario("bursty").counts(seed=0, length_seconds=None)
    spec = replace(bench_spec(SweepOptions(), 0), sla_seconds=sla, percentile=percentile)
    score = compare("bursty", counts, ["hybrid"], spec).scores[0]
    # THEN with the anticipation ordering one lead + 2 intervals before a burst is due (not a
    # lead earlier) and the fleet sized on the short window between recurring bursts it meets
    # both: 96.99 % at 211,050 (10 s), 97.92 % at 200,500 (30 s), 98.03 % at 189,570, 100 % at
    # 185,460 and at 199,960 (60 s p95, p99, p99.9); 258,130 / 247,590 / 232,560 / 238,900 /
    # 274,640 at 6091a31
    assert score.sla_compliance >= percentile
    assert score.worker_seconds <= 0.8 * static * 7200


def test_a_drains_surplus_is_let_go_once_the_backlog_is_gone() -> None:
    # GIVEN a flash crowd (5 jobs/s, then 100 jobs/s for 5 minutes) at a 10 s SLA, where the
    # drain orders several times the surge's sustained need to clear what piled up in the lead
    counts = scenario("flash-crowd").counts(seed=0)
    spec = RunSpec(seed=0, sla_seconds=10.0, interval_seconds=10, provision_jitter_seconds=10.0)
    run = compare("flash", counts, ["hybrid", "reaction-bound"], spec, record_decisions=True)
    hybrid, bound = run.scores
    decisions = run.decisions["hybrid"]
    peak = max(d.target for d in decisions)
    # the drain's last tick (it trims its own order on later readings: 927 -> 847 at seed 0)
    drained = [d for d in decisions if d.winner == Winner.DRAIN][-1]
    after = [d for d in decisions if 0 < d.at - drained.at <= 120 and d.action.value == "down"]
    # THEN once the drain's workers have cleared the backlog, the fleet comes down to the
    # surge's sustained need in one action (not by 25 % a minute)...
    sustained = max(max(d.terms.steady, d.terms.trend) for d in decisions)
    assert after and after[0].target <= sustained < peak / 3
    # ...keeping the reaction bound's compliance at less than half its worker-seconds
    assert hybrid.sla_compliance >= bound.sla_compliance - 0.005
    assert hybrid.worker_seconds <= 0.5 * bound.worker_seconds


def test_after_a_spike_no_headroom_and_a_spare_budget_lets_capacity_go_sooner(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN the bench's spike at SLA 30 s, hybrid configured for p95 (interval 10 s, jitter 10 s)
    counts = scenario("spike").counts(seed=0)
    spec = replace(bench_spec(SweepOptions(), 0), sla_seconds=30.0, percentile=0.95)
    paid = compare("spike", counts, ["hybrid"], spec, record_decisions=True)
    ours = paid.scores[0]
    # THEN the misses at the spike's onset (the reaction bound's) raise no headroom, so none is
    # spent a window later (it was: 227,322 worker-s at the same 98.32 %)
    assert all(d.headroom == 0.0 for d in paid.decisions["hybrid"])
    assert ours.sla_compliance > 0.98 and ours.worker_seconds < 200_000
    # WHEN the budget-paid early release is switched off (no fleet is that far above its need)
    monkeypatch.setattr(hybrid, "MIN_EARLY_RELEASE", 10**9)
    held = compare("spike", counts, ["hybrid"], spec).scores[0]
    # THEN the release kept the same compliance with fewer worker-seconds (189,942 -> 187,592)
    assert abs(ours.sla_compliance - held.sla_compliance) < 0.0001
    assert ours.worker_seconds < held.worker_seconds - 1000


def _nasa_spec(sla: float, percentile: float, seed: int = 0) -> RunSpec:
    """The bench's run settings for one NASA cell (`seed`: the bench's --seed)."""
    return replace(bench_spec(SweepOptions(), seed), sla_seconds=sla, percentile=percentile)


def _nasa_cell(trace: Path, sla: float, percentile: float, seed: int = 0) -> Comparison:
    """The bench's NASA x10 window (4 h around the busiest minute) at its run settings."""
    day = read_trace(trace, scale=10, start=1_036_800, length=86_400)
    counts, _ = sweep_window(day, WINDOW_SECONDS)
    spec = _nasa_spec(sla, percentile, seed)
    return compare("nasa x10", counts, ["hybrid"], spec, record_decisions=True)


def test_nasa_surge_misses_buy_no_headroom_at_30s_p99(nasa_trace: Path) -> None:
    run = _nasa_cell(nasa_trace, 30.0, 0.99)
    decisions, result = run.decisions["hybrid"], run.results[0]
    # 1,541 late jobs started within a minute of the restart's onset (the reaction bound's); the
    # rest, 1,313 of 2,854, are the miss budget's, spent on running hot after the reaction time
    # (core/hot.py) and on re-order confirmations (confirm_reorder): 0.61 % of the 466,413
    # jobs started, within the 1 % budget...
    arrivals = np.asarray(run.workload.arrivals)
    starts = np.asarray(result.starts)
    late = starts[starts - arrivals > 30.0]
    onset = late[late - late.min() < 60.0]
    assert onset.size > 1000
    assert late.size < 0.01 * np.isfinite(starts).sum()
    # ...so the loop never sized for headroom (134 ticks at up to +50 % before, 699,440 worker-s
    # at 99.72 %)
    assert all(d.headroom == 0.0 for d in decisions)
    score = run.scores[0]
    # (99.37 % for 600,360; 99.66 % for 610,240 without running hot on the bursty day)
    assert score.sla_compliance > 0.99 and score.worker_seconds < 660_000


@pytest.mark.parametrize("seed", [1, 3])
def test_nasa_rushes_the_onset_test_misses_buy_no_headroom(nasa_trace: Path, seed: int) -> None:
    # GIVEN the bench's NASA cell at 30 s, p99 on seeds 1 and 3 (other job times and start-up
    # jitter): rushes of 20-40 s at about 1.7x the rate (at 10,690 and 12,190 s) move the 60 s
    # window well short of the onset test's doubling; the drain ordered for them on the
    # backlog's growth and 1,153 / 1,043 jobs were late before those workers landed
    run = _nasa_cell(nasa_trace, 30.0, 0.99, seed)
    # THEN those misses are the surge's (core/recurrence.py surge_onset): no headroom is
    # raised on them (before: +50 % for the rest of the day, 724,900 / 679,320 worker-s)...
    assert all(d.headroom == 0.0 for d in run.decisions["hybrid"])
    # ...above 99 % for 606,660 / 619,420 worker-s at cf6bc54 (613,590 / 612,650 at 3a6c859;
    # the bound sits halfway to the 679,320 / 724,900 of the headroom it no longer raises)
    score = run.scores[0]
    assert score.sla_compliance > 0.99 and score.worker_seconds < 650_000


def test_nasa_at_60s_p999_spends_its_budget_on_early_releases(nasa_trace: Path) -> None:
    # the goal: 20 % under static 54's 777,600 worker-s (622,080); 641,270 before
    run = _nasa_cell(nasa_trace, 60.0, 0.999)
    score = run.scores[0]
    assert score.sla_compliance == 1.0
    assert score.worker_seconds <= 622_080
    reasons = [d.reason for d in run.decisions["hybrid"]]
    assert any("the idle workers the miss budget pays for" in r for r in reasons)


_ORDERS_PENDING_COST = pytest.mark.xfail(
    strict=True,
    reason=(
        "not met since the orders-pending hold (no scale-down while ordered tasks have not "
        "started and the backlog grows): p95 seed 1 527,682 -> 533,640 worker-s, p99.9 seed 0 "
        "538,721 -> 551,500, compliance kept; these limits are the old frontier goal, the "
        "yardstick's verdict (benchmarks/results/policy_frontier.md) judges the cells now"
    ),
)


@pytest.mark.parametrize(
    ("percentile", "seed", "limit"),
    [
        pytest.param(0.99, 0, 541_440, id="p99-seed0-static-47"),
        pytest.param(0.99, 1, 541_440, id="p99-seed1-static-47"),
        pytest.param(0.95, 1, 529_920, id="p95-seed1-static-46", marks=_ORDERS_PENDING_COST),
        pytest.param(0.999, 0, 541_440, id="p999-seed0-static-47", marks=_ORDERS_PENDING_COST),
    ],
)
def test_nasa_at_60s_runs_hot_where_the_sla_covers_the_lead(
    nasa_trace: Path, percentile: float, seed: int, limit: int
) -> None:
    # GIVEN the bench's NASA cell at 60 s (= the lead): at p99 the bursts' excused misses alone
    # kept the loop out of comfort, so Erlang C sized 391 ticks (548,360 / 541,730 worker-s),
    # and every cell sized Erlang C after each onset and for its first half window (p95 seed 1:
    # 535,450; p99.9 550,590)
    run = _nasa_cell(nasa_trace, 60.0, percentile, seed)
    score = run.scores[0]
    # THEN comfort reads the fleet's own misses (sla_loop.comfortable), neither the onset gate
    # nor the half window holds the hot size (hot.allowed) and the stabilization window skips
    # a burst's reaction once it has passed (hybrid._reaction_spans): 99.78 / 100 / 99.71 /
    # 100 % for 531,511 / 528,786 / 527,682 / 538,721, within the goal (static 47's 676,800 or
    # static 46's 662,400 less 20 %)
    assert score.sla_compliance > 0.997
    assert score.worker_seconds <= limit


def test_on_steady_traffic_hybrid_runs_hot_without_oscillating() -> None:
    # GIVEN the bench's steady cell: two hours at 20 jobs/s of 1 s jobs, SLA 30 s, p99.9
    counts = scenario("steady").counts(seed=0)
    spec = replace(bench_spec(SweepOptions(), 0), sla_seconds=30.0, percentile=0.999)
    run = compare("steady", counts, ["hybrid", "static"], spec, record_decisions=True)
    ours, static = run.scores
    decisions = run.decisions["hybrid"]
    warm = decisions[0].at + run.workload.warmup_seconds
    scored = [d for d in decisions if d.at >= warm]
    # THEN the steady term runs hot on most ticks: within a worker of the load (19-21 workers
    # for 20 jobs/s), below Erlang C's
    hot = [d for d in scored if "running hot" in d.reason]
    assert len(hot) > len(scored) // 2
    assert {d.terms.steady for d in hot} <= {19, 20, 21}
    assert sum(d.terms.steady == 20 for d in hot) > len(hot) // 2
    # AND the fleet stays at 20-23 and mostly at 20-21, with a handful of scale-ups in two
    # hours (no limit cycle: each costs a lead of billing), and no headroom is ever raised
    # (from the first hot tick: the loop first reads half a window, 15 minutes, at Erlang C)
    targets = [d.target for d in scored if d.at >= hot[0].at]
    assert hot[0].at - decisions[0].at <= 1000
    assert set(targets) <= {20, 21, 22, 23}
    assert sum(t <= 21 for t in targets) > 0.95 * len(targets)
    assert sum(1 for d in scored if d.action.value == "up") <= 6
    assert all(d.headroom == 0.0 for d in decisions)
    # AND every job is picked up within the SLA, for fewer worker-seconds than a static fleet
    # of 21 (the smallest that meets it; `static` here is sized for the busiest minute, 22)
    # and than seed-hybrid's 151,248 at the same 100 % in the bench
    assert ours.sla_compliance == 1.0
    assert static.sla_compliance == 1.0
    static_21 = static.worker_seconds / static.peak_workers * 21
    assert ours.worker_seconds < static_21
    assert ours.worker_seconds < 151_248


def test_at_a_10_s_sla_the_settled_load_runs_steady_traffic_below_static_21() -> None:
    # GIVEN the bench's steady cell at SLA 10 s, p99: the walk over a 70 s reaction leaves
    # 20 workers room for 77 waiting jobs, and the windows' noise times the reaction time moves
    # the drift by as much (0.58 jobs/s x 70 s = 40 jobs)
    counts = scenario("steady").counts(seed=0)
    spec = replace(bench_spec(SweepOptions(), 0), sla_seconds=10.0, percentile=0.99)
    run = compare("steady", counts, ["hybrid", "static"], spec, record_decisions=True)
    ours, static = run.scores
    decisions = run.decisions["hybrid"]
    scored = [d for d in decisions if d.at >= decisions[0].at + run.workload.warmup_seconds]
    # THEN it sizes on the settled load: the load it sizes (rate / mu) varies by 0.20 workers
    # over the scored ticks, where the windows' load varies by 0.41 (300 s) and 0.55 (the
    # larger of 60 s and 300 s, what it sized on before); and after the warm-up's first
    # window the fleet stays at 20-22, at most 21 on 95 % of the ticks
    loads = [d.arrival_rate / d.service_rate for d in scored]
    assert float(np.std(loads)) < 0.25
    later = [d.target for d in scored if d.at >= scored[0].at + 1200]
    assert set(later) <= {20, 21, 22}
    assert sum(t <= 21 for t in later) > 0.95 * len(later)
    # AND every job is picked up within the SLA, for fewer worker-seconds than a static fleet
    # of 21 (151,263 in the bench; 154,013 before the settled load)
    assert ours.sla_compliance == 1.0
    static_21 = static.worker_seconds / static.peak_workers * 21
    assert ours.worker_seconds < static_21


@pytest.mark.parametrize(("percentile", "compliance"), [(0.99, 0.997), (0.999, 0.9958)])
def test_a_ramp_restarts_the_settled_load_and_keeps_its_compliance(
    percentile: float, compliance: float
) -> None:
    # GIVEN the bench's ramp at SLA 10 s: 5 jobs/s rising to 50 over 90 minutes, Poisson-like,
    # slowly enough to stay within 3 standard errors of a lagging average for minutes
    counts = scenario("ramp").counts(seed=0)
    spec = replace(bench_spec(SweepOptions(), 0), sla_seconds=10.0, percentile=percentile)
    (score,) = compare("ramp", counts, ["hybrid"], spec).scores
    # THEN the trend's slope restarts the average, the windows size the ramp, and compliance
    # stays above the target at p99 (99.74 %; 98.6 % without the slope's restart) and, at p99.9,
    # above the reaction bound's 99.58 % (no reacting policy meets 99.9 % on this ramp; 99.81 %
    # since the loop's headroom rises only on new misses of its own), for fewer worker-seconds
    # than KEDA's cheapest meeting setting (332,820)
    assert score.sla_compliance >= compliance
    assert score.worker_seconds < 332_820


@pytest.mark.parametrize(
    ("sla", "percentile", "flaps_before", "worker_s_before", "flaps_share"),
    [(60.0, 0.95, 186, 582_270, 0.55), (30.0, 0.99, 116, 623_430, 0.65)],
)
def test_nasa_reorders_wait_an_interval_to_be_confirmed(
    nasa_trace: Path,
    sla: float,
    percentile: float,
    flaps_before: int,
    worker_s_before: int,
    flaps_share: float,
) -> None:
    # GIVEN the bench's NASA cell, whose bursty arrivals (index of dispersion 10-17) made the
    # drain order workers for a backlog gone a tick later, released and re-ordered again
    run = _nasa_cell(nasa_trace, sla, percentile)
    result, score = run.results[0], run.scores[0]
    count = run_flaps(result, _nasa_spec(sla, percentile))
    # THEN re-orders within a lead + 5 min of a scale-in wait a tick when the budget pays...
    decisions = run.decisions["hybrid"]
    deferred = [i for i, d in enumerate(decisions) if "reorder_confirm" in d.constraints]
    assert len(deferred) > 50 and all("re-order confirm" in decisions[i].reason for i in deferred)
    # ...for one interval at most: the next tick that still wants the workers orders them
    assert all(later - first > 1 for first, later in pairwise(deferred))
    # AND about half of the deferred orders were noise: the next tick wanted no scale-out (76
    # of 164 at 60 s p95, 60 of 119 at 30 s p99), so those workers were never started
    unwanted = sum(decisions[i + 1].target <= decisions[i + 1].current for i in deferred)
    assert unwanted > 0.4 * len(deferred)
    # ...which about halves the flaps (each a task stopped and another started within ~6
    # minutes: 186 -> 88 and 116 -> 61) for fewer worker-seconds (a noise order's workers
    # are never started, and none is re-ordered a lead of start-up later). Running hot on the
    # bursty day (core/hot.py) moves them to 73 and 72: 39 % and 62 % of before
    assert count <= flaps_share * flaps_before
    assert score.worker_seconds < worker_s_before - 5_000
    # AND the compliance stays above its target (99.73 % and 99.37 %)
    assert score.sla_compliance > max(percentile, 0.99)
    # AND at 30 s p99 within the goal: 20 % under static 54's 777,600 worker-s
    assert sla != 30.0 or score.worker_seconds <= 622_080


def test_a_window_just_over_budget_adds_headroom_in_proportion() -> None:
    # GIVEN the bench's diurnal cell on seed 3 at SLA 10 s, p99: a second miss episode at about
    # 9,800 s takes the loop's miss share to 1.07 % of the counted jobs (budget 1 %)
    counts, _ = sweep_window(scenario("diurnal").counts(seed=3), WINDOW_SECONDS)
    spec = replace(bench_spec(SweepOptions(), 3), sla_seconds=10.0, percentile=0.99)
    run = compare("diurnal", counts, ["hybrid", "static"], spec, record_decisions=True)
    ours, static = run.scores
    # THEN the headroom rises in proportion to the 7 % overspend, to 0.03 (it reached +50 %
    # within 70 s and held it, 55-58 workers against a need of 36-38, for 50 minutes)...
    assert max(d.headroom for d in run.decisions["hybrid"]) < 0.05
    # ...for the same 99.83 % within the SLA with fewer worker-seconds than a static fleet of
    # 37 (532,837; hybrid took 580,740 before, 521,290 now)
    assert ours.sla_compliance > 0.998
    assert ours.worker_seconds < static.worker_seconds / static.peak_workers * 37
