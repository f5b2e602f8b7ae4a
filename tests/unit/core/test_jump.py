"""The record path's jump test (core/jump.py): where it applies, what passes it, and the state
a jump tick leaves."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from queue_autoscale.core import ControllerState, Sample
from queue_autoscale.core.jump import (
    JumpLine,
    clock_line,
    jump_line,
    keep_readings,
    line_from_dict,
    line_to_dict,
    moved,
)
from queue_autoscale.core.models import Order
from queue_autoscale.core.predictive_knobs import move_sigmas
from tests.unit.core.builders import NOW, settings, snapshot


def test_a_line_only_where_the_next_clock_tick_cannot_save_an_onset() -> None:
    # lead 60 s + interval 10 s: the reach R is 70 s
    tight = settings(
        sla_seconds=60.0, provisioning_lead_seconds=60.0, evaluation_interval_seconds=10.0
    )
    loose = settings(
        sla_seconds=300.0, provisioning_lead_seconds=60.0, evaluation_interval_seconds=10.0
    )
    line = jump_line(tight, 20.0, 0.5, NOW + 0.7)
    # D floored at Poisson's 1; counted from the tick's second; read until its inputs are stale
    assert line == JumpLine(
        NOW, 20.0, 1.0, move_sigmas(1.0), ticked_at=NOW + 0.7, expires_at=NOW + 20.7
    )
    assert line.sigmas == pytest.approx(
        3.64, abs=0.01
    )  # half a false alarm an hour, a look a second
    assert jump_line(loose, 20.0, 1.0, NOW) is None
    assert jump_line(tight, math.nan, 1.0, NOW) is None
    assert jump_line(tight, 20.0, math.inf, NOW) is None


def test_a_queues_first_clock_tick_draws_no_line() -> None:
    # GIVEN a queue whose SLA the next clock tick cannot save, read at 20 jobs/s
    tight = settings(
        sla_seconds=30.0, provisioning_lead_seconds=60.0, evaluation_interval_seconds=10.0
    )
    read = snapshot(arrival_rate=20.0)
    first = ControllerState("jobs")
    later = ControllerState(
        "jobs", samples=(Sample(at=NOW - 10, arrival_rate=20.0, visible=0, raw_target=21),)
    )
    # WHEN its first tick (a state with no sample) and a later one draw their lines
    # THEN the first draws none: no tick watched its windows, so they read no rate (at 0 jobs/s
    # every few arrivals would be a jump until the next clock tick)
    assert clock_line(tight, read, first, 0.0, NOW) is None
    line = clock_line(tight, read, later, 20.0, NOW)
    assert line is not None and (line.since, line.rate) == (NOW, 20.0)


def test_a_jump_is_an_excess_past_the_line_over_the_seconds_counted() -> None:
    line = JumpLine(NOW, 20.0, 1.0, 3.0)
    # 5 s at 20 jobs/s: 100 expected, sd 10; the normal line is 130, the count's skew adds
    # (z^2 + 2) / 6 = 1.8 jobs
    assert not line.passed(131.0, NOW + 5)
    assert line.passed(132.0, NOW + 5)
    assert not line.passed(60.0, NOW + 5)  # a fall is no jump: the clock tick reads it
    # a lumpier queue (D = 4) needs twice the excess, in clumps of 4 jobs
    assert not JumpLine(NOW, 20.0, 4.0, 3.0).passed(164.0, NOW + 5)
    assert JumpLine(NOW, 20.0, 4.0, 3.0).passed(168.0, NOW + 5)
    # no time counted, or a count that is no number: no jump
    assert not line.passed(1e9, NOW)
    assert not line.passed(math.nan, NOW + 5)
    # nor once the tick's inputs are stale
    stale = JumpLine(NOW, 20.0, 1.0, 3.0, ticked_at=NOW, expires_at=NOW + 20)
    assert stale.passed(1e6, NOW + 20) and not stale.passed(1e6, NOW + 21)


@pytest.mark.parametrize(
    ("rate", "least"),
    [
        pytest.param(0.0, 2, id="idle"),
        pytest.param(0.1, 4, id="0.1-jobs-per-s"),
        pytest.param(1.0, 7, id="1-job-per-s"),
        pytest.param(5.0, 16, id="5-jobs-per-s"),
        pytest.param(20.0, 39, id="20-jobs-per-s"),
        pytest.param(100.0, 139, id="100-jobs-per-s"),
    ],
)
def test_a_seconds_jump_is_read_on_the_poisson_tail_at_half_a_false_alarm_an_hour(
    rate: float, least: int
) -> None:
    # GIVEN a line at `rate` jobs/s, D = 1, at the record path's z (3.64: a tail of 1.36e-4 a
    # look, a look a second)
    line = JumpLine(NOW, rate, 1.0, move_sigmas(1.0))
    # THEN one second's count jumps from the least count whose Poisson tail is below that
    # (scipy.stats.poisson.sf(least - 1, rate) < 1.36e-4 <= sf(least - 2, rate); from 0.1
    # jobs/s on, the exact count; an idle queue's first job alone is none). The normal line
    # at max(r s, 1) would read 5 jobs at 1 job/s a jump, a tail of 3.7e-3: 27 times the
    # false alarms
    assert not line.passed(least - 1.0, NOW + 1)
    assert line.passed(float(least), NOW + 1)


def test_a_jump_tick_counts_afresh_from_its_second_under_the_clock_ticks_line() -> None:
    line = JumpLine(NOW, 20.0, 2.0, 3.64, ticked_at=NOW + 0.4, expires_at=NOW + 20.4)
    after = moved(line, NOW + 6.9)
    assert after == JumpLine(NOW + 6, 20.0, 2.0, 3.64, ticked_at=NOW + 0.4, expires_at=NOW + 20.4)


def test_a_line_round_trips_and_a_hostile_one_is_refused_with_its_reason() -> None:
    line = JumpLine(NOW, 20.0, 2.0, 3.64, ticked_at=NOW + 0.4, expires_at=NOW + 20.4)
    assert line_from_dict(line_to_dict(line)) == line
    assert line_from_dict({**line_to_dict(line), "arrived": 12, "fired_at": NOW}) == line
    good = line_to_dict(line)
    for name, value, reason in (
        ("rate", "20", "rate is not a number"),
        ("since", None, "since is not a number"),
        ("sigmas", True, "sigmas is not a number"),
        ("dispersion", math.inf, "dispersion is not finite"),
        ("rate", -1.0, "out of range"),
        ("dispersion", 0.5, "out of range"),
        ("sigmas", 0.0, "out of range"),
    ):
        with pytest.raises(ValueError, match=reason):
            line_from_dict({**good, name: value})
    with pytest.raises(ValueError, match="expires_at is not a number"):
        line_from_dict({name: good[name] for name in good if name != "expires_at"})


@given(
    rate=st.floats(0.0, 1e4),
    dispersion=st.floats(1.0, 100.0),
    seconds=st.integers(1, 60),
    extra=st.floats(0.0, 1e6),
)
def test_more_arrivals_never_undo_a_jump(
    rate: float, dispersion: float, seconds: int, extra: float
) -> None:
    line = JumpLine(NOW, rate, dispersion, move_sigmas(1.0))
    # past the line: 6 sd and 3 clumps of D above the mean (the skew's share at z = 3.64)
    expected = rate * seconds
    base = expected + 6.0 * math.sqrt(dispersion * max(expected, 1.0)) + 3.0 * dispersion
    assert line.passed(base, NOW + seconds)
    assert line.passed(base + extra, NOW + seconds)


def test_a_jump_tick_keeps_the_clock_ticks_readings_and_its_own_orders() -> None:
    clock = ControllerState(
        "jobs",
        version=3,
        samples=(Sample(at=NOW, arrival_rate=20.0, visible=0, raw_target=21),),
        realized_started=1000.0,
        realized_late=2.0,
        horizon_weight=5.0,
        last_set_desired=21,
    )
    jumped = ControllerState(
        "jobs",
        version=4,
        samples=(
            Sample(at=NOW, arrival_rate=20.0, visible=0, raw_target=21),
            Sample(at=NOW + 3, arrival_rate=60.0, visible=150, raw_target=80),
        ),
        realized_started=1060.0,
        last_set_desired=80,
        last_scale_up_at=NOW + 3,
        orders=(Order(NOW + 3, 59),),
        surge_at=NOW + 3,
    )
    kept = keep_readings(clock, jumped)
    assert kept.samples == clock.samples
    assert (kept.realized_started, kept.realized_late, kept.horizon_weight) == (1000.0, 2.0, 5.0)
    assert (kept.version, kept.last_set_desired, kept.last_scale_up_at) == (4, 80, NOW + 3)
    assert kept.orders == jumped.orders and kept.surge_at == NOW + 3
