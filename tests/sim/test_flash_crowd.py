"""A flash crowd (5 jobs/s, then 100 jobs/s for 5 minutes) at the bench's settings: the drain's
recovery horizon from the miss budget brings hybrid within half a point of the reaction bound
at well under half its worker-seconds, where the fixed SLA / 3 horizon fell short."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from queue_autoscale.sim.arrivals import scenario
from queue_autoscale.sim.bench import SweepOptions, bench_spec
from queue_autoscale.sim.bound import NAME as BOUND
from queue_autoscale.sim.runner import compare

HORIZON = re.compile(r"at least the ([\d.]+) s recovery horizon")


@pytest.mark.parametrize(("sla", "percentile"), [(30.0, 0.95), (60.0, 0.99)])
def test_flash_crowd_within_half_a_point_of_the_reaction_bound(
    sla: float, percentile: float
) -> None:
    # GIVEN the flash crowd with the bench's interval and start-up jitter (60 s + 0..10 s)
    counts = scenario("flash-crowd").counts(seed=0)
    spec = replace(bench_spec(SweepOptions(), 0), sla_seconds=sla, percentile=percentile)
    # WHEN hybrid and the reaction bound run the same jobs, and hybrid again with the horizon
    # fixed at SLA / 3 (the former default)
    run = compare("flash-crowd", counts, ["hybrid", BOUND], spec, record_decisions=True)
    ours, bound = run.scores
    fixed_spec = replace(spec, recovery_horizon_seconds=sla / 3.0)
    fixed_score = compare("flash-crowd", counts, ["hybrid"], fixed_spec).scores[0]
    # THEN hybrid is within 0.5 points of the bound at at most half its worker-seconds
    assert ours.sla_compliance >= bound.sla_compliance - 0.005
    assert ours.worker_seconds <= 0.5 * bound.worker_seconds
    # AND the fixed horizon is not (it writes off the last SLA / 3 of every job's wait)
    assert fixed_score.sla_compliance < bound.sla_compliance - 0.005
    # AND the surge's drain sized with a horizon shorter than SLA / 3, said in its words
    horizons = [
        float(found.group(1))
        for d in run.decisions["hybrid"]
        if (found := HORIZON.search(d.reason)) is not None
    ]
    assert horizons and min(horizons) < sla / 3.0


@pytest.mark.parametrize(
    ("seed", "sla"),
    [
        pytest.param(1, 10.0, id="seed-1-sla-10"),
        pytest.param(1, 30.0, id="seed-1-sla-30"),
        pytest.param(2, 30.0, id="seed-2-sla-30"),
        pytest.param(3, 30.0, id="seed-3-sla-30"),
    ],
)
def test_flash_crowd_within_half_a_point_of_the_bound_on_other_seeds(seed: int, sla: float) -> None:
    # GIVEN the flash crowd drawn with another seed, the bench's interval and start-up jitter
    counts = scenario("flash-crowd").counts(seed=seed)
    spec = replace(bench_spec(SweepOptions(), seed), sla_seconds=sla, percentile=0.95)
    # WHEN hybrid and the reaction bound run the same jobs
    ours, bound = compare("flash-crowd", counts, ["hybrid", BOUND], spec).scores
    # THEN hybrid stays within 0.5 points of the bound at at most half its worker-seconds: its
    # landing fleet empties the queue of a landing one interval late, and is not cut while it
    # starts (sized on the queue at the lead and cut by the savable-jobs rule, these four cells
    # were 0.56-0.88 points below the bench's bound)
    assert ours.sla_compliance >= bound.sla_compliance - 0.005
    assert ours.worker_seconds <= 0.5 * bound.worker_seconds


def test_flash_crowd_at_60_s_p99_within_half_a_point_of_the_bound_on_seed_3() -> None:
    # GIVEN the flash crowd drawn with seed 3 at SLA 60 s (a lead: a backlog may stand), the
    # bench's interval and start-up jitter, and the reaction bound sized for p99.9 as the bench
    # runs it
    counts = scenario("flash-crowd").counts(seed=3)
    spec = replace(bench_spec(SweepOptions(), 3), sla_seconds=60.0, percentile=0.99)
    # WHEN hybrid at p99 and the bound run the same jobs
    ours = compare("flash-crowd", counts, ["hybrid"], spec).scores[0]
    bound = compare("flash-crowd", counts, [BOUND], replace(spec, percentile=0.999)).scores[0]
    # THEN hybrid is within 0.5 points of the bound at at most half its worker-seconds: it drains
    # the backlog beyond its unspent budget before the onset finds it (with 91 waiting at the
    # onset against the bound's 1 it was 0.52 points under)
    assert ours.sla_compliance >= bound.sla_compliance - 0.005
    assert ours.worker_seconds <= 0.5 * bound.worker_seconds
