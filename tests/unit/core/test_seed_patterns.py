"""Seed 000's three patterns in `seed-hybrid`: cascade buffer, gradual escalation, post-breach
recovery, each on numbers worked out by hand."""

from __future__ import annotations

from dataclasses import replace

from queue_autoscale.core import ControllerState, Sample, decide_seed_hybrid
from queue_autoscale.core.seed_hybrid import (
    escalation,
    predict_breach_seconds,
    seed_drain_rate,
)
from tests.unit.core.builders import NOW, settings, snapshot


def test_drain_rate_spans_the_last_five_depths_over_five_intervals() -> None:
    # 500 -> 380 over the last five samples, 10 s apart: 120 / (5 x 10) = 2.4 jobs/s
    assert seed_drain_rate([900, 500, 470, 440, 410, 380], 10.0) == 2.4
    assert seed_drain_rate([100, 150], 10.0) == 0.0  # growing: "can't have negative drain"
    assert seed_drain_rate([100], 10.0) == 0.0


def test_breach_predicted_when_the_queue_outlasts_the_time_left() -> None:
    # 380 waiting at 2.4 jobs/s empties in 158 s; the oldest breaches in 30 - 25 = 5 s
    assert predict_breach_seconds(380, 25.0, 2.4, 30.0) == 5.0
    assert predict_breach_seconds(10, 25.0, 2.4, 30.0) is None  # empties in 4.2 s first
    assert predict_breach_seconds(380, 25.0, 0.0, 30.0) is None  # no drain: can't tell
    assert predict_breach_seconds(0, 25.0, 2.4, 30.0) is None


def test_escalation_grows_a_tenth_a_tick_up_to_double() -> None:
    assert [escalation(n) for n in (0, 1, 5, 10, 30)] == [1.0, 1.1, 1.5, 2.0, 2.0]


def _history(depths: list[int]) -> tuple[Sample, ...]:
    start = NOW - 10.0 * len(depths)
    return tuple(Sample(start + 10.0 * i, 1.0, d, 1) for i, d in enumerate(depths))


def test_cascade_buffer_multiplies_the_drain_when_a_breach_is_two_minutes_away() -> None:
    # GIVEN 380 waiting, oldest 20 s of a 30 s SLA (usage 0.67: no margin, no escalation),
    # jobs of 1 s, 1 worker; the depth fell 500 -> 380 over the last samples
    cfg = settings(sla_seconds=30.0, evaluation_interval_seconds=10.0, max_workers=500)
    snap = snapshot(visible=380, oldest_age_seconds=20.0, mean_job_seconds=1.0, running=1)
    quiet = ControllerState("jobs")
    draining = ControllerState("jobs", samples=_history([500, 470, 440, 410]))
    # WHEN decided without and with that history
    plain = decide_seed_hybrid(snap, cfg, quiet, NOW).decision
    buffered = decide_seed_hybrid(snap, cfg, draining, NOW).decision
    # THEN the drain is 380 / 10 s = 38 workers, and 57 (x1.5) once a breach is predicted in 10 s
    assert plain.terms.drain == 38
    assert buffered.terms.drain == 57
    assert "cascade buffer x1.5" in buffered.reason


def test_escalation_counts_consecutive_high_usage_ticks_and_resets() -> None:
    cfg = settings(sla_seconds=30.0, max_workers=500)
    high = snapshot(visible=100, oldest_age_seconds=25.0, mean_job_seconds=1.0, running=1)
    state = ControllerState("jobs")
    drains = []
    for tick in range(4):
        evaluation = decide_seed_hybrid(high, cfg, state, NOW + 10 * tick)
        state = evaluation.state
        drains.append(evaluation.decision.terms.drain)
    # 100 / 5 s = 20, margin round(1 + 0.0333 x 2, 2) = 1.07 -> 22; then x1.1, x1.2, x1.3
    assert drains == [22, 25, 27, 29]
    assert state.high_usage_ticks == 4
    low = replace(high, oldest_age_seconds=5.0)
    assert decide_seed_hybrid(low, cfg, state, NOW + 40).state.high_usage_ticks == 0


def test_after_a_breach_the_fleet_stays_at_four_fifths_of_max_for_a_window() -> None:
    cfg = settings(sla_seconds=30.0, max_workers=50)  # the recovery period: 300 s
    calm = snapshot(visible=0, arrival_rate=2.0, mean_job_seconds=1.0, running=40, desired=40)
    breached = ControllerState("jobs", last_breach_at=NOW - 200.0)
    recovering = decide_seed_hybrid(calm, cfg, breached, NOW).decision
    assert recovering.target == 40
    assert "post_breach_recovery" in recovering.constraints
    over = ControllerState("jobs", last_breach_at=NOW - 301.0)
    assert decide_seed_hybrid(calm, cfg, over, NOW).decision.target == 2
    # a tick in breach starts the period
    breach = snapshot(visible=10, oldest_age_seconds=31.0, mean_job_seconds=1.0, running=5)
    assert decide_seed_hybrid(breach, cfg, ControllerState("jobs"), NOW).state.last_breach_at == NOW
