"""The sweeps: which settings run, which point is the cheapest that meets a target, the goal."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pytest

from queue_autoscale.core import DEFAULT_POLICY
from queue_autoscale.sim.arrivals import ArrivalError, scenario
from queue_autoscale.sim.bench import SweepOptions, bench_spec, parse_slas
from queue_autoscale.sim.frontier import (
    TARGETS,
    Frontier,
    Point,
    Setting,
    cheapest,
    failing_static_size,
    frontier_markdown,
    goal_verdict,
    least_static_sizes,
    peer_settings,
    run_setting,
    sweep,
    sweep_window,
)
from queue_autoscale.sim.policies import sim_settings
from queue_autoscale.sim.runner import RunSpec
from queue_autoscale.sim.workload import Workload, build_workload
from tests.sim.test_scores import _score


def test_peer_knobs_run_from_one_to_the_documented_value() -> None:
    settings = sim_settings(sla_seconds=30.0, service_seconds=1.0)
    counts = np.random.default_rng(0).poisson(20, 3600).astype(np.int64)
    grid = peer_settings(settings, counts, points=6)
    keda = [s.value for s in grid if s.policy == "keda"]
    tracking = [s.value for s in grid if s.policy == "target-tracking"]
    static = [s.value for s in grid if s.policy == "static"]
    assert keda[0] == 1 and keda[-1] == 30 and keda == sorted(set(keda))
    assert tracking[0] == 1 and tracking[-1] == 30
    assert [s.documented for s in grid if s.policy == "keda"][-1]
    # static: from the mean rate's Erlang-C size (20/s -> > 20) to beyond the busiest minute's
    assert 20 < static[0] < static[-1]


def _point(policy: str, value: float, compliance: float, worker_seconds: float) -> Point:
    knob = "percentile" if policy == DEFAULT_POLICY else "size"
    return Point(Setting(policy, knob, value), _score(policy, compliance, worker_seconds, 0.9), {})


def test_cheapest_is_the_fewest_worker_seconds_among_settings_that_meet_the_target() -> None:
    points = [
        _point("static", 10, 0.90, 100.0),
        _point("static", 12, 0.995, 130.0),
        _point("static", 14, 0.9995, 150.0),
    ]
    assert cheapest(points, "static", 0.99) is points[1]
    assert cheapest(points, "static", 0.999) is points[2]
    assert cheapest(points, "static", 0.9999) is None
    assert cheapest(points, "keda", 0.5) is None


def test_the_least_static_size_meeting_each_target_is_found_between_the_grids_steps() -> None:
    # GIVEN a fleet whose compliance rises with its size: 94 % below 33 workers, 95.5 % at
    # 33-34, 99.2 % at 35-37, 99.95 % from 38; the grid ran 30 and 41 (worker-s = 100 x size)
    def compliance(size: int) -> float:
        return 0.94 if size < 33 else 0.955 if size < 35 else 0.992 if size < 38 else 0.9995

    ran: list[list[int]] = []

    def run(batch: Sequence[Setting]) -> list[Point]:
        ran.append([int(s.value) for s in batch])
        return [_point("static", s.value, compliance(int(s.value)), 100.0 * s.value) for s in batch]

    grid = [_point("static", v, compliance(v), 100.0 * v) for v in (30, 41)]
    added = least_static_sizes(grid, run, failing=25)
    points = [*grid, *added]
    # THEN the cheapest static fleet per target is the least size meeting it, not 41
    assert [cheapest(points, "static", t).setting.value for t in TARGETS] == [33, 35, 38]
    # AND the bisection ran batches of midpoints: (30+41)//2 = 35, then 32 / 38, then ...
    assert ran[0] == [35]
    assert ran[1] == [32, 38]
    assert len(ran) <= 4 and sum(map(len, ran)) <= 9


def test_the_static_bisection_stops_at_the_failing_size_and_without_a_meeting_size() -> None:
    def run(batch: Sequence[Setting]) -> list[Point]:
        return [_point("static", s.value, 0.999 if s.value >= 21 else 0.5, s.value) for s in batch]

    # GIVEN the grid's least size 22 meets every target and 20 workers are shown to miss
    added = least_static_sizes([_point("static", 22, 0.999, 22.0)], run, failing=20)
    # THEN only 21 is tried
    assert [p.setting.value for p in added] == [21]
    # AND a grid meeting nothing adds nothing
    assert least_static_sizes([_point("static", 22, 0.5, 22.0)], run, failing=20) == ()


def _jobs(arrivals: list[float], service: list[float], warmup: int = 0) -> Workload:
    counts = np.bincount(np.floor(arrivals).astype(np.int64)).astype(np.int64)
    return Workload("w", counts, warmup, np.array(arrivals), np.array(service))


def test_the_failing_static_size_is_the_capacity_bound() -> None:
    # GIVEN 10 jobs of 10 s arriving at 0..9 s, SLA 0 s: 95 % of them is 10 jobs, 100 s of work,
    # all on time only if started by 9 s and so done by 19 s
    ten = _jobs([float(t) for t in range(10)], [10.0] * 10)
    # THEN 5 workers (95 s of capacity by 19 s) are shown to miss; 6 (114 s) are not
    assert failing_static_size(ten, 0.0, 1) == 5
    # AND 3 slots a worker: 2 workers give 114 s, so only 1 is shown to miss
    assert failing_static_size(ten, 0.0, 3) == 1
    # AND a 30 s SLA stretches the span to 49 s: 100 / 49 -> 2 workers are shown to miss
    assert failing_static_size(ten, 30.0, 1) == 2
    # AND the warm-up's jobs are not work to do: with 8 s of warm-up, 2 jobs, 20 s in 19 s
    assert failing_static_size(_jobs([float(t) for t in range(10)], [10.0] * 10, 8), 0.0, 1) == 1


def test_a_fleet_under_the_mean_load_is_run_where_a_loose_sla_lets_it_meet() -> None:
    # GIVEN steady traffic on the bench's seed 0: 20.04 jobs/s of 1 s jobs over the window
    spec = replace(bench_spec(SweepOptions(), 0), sla_seconds=300.0)
    counts, _ = sweep_window(scenario("steady").counts(seed=0, length_seconds=None), 14_400)
    workload = build_workload(
        "steady", counts, spec.fleet(), seed=spec.seed, warmup_seconds=spec.warmup_seconds
    )
    assert float(counts.mean()) > 20.0
    # WHEN 20 workers run it (under the mean load)
    twenty = run_setting(workload, counts, Setting("static", "size", 20), spec)
    # THEN a 300 s SLA keeps every job within it, so the bisection must be free to try 20
    assert twenty.score.sla_compliance >= max(TARGETS)
    assert failing_static_size(workload, 300.0, 1) < 20


def _frontier(points: list[Point], bound: float, bound_ws: float, name: str = "w") -> Frontier:
    return Frontier(name, 30.0, tuple(points), _score("reaction-bound", bound, bound_ws, 0.5))


def test_goal_met_when_ours_meets_the_target_for_less_than_every_peer() -> None:
    points = [_point(DEFAULT_POLICY, 0.99, 0.995, 100.0), _point("static", 12, 0.995, 130.0)]
    assert goal_verdict(_frontier(points, 0.999, 500.0), 0.99) == "met"
    # a cheaper peer that meets it
    cheaper = [*points, _point("static", 9, 0.991, 90.0)]
    verdict = goal_verdict(_frontier(cheaper, 0.999, 500.0), 0.99)
    assert verdict.startswith("not met") and "90 worker-s" in verdict
    # on bursty the goal asks for 20 % fewer: 100 vs 0.8 x 110 = 88 fails
    close = [points[0], _point("static", 11, 0.992, 110.0)]
    assert goal_verdict(_frontier(close, 0.999, 500.0), 0.99) == "met"
    assert "20% fewer" in goal_verdict(_frontier(close, 0.999, 500.0, "bursty"), 0.99)


def test_goal_where_the_bound_misses_is_closeness_at_half_its_cost() -> None:
    ours = [_point(DEFAULT_POLICY, 0.999, 0.9000, 100.0)]
    assert goal_verdict(_frontier(ours, 0.9040, 300.0), 0.999) == "met"
    far = goal_verdict(_frontier(ours, 0.9100, 300.0), 0.999)
    assert "1.00 points below the bound" in far
    costly = goal_verdict(_frontier(ours, 0.9040, 150.0), 0.999)
    assert "67% of the bound's worker-s" in costly
    # the bound meets it and ours does not
    assert "where the bound meets it" in goal_verdict(_frontier(ours, 0.9995, 300.0), 0.999)


def test_frontier_table_says_none_where_no_setting_meets_a_target() -> None:
    points = [_point(DEFAULT_POLICY, t, 0.97, 100.0) for t in (0.95, 0.99, 0.999)]
    points.append(_point("static", 10, 0.96, 90.0))
    lines = frontier_markdown(_frontier(points, 0.98, 1000.0))
    row_99 = next(line for line in lines if line.startswith("| 99.0%"))
    assert "none" in row_99
    row_95 = next(line for line in lines if line.startswith("| 95.0%"))
    assert "size 10: 90 (96.000%)" in row_95


def test_sweep_runs_every_setting_on_the_same_jobs() -> None:
    counts = scenario("spike").counts(seed=0, length_seconds=1200)
    spec = RunSpec(warmup_seconds=300)
    frontier = sweep("spike", counts, spec, quick=True)
    policies = {p.setting.policy for p in frontier.points}
    assert policies == {DEFAULT_POLICY, "seed-hybrid", "keda", "target-tracking", "static"}
    assert {p.score.jobs for p in frontier.points} == {int(counts.sum())}
    # the default policy runs once per target, configured for it (its percentile)
    ours = {p.setting.value: p for p in frontier.points if p.setting.policy == DEFAULT_POLICY}
    assert sorted(ours) == sorted(TARGETS)
    assert ours[0.999].setting.knob == "percentile" and ours[0.999].setting.documented
    # a larger static fleet costs more and keeps at least as many jobs within the SLA
    static = sorted(
        (p for p in frontier.points if p.setting.policy == "static"), key=lambda p: p.setting.value
    )
    assert static[0].score.worker_seconds < static[-1].score.worker_seconds
    assert static[0].score.sla_compliance <= static[-1].score.sla_compliance
    assert frontier.bound is not None and frontier.bound.jobs == int(counts.sum())
    # queueLength 1 asks for more pods than the documented 30
    keda = sorted(
        (p for p in frontier.points if p.setting.policy == "keda"), key=lambda p: p.setting.value
    )
    assert keda[0].score.worker_seconds > keda[-1].score.worker_seconds
    assert replace(spec).sla_seconds == 30.0


def test_sweep_window_is_centred_on_the_busiest_minute() -> None:
    counts = np.ones(10 * 3600, dtype=np.int64)
    counts[7 * 3600 : 7 * 3600 + 60] = 50
    window, start = sweep_window(counts, 3600)
    assert window.size == 3600 and start == 7 * 3600 - 1800
    assert sweep_window(counts[:100], 3600)[1] == 0


def test_slas_parse_and_reject() -> None:
    assert parse_slas("10,30, 60,300") == (10.0, 30.0, 60.0, 300.0)
    for bad in ("", "0", "ten", "30,-1"):
        with pytest.raises(ArrivalError):
            parse_slas(bad)
