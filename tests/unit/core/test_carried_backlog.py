"""A loose SLA lets the backlog carry the load: the carried wait, and the carried-backlog term
checked against the queue it projects."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import NamedTuple

import pytest
from hypothesis import given
from hypothesis import strategies as st

from queue_autoscale.core.constraints import Step, load_release
from queue_autoscale.core.drain import (
    carried_backlog_workers,
    carried_wait_seconds,
    workers_at_landing,
)
from queue_autoscale.core.hybrid import decide
from queue_autoscale.core.measures import measure
from queue_autoscale.core.models import Burst, ControllerState, Sample
from tests.unit.core.builders import NOW, settings, snapshot

LOOSE = settings(
    sla_seconds=300.0,
    provisioning_lead_seconds=60.0,
    evaluation_interval_seconds=10.0,
    max_workers=200,
)


def _carried(backlog: float, lam: float, running: int, mu: float = 1.0) -> int:
    """carried_backlog_workers at the 300 s SLA's 130 s carried wait and 70 s horizon."""
    return carried_backlog_workers(
        backlog=backlog,
        arrival_rate=lam,
        service_rate=mu,
        running=running,
        carry_seconds=130.0,
        horizon_seconds=70.0,
        max_workers=200,
    )


@pytest.mark.parametrize(
    ("sla", "carried"),
    [(300.0, 130.0), (600.0, 330.0), (210.0, 70.0), (200.0, 0.0), (120.0, 0.0), (60.0, 0.0)],
)
def test_the_carried_wait_is_what_a_reaction_time_and_the_horizon_leave(
    sla: float, carried: float
) -> None:
    # GIVEN a 60 s lead and a 10 s interval (H = 70 s) and the default horizon SLA / 3
    cfg = replace(LOOSE, sla_seconds=sla)
    # THEN the backlog may carry SLA - SLA / 3 - 70 s, and only when that is at least H
    # (210 s: 210 - 70 - 70 = 70 = H; 200 s: 63 s < 70 s, not loose; 60 s and 120 s: tight)
    assert carried_wait_seconds(cfg) == pytest.approx(carried)


def test_in_equilibrium_the_fleet_is_the_load_and_the_backlog_carries_the_wait() -> None:
    # GIVEN 20 jobs/s at 1 job/s per worker and 20 x 130 = 2,600 jobs waiting
    # THEN exactly the 20 workers the load needs: (2600 + 20 x 70) / (130 + 70) = 20
    assert _carried(2600, 20.0, running=20) == 20
    # AND a short backlog runs the fleet below the load (the PWM's low phase):
    # (0 + 1400) / 200 = 7 workers, and the queue grows toward the carried wait
    assert _carried(0, 20.0, running=20) == 7
    assert _carried(1300, 20.0, running=20) == math.ceil(2700 / 200)


def test_a_fleet_short_of_the_backlog_sizes_for_the_backlog_its_orders_find() -> None:
    # GIVEN 4,000 waiting at 20 jobs/s with 20 running: a fleet set now would need
    # (4000 + 1400) / 200 = 27, more than runs, so the new workers land after H and find
    # 4000 + (20 - 20) x 70 = 4000 waiting: 4000 / 130 = 30.8 -> 31
    assert _carried(4000, 20.0, running=20) == 31
    # AND with fewer running the backlog they find is larger: 4000 + (20 - 10) x 70 = 4700
    assert _carried(4000, 20.0, running=10) == math.ceil(4700 / 130)
    # AND nothing arriving and nothing waiting needs nothing
    assert _carried(0, 0.0, running=3) == 0


@given(
    backlog=st.integers(min_value=0, max_value=20_000),
    lam=st.floats(min_value=0.1, max_value=100.0),
    mu=st.floats(min_value=0.1, max_value=10.0),
    running=st.integers(min_value=0, max_value=150),
)
def test_the_job_joining_after_one_reaction_time_waits_at_most_the_carried_wait(
    backlog: int, lam: float, mu: float, running: int
) -> None:
    c = _carried(backlog, lam, running, mu)
    if c > 200:
        return  # more than the cap: nothing to check
    # WHEN the fleet c is set now: a scale-in acts at once, a scale-out lands after H
    during = c if c <= running else running
    after_h = max(0.0, backlog + (lam - during * mu) * 70.0)
    # THEN the job that joins then is picked up within the carried wait (fluid FIFO)
    assert c > 0
    assert after_h / (c * mu) <= 130.0 + 1e-6
    # AND one worker fewer would not keep that promise when the fleet is set now
    if 1 < c <= running:
        fewer = c - 1
        assert max(0.0, backlog + (lam - fewer * mu) * 70.0) / (fewer * mu) > 130.0 - 1e-6


