"""Jump ticks in the simulator: the record path asks for a tick between clock ticks when the
arrivals it has counted jump (core/jump.py), late by its batching window."""

from __future__ import annotations

import numpy as np
import pytest

from queue_autoscale.sim.engine import run_policy
from queue_autoscale.sim.policies import CorePolicy, make_policy, sim_settings
from queue_autoscale.sim.workload import FleetSpec, build_workload

WARMUP = 600
ONSET = 905
"""The step's first scored second, WARMUP + ONSET from time 0: between two clock ticks (every
10 s from time 0)."""
STEP = WARMUP + ONSET


def _ticks(sla: float, lateness: int | None, policy: str = "predictive") -> list[tuple[int, int]]:
    counts = np.full(1500, 5, dtype=np.int64)
    counts[ONSET:] = 40  # 5 -> 40 jobs/s
    fleet = FleetSpec(provision_delay_seconds=60, jump_lateness_seconds=lateness)
    workload = build_workload("step", counts, fleet, seed=3, warmup_seconds=WARMUP)
    settings = sim_settings(
        sla_seconds=sla, service_seconds=1.0, provision_delay_seconds=60, interval_seconds=10
    )
    pol = make_policy(policy, settings, counts, record=True)
    assert isinstance(pol, CorePolicy)
    run_policy(workload, pol, fleet, initial_workers=7)
    return [(round(d.at - fleet.base_epoch), d.target) for d in pol.decisions]


def test_a_step_between_clock_ticks_is_ticked_on_once_the_record_path_counts_it() -> None:
    ticks = _ticks(60.0, 2)
    jumps = [(at, target) for at, target in ticks if at % 10]
    # THEN the first off-clock tick comes after the step's first seconds reach the counters
    # (2 s late) and before the next clock tick at 910, and it orders for the step
    first, target = next((at, t) for at, t in jumps if at > WARMUP)
    assert STEP + 2 < first < STEP + 5
    before = max(t for at, t in ticks if at < first)
    assert target > before
    # once the first ticks have read a rate (a tick that read none lines up at 0 jobs/s), no
    # off-clock tick before the step: 5 jobs/s of Poisson noise never passes the line
    assert all(at > STEP for at, _ in jumps if at > 10)
    # the clock alone orders for the step at the next clock tick, 5 s after it
    clock_only = _ticks(60.0, None)
    assert all(at % 10 == 0 for at, _ in clock_only)
    assert min(at for at, t in clock_only if at > STEP and t > before) == STEP + 5


def test_no_jump_tick_where_the_next_clock_tick_still_saves_the_onset() -> None:
    # a 300 s SLA is past the reach (lead 60 s + interval 10 s): its clock ticks alone
    assert all(at % 10 == 0 for at, _ in _ticks(300.0, 2))


def test_the_seeded_baseline_keeps_the_clock() -> None:
    assert all(at % 10 == 0 for at, _ in _ticks(60.0, 2, "seed-hybrid"))


@pytest.mark.parametrize("lateness", [0, 1, 2])
def test_the_later_the_record_path_counts_the_later_the_jump_tick(lateness: int) -> None:
    first = next(at for at, _ in _ticks(60.0, lateness) if at % 10 and at > WARMUP)
    assert STEP + lateness < first <= STEP + lateness + 2


def test_a_record_path_later_than_the_next_clock_tick_adds_no_tick_before_it() -> None:
    ticks = _ticks(60.0, 5)
    assert not [at for at, _ in ticks if STEP <= at < STEP + 5]
    clock = dict(ticks)[STEP + 5]
    assert clock > dict(ticks)[STEP - 5]  # the clock tick orders for the step


def test_the_reaction_bound_reacts_to_a_jump_as_soon_as_our_controller_may() -> None:
    # GIVEN the step between clock ticks, with and without the record path's jump ticks
    counts = np.full(1500, 5, dtype=np.int64)
    counts[ONSET:] = 40
    settings = sim_settings(
        sla_seconds=60.0, service_seconds=1.0, provision_delay_seconds=60, interval_seconds=10
    )
    desired: dict[int | None, list[int]] = {}
    for lateness in (None, 2):
        fleet = FleetSpec(provision_delay_seconds=60, jump_lateness_seconds=lateness)
        workload = build_workload("step", counts, fleet, seed=3, warmup_seconds=WARMUP)
        bound = make_policy("reaction-bound", settings, counts)
        result = run_policy(workload, bound, fleet, initial_workers=7)
        desired[lateness] = [int(d) for d in result.series.desired]
    # THEN with jump ticks it orders every worker once the step's seconds are counted, 2 s late,
    # a few seconds before the next clock tick, where the clock alone first orders them
    max_workers = settings.max_workers
    first = {
        key: next(t for t, d in enumerate(row) if d == max_workers) for key, row in desired.items()
    }
    assert STEP + 2 < first[2] < STEP + 5
    assert first[None] == STEP + 5


def test_the_jumps_ablation_keeps_the_clock_and_decides_as_the_policy_does() -> None:
    # the ablation without jumps ticks as the clock-only run of the policy does, target for
    # target: the core decision never reads the jumps
    assert _ticks(60.0, 2, "predictive-no-jumps") == _ticks(60.0, None)
