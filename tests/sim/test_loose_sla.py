"""A loose SLA (300 s) in the simulator: the backlog carries the load, the fleet stays at it."""

from __future__ import annotations

from dataclasses import replace
from itertools import pairwise

import pytest

from queue_autoscale.core import DEFAULT_POLICY
from queue_autoscale.sim.arrivals import scenario
from queue_autoscale.sim.bench import SweepOptions, bench_spec
from queue_autoscale.sim.frontier import sweep_window
from queue_autoscale.sim.runner import RunSpec, compare


def test_a_loose_sla_runs_the_fleet_at_the_load_without_oscillating() -> None:
    # GIVEN two hours of steady 20 jobs/s (1 s jobs) and a 300 s SLA, 60 s lead + 0..10 s jitter
    counts = scenario("steady").counts(seed=3, length_seconds=7200)
    spec = RunSpec(seed=3, sla_seconds=300.0, provision_jitter_seconds=10.0, interval_seconds=10)
    # WHEN the default policy runs it with every decision recorded
    run = compare("steady", counts, [DEFAULT_POLICY], spec, record_decisions=True)
    decisions, score = run.decisions[DEFAULT_POLICY], run.scores[0]
    settled = [d.target for d in decisions if d.at - decisions[0].at >= 1200]
    # THEN the fleet stays within a worker of the load's 20 (Erlang C would keep 21-22 busy
    # at rho ~0.93): no limit cycle, the backlog absorbs the noise (19 or 20 workers: with
    # S > L + I the steady state is sized at the load's lower bound)
    assert min(settled) >= 19
    assert max(settled) <= 21
    # AND every job is picked up within the SLA, at a utilization KEDA's integrator reaches
    # (>= 0.98)
    assert score.sla_compliance == 1.0
    assert score.max_pickup_seconds < spec.sla_seconds
    assert score.utilization >= 0.98


@pytest.mark.xfail(
    strict=True,
    reason="280 s at most: at 240 s, while the long window was watched for 240 s, a tick caught "
    "19 of 20 workers busy and released one (the load's lower bound, 18.7 jobs/s, is served by "
    "19); the backlog then stands at 19.75 jobs/s for 90 minutes before it orders 20 and 21. "
    "Reading the young window whole (a fifth of the load at 60 s), the same release came at "
    "5,090 s",
)
def test_a_loose_sla_picks_every_job_up_within_the_carried_wait() -> None:
    # GIVEN the same two hours of steady 20 jobs/s and a 300 s SLA
    counts = scenario("steady").counts(seed=3, length_seconds=7200)
    spec = RunSpec(seed=3, sla_seconds=300.0, provision_jitter_seconds=10.0, interval_seconds=10)
    # WHEN the default policy runs it
    score = compare("steady", counts, [DEFAULT_POLICY], spec).scores[0]
    # THEN every job is picked up within the carried wait (130 s) plus a reaction time, far
    # inside the SLA
    assert score.max_pickup_seconds < 130.0 + 70.0


def test_a_loose_sla_absorbs_recurring_bursts_in_the_backlog() -> None:
    # GIVEN on/off traffic (5 min at 40 jobs/s, 10 min at 2) and a 300 s SLA
    counts = scenario("bursty").counts(seed=0, length_seconds=7200)
    spec = RunSpec(seed=0, sla_seconds=300.0, provision_jitter_seconds=10.0, interval_seconds=10)
    # WHEN the default policy runs it
    score = compare("bursty", counts, [DEFAULT_POLICY], spec).scores[0]
    # THEN every burst's onset waits in the backlog and is drained within the SLA
    assert score.sla_compliance == 1.0
    # AND no burst is chased with idle capacity: the whole run is at a utilization above 0.62
    # (0.82; Erlang-C sizing with a burst floor: 0.43; KEDA's cheapest setting that meets the
    # SLA: 0.50)
    assert score.utilization > 0.62


def test_a_loose_sla_holds_the_fleet_at_the_load_and_reorders_little() -> None:
    # GIVEN the bench's steady window on seed 0 (20.04 jobs/s of 1 s jobs) at a 300 s SLA
    spec = replace(bench_spec(SweepOptions(), 0), sla_seconds=300.0)
    counts, _ = sweep_window(scenario("steady").counts(seed=0, length_seconds=None), 14_400)
    # WHEN the default policy runs it with every decision recorded
    run = compare("steady", counts, [DEFAULT_POLICY], spec, record_decisions=True)
    decisions, score = run.decisions[DEFAULT_POLICY], run.scores[0]
    scored = [d for d in decisions if d.at - decisions[0].at >= spec.warmup_seconds]
    added = sum(max(0, b.target - a.target) for a, b in pairwise(scored))
    # THEN the fleet never goes below one worker under the load, nor down to the step
    # limit's 15, and is ordered back little: 21 -> 20 -> 19 in the first 20 minutes, then
    # 19 -> 20 -> 21 one worker at a time over four hours (2 workers ordered)
    assert min(d.target for d in scored) >= 19
    assert added <= 4
    # AND the backlog still carries the load: every job within the SLA, utilization >= 0.997
    assert score.sla_compliance == 1.0
    assert score.utilization >= 0.997


def test_a_loose_sla_keeps_the_fleet_through_the_cold_start() -> None:
    # GIVEN the bench's steady window on seed 3 (19.97 jobs/s) at a 300 s SLA and p99: a miss
    # budget to spend, and a long rate window not yet full in the first minutes (15.8 jobs/s)
    spec = replace(bench_spec(SweepOptions(), 3), sla_seconds=300.0, percentile=0.99)
    counts, _ = sweep_window(scenario("steady").counts(seed=3, length_seconds=None), 14_400)
    # WHEN the default policy runs it
    run = compare("steady", counts, [DEFAULT_POLICY], spec, record_decisions=True)
    decisions, result = run.decisions[DEFAULT_POLICY], run.results[0]
    first = decisions[0].at
    # THEN before a stabilization window (300 s) of history the delayed off lets go at most the
    # worker the load's lower bound does not need (19.75 - 2.99 sqrt(2 x 19.75 / 300) = 18.7
    # jobs/s: 19 of 20); an early read of the young window once released to 16
    assert min(d.target for d in decisions if d.at - first < 300.0) == decisions[0].current - 1
    # AND the warm-up leaves no backlog a re-order is due for: its oldest job has waited less
    # than S - (L + I) = 230 s (28 s; the early release to 16 left 1,672 jobs)
    warm = spec.warmup_seconds
    assert result.series.oldest_age[warm - 1] < 230.0
    # AND every scored job is picked up within the SLA
    assert run.scores[0].sla_compliance == 1.0
