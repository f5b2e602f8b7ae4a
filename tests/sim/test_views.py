"""What each policy sees: our controller's snapshot from counters and SQS/ECS attributes, and
the peers' 1-minute CloudWatch datapoints published with a lag."""

from __future__ import annotations

import numpy as np
import pytest

from queue_autoscale.core import ControllerState, CounterRow, QueueSnapshot, decide_predictive
from queue_autoscale.sim.engine import Datapoint, FleetView, run_policy
from queue_autoscale.sim.policies import sim_settings
from queue_autoscale.sim.workload import FleetSpec, build_workload


class Recorder:
    """Holds a fixed fleet and records what it was shown at each tick."""

    name = "recorder"

    def __init__(self, size: int, interval_seconds: int = 10) -> None:
        self.size = size
        self.interval_seconds = interval_seconds
        self.snapshots: list[tuple[int, QueueSnapshot]] = []
        self.datapoints: list[tuple[int, list[Datapoint]]] = []

    def decide(self, view: FleetView) -> int:
        self.snapshots.append((view.elapsed_seconds, view.snapshot("q")))
        self.datapoints.append((view.elapsed_seconds, view.cloudwatch(3)))
        return self.size


def _run(counts: np.ndarray, size: int, **fleet_changes: object) -> tuple[Recorder, object]:
    fleet = FleetSpec(provision_delay_seconds=0, **fleet_changes)  # type: ignore[arg-type]
    workload = build_workload("view", counts, fleet, seed=9, warmup_seconds=0)
    recorder = Recorder(size)
    result = run_policy(workload, recorder, fleet, initial_workers=size)
    return recorder, result


def test_snapshot_rates_and_job_time_come_from_the_counters() -> None:
    counts = np.full(900, 12, dtype=np.int64)  # exactly 12 jobs every second
    recorder, _ = _run(counts, 20, service_mean_seconds=0.5)
    at, snap = next((t, s) for t, s in recorder.snapshots if t == 600)
    assert snap.taken_at == FleetSpec().base_epoch + at
    assert snap.arrival_rate == pytest.approx(12.0)
    assert snap.arrival_rate_short == pytest.approx(12.0)
    assert snap.mean_job_seconds == pytest.approx(0.5, rel=0.05)
    assert snap.completion_rate == pytest.approx(12.0, rel=0.02)
    assert (snap.running, snap.desired, snap.pending) == (20, 20, 0)
    assert snap.visible == 0 and snap.oldest_age_source == "empty"
    assert 0 <= snap.in_flight <= 20


def test_a_starved_queue_shows_its_backlog_and_oldest_age() -> None:
    counts = np.full(400, 3, dtype=np.int64)  # 3 jobs/s on one 1 s worker: backlog grows 2/s
    recorder, _ = _run(counts, 1, service_cv=0.0)
    at, snap = next((t, s) for t, s in recorder.snapshots if t == 300)
    assert snap.visible == pytest.approx(2 * at, rel=0.05)
    assert snap.in_flight == 1
    # FIFO: the job at the head arrived ~at/3 s in, so it has waited ~2/3 of `at`
    assert snap.oldest_age_seconds == pytest.approx(2 * at / 3, rel=0.1)


def test_cloudwatch_datapoints_are_one_minute_and_published_late() -> None:
    counts = np.full(600, 3, dtype=np.int64)
    recorder, _ = _run(counts, 1, service_cv=0.0, cloudwatch_lag_seconds=60)
    by_time = dict(recorder.datapoints)
    assert by_time[110] == []  # minute 0 ends at 60 s and is readable from 120 s
    assert [p.minute_start - FleetSpec().base_epoch for p in by_time[120]] == [0.0]
    assert [p.minute_start - FleetSpec().base_epoch for p in by_time[300]] == [60.0, 120.0, 180.0]
    latest = by_time[300][-1]
    assert latest.visible == pytest.approx(2 * 240, rel=0.05)  # sampled at the minute's end
    assert latest.running == 1


def test_withholding_the_cloudwatch_age_leaves_the_counters_estimate() -> None:
    counts = np.full(400, 3, dtype=np.int64)
    recorder, _ = _run(counts, 1, service_cv=0.0, cloudwatch_age=False)
    snap = dict(recorder.snapshots)[300]
    assert snap.oldest_age_source == "counters"
    assert snap.oldest_age_seconds == pytest.approx(200, rel=0.1)


