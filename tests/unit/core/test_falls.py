"""Falls that come back (core/falls.py): a fall of the arrival rate opens at the rate the queue
sustained, closes when the rate returns or its span ends, and a fall as deep as the last that
came back holds the workers its return needs where no order lands in time."""

from __future__ import annotations

import math

import pytest

from queue_autoscale.core import ControllerState
from queue_autoscale.core.falls import FallReading, update
from queue_autoscale.core.models import Fall
from queue_autoscale.core.predictive import ablated, decide_predictive
from queue_autoscale.core.state import state_from_dict, state_to_dict
from tests.unit.core.builders import NOW, settings, snapshot

SPAN = 370.0  # R + W: L = 60 s, I = 10 s, W = 300 s


def noise(rate: float) -> float:
    """z of a rate's noise over the short window: a tenth of the rate here, jobs/s."""
    return 0.1 * rate


def test_a_fall_opens_at_the_sustained_rate_and_its_return_is_the_evidence() -> None:
    # GIVEN no fall and no evidence, and the short window fallen to 1 job/s under a long 10
    first = update(None, None, 10.0, 1.0, True, noise, SPAN, NOW)
    # THEN a fall opens at the long window's rate, 10 % deep, and nothing is held yet
    assert first == FallReading(Fall(NOW, 10.0, 0.1), None, None)
    # WHEN it deepens to nothing, and then the short rate is back at 9.5 (within 1 of 10)
    deeper = update(first.fall, first.returned, 9.0, 0.0, True, noise, SPAN, NOW + 10.0)
    assert deeper.fall == Fall(NOW, 10.0, 0.0)
    back = update(deeper.fall, deeper.returned, 8.0, 9.5, False, noise, SPAN, NOW + 100.0)
    # THEN it closes, and falls to nothing are known to come back
    assert back == FallReading(None, 0.0, None)
    # AND the next fall as deep (to 0.5 of 12 jobs/s) holds the rate it fell from
    again = update(None, back.returned, 12.0, 0.5, True, noise, SPAN, NOW + 1_000.0)
    assert again == FallReading(Fall(NOW + 1_000.0, 12.0, 0.5 / 12.0), 0.0, 12.0)
    # AND a short rate still below the long one that the plan does not read as a fall opens none
    assert update(None, 0.0, 12.0, 11.0, False, noise, SPAN, NOW) == FallReading(None, 0.0, None)


def test_a_shallow_dip_that_came_back_vouches_for_no_deeper_fall() -> None:
    # GIVEN the deepest fall that came back went to 80 % of its rate
    reading = update(None, 0.8, 10.0, 1.0, True, noise, SPAN, NOW)
    # THEN a fall to 10 % is deeper than that beyond the rate's noise (0.8 - 0.1): no hold
    assert reading.fall == Fall(NOW, 10.0, 0.1)
    assert reading.held_rate is None
    # AND one to 75 % is within it: held
    assert update(None, 0.8, 10.0, 7.5, True, noise, SPAN, NOW).held_rate == 10.0
    # AND a return keeps the deepest evidence: a dip to 90 % that came back does not lessen it
    dip = update(Fall(NOW - 30.0, 10.0, 0.9), 0.0, 10.0, 9.5, False, noise, SPAN, NOW)
    assert dip.returned == 0.0


def test_a_fall_that_does_not_come_back_within_the_span_ends_the_evidence() -> None:
    # GIVEN falls to nothing came back, and one opened 371 s ago at 10 jobs/s is still down
    gone = Fall(NOW - 371.0, 10.0, 0.0)
    reading = update(gone, 0.0, 2.0, 0.2, False, noise, SPAN, NOW)
    # THEN it closes with no evidence left, and nothing is held
    assert reading == FallReading(None, None, None)
    # AND within the span it stays open, and held
    held = update(gone._replace(at=NOW - 369.0), 0.0, 2.0, 0.2, True, noise, SPAN, NOW)
    assert held.held_rate == 10.0


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


def test_the_fall_memory_is_kept_and_bad_stored_values_read_as_none() -> None:
    # GIVEN a state with an open fall and evidence
    state = ControllerState("jobs", fall=Fall(NOW, 12.5, 0.25), fall_returned=0.0)
    # THEN it survives the stored form
    again = state_from_dict(state_to_dict(state))
    assert (again.fall, again.fall_returned) == (Fall(NOW, 12.5, 0.25), 0.0)
    stored = state_to_dict(ControllerState("jobs"))
    assert (stored["fall"], stored["fall_returned"]) == (None, None)
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