def test_the_loose_drain_leaves_the_load_to_the_carried_term() -> None:
    # GIVEN 20 jobs/s, 2,600 waiting at landing, the oldest 130 s now, a 60 s lead, SLA 300 s,
    # horizon 100 s (the drain aims at jobs up to 200 s old at landing)
    def drain(carries_load: bool) -> int:
        return workers_at_landing(
            at_landing=2600.0,
            oldest_age_seconds=130.0,
            arrival_rate=20.0,
            service_rate=1.0,
            sla_seconds=300.0,
            recovery_horizon_seconds=100.0,
            lead_seconds=60.0,
            carries_load=carries_load,
        )

    # THEN a tight reading keeps the drain at lambda / mu = 20, while the loose one sizes only
    # the backlog: the oldest job (190 s old at landing) has 2600 - 20 x 60 jobs ahead and
    # 110 s left: 12.7 -> 13 workers
    assert drain(carries_load=False) == 20
    assert drain(carries_load=True) == 13


def test_hybrid_on_a_loose_sla_lets_the_backlog_carry_the_load() -> None:
    # GIVEN 20 jobs/s (both windows) with 2,000 waiting, 90 s the oldest, 21 running
    tick = snapshot(
        arrival_rate=20.0,
        arrival_rate_short=20.0,
        visible=2000,
        in_flight=21,
        oldest_age_seconds=90.0,
        running=21,
        desired=21,
    )
    state = ControllerState("jobs")
    # WHEN hybrid decides at SLA 300 s (loose) and at 60 s (tight)
    loose = decide(tick, LOOSE, state, NOW).decision
    tight = decide(tick, replace(LOOSE, sla_seconds=60.0), state, NOW).decision
    # THEN at 300 s the steady term is the carried one, (2000 + 1400) / 200 = 17, below the
    # load: the backlog grows toward 130 s of wait; and the drain asks for no more
    assert loose.terms.steady == 17
    assert loose.terms.drain <= 17
    # AND at 60 s Erlang C sizes above the load as before (and the drain clears the backlog)
    assert tight.terms.steady >= 21
    assert tight.terms.drain > 21


def test_a_loose_sla_carries_a_recurring_burst_instead_of_anticipating_it() -> None:
    # GIVEN a quiet queue at 3 workers (2 jobs/s), the next of a regular 900 s burst series
    # (need 42) due in 60 s: at SLA 30 s hybrid orders the 42 now (anticipation)
    onsets = tuple(Burst(NOW + 60.0 - k * 900.0, 42) for k in (3, 2, 1))
    samples = tuple(
        Sample(at=NOW - 10.0 * k, raw_target=3, arrival_rate=2.0, visible=0, dlq_depth=0)
        for k in range(40, 0, -1)
    )
    state = ControllerState("jobs", samples=samples, bursts=onsets)
    quiet = snapshot(arrival_rate=2.0, arrival_rate_short=2.0, running=3, desired=3)
    tight = decide(quiet, replace(LOOSE, sla_seconds=30.0), state, NOW).decision
    assert tight.target == 42 and "anticipation" in tight.constraints
    # WHEN the SLA is 300 s
    loose = decide(quiet, LOOSE, state, NOW).decision
    # THEN no floor: the jobs of the burst's first reaction time (70 s) join a backlog the
    # carried term drains within 130 s + 70 s, far inside the SLA, so idle capacity buys
    # nothing; the fleet follows the backlog (2 x 70 / 200 = 0.7 -> 1 worker)
    assert "anticipation" not in loose.constraints and "burst_hold" not in loose.constraints
    assert loose.terms.steady == 1
    # AND the record says what the steady term did, in the loose SLA's words
    assert "1 worker lets the 0 waiting carry 2.00 jobs/s (loose SLA)" in loose.reason
    assert "at most 130 s" in loose.reason


class Released(NamedTuple):
    """What load_release returned and the codes of the steps it appended."""

    target: int
    codes: list[str]


def _release(recommendation: int, running: int, long: float, short: float | None) -> Released:
    """load_release on a tick with `running` workers, both windows' rates, 1 s jobs."""
    tick = snapshot(arrival_rate=long, arrival_rate_short=short, running=running, desired=running)
    steps: list[Step] = []
    target = load_release(recommendation, measure(tick, LOOSE), tick, steps)
    return Released(target, [step.code for step in steps])


