"""The honest scores on series small enough to check by hand, and the provisioning jitter."""

from __future__ import annotations

import math

import numpy as np
import pytest

from queue_autoscale.core import DEFAULT_POLICY
from queue_autoscale.sim.bench import decile_markdown
from queue_autoscale.sim.bound import NAME as BOUND_NAME
from queue_autoscale.sim.engine import run_policy
from queue_autoscale.sim.honest import (
    absorbable_step,
    detection_latency,
    hourly_compliance,
    nasa_variants,
    surge_starts,
)
from queue_autoscale.sim.scores import flaps
from queue_autoscale.sim.workload import FleetSpec, Workload
from tests.sim.conftest import FixedFleet


def test_a_step_is_one_surge_at_its_minute_and_steady_traffic_none() -> None:
    rng = np.random.default_rng(1)
    step = np.concatenate([rng.poisson(10, 900), rng.poisson(50, 900)]).astype(np.int64)
    assert surge_starts(step) == [900]
    assert surge_starts(rng.poisson(20, 7200).astype(np.int64)) == []


def test_detection_latency_is_surge_to_first_rise() -> None:
    desired = [3] * 100 + [4] * 50  # rises at second 100
    # a surge 70 s after a 5 s offset: seen 25 s later
    assert detection_latency(desired, [70], offset=5) == 25.0
    assert math.isnan(detection_latency(desired, [], offset=0))
    # never rising after the surge (a fixed fleet): never detected, no step absorbed
    assert detection_latency([3] * 150, [50], offset=0) == math.inf
    assert absorbable_step(math.inf, 60.0, 30.0) == 1.0


def test_absorbable_step_is_reaction_plus_sla_over_reaction() -> None:
    assert absorbable_step(20.0, 60.0, 30.0) == pytest.approx(110.0 / 80.0)
    assert absorbable_step(0.0, 0.0, 30.0) == math.inf
    assert math.isnan(absorbable_step(math.nan, 60.0, 30.0))


def test_flaps_count_scale_outs_soon_after_a_scale_in() -> None:
    desired = [5, 5, 4, 4, 4, 6, 6]  # in at 2, out at 5: 3 s later
    assert flaps(desired, 0, window_seconds=10) == 1
    assert flaps(desired, 0, window_seconds=2) == 0
    assert flaps([5, 6, 7, 7], 0, window_seconds=100) == 0  # outs with no in before them


def test_hourly_compliance_scores_each_hour_of_arrivals() -> None:
    # one worker, 1 s jobs; a job per second for 2 h, plus 100 extra jobs at 5400 s: the
    # burst's jobs and those behind them wait beyond a 10 s SLA
    arrivals = [float(s) for s in range(7200)] + [5400.5] * 100
    arrivals.sort()
    counts = np.bincount(np.floor(arrivals).astype(int), minlength=7200).astype(np.int64)
    workload = Workload("hand", counts, 0, np.array(arrivals), np.ones(len(arrivals)))
    fleet = FleetSpec(provision_delay_seconds=0, drain_limit_seconds=0)
    result = run_policy(workload, FixedFleet(1), fleet, initial_workers=1)
    hours = hourly_compliance(result, sla_seconds=10.0)
    assert hours.size == 7  # windows at 0, 600, ..., 3600 s
    assert hours[0] == 1.0  # the first hour has no burst
    assert hours[-1] < 0.99  # the last hour holds it


def test_jitter_spreads_landings_within_the_bound_and_repeats() -> None:
    counts = np.zeros(200, dtype=np.int64)
    workload = Workload("none", counts, 0, np.array([]), np.array([]))

    def landed(jitter: float, seed: int) -> list[int]:
        fleet = FleetSpec(
            provision_delay_seconds=60,
            provision_jitter_seconds=jitter,
            jitter_seed=seed,
            drain_limit_seconds=0,
        )
        result = run_policy(workload, FixedFleet(10, interval_seconds=200), fleet, 0)
        return result.series.running

    fixed = landed(0.0, 0)
    assert fixed[59] == 0 and fixed[60] == 10  # all at 60 s exactly
    spread = landed(20.0, 3)
    assert spread[59] == 0 and spread[80] == 10  # none before 60 s, all by 80 s
    assert 0 < spread[70] < 10 or spread[65] < 10  # and not all at once
    assert spread == landed(20.0, 3)


def test_nasa_variants_are_seeded_windows_inside_the_trace() -> None:
    first = nasa_variants(100_000, 50, 3600, seed=7)
    assert first == nasa_variants(100_000, 50, 3600, seed=7)
    assert len(first) == 50
    assert all(0 <= v.start <= 100_000 - 3600 and v.scale in (5, 10, 20) for v in first)
    assert len({v.start for v in first}) > 40


def test_worst_decile_section_lists_the_bound_last_as_the_diagnostic() -> None:
    # GIVEN worst-decile values for the default policy (96.224 %), the reaction bound
    # (92.359 %) and keda (69.89 %) on the same 50 windows
    decile = {DEFAULT_POLICY: 0.96224, BOUND_NAME: 0.92359, "keda": 0.6989}
    # WHEN the section is written
    lines = decile_markdown(decile, 50, 0)
    rows = [line for line in lines if line.startswith("| ") and "%" in line]
    # THEN the policies keep their order and the bound comes last, marked as the diagnostic
    assert rows == [
        f"| {DEFAULT_POLICY} | 96.224% |",
        "| keda | 69.890% |",
        f"| {BOUND_NAME} (diagnostic) | 92.359% |",
    ]
    # AND the gap is stated in points, with its sign in words
    assert any("10th percentile is 3.86 points above its" in line for line in lines)
    below = decile_markdown({DEFAULT_POLICY: 0.90, BOUND_NAME: 0.925}, 10, 3)
    assert any("10th percentile is 2.50 points below its" in line for line in below)
    assert any("(seed 3)" in line for line in below)
    # AND without the bound there is no sentence about it
    assert not any("points" in line for line in decile_markdown({DEFAULT_POLICY: 0.9}, 10, 0))
