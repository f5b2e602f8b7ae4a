"""Scores on runs small enough to work out by hand, and the bench's goal check."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from queue_autoscale.core import DEFAULT_POLICY
from queue_autoscale.sim.console import score_table
from queue_autoscale.sim.engine import FleetView, run_policy
from queue_autoscale.sim.quality_report import goal_check, scores_markdown
from queue_autoscale.sim.scores import TASK_HOUR_USD, Score, score, scores_at
from queue_autoscale.sim.workload import FleetSpec, Workload
from tests.sim.conftest import FixedFleet


def _workload(arrivals: list[float], service: list[float], seconds: int) -> Workload:
    counts = np.bincount(np.floor(arrivals).astype(int), minlength=seconds).astype(np.int64)
    return Workload("hand", counts, 0, np.array(arrivals), np.array(service))


def test_three_jobs_on_one_worker() -> None:
    # GIVEN three 2 s jobs arriving at 0.0, 0.1, 0.2 s on one ready worker, SLA 2 s
    fleet = FleetSpec(provision_delay_seconds=0, drain_limit_seconds=0)
    workload = _workload([0.0, 0.1, 0.2], [2.0, 2.0, 2.0], 10)
    # WHEN replayed
    result = run_policy(workload, FixedFleet(1), fleet, initial_workers=1)
    s = score(result, sla_seconds=2.0)
    # THEN they start at 0, 2 and 4 s: pickups 0, 1.9 and 3.8 s
    assert result.starts.tolist() == pytest.approx([0.0, 2.0, 4.0])
    assert (s.jobs, s.served, s.in_service, s.waiting) == (3, 3, 0, 0)
    assert s.sla_compliance == pytest.approx(2 / 3)
    assert s.p50_pickup_seconds == pytest.approx(1.9)
    assert s.max_pickup_seconds == pytest.approx(3.8)
    assert s.worker_seconds == 10.0  # one worker billed for the 10 s window
    assert s.busy_seconds == pytest.approx(6.0)
    assert s.utilization == pytest.approx(0.6)
    assert s.cost_usd == pytest.approx(10 / 3600 * TASK_HOUR_USD)
    assert pytest.approx(0.5 * 0.04048 + 1.0 * 0.004445) == TASK_HOUR_USD


def test_a_job_still_running_at_the_end_is_in_service_and_clipped() -> None:
    fleet = FleetSpec(provision_delay_seconds=0, drain_limit_seconds=0)
    workload = _workload([0.5, 8.5], [1.0, 5.0], 10)
    result = run_policy(workload, FixedFleet(1), fleet, initial_workers=1)
    s = score(result, sla_seconds=30.0)
    assert (s.served, s.in_service, s.waiting) == (1, 1, 0)
    assert s.busy_seconds == pytest.approx(1.0 + 1.5)  # the second job's last 3.5 s fall outside
    assert s.sla_compliance == 1.0


def _score(policy: str, compliance: float, worker_seconds: float, utilization: float) -> Score:
    return Score(
        policy=policy, workload="w", jobs=100, served=100, in_service=0, waiting=0,
        sla_seconds=30.0, sla_compliance=compliance, p50_pickup_seconds=0.0,
        p99_pickup_seconds=1.0, max_pickup_seconds=2.0, worker_seconds=worker_seconds,
        busy_seconds=worker_seconds * utilization, utilization=utilization,
        scaling_actions=3, cost_usd=1.0, mean_workers=1.0, peak_workers=2,
        duration_seconds=100, wall_seconds=0.1,
    )  # fmt: skip


def test_goal_check_passes_when_the_default_policy_beats_every_peer() -> None:
    row, misses = goal_check(
        "w", [_score(DEFAULT_POLICY, 0.9995, 1000, 0.85), _score("keda", 0.74, 1100, 0.6)]
    )
    assert misses == []
    assert row == "| w | 99.9500% | 0.850 | yes | yes |"


def test_goal_check_names_every_miss_with_numbers() -> None:
    _, misses = goal_check(
        "w",
        [_score(DEFAULT_POLICY, 0.98, 2000, 0.5), _score("static", 1.0, 1500, 0.9),
         _score("keda", 0.7, 1000, 0.95)],
    )  # fmt: skip
    assert misses == [
        "compliance 98.0000% < 99.9%",
        "utilization 0.500 < 0.80",
        "static kept more jobs within SLA (100.0000% vs 98.0000%)",
        "static used fewer worker-seconds (1,500 vs 2,000, -25.0%) at 100.0000% within SLA",
        "keda used fewer worker-seconds (1,000 vs 2,000, -50.0%) at 70.0000% within SLA",
    ]


def test_scores_markdown_has_a_row_per_policy() -> None:
    lines = scores_markdown([_score(DEFAULT_POLICY, 1.0, 10, 0.8), _score("keda", 0.5, 5, 0.9)])
    assert len(lines) == 4
    assert lines[2].startswith(f"| {DEFAULT_POLICY} | 100 | 100.0000% |")


def test_the_console_and_markdown_tables_format_a_score_alike() -> None:
    # GIVEN a score with worker-seconds and a compliance that need rounding
    s = _score(DEFAULT_POLICY, 0.98520912, 199_919.6, 0.72349)
    # WHEN both tables render it
    cells = s.cells()
    row = scores_markdown([s])[2]
    table = score_table([s], "t")
    # THEN each column has one format, used by both
    assert cells["within SLA"] == "98.5209%" and cells["worker-s"] == "199,920"
    assert cells["utilization"] == "0.723"
    assert row.startswith(f"| {DEFAULT_POLICY} | 100 | 98.5209% |") and "| 199,920 |" in row
    console = {c.header: next(iter(c.cells)) for c in table.columns}
    assert console["within SLA"] == cells["within SLA"] and console["worker-s"] == "199,920"
    assert console["util"] == "0.723" and console["p50 s"] == cells["p50 pickup s"]


class Script:
    """A policy that sets the counts of `plan` ({second: workers}) at those seconds."""

    name = "script"
    interval_seconds = 10

    def __init__(self, plan: dict[int, int], first: int) -> None:
        self.plan, self.size = plan, first

    def decide(self, view: FleetView) -> int:
        self.size = self.plan.get(view.elapsed_seconds, self.size)
        return self.size


def test_flaps_and_task_starts_of_a_run() -> None:
    """2 workers; 5 at 100 s (3 starts), 3 at 200 s, 6 at 400 s: a scale-out 200 s after a
    scale-in, within the 60 s lead + 300 s, so one flap and 3 more starts; 2 at 1,000 s and 4 at
    1,500 s: 500 s after, no flap, 2 more starts. 8 starts over the hour, after the 0 s warm-up."""
    fleet = FleetSpec(provision_delay_seconds=60, drain_limit_seconds=0)
    workload = _workload([0.5], [1.0], 3600)
    plan = {100: 5, 200: 3, 400: 6, 1000: 2, 1500: 4}
    s = score(run_policy(workload, Script(plan, 2), fleet, initial_workers=2), sla_seconds=30.0)
    assert (s.flaps, s.task_starts) == (1, 8)
    assert s.task_starts_per_hour == pytest.approx(8.0)
    assert s.flaps_per_hour == pytest.approx(1.0)
    assert s.peak_workers == 6


def test_a_cancelled_start_still_counts_and_a_ready_worker_is_no_new_start() -> None:
    """5 -> 9 at 100 s and back to 5 at 110 s, before the 60 s lead: 4 starts, cancelled; the
    move from provisioning to ready of later starts adds none."""
    fleet = FleetSpec(provision_delay_seconds=60, drain_limit_seconds=0)
    workload = _workload([0.5], [1.0], 1200)
    plan = {100: 9, 110: 5, 600: 7}
    s = score(run_policy(workload, Script(plan, 5), fleet, initial_workers=5), sla_seconds=30.0)
    assert s.task_starts == 4 + 2
    assert s.flaps == 0  # the scale-out at 600 s comes 490 s after the scale-in at 110 s


def test_scores_at_every_sla_equal_scoring_each() -> None:
    """One run scored once at several SLAs gives what `score` gives at each (jobs still waiting
    at the end included)."""
    fleet = FleetSpec(provision_delay_seconds=60, drain_limit_seconds=0)
    rng = np.random.default_rng(4)
    arrivals = np.sort(rng.uniform(0, 600, 900))
    workload = _workload(arrivals.tolist(), rng.exponential(1.0, 900).tolist(), 600)
    result = run_policy(workload, Script({200: 1, 400: 3}, 2), fleet, initial_workers=2)
    many = scores_at(result, [10.0, 30.0, 300.0])
    for sla, got in many.items():
        assert got == replace(score(result, sla), wall_seconds=got.wall_seconds)
    assert many[10.0].sla_compliance < many[300.0].sla_compliance
