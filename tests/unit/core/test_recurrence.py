"""Recurring bursts: onsets remembered (bounded), the next anticipated, one-off surges let go."""

from __future__ import annotations

from dataclasses import replace

import pytest

from queue_autoscale.core import ControllerState, Sample, decide
from queue_autoscale.core.models import Burst
from queue_autoscale.core.recurrence import MAX_BURSTS, _extremes, refractory_seconds, update
from queue_autoscale.core.state import state_from_dict, state_to_dict
from tests.unit.core.builders import NOW, settings, snapshot

CFG = settings(
    sla_seconds=30.0,
    percentile=0.99,
    provisioning_lead_seconds=60.0,
    evaluation_interval_seconds=15.0,
    max_workers=200,
)
PERIOD = 900.0


def _quiet(rate: float = 2.0, at: float = NOW) -> tuple[Sample, ...]:
    """Five minutes of samples at `rate` jobs/s, every 15 s (the baseline reads the last lead;
    a state with less history records no onset)."""
    return tuple(Sample(at - age, rate, 0, 3) for age in range(300, 0, -15))


def _regular(last_at: float, need: int = 42) -> tuple[Burst, ...]:
    """Three onsets PERIOD apart, the last at `last_at`."""
    return tuple(Burst(last_at - k * PERIOD, need) for k in (2, 1, 0))


def test_a_doubling_rate_is_an_onset_and_noise_is_not() -> None:
    state = ControllerState("jobs", samples=_quiet(2.0))
    surge = update(state, 12, 12.0, 1.0, CFG, NOW)
    assert surge.onset and surge.bursts == (Burst(NOW, 12),)
    # 2 -> 4 jobs/s doubles, but keeps only 2 more workers busy: noise on a small fleet
    assert not update(state, 5, 4.0, 1.0, CFG, NOW).onset
    # 2 -> 3.5 jobs/s with 10 s jobs keeps 15 more busy but does not double
    assert not update(state, 40, 3.5, 10.0, CFG, NOW).onset


@pytest.mark.parametrize(
    ("ages", "expected"),
    [
        pytest.param((), (None, None), id="no-samples"),
        # rates 5, 9, 1, 7 jobs/s at 400, 200, 60, 10 s ago: the lowest of the last 75 s is
        # 1 (60 and 10 s ago), the highest of the last 300 s is 9 (200 s ago, not 400)
        pytest.param((400.0, 200.0, 60.0, 10.0), (1.0, 9.0), id="each-its-window"),
        # nothing within 75 s: no baseline, yet a peak over 300 s
        pytest.param((400.0, 200.0), (None, 9.0), id="no-recent-sample"),
        # the window's edges count (age <= window): 75 s and 300 s exactly
        pytest.param((300.0, 75.0), (9.0, 9.0), id="edges-inclusive"),
    ],
)
def test_extremes_read_the_baseline_and_the_peak_in_one_pass(
    ages: tuple[float, ...], expected: tuple[float | None, float | None]
) -> None:
    rate_at = {400.0: 5.0, 300.0: 5.0, 200.0: 9.0, 75.0: 9.0, 60.0: 1.0, 10.0: 7.0}
    samples = tuple(Sample(NOW - age, rate_at[age], 0, 3) for age in ages)
    assert _extremes(samples, NOW, 75.0, 300.0) == expected


def test_one_surge_establishes_nothing_and_grows_its_need() -> None:
    state = ControllerState("jobs", samples=_quiet(), bursts=(Burst(NOW - 30.0, 12),))
    reading = update(state, 41, 40.0, 1.0, CFG, NOW)
    assert not reading.onset  # within the refractory time of the last onset
    assert reading.bursts == (Burst(NOW - 30.0, 41),)
    assert not reading.recurring and reading.floor == 0 and reading.expected_in is None


