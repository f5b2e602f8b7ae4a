"""The simulator's Kafka partition cap and RabbitMQ prefetch: what each does to the fleet."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from queue_autoscale.sim.arrivals import ArrivalError
from queue_autoscale.sim.engine import FleetView, run_policy
from queue_autoscale.sim.runner import RunSpec, compare
from queue_autoscale.sim.workload import FleetSpec, Workload, build_workload


class Fixed:
    name = "fixed"
    interval_seconds = 60

    def __init__(self, size: int) -> None:
        self.size = size
        self.views: list[tuple[int, int, int]] = []

    def decide(self, view: FleetView) -> int:
        self.views.append((view.visible, view.in_flight, view.running))
        return self.size


def jobs(arrivals: list[float], durations: list[float], horizon: int = 30) -> Workload:
    counts = np.bincount(np.floor(arrivals).astype(np.int64), minlength=horizon)
    return Workload("t", counts, 0, np.array(arrivals), np.array(durations))


def test_a_job_prefetched_by_a_busy_worker_waits_while_another_is_idle() -> None:
    # GIVEN 2 single-slot workers; a 10 s job, then two 1 s jobs
    load = jobs([0.1, 0.2, 0.3], [10.0, 1.0, 1.0])
    shared = run_policy(load, Fixed(2), FleetSpec(), 2)
    prefetched = run_policy(load, Fixed(2), FleetSpec(prefetch=2), 2)
    # THEN a shared FIFO starts job 1 at once on the idle worker, and job 2 when it is done...
    assert shared.starts.tolist() == pytest.approx([0.1, 0.2, 1.2])
    # ...but with prefetch 2 the first worker also took job 1 into its buffer: it waits for the
    # 10 s job although the other worker took job 2 and is idle from 1.3 s
    assert prefetched.starts.tolist() == pytest.approx([0.1, 10.1, 0.3])


def test_buffered_jobs_count_as_waiting_and_only_working_slots_as_in_flight() -> None:
    load = jobs([0.1, 0.2, 0.3, 60.5], [100.0, 1.0, 1.0, 1.0], horizon=120)
    policy = Fixed(2)
    run_policy(load, policy, FleetSpec(prefetch=2), 2)
    # at t = 60: job 1 sits in worker 0's buffer behind the 100 s job: 1 waiting, 1 working
    assert policy.views[1] == (1, 1, 2)


@settings(max_examples=30, deadline=None)
@given(
    counts=st.lists(st.integers(0, 6), min_size=5, max_size=120),
    workers=st.integers(1, 6),
    k=st.integers(1, 3),
    seed=st.integers(0, 1000),
)
def test_a_prefetch_equal_to_the_concurrency_is_the_shared_fifo(
    counts: list[int], workers: int, k: int, seed: int
) -> None:
    fleet = FleetSpec(concurrency=k)
    load = build_workload("p", np.array(counts), fleet, seed=seed, warmup_seconds=0)
    plain = run_policy(load, Fixed(workers), fleet, workers)
    same = run_policy(load, Fixed(workers), FleetSpec(concurrency=k, prefetch=k), workers)
    np.testing.assert_allclose(same.starts, plain.starts)


def test_workers_beyond_the_partition_cap_are_billed_and_serve_nothing() -> None:
    # GIVEN 4 workers on 2 partitions and a steady stream of 1 s jobs at 3 jobs/s
    arrivals = [s + j / 3 for s in range(60) for j in range(3)]
    load = jobs(arrivals, [1.0] * len(arrivals), horizon=60)
    capped = run_policy(load, Fixed(4), FleetSpec(partition_cap=2), 4)
    free = run_policy(load, Fixed(4), FleetSpec(), 4)
    # THEN 2 workers serve (the queue grows at 1 job/s), while 4 are billed
    assert max(capped.series.in_flight) <= 2
    assert capped.series.billed[30] == 4 and capped.series.running[30] == 4
    assert capped.series.visible[59] >= 50
    assert free.series.visible[59] <= 1


def test_our_controller_knows_the_cap_and_keda_pays_for_idle_workers() -> None:
    # GIVEN a spike that wants more workers than 6 partitions can hold
    counts = np.concatenate([np.full(300, 3), np.full(300, 12), np.full(300, 3)])
    spec = RunSpec(partitions=6, seed=1)
    result = compare("spike", counts, ["predictive", "keda"], spec, record_decisions=True)
    ours, keda = result.results
    # THEN ours never asks for more than the cap, and says the cap bound
    assert max(ours.series.desired) == 6
    assert any("partition_cap" in d.constraints for d in result.decisions["predictive"])
    # AND KEDA, which does not know partitions, buys idle workers for no more throughput
    assert max(keda.series.desired) > 6
    assert sum(keda.series.billed) > sum(ours.series.billed)


def test_a_prefetch_below_the_concurrency_is_refused() -> None:
    with pytest.raises(ArrivalError, match="prefetch = 1"):
        RunSpec(concurrency=2, prefetch=1)