def test_a_loose_release_stops_one_worker_under_the_load() -> None:
    # GIVEN 21 workers on 20.3 jobs/s of 1 s jobs, the queue just emptied, and the carried
    # term's 8 ((0 + 20.3 x 70) / 200 = 7.1)
    # THEN the fleet goes to ceil(20.3) - 1 = 20, not to 8 (nor the step limit's 15), and the
    # record says why
    assert _release(8, 21, 20.3, 20.3) == Released(20, ["load_release"])
    # AND a load of exactly 20 jobs/s leaves 19, so the backlog still builds (1 job/s)
    assert _release(8, 21, 20.0, 20.0).target == 19


def test_after_a_burst_the_release_reads_the_short_window() -> None:
    # GIVEN 45 workers after a burst: the long window still reads 40 jobs/s, the short 12
    # THEN the release stops at ceil(12) - 1 = 11, not 39
    assert _release(9, 45, 40.0, 12.0) == Released(11, ["load_release"])
    # AND with no short window the long one decides (39)
    assert _release(9, 45, 40.0, None).target == 39


def test_the_loose_release_never_raises_or_blocks_what_is_above_it() -> None:
    # a recommendation already at or above the floor, or no scale-down at all, is unchanged
    assert _release(20, 21, 20.3, 20.3) == Released(20, [])
    assert _release(25, 21, 20.3, 20.3) == Released(25, [])
    # a fleet already under the load keeps what it has: releasing more would only defer work
    assert _release(8, 15, 20.3, 20.3) == Released(15, ["load_release"])
    # an idle queue (no arrivals) is released to the recommendation
    assert _release(0, 3, 0.0, 0.0) == Released(0, [])


def test_hybrid_on_a_loose_sla_releases_to_one_under_the_load_when_the_queue_empties() -> None:
    # GIVEN 21 workers on 20.3 jobs/s, the queue just emptied (15 jobs in flight), and six
    # minutes of history at the carried term's size, so no window or cooldown holds the fleet
    samples = tuple(
        Sample(at=NOW - 10.0 * k, raw_target=8, arrival_rate=20.3, visible=0, dlq_depth=0)
        for k in range(36, 0, -1)
    )
    state = ControllerState("jobs", samples=samples)
    tick = snapshot(
        arrival_rate=20.3, arrival_rate_short=20.3, in_flight=15, running=21, desired=21
    )
    decision = decide(tick, LOOSE, state, NOW).decision
    # THEN the carried term asks for 8 and the fleet goes to 20, one under the load
    assert decision.terms.steady == 8
    assert decision.target == 20
    assert "load_release" in decision.constraints
    assert "one worker under the load of 20.30 jobs/s" in decision.reason


def _started_state(seconds: int) -> ControllerState:
    """A controller `seconds` old (a sample every 10 s, each asking for the carried term's 9)
    with a rich miss budget: 100,000 jobs counted, none late."""
    samples = tuple(
        Sample(at=NOW - 10.0 * k, raw_target=9, arrival_rate=24.6, visible=0, dlq_depth=0)
        for k in range(seconds // 10, 0, -1)
    )
    return ControllerState(
        "jobs",
        samples=samples,
        realized_started=100_000.0,
        realized_late=0.0,
        realized_through=NOW - 20.0,
    )


def test_a_fresh_controller_on_a_loose_sla_releases_nothing_early() -> None:
    # GIVEN 34 workers, 27 busy and nothing waiting, 210 s after the controller started: the
    # long window, not yet full, reads 24.6 jobs/s (the load is 35, as the short window says),
    # so the carried term asks for (0 + 24.6 x 70) / 200 = 8.6 -> 9; the budget pays for the
    # 25 idle workers' jobs many times over
    tick = snapshot(
        arrival_rate=24.6, arrival_rate_short=35.0, in_flight=27, running=34, desired=34
    )
    fresh = decide(tick, replace(LOOSE, percentile=0.95), _started_state(210), NOW).decision
    # THEN the cold start's hold keeps the fleet: no early release before a whole 300 s window
    assert fresh.terms.steady == 9
    assert fresh.target == 34
    assert "less than 300 s of history" in fresh.reason
    # AND once the window is covered (310 s), the early release goes down as before: to the 27
    # busy workers (the in-flight floor; the load release's ceil(24.6) - 1 = 24 is under it)
    covered = decide(tick, replace(LOOSE, percentile=0.95), _started_state(310), NOW).decision
    assert covered.target == 27