@pytest.mark.parametrize(("window", "expected"), [(60, 20 * 10 / 60), (10, 20.0)])
def test_the_short_rate_window_is_a_setting(window: int, expected: float) -> None:
    counts = np.zeros(400, dtype=np.int64)
    counts[290:] = 20  # a step from nothing to 20 jobs/s, ten seconds before the tick at 300
    recorder, _ = _run(counts, 30, short_window_seconds=window)
    snap = dict(recorder.snapshots)[300]
    assert snap.arrival_rate_short == pytest.approx(expected)
    assert snap.arrival_rate == pytest.approx(20 * 10 / 300)


def test_late_counters_hide_the_newest_seconds_from_the_rates() -> None:
    # GIVEN 12 jobs every second, and counters that reach the table 15 s late
    counts = np.full(900, 12, dtype=np.int64)
    recorder, _ = _run(counts, 20, service_mean_seconds=0.5, counter_delay_seconds=15)
    snap = dict(recorder.snapshots)[600]
    # THEN the tick at 600 s sees 285 of the long window's 300 s and 45 of the short's 60 s
    assert snap.arrival_rate == pytest.approx(12.0 * 285 / 300)
    assert snap.arrival_rate_short == pytest.approx(12.0 * 45 / 60)


def test_an_age_the_simulator_cannot_know_is_unknown_and_the_controller_holds() -> None:
    # GIVEN five jobs at second 0, no worker, no CloudWatch age, and counters that by second 400
    # no longer reach back to them (the production builder reads 300 s at a 30 s SLA)
    counts = np.zeros(410, dtype=np.int64)
    counts[0] = 5
    recorder, _ = _run(counts, 0, cloudwatch_age=False)
    snap = dict(recorder.snapshots)[400]
    # THEN the age is unknown (it was a placeholder 0.0 before the builders were one)
    assert snap.visible == 5
    assert (snap.oldest_age_seconds, snap.oldest_age_source) == (None, "unknown")
    quiet = sim_settings(min_workers=0)
    evaluation = decide_predictive(snap, quiet, ControllerState(queue="q"), snap.taken_at)
    assert evaluation.decision.action == "hold"
    assert "oldest_age_seconds unknown" in evaluation.decision.reason


class RowRecorder(Recorder):
    """Also records the counter rows the load table would return at each tick."""

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.rows: list[tuple[int, list[CounterRow]]] = []

    def decide(self, view: FleetView) -> int:
        self.rows.append((view.elapsed_seconds, view.counter_rows(300)))
        return self.size


def test_counter_rows_kept_between_ticks_match_a_recount_from_the_jobs() -> None:
    # GIVEN a queue that backs up and drains again (Poisson arrivals, 4 workers of ~1 s jobs)
    counts = np.random.default_rng(3).poisson(4.2, 1_200).astype(np.int64)
    fleet = FleetSpec(provision_delay_seconds=0)
    workload = build_workload("rows", counts, fleet, seed=5, warmup_seconds=0)
    recorder = RowRecorder(4)
    result = run_policy(workload, recorder, fleet, initial_workers=4)
    # WHEN every job's counters are recounted from its arrival, start and duration at the end
    started = ~np.isnan(result.starts)
    start = result.starts[started]
    begun = np.floor(start).astype(np.int64)
    done = np.floor(start + workload.service[started]).astype(np.int64)
    size = result.end_seconds + 100
    expected = {
        "queued": np.pad(counts, (0, size - counts.size)),
        "started": np.bincount(begun, minlength=size),
        "completed": np.bincount(done, minlength=size),
        "pickup_ms": np.bincount(
            begun, (start - workload.arrivals[started]) * 1000.0, minlength=size
        ),
        "busy_ms": np.bincount(done, workload.service[started] * 1000.0, minlength=size),
    }
    base = fleet.base_epoch
    # THEN the rows every tick saw (most built once, at an earlier tick) are exactly those
    # seconds' final counts: the last 300 s before the tick, every second with an event
    checked = 0
    for at, rows in recorder.rows:
        active = [
            s
            for s in range(max(0, at - 300), at)
            if expected["queued"][s] + expected["started"][s] + expected["completed"][s] > 0
        ]
        assert [row.second - base for row in rows] == active
        for row in rows:
            s = row.second - base
            assert (row.queued, row.started, row.completed) == (
                expected["queued"][s],
                expected["started"][s],
                expected["completed"][s],
            )
            assert row.pickup_ms == pytest.approx(expected["pickup_ms"][s], abs=2)
            assert row.busy_ms == pytest.approx(expected["busy_ms"][s], abs=2)
            checked += 1
    assert checked > 30_000