def test_regular_onsets_anticipate_the_next_burst_one_lead_plus_margin_ahead() -> None:
    # GIVEN three bursts 900 s apart, the last one 900 s - t ago
    lead, interval = 60.0, 15.0
    early = lead + 2 * interval  # the intervals agree exactly: no extra margin
    for before, floor, orders in [
        (early + lead + 1.0, 0, False),  # too early: stopping a worker now still pays
        (early + lead, 42, False),  # delayed off: a running worker re-ordered within a lead is kept
        (early + 1.0, 42, False),  # ... but none is started: it would idle a lead more
        (early, 42, True),  # ordered now, it runs when the burst starts
        (0.0, 42, True),
        (-2 * interval, 42, True),  # overdue within the grace
    ]:
        state = ControllerState("jobs", samples=_quiet(), bursts=_regular(NOW - PERIOD + before))
        reading = update(state, 3, 2.0, 1.0, CFG, NOW)
        assert reading.period == pytest.approx(PERIOD)
        assert reading.expected_in == pytest.approx(before)
        assert (reading.floor, reading.orders) == (floor, orders), before
    # THEN past the grace the burst did not come: the recurrence lapses (the last burst's
    # capacity is still held until the last gap plus a lead, then let go)
    state = ControllerState("jobs", samples=_quiet(), bursts=_regular(NOW - PERIOD - 31.0))
    lapsed = update(state, 3, 2.0, 1.0, CFG, NOW)
    assert not lapsed.recurring and lapsed.floor == 42 and lapsed.held_for == PERIOD
    state = ControllerState("jobs", samples=_quiet(), bursts=_regular(NOW - PERIOD - 61.0))
    gone = update(state, 3, 2.0, 1.0, CFG, NOW)
    assert gone.floor == 0 and gone.over


def test_a_fresh_state_records_no_onset() -> None:
    # the rates of a state with under five minutes of samples may still be filling windows
    young = ControllerState("jobs", samples=_quiet()[-8:])
    assert not update(young, 12, 12.0, 1.0, CFG, NOW).onset
    assert update(ControllerState("jobs", samples=_quiet()), 12, 12.0, 1.0, CFG, NOW).onset
    # a gap in the ticks (no sample within the last lead) has no baseline: no onset either
    stale = ControllerState("jobs", samples=_quiet(at=NOW - 200.0))
    assert not update(stale, 12, 12.0, 1.0, CFG, NOW).onset


def test_two_onsets_hold_the_capacity_until_their_gap_plus_a_lead() -> None:
    # GIVEN bursts 1,100 s apart, the last (need 40) 1,000 s ago: "recurred within T"
    bursts = (Burst(NOW - 2100.0, 40), Burst(NOW - 1000.0, 40))
    state = ControllerState("jobs", samples=_quiet(), bursts=bursts)
    held = update(state, 3, 2.0, 1.0, CFG, NOW)
    # THEN the fleet keeps its need until T + lead (1,160 s) after the last onset, then not
    assert held.floor == 40 and held.held_for == 1100.0 and not held.recurring
    # AND only from early + lead = 2 x (lead + interval) = 150 s before the gap is up: at 949 s
    # after the last onset (151 s before) its capacity is let go, not held through the gap
    before = update(replace(state, samples=_quiet(at=NOW - 51)), 3, 2.0, 1.0, CFG, NOW - 51)
    assert before.floor == 0 and before.held_for is None and before.over
    start = update(replace(state, samples=_quiet(at=NOW - 50)), 3, 2.0, 1.0, CFG, NOW - 50)
    assert start.floor == 40 and start.held_for == 1100.0
    late = update(replace(state, samples=_quiet(at=NOW + 161)), 3, 2.0, 1.0, CFG, NOW + 161)
    assert late.floor == 0 and late.over
    # AND onsets further apart than the memory (20 x (lead + SLA) = 1,800 s) hold nothing
    far = ControllerState("jobs", samples=_quiet(), bursts=(Burst(NOW - 3000.0, 40), bursts[1]))
    assert update(far, 3, 2.0, 1.0, CFG, NOW).floor == 0


def test_irregular_onsets_are_not_a_recurrence() -> None:
    bursts = (Burst(NOW - 2000.0, 40), Burst(NOW - 1400.0, 40), Burst(NOW - 300.0, 40))
    later = NOW + 700.0  # 100 s before a burst as far after the last as 1,100 s is due
    state = ControllerState("jobs", samples=_quiet(at=later), bursts=bursts)
    reading = update(state, 3, 2, 1.0, CFG, later)
    assert reading.period is None and reading.expected_in is None  # 600 s then 1,100 s
    assert reading.floor == 40 and reading.held_for == 1100.0  # the hold, not anticipation


