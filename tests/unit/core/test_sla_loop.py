"""The SLA loop: realized compliance from the counters' pickups, and the misses it excuses (the
chance constraint's level reads both, core/predictive_knobs.py `chance_level`)."""

from __future__ import annotations

import math

import pytest

from queue_autoscale.core import ControllerState, Sample
from queue_autoscale.core.predictive_knobs import horizon_seconds, loop_window_seconds
from queue_autoscale.core.sla_loop import late_starts, update
from queue_autoscale.core.state import state_from_dict, state_to_dict
from tests.unit.core.builders import NOW, decide_default, settings, snapshot

CFG = settings(
    sla_seconds=30.0,
    percentile=0.99,
    provisioning_lead_seconds=60.0,
    evaluation_interval_seconds=10.0,
)
W = loop_window_seconds(CFG)  # (60 + 30) / (1 - 0.99) = 9,000 s


def _pickups(seconds: range, per_second: int, pickup_s: float) -> list[tuple[int, int, int]]:
    return [(s, per_second, round(per_second * pickup_s * 1000)) for s in seconds]


def _state(started: float = 0.0, late: float = 0.0) -> ControllerState:
    return ControllerState(
        "jobs",
        samples=(Sample(NOW - 10.0, 20.0, 0, 20),),
        realized_started=started,
        realized_late=late,
        realized_through=NOW - 20.0,
    )


def test_a_second_is_late_when_its_mean_pickup_exceeds_the_sla() -> None:
    rows = [(100, 10, 10 * 31_000), (101, 5, 5 * 29_000), (102, 0, 0), (103, 4, 4 * 40_000)]
    assert late_starts(rows, None, 103, 30.0) == (19, 14)
    assert late_starts(rows, 100, 102, 30.0) == (5, 0)  # only (100, 102]


def test_window_is_derived_from_lead_sla_and_budget() -> None:
    # (L + S) / b: one reaction all late moves the realized share by at most the budget b
    assert loop_window_seconds(CFG) == pytest.approx(9000.0)
    loose = settings(sla_seconds=300.0, provisioning_lead_seconds=60.0, percentile=0.95)
    assert loop_window_seconds(loose) == pytest.approx(7200.0)
    tight = settings(sla_seconds=30.0, provisioning_lead_seconds=60.0, percentile=0.999)
    assert loop_window_seconds(tight) == pytest.approx(90_000.0)


def test_new_starts_are_counted_into_sums_decaying_over_the_window() -> None:
    # 10 s of new starts, all late (40 s pickups), over 1,000 earlier on-time ones
    rows = _pickups(range(int(NOW) - 19, int(NOW) - 9), 20, 40.0)
    reading = update(_state(started=1000.0), rows, CFG, NOW)
    assert reading.started == pytest.approx(1000.0 * math.exp(-10 / W) + 200.0)
    assert reading.late == 200.0
    assert reading.compliance == pytest.approx(1.0 - 200.0 / reading.started)


def test_seconds_are_counted_once_and_only_once_settled() -> None:
    rows = _pickups(range(int(NOW) - 30, int(NOW) + 1), 1, 1.0)
    reading = update(_state(), rows, CFG, NOW)
    # (NOW - 20, NOW - 10]: 10 seconds; the last 10 s have not settled
    assert reading.started == 10.0 and reading.through == NOW - 10.0


def test_the_default_policy_publishes_the_realized_compliance_and_its_level() -> None:
    snap = snapshot(arrival_rate=20.0, mean_job_seconds=1.0, running=22, desired=22)
    plain = decide_default(snap, CFG, _state(), NOW)
    loaded = decide_default(snap, CFG, _state(started=1000.0, late=500.0), NOW)
    # THEN half the counted jobs late reads as 50 % compliance (both sums decay alike), and the
    # level b + (b - m) = 0.01 + (0.01 - 0.5) is below its floor, one of the 1,000 jobs: 0.1 %
    assert loaded.decision.realized_compliance == pytest.approx(0.5)
    assert "level 0.10%: budget 1.00%, realized 50.00%" in loaded.decision.reason
    assert loaded.state.realized_late / loaded.state.realized_started == pytest.approx(0.5)
    # AND with nothing counted there is no compliance to publish, and the level is the budget
    assert plain.decision.realized_compliance is None
    assert "level 1.00%: budget 1.00%, none counted yet" in plain.decision.reason


def test_misses_in_the_reaction_time_of_a_surge_spend_no_budget() -> None:
    # a tick 25 s ago found jobs no order could save (`surge_at`): the 200 late starts 10..19 s
    # ago, within its horizon L + I + S, are the reaction bound's
    assert horizon_seconds(CFG) == 100.0
    rows = _pickups(range(int(NOW) - 19, int(NOW) - 9), 20, 40.0)
    surge = update(_state(started=10_000.0), rows, CFG, NOW, surge_at=NOW - 25.0)
    assert surge.late == 200.0 and surge.excused == 200.0  # counted in the compliance...
    assert surge.compliance == pytest.approx(1.0 - 200.0 / surge.started)
    assert surge.late - surge.excused == 0.0  # ...none of them is the fleet's own miss
    # ...not 200 s after it (past the horizon, 100 s)
    assert update(_state(started=10_000.0), rows, CFG, NOW, surge_at=NOW - 200.0).excused == 0.0
    # ...and 115 s after it only the 5 seconds up to its horizon (lead + SLA + 2 intervals would
    # have taken all 10)
    assert update(_state(started=10_000.0), rows, CFG, NOW, surge_at=NOW - 115.0).excused == 100.0
    # a surge 15 s ago covers only the 6 seconds from then on: 120 late starts
    assert update(_state(started=10_000.0), rows, CFG, NOW, surge_at=NOW - 15.0).excused == 120.0


def test_the_surge_anchor_survives_the_state_item() -> None:
    kept = ControllerState("jobs", surge_at=NOW - 150.0)
    assert state_from_dict(state_to_dict(kept)).surge_at == NOW - 150.0
    assert state_from_dict(state_to_dict(ControllerState("jobs"))).surge_at is None
    older = {k: v for k, v in state_to_dict(kept).items() if k != "surge_at"}
    assert state_from_dict(older).surge_at is None
