"""The demo summary's judgement of the controller's moves: flaps and wrong-way scale-downs."""

from __future__ import annotations

from dataclasses import replace

from rich.console import Console

from queue_autoscale.demo.agreement import Agreement, Tolerance, from_first, within_one
from queue_autoscale.demo.fleet import FleetTotals
from queue_autoscale.demo.live import TickRow
from queue_autoscale.demo.scaling import flaps, judge, wrong_way_scale_downs
from queue_autoscale.demo.summary import (
    NO_MESSAGES,
    ArchiveFacts,
    DemoSummary,
    summarize,
    summary_table,
)


def _row(at: float, desired: int, visible: int, pending: int = 0, phase: str = "spike") -> TickRow:
    return TickRow(
        elapsed=at,
        phase=phase,
        rate=10.0,
        visible=visible,
        in_flight=2,
        oldest_age=1.0,
        workers=2,
        stopping=0,
        pending=pending,
        desired=desired,
        target=desired,
        load_ratio=1.0,
        urgency="NORMAL",
        action="-",
        reason="",
    )


SPIKE = [
    # the decision log: 2 -> 10 at 51 s; at 56 s, backlog growing and 8 ordered
    # tasks not started, 10 -> 5; at 61 s back to 10
    _row(46.0, 2, 40),
    _row(51.0, 10, 80),
    _row(56.0, 5, 124, pending=8),
    _row(61.0, 10, 150, pending=3),
    _row(66.0, 10, 90),
]
QUIET = [
    # 2 -> 4 -> 1 -> 2 within 15 s on steady traffic
    _row(10.0, 2, 1, phase="quiet"),
    _row(15.0, 4, 0, phase="quiet"),
    _row(20.0, 1, 1, phase="quiet"),
    _row(25.0, 2, 0, phase="quiet"),
]


def test_the_spike_cancelled_while_the_backlog_grew_is_a_wrong_way_scale_down_and_a_flap() -> None:
    assert wrong_way_scale_downs(SPIKE) == (56.0,)
    assert flaps(SPIKE, window_seconds=30.0) == ((61.0, "spike"),)


def test_a_scale_down_once_ordered_tasks_landed_or_the_backlog_shrinks_is_not_wrong_way() -> None:
    landed = [_row(0.0, 10, 50), _row(5.0, 6, 60, pending=0)]
    shrinking = [_row(0.0, 10, 50, pending=4), _row(5.0, 6, 40, pending=4)]
    unread = _row(5.0, 6, 0, pending=4)
    unread.visible = None  # SQS could not be read at that tick: not judged
    assert wrong_way_scale_downs(landed) == ()
    assert wrong_way_scale_downs(shrinking) == ()
    assert wrong_way_scale_downs([_row(0.0, 10, 50), unread]) == ()


def test_quiet_churn_is_a_flap_in_the_quiet_phase_and_outside_the_window_is_none() -> None:
    facts = judge(QUIET, flap_window_seconds=30.0)
    assert facts.flaps == ((25.0, "quiet"),) and facts.quiet_flaps == 1
    assert facts.wrong_way_scale_downs == ()
    assert flaps(QUIET, window_seconds=4.0) == ()


def test_the_summary_counts_flaps_wrong_way_moves_and_utilization_and_fails_on_a_wrong_way() -> (
    None
):
    summary = summarize(
        produced=0,
        totals=FleetTotals(worker_seconds=200.0),
        left=NO_MESSAGES,
        dead_letters=NO_MESSAGES,
        events_dead_lettered=0,
        counters=[],
        archive=ArchiveFacts([], 0, frozenset(), 0, busy_seconds=50.0),
        rows=QUIET + SPIKE,
        ingest_counts={"AcceptedEvents": 0.0, "RejectedEvents": 0.0},
        sla_seconds=30.0,
        flap_window_seconds=30.0,
        concurrency=1,
    )
    assert (summary.flaps, summary.flaps_quiet, summary.wrong_way_scale_downs) == (2, 1, 1)
    assert summary.utilization == 0.25
    assert summary.accounted and not summary.passed
    console = Console(record=True, width=80)
    console.print(summary_table(summary))
    text = console.export_text()
    assert "wrong-way scale-downs (must be 0)" in text and "25%" in text
    assert max(len(line) for line in text.splitlines()) <= 80


def test_ticks_agree_within_one_worker_of_the_nearest_simulated_decision() -> None:
    demo = [(0.0, 1), (5.0, 5), (10.0, 8), (15.0, 8)]
    simulated = [(0.4, 1), (5.2, 7), (10.1, 7), (15.3, 4)]
    # 1 vs 1, 5 vs 7 (off by 2), 8 vs 7, 8 vs 4 (off by 4): half within +-1
    assert within_one(demo, simulated) == 0.5
    assert within_one(demo, []) == 0.0
    assert from_first([(100.0, 1), (105.0, 2)]) == [(0.0, 1), (5.0, 2)]


def test_the_agreement_is_judged_against_the_demos_own_spread_and_shown_in_80_columns() -> None:
    close = Agreement(1.0, 480.0, 0.9, compliance_points=0.0, worker_seconds_share=-0.08)
    far = Agreement(0.9, 300.0, 0.9, compliance_points=-10.0, worker_seconds_share=-0.4)
    tolerance = Tolerance(compliance_points=0.5, worker_seconds_share=0.2, ticks_within_one=0.8)
    assert close.within(tolerance) and not far.within(tolerance)
    assert not replace(close, ticks_within_one=0.5).within(tolerance)
    console = Console(record=True, width=80)
    console.print(summary_table(DemoSummary(agreement=close)))
    text = console.export_text()
    assert "100.0% / 480" in text and "+0.0 / -8%" in text and "90%" in text
    assert max(len(line) for line in text.splitlines()) <= 80