def test_a_halving_rate_is_a_burst_end_once_per_burst() -> None:
    # GIVEN five minutes at 40 jobs/s (1 s jobs), the last onset 400 s ago, no end since
    state = ControllerState("jobs", samples=_quiet(40.0), bursts=(Burst(NOW - 400.0, 42),))
    # THEN 20 jobs/s (half the window's highest 40, 20 fewer busy workers) ends the burst
    assert update(state, 21, 20.0, 1.0, CFG, NOW).ends == (NOW,)
    # AND 21 jobs/s is not half of 40: no end yet
    assert update(state, 22, 21.0, 1.0, CFG, NOW).ends == ()
    # AND one end per burst: none again until a new onset comes after it
    ended = replace(state, burst_ends=(NOW - 30.0,))
    assert update(ended, 3, 2.0, 1.0, CFG, NOW).ends == (NOW - 30.0,)
    # AND 4 -> 2 jobs/s halves, but frees only 2 workers: noise on a small fleet
    small = ControllerState("jobs", samples=_quiet(4.0), bursts=(Burst(NOW - 400.0, 5),))
    assert update(small, 3, 2.0, 1.0, CFG, NOW).ends == ()
    # AND before any onset (the controller started during a burst) its end is seen, once
    started_in = ControllerState("jobs", samples=_quiet(40.0))
    assert update(started_in, 21, 20.0, 1.0, CFG, NOW).ends == (NOW,)
    assert update(replace(started_in, burst_ends=(NOW - 900.0,)), 3, 2.0, 1.0, CFG, NOW).ends == (
        NOW - 900.0,
    )
    # AND a state with under five minutes of samples records no end
    young = ControllerState("jobs", samples=_quiet(40.0)[-8:], bursts=(Burst(NOW - 400.0, 42),))
    assert update(young, 21, 20.0, 1.0, CFG, NOW).ends == ()
    # AND nor does one whose last sample is older than the window (a gap in the ticks)
    stale = replace(state, samples=_quiet(40.0, at=NOW - 400.0))
    assert update(stale, 21, 20.0, 1.0, CFG, NOW).ends == ()


def test_two_ends_around_the_only_onset_anticipate_the_next_burst() -> None:
    # GIVEN a burst that ended 1,200 s ago (its onset unseen: the controller started in it), the
    # next seen from its onset 750 s ago (need 42) to its end 300 s ago: bursts 900 s apart
    ends = (NOW - 1200.0, NOW - 300.0)
    state = ControllerState("jobs", bursts=(Burst(NOW - 750.0, 42),), burst_ends=ends)

    def at(t: float) -> ControllerState:
        return replace(state, samples=_quiet(at=t))

    # THEN the next is due 900 s after the last onset, 150 s from now: its need is kept from
    # early + lead = 2 x (lead + interval) = 150 s before it, not one second earlier, and
    # ordered from early = lead + 2 intervals = 90 s before it
    now = update(at(NOW), 3, 2.0, 1.0, CFG, NOW)
    assert now.floor == 42 and now.held_for == 900.0 and not now.recurring and not now.orders
    assert update(at(NOW - 1), 3, 2.0, 1.0, CFG, NOW - 1).floor == 0
    assert not update(at(NOW + 59), 3, 2.0, 1.0, CFG, NOW + 59).orders
    assert update(at(NOW + 60), 3, 2.0, 1.0, CFG, NOW + 60).orders
    # AND as long as the hold after two onsets: until the gap plus a lead (960 s) after the onset
    assert update(at(NOW + 210), 3, 2.0, 1.0, CFG, NOW + 210).floor == 42
    assert update(at(NOW + 211), 3, 2.0, 1.0, CFG, NOW + 211).floor == 0
    # AND the hybrid keeps 30 running workers 150 s before, orders none for a fleet of 3, and
    # orders the need 90 s before, as the hold after two onsets would
    quiet = snapshot(arrival_rate=2.0, running=3, desired=3, pending=0)
    assert decide(quiet, CFG, at(NOW), NOW).decision.target == 3
    running = snapshot(arrival_rate=2.0, running=30, desired=30, pending=0)
    kept = decide(running, CFG, at(NOW), NOW).decision
    assert kept.target == 30 and "burst_hold" in kept.constraints
    later = replace(quiet, taken_at=NOW + 60)
    decision = decide(later, CFG, at(NOW + 60), NOW + 60).decision
    assert decision.target == 42 and "burst_hold" in decision.constraints
    assert "the last bursts came 900 s apart" in decision.reason


