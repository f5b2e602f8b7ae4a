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
NONE = FallReading(None, None, None, None)  # no fall open, no evidence, no low rate read


def memo(reading: FallReading) -> tuple[object, ...]:
    """A reading without its lowest rate (what the tests of evidence compare)."""
    return (reading.fall, reading.returned, reading.held_rate, reading.after)


def noise(rate: float) -> float:
    """z of a rate's noise over the short window: a tenth of the rate here, jobs/s."""
    return 0.1 * rate


def test_a_fall_opens_at_the_sustained_rate_and_its_return_is_the_evidence() -> None:
    # GIVEN no fall and no evidence, and the short window fallen to 1 job/s under a long 10
    first = update(NONE, 10.0, 1.0, True, noise, SPAN, MEMORY, NOW)
    # THEN a fall opens at the long window's rate, 10 % deep, and nothing is held yet
    assert memo(first) == (Fall(NOW, 10.0, 0.1), None, None, None)
    # WHEN it deepens to nothing, and then the short rate is back at 9.5 (within 1 of 10)
    deeper = update(first, 9.0, 0.0, True, noise, SPAN, MEMORY, NOW + 10.0)
    assert deeper.fall == Fall(NOW, 10.0, 0.0)
    back = update(deeper, 8.0, 9.5, False, noise, SPAN, MEMORY, NOW + 100.0)
    # THEN it closes, and falls to nothing are known to come back, after 100 s
    assert memo(back) == (None, 0.0, None, 100.0)
    # AND the next fall as deep (to 0.5 of 12 jobs/s) holds the rate it fell from
    again = update(back, 12.0, 0.5, True, noise, SPAN, MEMORY, NOW + 1_000.0)
    assert memo(again) == (Fall(NOW + 1_000.0, 12.0, 0.5 / 12.0, 0.0), 0.0, 12.0, 100.0)
    # AND a short rate still below the long one that the plan does not read as a fall opens none
    quiet = update(back, 12.0, 11.0, False, noise, SPAN, MEMORY, NOW)
    assert memo(quiet) == (None, 0.0, None, 100.0)


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
    assert memo(reading) == memo(NONE)
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
    assert memo(back) == (None, 0.05, None, 600.0)
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
    # GIVEN a 10 s SLA, L = 60 s, I = 10 s, w = 60 s: the jobs of a return's first
    # L + I / 2 + w - S = 115 s are due before workers ordered once it is read land; a fall
    # from 20 jobs/s to nothing is open, and the last fall to nothing came back
    cfg = settings(sla_seconds=10.0, percentile=0.95, evaluation_interval_seconds=10.0)
    assert cfg.provisioning_lead_seconds == 60.0
    snap = snapshot(arrival_rate=8.0, arrival_rate_short=0.0, running=20, desired=20)
    state = ControllerState("jobs", fall=Fall(NOW - 60.0, 20.0, 0.0), fall_returned=0.0)
    # WHEN it decides, and with "returns" switched off
    on = decide_predictive(snap, cfg, state, NOW)
    off = ablated("returns")(snap, cfg, state, NOW)
    # THEN the delayed off keeps at least the fluid share of the load for the return,
    # 20 x 115 / 125 = 18.4 workers, where without it it keeps what 8 jobs/s ask
    kept, plain = on.state.samples[-1].raw_target, off.state.samples[-1].raw_target
    assert kept >= math.ceil(20.0 * 115.0 / 125.0) > plain
    assert f"the last fall as deep came back: {kept} workers kept for its return" in (
        on.decision.reason
    )
    # AND the fall memory goes on either way, the hold keeping the workers it held
    assert off.state.fall == Fall(NOW - 60.0, 20.0, 0.0)
    assert on.state.fall is not None and on.state.fall.held >= math.ceil(20.0 * 115.0 / 125.0)
    assert on.state.fall == Fall(NOW - 60.0, 20.0, 0.0, held=on.state.fall.held)
    assert f"{on.state.fall.held} workers kept for its return" in on.decision.reason
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
    # (at least the fluid share 40 x 115 / 125 = 36.8 workers), and says so
    held = off.state.samples[-1].raw_target
    assert held >= math.ceil(40.0 * 115.0 / 125.0)
    assert f"{held} workers kept for its return" in off.decision.reason
    # AND with it, the forecast orders the burst a lead ahead, so nothing is held idle now:
    # the quiet's 3 workers
    assert on.state.samples[-1].raw_target == 3
    assert "kept for its return" not in on.decision.reason and "bursts recur" in on.decision.reason
    # AND the fall memory goes on either way
    assert on.state.fall == state.fall
    assert off.state.fall == Fall(NOW - 200.0, 40.0, 0.05, held=held)


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


