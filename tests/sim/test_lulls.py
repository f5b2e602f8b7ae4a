"""Lulls that come back (core/falls.py) in the simulator: on/off traffic at a 10 s SLA, where
the jobs of a burst's first minute are due before any worker ordered at its onset lands."""

from __future__ import annotations

import numpy as np

from queue_autoscale.core import DEFAULT_POLICY
from queue_autoscale.sim.arrivals import scenario
from queue_autoscale.sim.engine import run_policy
from queue_autoscale.sim.policies import initial_workers, make_policy
from queue_autoscale.sim.runner import RunSpec
from queue_autoscale.sim.workload import build_workload

ONSETS = (900, 1800, 2700)
"""The scored seconds the first three bursts of `bursty` begin (every 900 s: 5 minutes at 40
jobs/s, then 10 minutes at 2)."""


def test_a_lull_as_long_as_the_last_is_held_through_until_the_bursts_are_forecast() -> None:
    # GIVEN two hours of on/off traffic (seed 0), a 10 s SLA at p95, lead 60 s + 0..10 s
    counts = scenario("bursty").counts(seed=0, length_seconds=7200)
    spec = RunSpec(seed=0, sla_seconds=10.0, percentile=0.95, provision_jitter_seconds=10.0)
    workload = build_workload("bursty", counts, spec.fleet(), seed=0, warmup_seconds=600)
    policy = make_policy(DEFAULT_POLICY, spec.settings(), counts, True)
    # WHEN the default policy runs it, every decision recorded
    warm = float(counts[:300].mean())
    result = run_policy(
        workload, policy, spec.fleet(), initial_workers(policy, spec.settings(), warm)
    )
    arrived = np.asarray(workload.arrivals) - workload.warmup_seconds
    waited = np.asarray(result.starts) - np.asarray(workload.arrivals)
    late = (waited > spec.sla_seconds) | np.isnan(waited)

    def late_in(onset: int) -> int:
        """Late jobs among those arriving in the burst's first 100 s."""
        return int(late[(arrived >= onset) & (arrived < onset + 100)].sum())

    first, second, third = (late_in(onset) for onset in ONSETS)
    # THEN the first burst, which nothing foretold, is late for its first minute (about 2,600
    # of 4,000 jobs: the physical bound for 2-3 workers standing)
    assert first > 2_000
    # AND through the next lull, as long as the one the first burst ended, the delayed off
    # holds workers for its return: the second burst loses far fewer (without the hold it
    # lost as many as the first)
    assert second < 0.5 * first
    # AND from the third the recurring-burst model forecasts them, and the hold steps aside:
    # the fleet in the last minutes of that lull, before the forecast orders a lead ahead, is
    # the lull's own few workers, not the burst's
    assert third < 0.1 * first
    start = policy.decisions[0].at + workload.warmup_seconds
    lull = [d.target for d in policy.decisions if 2_400 <= d.at - start < 2_600]
    assert lull and max(lull) <= 6
