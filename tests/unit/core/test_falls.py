"""Falls that come back (core/falls.py): a fall of the arrival rate opens at the rate the queue
sustained, closes when the rate returns or its span ends, and a fall as deep as the last that
came back holds the workers its return needs where no order lands in time."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from queue_autoscale.core import ControllerState
from queue_autoscale.core.falls import FallReading, update
from queue_autoscale.core.models import Burst, Fall, Sample
from queue_autoscale.core.predictive import ablated, decide_predictive
from queue_autoscale.core.state import state_from_dict, state_to_dict
from tests.unit.core.builders import NOW, settings, snapshot

SPAN = 370.0  # R + W: L = 60 s, I = 10 s, W = 300 s
MEMORY = 1400.0  # the loop window (L + S) / b at S = 10 s, p = 95 %
NONE = FallReading(None, None, None, None)  # no fall open, no evidence


def noise(rate: float) -> float:
    """z of a rate's noise over the short window: a tenth of the rate here, jobs/s."""
    return 0.1 * rate


def test_a_fall_opens_at_the_sustained_rate_and_its_return_is_the_evidence() -> None:
    # GIVEN no fall and no evidence, and the short window fallen to 1 job/s under a long 10
    first = update(NONE, 10.0, 1.0, True, noise, SPAN, MEMORY, NOW)
    # THEN a fall opens at the long window's rate, 10 % deep, and nothing is held yet
    assert first == FallReading(Fall(NOW, 10.0, 0.1), None, None, None)
    # WHEN it deepens to nothing, and then the short rate is back at 9.5 (within 1 of 10)
    deeper = update(first, 9.0, 0.0, True, noise, SPAN, MEMORY, NOW + 10.0)
    assert deeper.fall == Fall(NOW, 10.0, 0.0)
    back = update(deeper, 8.0, 9.5, False, noise, SPAN, MEMORY, NOW + 100.0)
    # THEN it closes, and falls to nothing are known to come back, after 100 s
    assert back == FallReading(None, 0.0, None, 100.0)
    # AND the next fall as deep (to 0.5 of 12 jobs/s) holds the rate it fell from
    again = update(back, 12.0, 0.5, True, noise, SPAN, MEMORY, NOW + 1_000.0)
    assert again == FallReading(Fall(NOW + 1_000.0, 12.0, 0.5 / 12.0), 0.0, 12.0, 100.0)
    # AND a short rate still below the long one that the plan does not read as a fall opens none
    quiet = update(back, 12.0, 11.0, False, noise, SPAN, MEMORY, NOW)
    assert quiet == FallReading(None, 0.0, None, 100.0)


def test_a_shallow_dip_that_came_back_vouches_for_no_deeper_fall() -> None:
    # GIVEN the deepest fall that came back went to 80 % of its rate
    evidence = FallReading(None, 0.8, None, 60.0)
    reading = update(evidence, 10.0, 1.0, True, noise, SPAN, MEMORY, NOW)
    # THEN a fall to 10 % is deeper than that beyond the rate's noise (0.8 - 0.1): no hold
    assert reading.fall == Fall(NOW, 10.0, 0.1)
    assert reading.held_rate is None
    # AND one to 75 % is within it: held
    assert update(evidence, 10.0, 7.5, True, noise, SPAN, MEMORY, NOW).held_rate == 10.0
    # AND a return keeps the deepest evidence: a dip to 90 % that came back does not lessen it
    dip = FallReading(Fall(NOW - 30.0, 10.0, 0.9), 0.0, None, 60.0)
    assert update(dip, 10.0, 9.5, False, noise, SPAN, MEMORY, NOW).returned == 0.0