def test_a_fall_below_any_rate_read_before_is_held_as_a_lull() -> None:
    # GIVEN no evidence, and 38 jobs/s the lowest short rate read since the watch began
    seen = FallReading(None, None, None, None, 38.0)
    # WHEN the short rate falls to 20, then to 2 jobs/s under a long 40
    opening = update(seen, 40.0, 20.0, True, noise, SPAN, MEMORY, NOW)
    # THEN the fall opens with that floor, and 20 is below 38 past its noise (3.8): a lull,
    # held at the rate it fell from, with nothing come back to vouch for it
    assert opening.fall == Fall(NOW, 40.0, 0.5, 38.0)
    assert (opening.held_rate, opening.lull) == (40.0, True)
    # AND the lowest rate read is now this tick's
    assert opening.lowest == 20.0
    deeper = update(opening, 30.0, 2.0, True, noise, SPAN, MEMORY, NOW + 60.0)
    assert (deeper.held_rate, deeper.lull, deeper.fall) == (40.0, True, Fall(NOW, 40.0, 0.05, 38.0))
    # AND it is held for as long as it stays open (the memory), not just the span R + W
    late = update(deeper, 2.0, 2.0, True, noise, SPAN, MEMORY, NOW + 1_300.0)
    assert late.held_rate == 40.0
    assert update(deeper, 2.0, 2.0, True, noise, SPAN, MEMORY, NOW + 1_401.0).held_rate is None
    # AND a rate back within the floor's noise (34.5 > 38 - 3.8) holds nothing: the lull is over
    assert update(deeper, 30.0, 34.5, True, noise, SPAN, MEMORY, NOW + 70.0).held_rate is None
    # AND the next fall to 2 jobs/s is to a rate read before: only a return vouches for it
    again = update(late._replace(fall=None), 40.0, 2.0, True, noise, SPAN, MEMORY, NOW + 2_000.0)
    assert again.fall == Fall(NOW + 2_000.0, 40.0, 0.05, 2.0)
    assert (again.held_rate, again.lull) == (None, False)


def test_a_fall_back_to_a_rate_read_before_is_a_bursts_end_and_holds_nothing() -> None:
    # GIVEN 5 jobs/s read before a crowd at 100 jobs/s, however long ago, and no evidence
    before = FallReading(None, None, None, None, 5.0)
    # WHEN the crowd ends: the short rate falls to 5 under a long 80
    ended = update(before, 80.0, 5.0, True, noise, SPAN, MEMORY, NOW)
    # THEN a fall opens, but 5 is no lower than the floor: nothing is held
    assert ended.fall == Fall(NOW, 80.0, 5.0 / 80.0, 5.0)
    assert (ended.held_rate, ended.lull) == (None, False)


def test_a_lull_is_held_in_the_decision_and_says_so() -> None:
    # GIVEN a 10 s SLA at p99 (L = 60 s, I = 10 s), 41 workers, and the short rate fallen to
    # 2 jobs/s under a long 30, where 38 jobs/s was the lowest read since the watch began
    cfg = settings(sla_seconds=10.0, percentile=0.99, evaluation_interval_seconds=10.0)
    snap = snapshot(
        arrival_rate=30.0,
        arrival_rate_short=2.0,
        running=41,
        desired=41,
        first_counter_second=NOW - 3_600.0,
    )
    samples = tuple(Sample(NOW - 10.0 * (30 - i), 39.0, 0, 41, short_rate=39.0) for i in range(30))
    state = ControllerState("jobs", samples=samples, lowest_rate=38.0)
    # WHEN it decides, and with "lulls" switched off
    on = decide_predictive(snap, cfg, state, NOW)
    off = ablated("lulls")(snap, cfg, state, NOW)
    # THEN the delayed off keeps the workers a return at 30 jobs/s needs: the jobs of its first
    # L + I / 2 + w - S = 115 s are due before workers ordered once it is read land (at least
    # the fluid share 30 x 115 / 125 = 27.6), and it says why
    kept, plain = on.state.samples[-1].raw_target, off.state.samples[-1].raw_target
    assert kept >= math.ceil(30.0 * 115.0 / 125.0) > plain
    assert "to below any read before (38.00 jobs/s), a lull that may come back" in (
        on.decision.reason
    )
    # AND either way the fall opens with its floor, and the lowest read is this tick's
    assert off.state.fall == Fall(NOW, 30.0, 2.0 / 30.0, 38.0)
    assert on.state.fall == Fall(NOW, 30.0, 2.0 / 30.0, 38.0, held=on.state.fall.held)
    assert f"{on.state.fall.held} workers kept for its return" in on.decision.reason
    assert on.state.lowest_rate == 2.0
    # AND the noise of the estimates through the lull lowers no hold: the most held so far stays
    kept_before = replace(state, fall=Fall(NOW - 10.0, 30.0, 0.1, 38.0, held=kept + 5))
    later = decide_predictive(snap, cfg, kept_before, NOW)
    assert later.state.samples[-1].raw_target >= kept + 5
    assert later.state.fall is not None and later.state.fall.held == kept + 5
    # AND a tick before the watch's start is known (no counter rows) reads no lowest rate
    unknown = decide_predictive(replace(snap, first_counter_second=None), cfg, state, NOW)
    assert unknown.state.lowest_rate == 38.0


def test_the_lowest_rate_read_survives_the_stored_form() -> None:
    # GIVEN a state with a lowest rate read and an open fall with its floor and its hold
    state = ControllerState("jobs", fall=Fall(NOW, 40.0, 0.05, 38.0, held=41), lowest_rate=2.0)
    again = state_from_dict(state_to_dict(state))
    # THEN both survive it
    assert (again.fall, again.lowest_rate) == (state.fall, 2.0)
    # AND a fall stored before its floor was kept reads with none, and a floor, hold or lowest
    # rate that is no number of its kind reads as none
    stored = state_to_dict(state)
    assert state_from_dict({**stored, "fall": [NOW, 40.0, 0.05]}).fall == Fall(NOW, 40.0, 0.05)
    for bad in (-1.0, math.nan, math.inf):
        assert state_from_dict({**stored, "fall": [NOW, 40.0, 0.05, bad, bad]}).fall == Fall(
            NOW, 40.0, 0.05
        )
        assert state_from_dict({**stored, "lowest_rate": bad}).lowest_rate is None