@pytest.mark.parametrize(
    ("ends", "why"),
    [
        ((NOW - 1200.0, NOW - 800.0), "both ends before the onset: not the burst's own end"),
        ((NOW - 300.0,), "one end: no gap"),
        ((NOW - 2200.0, NOW - 300.0), "ends 1,900 s apart, past the memory of 1,800 s"),
    ],
)
def test_ends_that_do_not_bracket_the_onset_hold_nothing(ends: tuple[float, ...], why: str) -> None:
    # GIVEN one onset 750 s ago (need 42); 150 s before a burst as far after it would be due
    state = ControllerState(
        "jobs", samples=_quiet(), bursts=(Burst(NOW - 750.0, 42),), burst_ends=ends
    )
    reading = update(state, 3, 2.0, 1.0, CFG, NOW)
    assert reading.floor == 0 and reading.held_for is None, why


def test_with_two_onsets_their_gap_is_held_not_the_ends() -> None:
    # GIVEN onsets 1,100 s apart and ends 900 s apart around the last one
    bursts = (Burst(NOW - 1850.0, 40), Burst(NOW - 750.0, 40))
    ends = (NOW - 1200.0, NOW - 300.0)
    state = ControllerState("jobs", samples=_quiet(), bursts=bursts, burst_ends=ends)
    # THEN the onsets' gap decides: 1,100 s after the last is 350 s away, past 150 s
    reading = update(state, 3, 2.0, 1.0, CFG, NOW)
    assert reading.floor == 0 and reading.held_for is None


def test_memory_is_bounded() -> None:
    old = tuple(Burst(NOW - 5000.0 + k * 200.0, 10) for k in range(MAX_BURSTS))
    state = ControllerState("jobs", samples=_quiet(), bursts=old)
    reading = update(state, 12, 12.0, 1.0, CFG, NOW)
    assert reading.onset and len(reading.bursts) == MAX_BURSTS
    assert reading.bursts[-1] == Burst(NOW, 12) and reading.bursts[0] == old[1]
    assert refractory_seconds(CFG) == 150.0


def test_bursts_survive_the_state_item() -> None:
    state = ControllerState("jobs", bursts=_regular(NOW), burst_ends=(NOW - 1200.0, NOW - 300.0))
    again = state_from_dict(state_to_dict(state))
    assert again.bursts == state.bursts and isinstance(again.bursts[0], Burst)
    assert again.burst_ends == (NOW - 1200.0, NOW - 300.0)
    # AND an item written before ends were kept reads as none seen
    older = {k: v for k, v in state_to_dict(state).items() if k != "burst_ends"}
    assert state_from_dict(older).burst_ends == ()


def test_hybrid_floors_the_fleet_before_an_expected_burst() -> None:
    # GIVEN a quiet queue at 3 workers, the next of a regular burst series due in 60 s
    state = ControllerState(
        "jobs", samples=_quiet(), bursts=_regular(NOW - PERIOD + 60.0), last_scale_up_at=None
    )
    quiet = snapshot(arrival_rate=2.0, running=3, desired=3, pending=0)
    decision = decide(quiet, CFG, state, NOW).decision
    # THEN it orders the burst's need now, and says why
    assert decision.target == 42 and "anticipation" in decision.constraints
    assert "bursts recur every 900 s, the next due in 60 s" in decision.reason
    # AND without the series it stays at the quiet size
    plain = decide(quiet, CFG, replace(state, bursts=()), NOW).decision
    assert plain.target == 3 and "anticipation" not in plain.constraints


def test_a_recurring_bursts_capacity_goes_one_interval_after_it_is_over() -> None:
    # GIVEN bursts every 900 s that need 60 workers, the last began 400 s ago and needed 60
    # until 30 s ago; now 2 jobs/s on the 60 workers
    samples = tuple(replace(s, raw_target=60) if NOW - s.at >= 30 else s for s in _quiet())
    state = ControllerState("jobs", samples=samples, bursts=_regular(NOW - 400.0, need=60))
    quiet = snapshot(arrival_rate=2.0, running=60, desired=60, pending=0)
    decision = decide(quiet, CFG, state, NOW).decision
    # THEN the next is due in 500 s, past a lead plus the anticipation's margin: none of its
    # workers would be re-ordered within a lead, so they go after one interval (15 s)
    assert decision.target == 3
    assert "its capacity kept 15 s" in decision.reason and "anticipated" in decision.reason
    # AND a one-off surge's capacity is kept one lead plus an interval (75 s) after it
    one_off = replace(state, bursts=(Burst(NOW - 400.0, 60),))
    assert decide(quiet, CFG, one_off, NOW).decision.target == 60


