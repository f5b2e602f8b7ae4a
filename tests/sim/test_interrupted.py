"""The `interrupted jobs` score: a drained scale-in interrupts nothing, a random kill does."""

from __future__ import annotations

import numpy as np
import pytest

from queue_autoscale.sim.engine import run_policy
from queue_autoscale.sim.policies import initial_workers, make_policy, parse_policies, sim_settings
from queue_autoscale.sim.runner import RunSpec, compare
from queue_autoscale.sim.scores import score
from queue_autoscale.sim.workload import SCALE_IN_KILL, FleetSpec, build_workload


class StepDown:
    """Four workers until t=50, then one; stops them by `scale_in`."""

    name = "down"
    interval_seconds = 10

    def __init__(self, scale_in: str) -> None:
        self.scale_in = scale_in

    def decide(self, view) -> int:
        return 4 if view.elapsed_seconds < 50 else 1


def _busy_four() -> tuple:
    fleet = FleetSpec(service_mean_seconds=20.0, service_cv=0.0, provision_delay_seconds=0)
    counts = np.zeros(200, dtype=np.int64)
    counts[45] = 4  # four 20 s jobs run on all four workers when the scale-in comes at t=50
    return fleet, build_workload("busy", counts, fleet, seed=5, warmup_seconds=0)


def test_a_drained_scale_in_interrupts_no_job() -> None:
    fleet, workload = _busy_four()
    result = run_policy(workload, StepDown("drain"), fleet, initial_workers=4)
    s = score(result, 30.0)
    assert s.interrupted_jobs == 0
    assert s.served == 4


def test_a_random_kill_of_three_busy_workers_interrupts_three_jobs() -> None:
    # GIVEN four busy workers WHEN three are stopped with no drain
    fleet, workload = _busy_four()
    result = run_policy(workload, StepDown(SCALE_IN_KILL), fleet, initial_workers=4)
    s = score(result, 30.0)
    # THEN each stopped worker's job is interrupted and nothing bills for them afterwards
    assert s.interrupted_jobs == 3
    assert result.series.running[50] == 1
    assert result.series.billed[50] == 1


def test_a_random_kill_of_idle_workers_interrupts_nothing() -> None:
    fleet = FleetSpec(service_mean_seconds=1.0, service_cv=0.0, provision_delay_seconds=0)
    counts = np.zeros(200, dtype=np.int64)
    counts[10] = 2  # done long before the scale-in
    workload = build_workload("idle", counts, fleet, seed=5, warmup_seconds=0)
    result = run_policy(workload, StepDown(SCALE_IN_KILL), fleet, initial_workers=4)
    assert score(result, 30.0).interrupted_jobs == 0


def test_keda_no_drain_interrupts_jobs_where_keda_and_predictive_do_not() -> None:
    # GIVEN a spike and a fall with 20 s jobs: scale-in comes while many jobs run
    counts = np.concatenate([np.full(600, 2), np.full(600, 12), np.full(1200, 2)]).astype(np.int64)
    spec = RunSpec(sla_seconds=60.0, service_seconds=20.0, provision_delay_seconds=30, seed=3)
    scores = {
        s.policy: s
        for s in compare("fall", counts, ["predictive", "keda", "keda-no-drain"], spec).scores
    }
    # THEN only the variant without drain interrupts jobs
    assert scores["predictive"].interrupted_jobs == 0
    assert scores["keda"].interrupted_jobs == 0
    assert scores["keda-no-drain"].interrupted_jobs > 0
    assert scores["keda-no-drain"].to_dict()["interrupted_jobs"] > 0


def test_keda_no_drain_is_runnable_by_name_but_not_in_all() -> None:
    assert "keda-no-drain" not in parse_policies("all")
    assert parse_policies("keda-no-drain") == ["keda-no-drain"]
    settings = sim_settings()
    policy = make_policy("keda-no-drain", settings, np.zeros(10, dtype=np.int64))
    assert policy.name == "keda-no-drain"
    assert getattr(policy, "scale_in", None) == SCALE_IN_KILL
    assert initial_workers(policy, settings, 1.0) >= 1


def test_an_unknown_scale_in_mode_is_refused() -> None:
    fleet, workload = _busy_four()
    with pytest.raises(ValueError, match="scale_in"):
        run_policy(workload, StepDown("maybe"), fleet, initial_workers=4)
