"""The one snapshot builder: readings in, the core's snapshot out; a failed reading is unknown."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest

from queue_autoscale.core import (
    AgeSource,
    ControllerState,
    CounterRow,
    OldestAge,
    RateWindows,
    Readings,
    build_snapshot,
    sla_loop,
)
from queue_autoscale.core.models import Sample
from queue_autoscale.core.snapshot import counter_lookback_seconds, watched_seconds, watched_view
from tests.unit.core.builders import NOW, decide_default, settings

SECOND = int(NOW)


@dataclass(frozen=True)
class Depth:
    visible: int
    in_flight: int
    delayed: int


@dataclass(frozen=True)
class Fleet:
    running: int
    desired: int
    pending: int
    deployment_in_progress: bool


def all_read() -> Readings:
    # 2 jobs/s queued over the last 300 s, 1 completed per second taking 500 ms, 1 in 10 failed
    rows = [
        CounterRow(
            second=SECOND - age,
            queued=2,
            completed=1 if age % 10 else 0,
            failed=0 if age % 10 else 1,
            busy_ms=500,
        )
        for age in range(1, 301)
    ]
    return Readings(
        depth=Depth(visible=40, in_flight=3, delayed=1),
        oldest_age=OldestAge(age_seconds=12.0, lag_seconds=90.0),
        fleet=Fleet(running=4, desired=5, pending=1, deployment_in_progress=False),
        dlq_depth=2,
        rows=rows,
    )


def test_every_reading_lands_in_its_field() -> None:
    snap = build_snapshot("jobs", NOW, all_read())
    assert (snap.visible, snap.in_flight, snap.delayed) == (40, 3, 1)
    assert (snap.running, snap.desired, snap.pending, snap.dlq_depth) == (4, 5, 1, 2)
    assert snap.deployment_in_progress is False
    assert snap.arrival_rate == pytest.approx(2.0)
    assert snap.arrival_rate_short == pytest.approx(2.0)
    assert snap.mean_job_seconds == pytest.approx(0.5)
    assert snap.failure_rate == pytest.approx(0.1)
    # 40 visible at 2 jobs/s: the counters date the oldest job 20 s back; CloudWatch's 12 s
    # datapoint is 90 s old, and 180 jobs were queued since, so the job it saw has gone: 20 s
    assert (snap.oldest_age_seconds, snap.oldest_age_source) == (20.0, AgeSource.COUNTERS)
    assert snap.rate_window_seconds == 300.0


def test_the_short_window_is_the_callers() -> None:
    readings = replace(all_read(), rows=[CounterRow(second=SECOND - 5, queued=30)])
    snap = build_snapshot("jobs", NOW, readings, RateWindows(short_seconds=10.0))
    assert (snap.arrival_rate, snap.arrival_rate_short) == (pytest.approx(0.1), 3.0)


@pytest.mark.parametrize(
    ("failed", "unknown", "problem"),
    [
        pytest.param(
            "depth",
            ("visible", "in_flight", "delayed", "oldest_age_seconds"),
            "visible unknown",
            id="queue-depth",
        ),
        pytest.param(
            "fleet",
            ("running", "desired", "pending", "deployment_in_progress"),
            "running unknown",
            id="service",
        ),
        pytest.param(
            "rows",
            ("arrival_rate", "arrival_rate_short", "mean_job_seconds", "failure_rate"),
            "arrival_rate unknown",
            id="counters",
        ),
    ],
)
def test_a_failed_reading_is_unknown_and_the_core_holds(
    failed: str, unknown: tuple[str, ...], problem: str
) -> None:
    # GIVEN every reading but one
    readings = replace(all_read(), **{failed: None})
    # WHEN the snapshot is built and decided on
    snap = build_snapshot("jobs", NOW, readings)
    decision = decide_default(snap, settings(), ControllerState(queue="jobs"), NOW).decision
    # THEN what that reading measures is None, never 0, and the core holds saying why
    assert {name: getattr(snap, name) for name in unknown} == dict.fromkeys(unknown)
    assert decision.inputs_ok is False
    assert problem in decision.reason and "holding the current count" in decision.reason


def test_an_age_no_source_can_give_is_unknown_not_zero() -> None:
    # GIVEN a backlog, no CloudWatch datapoint and no counters that reach it
    readings = replace(all_read(), oldest_age=None, rows=[])
    snap = build_snapshot("jobs", NOW, readings)
    assert (snap.oldest_age_seconds, snap.oldest_age_source) == (None, AgeSource.UNKNOWN)
    decision = decide_default(snap, settings(), ControllerState(queue="jobs"), NOW).decision
    assert decision.action == "hold" and "oldest_age_seconds unknown" in decision.reason


def test_an_unknown_dlq_is_unknown_and_does_not_hold() -> None:
    snap = build_snapshot("jobs", NOW, replace(all_read(), dlq_depth=None))
    assert snap.dlq_depth is None
    assert decide_default(snap, settings(), ControllerState(queue="jobs"), NOW).decision.inputs_ok


@pytest.mark.parametrize(("sla", "seconds"), [(30.0, 300), (600.0, 1200), (86_400.0, 3600)])
def test_the_counter_lookback_reaches_twice_the_sla(sla: float, seconds: int) -> None:
    assert counter_lookback_seconds(sla) == seconds


def test_pickups_are_in_time_order_whatever_order_the_rows_came_in() -> None:
    # (age s, pickup ms), newest last in neither order
    ages = ((5, 1_000), (40, 45_000), (12, 1_000), (300, 2_000), (1, 1_000))
    rows = [CounterRow(second=SECOND - a, started=1, pickup_ms=ms) for a, ms in ages]
    snap = build_snapshot("jobs", NOW, replace(all_read(), rows=rows))
    assert snap.pickups == (
        (SECOND - 300, 1, 2_000),
        (SECOND - 40, 1, 45_000),
        (SECOND - 12, 1, 1_000),
        (SECOND - 5, 1, 1_000),
        (SECOND - 1, 1, 1_000),
    )
    # the SLA loop selects the seconds it counts by bisection on that order: settled are those
    # at least an interval (30 s) old, 300 s (picked up in 2 s) and 40 s (45 s, past the 30 s SLA)
    reading = sla_loop.update(ControllerState("jobs"), snap.pickups, settings(), NOW)
    assert (reading.started, reading.late, reading.through) == (2.0, 1.0, NOW - 30.0)


# ---------------------------------------------------------------- a queue younger than the window


def _young_rows(seconds: int, rate: int) -> list[CounterRow]:
    """`rate` jobs queued and finished (1 s each) in each of the last `seconds` seconds."""
    return [
        CounterRow(second=SECOND - age, queued=rate, completed=rate, busy_ms=1000 * rate)
        for age in range(1, seconds + 1)
    ]


def _watched_since(at: float) -> ControllerState:
    return ControllerState(
        "jobs", samples=(Sample(at=at, arrival_rate=0.0, visible=0, raw_target=1),)
    )


def test_a_queue_watched_60_s_reads_its_rate_over_60_s_not_the_300_s_window() -> None:
    # GIVEN counters that began 60 s ago at 10 jobs/s, and a controller whose first tick was
    # 45 s ago (the counters began an interval before it)
    readings = replace(all_read(), rows=_young_rows(60, 10))
    whole = build_snapshot("jobs", NOW, readings)
    watched = watched_seconds(whole, _watched_since(NOW - 45.0), NOW)
    # WHEN the rates are read over the time the queue was watched
    view = watched_view(whole, watched)
    # THEN the whole window dilutes the rate to a fifth, and its empty seconds read as bursts;
    # the watched view reads 10 jobs/s of constant counts (dispersion 0) over 60 s
    assert whole.arrival_rate == pytest.approx(2.0)
    assert whole.arrival_dispersion == pytest.approx(8.0)
    assert watched == pytest.approx(60.0)
    assert view.arrival_rate == pytest.approx(10.0)
    assert view.arrival_dispersion == pytest.approx(0.0, abs=1e-9)
    assert view.completion_rate == pytest.approx(10.0)
    assert view.rate_window_seconds == pytest.approx(60.0)
    # the short window (60 s) was watched whole: as it was
    assert view.arrival_rate_short == pytest.approx(whole.arrival_rate_short)
    assert view.short_window_seconds == whole.short_window_seconds


def test_the_view_is_the_snapshot_once_the_window_is_watched_whole_or_nothing_is_known() -> None:
    # GIVEN a busy queue whose counters reach back past the window, and a fresh controller state
    # (a redeploy, a state lost): the counters say how long the queue was watched
    whole = build_snapshot("jobs", NOW, replace(all_read(), rows=_young_rows(400, 10)))
    fresh = _watched_since(NOW - 5.0)
    # THEN the view changes nothing: watched past the window, before any tick, without rows
    assert watched_seconds(whole, fresh, NOW) >= 300.0  # type: ignore[operator]
    assert watched_view(whole, watched_seconds(whole, fresh, NOW)) == whole
    assert watched_seconds(whole, ControllerState("jobs"), NOW) is None
    assert watched_view(whole, None) == whole
    quiet = build_snapshot("jobs", NOW, replace(all_read(), rows=[]))
    assert quiet.first_counter_second is None
    assert watched_seconds(quiet, fresh, NOW) is None


def test_a_sparse_queue_is_watched_from_the_first_tick_not_from_its_first_job() -> None:
    # GIVEN one job 10 s ago on a queue the controller first ticked on 100 s ago
    rows = [CounterRow(second=SECOND - 10, queued=1)]
    whole = build_snapshot("jobs", NOW, replace(all_read(), rows=rows))
    watched = watched_seconds(whole, _watched_since(NOW - 100.0), NOW)
    # THEN the queue counts as watched for 100 s, and its one job reads as 1/100 jobs/s, not 1/10
    assert watched == pytest.approx(100.0)
    assert watched_view(whole, watched).arrival_rate == pytest.approx(1 / 100)


def test_two_ticks_within_a_second_do_not_spread_a_second_over_a_fraction_of_it() -> None:
    # GIVEN 30 jobs in the current second, and a first tick 0.2 s ago (an evaluation invoked by
    # hand right after the scheduled one)
    rows = [CounterRow(second=SECOND, queued=30)]
    whole = build_snapshot("jobs", NOW + 0.5, replace(all_read(), rows=rows))
    watched = watched_seconds(whole, _watched_since(NOW + 0.3), NOW + 0.5)
    # THEN the queue counts as watched for the second its row spans: 30 jobs/s, not 60
    assert watched == pytest.approx(1.0)
    assert watched_view(whole, watched).arrival_rate == pytest.approx(30.0)
