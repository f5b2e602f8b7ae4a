"""Every arrival is accounted for, under every policy and scenario, and the engine keeps FIFO,
never starts a job before it arrives and never runs more jobs than it has worker slots."""

from __future__ import annotations

import numpy as np
import pytest

from queue_autoscale.sim.arrivals import SCENARIOS
from queue_autoscale.sim.engine import run_policy
from queue_autoscale.sim.policies import POLICY_NAMES, initial_workers, make_policy, sim_settings
from queue_autoscale.sim.scores import score
from queue_autoscale.sim.workload import FleetSpec, build_workload
from tests.sim.conftest import FixedFleet

LENGTH = 2400  # long enough to include every scenario's first change except diurnal's swing


@pytest.mark.parametrize("scenario_name", list(SCENARIOS))
@pytest.mark.parametrize("policy_name", POLICY_NAMES)
def test_every_job_served_in_service_or_waiting(scenario_name: str, policy_name: str) -> None:
    fleet = FleetSpec(drain_limit_seconds=600)
    settings = sim_settings(max_workers=200)
    counts = SCENARIOS[scenario_name].counts(seed=3, length_seconds=LENGTH)
    workload = build_workload(scenario_name, counts, fleet, seed=3, warmup_seconds=300)
    policy = make_policy(policy_name, settings, counts)
    result = run_policy(workload, policy, fleet, initial_workers(policy, settings, 5.0))
    s = score(result, 30.0)

    assert s.jobs == int(counts.sum())
    assert s.served + s.in_service + s.waiting == s.jobs
    started = result.starts[~np.isnan(result.starts)]
    assert started.size + int(np.isnan(result.starts).sum()) == workload.arrivals.size
    assert np.all(np.isnan(result.starts[started.size :]))  # FIFO: a prefix started
    assert np.all(started >= workload.arrivals[: started.size] - 1e-9)
    assert np.all(np.diff(started) >= -1e-9)  # FIFO pickup order
    assert 0.0 < s.busy_seconds <= s.worker_seconds


def test_a_fleet_of_zero_leaves_every_job_waiting() -> None:
    fleet = FleetSpec(drain_limit_seconds=60)
    counts = np.full(120, 3, dtype=np.int64)
    workload = build_workload("none", counts, fleet, seed=1, warmup_seconds=0)
    result = run_policy(workload, FixedFleet(0), fleet, initial_workers=0)
    s = score(result, 30.0)
    assert (s.jobs, s.served, s.in_service, s.waiting) == (360, 0, 0, 360)
    assert s.sla_compliance == 0.0
    assert result.end_seconds == 120 + 60


def test_slots_bound_the_jobs_in_service() -> None:
    fleet = FleetSpec(concurrency=2, provision_delay_seconds=0)
    counts = np.full(600, 10, dtype=np.int64)  # 10 jobs/s of 1 s on 3 x 2 slots: overloaded
    workload = build_workload("hot", counts, fleet, seed=2, warmup_seconds=0)
    result = run_policy(workload, FixedFleet(3), fleet, initial_workers=3)
    starts = result.starts[~np.isnan(result.starts)]
    ends = starts + workload.service[: starts.size]
    for t in np.linspace(10, 590, 30):
        running = int(np.count_nonzero((starts <= t) & (ends > t)))
        assert running <= 6
    assert result.series.visible[599] > 1000  # the queue grew: work was waiting, slots were full


def test_new_workers_take_jobs_only_after_the_provisioning_delay() -> None:
    class StepUp:
        name = "step"
        interval_seconds = 10

        def decide(self, view) -> int:
            return 1 if view.elapsed_seconds < 100 else 5

    fleet = FleetSpec(provision_delay_seconds=60, drain_limit_seconds=0)
    counts = np.full(300, 4, dtype=np.int64)
    workload = build_workload("delay", counts, fleet, seed=4, warmup_seconds=0)
    result = run_policy(workload, StepUp(), fleet, initial_workers=1)
    assert result.series.running[99] == 1
    assert result.series.pending[100] == 4 and result.series.running[158] == 1
    assert result.series.running[160] == 5
    assert result.series.billed[100] == 5  # provisioning tasks are billed


def test_scale_in_lets_busy_workers_finish() -> None:
    class StepDown:
        name = "down"
        interval_seconds = 10

        def decide(self, view) -> int:
            return 4 if view.elapsed_seconds < 50 else 1

    fleet = FleetSpec(service_mean_seconds=20.0, service_cv=0.0, provision_delay_seconds=0)
    counts = np.zeros(200, dtype=np.int64)
    counts[45] = 4  # four 20 s jobs start at once on four workers just before the scale-in
    workload = build_workload("drain", counts, fleet, seed=5, warmup_seconds=0)
    result = run_policy(workload, StepDown(), fleet, initial_workers=4)
    s = score(result, 30.0)
    assert s.served == 4 and s.waiting == 0
    assert result.series.running[50] == 1
    assert result.series.billed[50] == 4  # three stopping workers still finish their jobs
    assert result.series.billed[70] == 1
