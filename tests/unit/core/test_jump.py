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
    # 5 s at 20 jobs/s: 100 expected, sd 10: the line is 130
    assert not line.passed(130.0, NOW + 5)
    assert line.passed(131.0, NOW + 5)
    assert not line.passed(60.0, NOW + 5)  # a fall is no jump: the clock tick reads it
    # a lumpier queue (D = 4) needs twice the excess
    assert not JumpLine(NOW, 20.0, 4.0, 3.0).passed(159.0, NOW + 5)
    assert JumpLine(NOW, 20.0, 4.0, 3.0).passed(161.0, NOW + 5)
    # an idle queue: one second's 4 jobs pass a line of 3 over a floor of one expected job
    assert JumpLine(NOW, 0.0, 1.0, 3.0).passed(4.0, NOW + 1)
    assert not JumpLine(NOW, 0.0, 1.0, 3.0).passed(3.0, NOW + 1)
    # no time counted, or a count that is no number: no jump
    assert not line.passed(1e9, NOW)
    assert not line.passed(math.nan, NOW + 5)
    # nor once the tick's inputs are stale
    stale = JumpLine(NOW, 20.0, 1.0, 3.0, ticked_at=NOW, expires_at=NOW + 20)
    assert stale.passed(1e6, NOW + 20) and not stale.passed(1e6, NOW + 21)


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
    base = rate * seconds + 4.0 * math.sqrt(dispersion * max(rate * seconds, 1.0))
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