def test_a_fall_that_does_not_come_back_within_the_memory_ends_the_evidence() -> None:
    # GIVEN falls to nothing came back (the last after 100 s), and one opened 1,401 s ago at
    # 10 jobs/s is still down: longer than the loop window remembers a late job
    gone = FallReading(Fall(NOW - 1_401.0, 10.0, 0.0), 0.0, None, 100.0)
    reading = update(gone, 2.0, 0.2, False, noise, SPAN, MEMORY, NOW)
    # THEN it closes with no evidence left, and nothing is held
    assert reading == NONE
    # AND within the memory it stays open as evidence, held only within the span R + W
    young = gone._replace(fall=Fall(NOW - 369.0, 10.0, 0.0))
    assert update(young, 2.0, 0.2, True, noise, SPAN, MEMORY, NOW).held_rate == 10.0
    old = gone._replace(fall=Fall(NOW - 1_399.0, 10.0, 0.0))
    kept = update(old, 2.0, 0.2, True, noise, SPAN, MEMORY, NOW)
    assert (kept.fall, kept.returned, kept.held_rate) == (old.fall, 0.0, None)
    # AND a memory shorter than the span still keeps the evidence over the span
    assert update(young, 2.0, 0.2, True, noise, SPAN, 60.0, NOW).held_rate == 10.0


def test_the_hold_lasts_as_long_as_the_last_fall_took_to_come_back() -> None:
    # GIVEN a fall to nothing that came back after 600 s (a 10-minute lull), and the next
    # fall as deep open for 500 s, then 700 s
    lull = FallReading(Fall(NOW - 600.0, 40.0, 0.05), None, None, None)
    back = update(lull, 2.0, 40.0, False, noise, SPAN, MEMORY, NOW)
    assert back == FallReading(None, 0.05, None, 600.0)
    later = NOW + 900.0
    within = back._replace(fall=Fall(later - 500.0, 40.0, 0.05))
    past = back._replace(fall=Fall(later - 700.0, 40.0, 0.05))
    # THEN it is held 500 s in, past the span R + W = 370 s, and not 700 s in
    assert update(within, 2.0, 2.0, True, noise, SPAN, MEMORY, later).held_rate == 40.0
    assert update(past, 2.0, 2.0, True, noise, SPAN, MEMORY, later).held_rate is None
    # AND its evidence stays for the memory: the return after 700 s is read as one
    returned = update(past, 2.0, 40.0, False, noise, SPAN, MEMORY, later)
    assert (returned.fall, returned.returned, returned.after) == (None, 0.05, 700.0)


def test_a_tight_sla_keeps_the_workers_a_return_needs_and_says_so() -> None:
    # GIVEN a 10 s SLA, L = 60 s, I = 10 s: the jobs of a return's first L + I / 2 - S = 55 s
    # are due before workers ordered at it land; a fall from 20 jobs/s to nothing is open, and
    # the last fall to nothing came back
    cfg = settings(sla_seconds=10.0, percentile=0.95, evaluation_interval_seconds=10.0)
    assert cfg.provisioning_lead_seconds == 60.0
    snap = snapshot(arrival_rate=8.0, arrival_rate_short=0.0, running=20, desired=20)
    state = ControllerState("jobs", fall=Fall(NOW - 60.0, 20.0, 0.0), fall_returned=0.0)
    # WHEN it decides, and with "returns" switched off
    on = decide_predictive(snap, cfg, state, NOW)
    off = ablated("returns")(snap, cfg, state, NOW)
    # THEN the delayed off keeps at least the fluid share of the load for the return,
    # 20 x 55 / 65 = 16.9 workers, where without it it keeps what 8 jobs/s ask
    kept, plain = on.state.samples[-1].raw_target, off.state.samples[-1].raw_target
    assert kept >= math.ceil(20.0 * 55.0 / 65.0) > plain
    assert f"the last fall as deep came back: {kept} workers kept for its return" in (
        on.decision.reason
    )
    # AND the fall memory goes on either way
    assert on.state.fall == off.state.fall == Fall(NOW - 60.0, 20.0, 0.0)
    # AND at a 300 s SLA, where a return's jobs wait for workers ordered at it, none is kept
    loose = settings(sla_seconds=300.0, percentile=0.95, evaluation_interval_seconds=10.0)
    assert (
        decide_predictive(snap, loose, state, NOW).state.samples[-1].raw_target
        == ablated("returns")(snap, loose, state, NOW).state.samples[-1].raw_target
    )


