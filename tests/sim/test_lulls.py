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


def _bursty(policy_name: str) -> tuple[tuple[int, ...], list[int]]:
    """Two hours of on/off traffic (seed 0), a 10 s SLA at p95, lead 60 s + 0..10 s, under
    `policy_name`: the late jobs among those arriving in each of the first three bursts' first
    100 s, and the fleet the decisions ask for from 300 to 100 s before the third burst."""
    counts = scenario("bursty").counts(seed=0, length_seconds=7200)
    spec = RunSpec(seed=0, sla_seconds=10.0, percentile=0.95, provision_jitter_seconds=10.0)
    workload = build_workload("bursty", counts, spec.fleet(), seed=0, warmup_seconds=600)
    policy = make_policy(policy_name, spec.settings(), counts, True)
    warm = float(counts[:300].mean())
    result = run_policy(
        workload, policy, spec.fleet(), initial_workers(policy, spec.settings(), warm)
    )
    arrived = np.asarray(workload.arrivals) - workload.warmup_seconds
    waited = np.asarray(result.starts) - np.asarray(workload.arrivals)
    late = (waited > spec.sla_seconds) | np.isnan(waited)
    lost = tuple(int(late[(arrived >= o) & (arrived < o + 100)].sum()) for o in ONSETS)
    start = policy.decisions[0].at + workload.warmup_seconds
    lull = [d.target for d in policy.decisions if 2_400 <= d.at - start < 2_600]
    return lost, lull


def test_lulls_are_held_through_until_the_bursts_are_forecast() -> None:
    # GIVEN on/off traffic whose watch begins in a burst: the first lull, to 2 jobs/s, is
    # below any rate read since (40 jobs/s)
    # WHEN the default policy runs it, and the one without "lulls"
    (first, second, third), lull = _bursty(DEFAULT_POLICY)
    (unheld, second_unheld, _), _ = _bursty("predictive-no-lulls")
    # THEN without "lulls" the first burst, which nothing vouched for, is late for its first
    # minute (about 2,500 of 4,000 jobs: the physical bound for 2-3 workers standing), and from
    # the second the returned lull vouches for the next
    assert unheld > 2_000
    assert second_unheld < 0.1 * unheld
    # AND with it the delayed off holds through the first lull as a lull that may come back,
    # and through the second as one that came back: neither burst loses a tenth as many
    assert first < 0.1 * unheld
    assert second < 0.1 * unheld
    # AND from the third the recurring-burst model forecasts them, and the hold steps aside:
    # the fleet in the last minutes of that lull, before the forecast orders a lead ahead, is
    # the lull's own few workers, not the burst's
    assert third < 0.1 * unheld
    assert lull and max(lull) <= 6
