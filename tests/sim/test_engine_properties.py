"""Invariants of the engine under arbitrary arrivals and arbitrary fleet changes."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from queue_autoscale.sim.engine import FleetView, run_policy
from queue_autoscale.sim.scores import score
from queue_autoscale.sim.workload import FleetSpec, build_workload


class Scripted:
    """Sets the desired count from a script, one entry per tick."""

    name = "scripted"

    def __init__(self, sizes: list[int], interval_seconds: int) -> None:
        self.sizes = sizes
        self.interval_seconds = interval_seconds
        self.calls = 0

    def decide(self, view: FleetView) -> int:
        size = self.sizes[self.calls % len(self.sizes)]
        self.calls += 1
        return size


@settings(max_examples=40, deadline=None)
@given(
    counts=st.lists(st.integers(0, 12), min_size=5, max_size=240),
    sizes=st.lists(st.integers(0, 8), min_size=1, max_size=12),
    interval=st.integers(1, 30),
    concurrency=st.integers(1, 3),
    delay=st.integers(0, 45),
    cv=st.sampled_from([0.0, 0.5, 1.0, 2.0]),
    seed=st.integers(0, 1000),
)
def test_jobs_are_conserved_fifo_and_within_capacity(
    counts: list[int],
    sizes: list[int],
    interval: int,
    concurrency: int,
    delay: int,
    cv: float,
    seed: int,
) -> None:
    fleet = FleetSpec(
        service_mean_seconds=2.0,
        service_cv=cv,
        concurrency=concurrency,
        provision_delay_seconds=delay,
        drain_limit_seconds=120,
    )
    workload = build_workload("prop", np.array(counts, dtype=np.int64), fleet, seed, 0)
    result = run_policy(workload, Scripted(sizes, interval), fleet, initial_workers=sizes[0])
    s = score(result, 30.0)

    assert s.served + s.in_service + s.waiting == s.jobs == sum(counts)
    done = ~np.isnan(result.starts)
    starts = result.starts[done]
    assert np.all(done[: starts.size]) and not np.any(done[starts.size :])  # FIFO prefix
    assert np.all(np.diff(starts) >= -1e-9)
    assert np.all(starts >= workload.arrivals[: starts.size] - 1e-9)
    ends = starts + workload.service[: starts.size]
    billed = np.asarray(result.series.billed)
    for t in range(0, result.end_seconds, 7):
        running = int(np.count_nonzero((starts <= t + 0.5) & (ends > t + 0.5)))
        assert running <= billed[t] * concurrency
    assert s.busy_seconds <= s.worker_seconds * concurrency + 1e-6
    assert 0.0 <= s.utilization <= 1.0 + 1e-9
    if s.waiting:  # the run only stops with jobs waiting once the drain limit is spent
        assert result.end_seconds == len(counts) + 120