def test_a_forecast_burst_takes_over_from_the_hold() -> None:
    # GIVEN a 10 s SLA at p99 (L = 60 s, I = 10 s), 2 jobs/s on 3 workers in a lull that fell
    # from 40 jobs/s 200 s ago, as deep as the last, which came back after 600 s; and onsets
    # and ends 900 s apart, the next onset due in 400 s (past R + W), by a model that passed
    # its back-test
    cfg = settings(sla_seconds=10.0, percentile=0.99, evaluation_interval_seconds=10.0)
    quiet = snapshot(
        arrival_rate=2.0,
        arrival_rate_short=2.0,
        completion_rate=2.0,
        running=3,
        desired=3,
        in_flight=2,
    )
    last = NOW + 400.0 - 900.0
    state = ControllerState(
        "jobs",
        bursts=(Burst(last - 900.0, 0, 40.0), Burst(last, 0, 40.0)),
        burst_ends=(last - 1500.0, last - 600.0),
        samples=tuple(Sample(NOW - 10.0 * (30 - i), 2.0, 0, 0) for i in range(30)),
        fall=Fall(NOW - 200.0, 40.0, 0.05),
        fall_returned=0.05,
        fall_returned_after=600.0,
    )
    # WHEN it decides, and with the recurring-burst model switched off
    on = decide_predictive(quiet, cfg, state, NOW)
    off = ablated("recurrence")(quiet, cfg, state, NOW)
    # THEN without the forecast the delayed off holds the return's fleet through the lull
    # (at least the fluid share 40 x 55 / 65 = 33.8 workers), and says so
    held = off.state.samples[-1].raw_target
    assert held >= math.ceil(40.0 * 55.0 / 65.0)
    assert f"{held} workers kept for its return" in off.decision.reason
    # AND with it, the forecast orders the burst a lead ahead, so nothing is held idle now:
    # the quiet's 3 workers
    assert on.state.samples[-1].raw_target == 3
    assert "kept for its return" not in on.decision.reason and "bursts recur" in on.decision.reason
    # AND the fall memory goes on either way
    assert on.state.fall == off.state.fall == state.fall


def test_the_fall_memory_is_kept_and_bad_stored_values_read_as_none() -> None:
    # GIVEN a state with an open fall and evidence
    state = ControllerState("jobs", fall=Fall(NOW, 12.5, 0.25), fall_returned=0.0)
    # THEN it survives the stored form
    again = state_from_dict(state_to_dict(state))
    assert (again.fall, again.fall_returned) == (Fall(NOW, 12.5, 0.25), 0.0)
    stored = state_to_dict(ControllerState("jobs"))
    assert (stored["fall"], stored["fall_returned"]) == (None, None)
    # AND how long the last came back after survives it, and a stored duration that is no
    # duration (negative, not finite) reads as none
    took = replace(state, fall_returned_after=600.0)
    assert state_from_dict(state_to_dict(took)).fall_returned_after == 600.0
    for bad_after in (-1.0, math.nan, math.inf):
        assert (
            state_from_dict({**stored, "fall_returned_after": bad_after}).fall_returned_after
            is None
        )
    # AND a stored fall not of the form [epoch s, rate > 0, depth 0..1] reads as none
    for bad in ("x", [1.0, 2.0], [NOW, -1.0, 0.5], [NOW, 2.0, 1.5], [math.nan, 2.0, 0.5]):
        assert state_from_dict({**stored, "fall": bad}).fall is None
    # AND evidence outside 0..1 reads as none
    for share in (1.5, -0.1, math.nan):
        assert state_from_dict({**stored, "fall_returned": share}).fall_returned is None


@pytest.mark.parametrize("short", [math.inf, -1.0])
def test_a_rate_that_is_not_one_leaves_the_memory_as_it_was(short: float) -> None:
    # GIVEN an open fall and evidence, and a short rate that is no rate
    cfg = settings(sla_seconds=10.0, evaluation_interval_seconds=10.0)
    state = ControllerState("jobs", fall=Fall(NOW - 60.0, 20.0, 0.0), fall_returned=0.0)
    snap = snapshot(arrival_rate=8.0, arrival_rate_short=short, running=20, desired=20)
    # THEN the tick keeps the memory as it was
    after = decide_predictive(snap, cfg, state, NOW).state
    assert (after.fall, after.fall_returned) == (state.fall, state.fall_returned)
