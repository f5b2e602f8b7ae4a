"""A flash crowd (5 jobs/s, then 100 jobs/s for 5 minutes) at the bench's settings: no reacting
policy keeps the jobs that arrive before new workers land, so the goal where the reaction bound
misses the target is the verdict's: within half a point of the bound at no more than half its
worker-seconds (sim/verdict.py BOUND_POINTS, BOUND_COST_SHARE)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from queue_autoscale.core import DEFAULT_POLICY
from queue_autoscale.sim.arrivals import scenario
from queue_autoscale.sim.bench import SweepOptions, bench_spec
from queue_autoscale.sim.bound import NAME as BOUND
from queue_autoscale.sim.runner import compare


@pytest.mark.parametrize(
    ("sla", "percentile"),
    [
        pytest.param(
            30.0,
            0.95,
            id="30s-p95",
            marks=pytest.mark.xfail(
                strict=True,
                reason=(
                    "91.19 % against the bound's 91.90 %, 0.71 points below (at 28 % of its "
                    "worker-s): the bound orders its 1,000-worker cap on the record path's jump, "
                    "3 s into the crowd, where ours orders 725, sized on the crowd's first seconds"
                ),
            ),
        ),
        pytest.param(
            60.0,
            0.99,
            id="60s-p99",
            marks=pytest.mark.xfail(
                strict=True,
                reason=(
                    "97.980 % against the bound's 100.000 %, 2.02 points below (at 25 % of its "
                    "worker-s): it plans for its miss budget among the jobs an order can reach, "
                    "233 workers at the onset against the bound's 1,000 (942 late vs none)"
                ),
            ),
        ),
        pytest.param(10.0, 0.95, id="10s-p95"),
        pytest.param(10.0, 0.999, id="10s-p99.9"),
    ],
)
def test_flash_crowd_within_half_a_point_of_the_reaction_bound(
    sla: float, percentile: float
) -> None:
    # GIVEN the flash crowd with the bench's interval and start-up jitter (60 s + 0..10 s)
    counts = scenario("flash-crowd").counts(seed=0)
    spec = replace(bench_spec(SweepOptions(), 0), sla_seconds=sla, percentile=percentile)
    # WHEN the default policy and the reaction bound run the same jobs
    ours, bound = compare("flash-crowd", counts, [DEFAULT_POLICY, BOUND], spec).scores
    # THEN ours is within 0.5 points of the bound at at most half its worker-seconds: at 10 s
    # p95 86.48 % against 86.82 % at 40 %; at 10 s p99.9 86.68 % against 86.82 % at 43 % (it
    # orders the 1,000-worker cap on the record path's jump 3 s into the crowd, as the bound
    # does, and lets it go once the backlog is gone)
    assert ours.sla_compliance >= bound.sla_compliance - 0.005
    assert ours.worker_seconds <= 0.5 * bound.worker_seconds


def _below(measured: str) -> pytest.MarkDecorator:
    """Ours below the bound by more than half a point with jump ticks: the bound orders its cap
    on the record path's jump, ours what the crowd's first seconds ask for."""
    return pytest.mark.xfail(
        strict=True,
        reason=f"{measured}: the bound orders its cap on a jump, ours what the jump's reading asks",
    )


@pytest.mark.parametrize(
    ("seed", "sla"),
    [
        pytest.param(1, 10.0, id="seed-1-sla-10"),
        pytest.param(
            1,
            30.0,
            id="seed-1-sla-30",
            marks=_below("91.00 % against the bound's 91.68 %"),
        ),
        pytest.param(
            2, 30.0, id="seed-2-sla-30", marks=_below("90.83 % against the bound's 91.62 %")
        ),
        pytest.param(
            3, 30.0, id="seed-3-sla-30", marks=_below("90.76 % against the bound's 91.52 %")
        ),
    ],
)
def test_flash_crowd_within_half_a_point_of_the_bound_on_other_seeds(seed: int, sla: float) -> None:
    # GIVEN the flash crowd drawn with another seed, the bench's interval and start-up jitter
    counts = scenario("flash-crowd").counts(seed=seed)
    spec = replace(bench_spec(SweepOptions(), seed), sla_seconds=sla, percentile=0.95)
    # WHEN the default policy and the reaction bound run the same jobs
    ours, bound = compare("flash-crowd", counts, [DEFAULT_POLICY, BOUND], spec).scores
    # THEN ours stays within 0.5 points of the bound at at most half its worker-seconds
    assert ours.sla_compliance >= bound.sla_compliance - 0.005
    assert ours.worker_seconds <= 0.5 * bound.worker_seconds


@pytest.mark.xfail(
    strict=True,
    reason=(
        "98.205 % against the bound's 100.000 %, 1.80 points below (at 26 % of its worker-s): "
        "it plans for its miss budget among the jobs an order can reach, 250 workers at the "
        "peak against the bound's 1,000"
    ),
)
def test_flash_crowd_at_60_s_p99_within_half_a_point_of_the_bound_on_seed_3() -> None:
    # GIVEN the flash crowd drawn with seed 3 at SLA 60 s (a lead: a backlog may stand), the
    # bench's interval and start-up jitter, and the reaction bound sized for p99.9 as the bench
    # runs it
    counts = scenario("flash-crowd").counts(seed=3)
    spec = replace(bench_spec(SweepOptions(), 3), sla_seconds=60.0, percentile=0.99)
    # WHEN the default policy at p99 and the bound run the same jobs
    ours = compare("flash-crowd", counts, [DEFAULT_POLICY], spec).scores[0]
    bound = compare("flash-crowd", counts, [BOUND], replace(spec, percentile=0.999)).scores[0]
    # THEN ours is within 0.5 points of the bound at at most half its worker-seconds
    assert ours.sla_compliance >= bound.sla_compliance - 0.005
    assert ours.worker_seconds <= 0.5 * bound.worker_seconds
