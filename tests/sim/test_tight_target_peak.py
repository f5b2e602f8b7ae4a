"""A tight target on a surge at the bench's settings: configured for p99.9, the default policy
orders a few hundred workers, not the 1,000-worker cap the reaction bound orders, and still buys
compliance over p95 within half a point of the bound. (The flash crowd at SLA 10 s, where it
orders the cap for 80 s, is in test_flash_crowd.py.)"""

from __future__ import annotations

from dataclasses import replace

import pytest

from queue_autoscale.core import DEFAULT_POLICY
from queue_autoscale.sim.arrivals import scenario
from queue_autoscale.sim.bench import SweepOptions, bench_spec
from queue_autoscale.sim.bound import NAME as BOUND
from queue_autoscale.sim.runner import compare


@pytest.mark.parametrize("workload", ["spike", "bursty"])
def test_a_p999_surge_stays_far_below_the_cap(workload: str) -> None:
    # GIVEN the surge at SLA 30 s with the bench's interval (10 s), start-up jitter (60 s +
    # 0..10 s) and max_workers (1,000)
    counts = scenario(workload).counts(seed=0)
    spec = replace(bench_spec(SweepOptions(), 0), sla_seconds=30.0, percentile=0.999)
    # WHEN the default policy configured for p99.9 and the reaction bound run the same jobs,
    # and the default policy at p95
    ours, bound = compare(workload, counts, [DEFAULT_POLICY, BOUND], spec).scores
    p95 = compare(workload, counts, [DEFAULT_POLICY], replace(spec, percentile=0.95)).scores[0]
    # THEN the p99.9 fleet peaks well under the cap the bound orders (331 workers on spike:
    # its plan sizes for the jobs an order can still reach; 48 on bursty, whose lulls are held
    # through for the next burst)
    assert bound.peak_workers == 1_000
    assert ours.peak_workers <= 450
    # AND it still buys compliance over p95 where p95 leaves any job late (98.704 % vs 98.670 %
    # on spike; on bursty both keep every job within the SLA), within half a point of the
    # bound or above it (98.96 % on spike, 90.92 % on bursty)
    assert ours.sla_compliance > p95.sla_compliance or ours.sla_compliance == 1.0
    assert ours.sla_compliance >= bound.sla_compliance - 0.005