def test_between_recurring_bursts_the_fleet_is_sized_on_the_short_window() -> None:
    # GIVEN bursts every 900 s, the last began 400 s ago and ended 100 s ago: the long window
    # (300 s) still reads 20 jobs/s, the short one (60 s) the quiet 2 jobs/s
    state = ControllerState("jobs", samples=_quiet(), bursts=_regular(NOW - 400.0))
    after = snapshot(arrival_rate=20.0, arrival_rate_short=2.0, running=3, desired=3, pending=0)
    decision = decide(after, CFG, state, NOW).decision
    # THEN it sizes for 2 jobs/s: 3 workers (1 s jobs; 2 would be saturated, 3 keep
    # P(wait > 30 s) = C(3, 2) e^-30 far under 1 %), the next burst comes back from the floor
    assert decision.arrival_rate == 2.0 and decision.terms.steady == 3 and decision.target == 3
    # AND without a recurrence, or with one lapsed (the next onset overdue past its grace),
    # it sizes on the higher window: 20 jobs/s needs 21 (the least above 20 busy)
    for bursts in [(), _regular(NOW - PERIOD - 31.0)]:
        plain = decide(after, CFG, replace(state, bursts=bursts), NOW).decision
        assert plain.arrival_rate == 20.0 and plain.terms.steady == 21, bursts


def test_after_a_one_off_surge_the_loop_headroom_is_not_spent() -> None:
    # GIVEN the SLA loop holding headroom after misses, and a surge that began 10 minutes ago
    busy = snapshot(arrival_rate=20.0, running=30, desired=30, pending=0)
    state = ControllerState(
        "jobs",
        samples=_quiet(20.0),
        headroom=0.5,
        realized_started=1000.0,
        realized_late=100.0,
        realized_through=NOW - 30.0,
    )
    surged = decide(busy, CFG, replace(state, bursts=(Burst(NOW - 600.0, 25),)), NOW)
    unsurged = decide(busy, CFG, state, NOW)
    # THEN the surge's misses (the reaction bound's) do not size the fleet up...
    assert surged.decision.headroom == 0.0
    assert surged.decision.terms.steady < unsurged.decision.terms.steady
    assert unsurged.decision.headroom == 0.5
    # ...but the loop keeps its reading for when the surge is behind it
    assert surged.state.headroom == unsurged.state.headroom == 0.5


def test_after_a_one_off_surge_capacity_is_kept_one_lead_then_let_go() -> None:
    # GIVEN a surge that needed 60 workers, 20 minutes ago, and a quiet queue at 60 workers
    # whose sustained need has been 3 for five minutes
    state = ControllerState(
        "jobs", samples=_quiet(), bursts=(Burst(NOW - 1200.0, 60),), last_scale_down_at=None
    )
    quiet = snapshot(arrival_rate=2.0, running=60, desired=60, pending=0)
    decision = decide(quiet, CFG, state, NOW).decision
    # THEN it comes down to the need in one step after one lead + interval (75 s) of history,
    # not by 25 % a minute after a 300 s window
    assert decision.target == 3
    assert "the last burst is over: its capacity kept 75 s" in decision.reason
    assert "no recurrence seen: a one-off surge decays" in decision.reason
    # AND without the burst the usual step limit holds it (25 % a minute)
    plain = decide(quiet, CFG, replace(state, bursts=()), NOW).decision
    assert plain.target == 45 and "step" in plain.constraints


@pytest.mark.parametrize(("sla", "steady"), [(30.0, 22), (300.0, 8)])
def test_a_loose_sla_sizes_on_the_long_window(sla: float, steady: int) -> None:
    # GIVEN 20 jobs/s over 5 minutes and a noisy 21.5 jobs/s over the last minute
    tick = snapshot(arrival_rate=20.0, arrival_rate_short=21.5, running=22, desired=22)
    cfg = replace(CFG, sla_seconds=sla)
    decision = decide(tick, cfg, ControllerState("jobs", samples=_quiet(20.0)), NOW).decision
    # THEN a 30 s SLA sizes on the higher short window (Erlang C); a 300 s SLA (>= the long
    # window) on the long one: its lag is absorbed by the SLA. With nothing waiting the loose
    # SLA's carried-backlog term asks for 20 x 75 / (125 + 75) = 7.5 -> 8 workers (the short
    # window's 21.5 jobs/s would give 9): the backlog builds until it carries the load
    assert decision.terms.steady == steady
