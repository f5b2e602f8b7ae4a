"""The demo end to end, compressed: quiet, spike, quiet in about 24 s of real time."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from queue_autoscale.config import Profile
from queue_autoscale.demo import (
    DemoOptions,
    DemoSummary,
    Fleet,
    TickRow,
    render,
    run_demo,
    summary_table,
)

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("moto")]


def test_demo_scales_up_for_the_spike_and_accounts_for_every_job(
    endpoint: Any, tmp_path: Path
) -> None:
    # GIVEN a compressed run: 3 jobs/s, 18 jobs/s in the middle third, fast provisioning
    options = DemoOptions(
        duration_seconds=24.0,
        profile=Profile.BALANCED,
        output=tmp_path / "out",
        interval_seconds=2.0,
        provisioning_seconds=2.0,
        quiet_rate=3.0,
        spike_factor=6.0,
        drain_seconds=10.0,
        report=False,
        endpoint_url=endpoint.url,
        live=False,
    )
    console = Console(file=(tmp_path / "console.txt").open("w"), width=160)
    # WHEN the demo runs against the test endpoint
    summary = run_demo(options, console)
    # THEN jobs flowed and every one is completed, failed or still on the queue
    assert summary.jobs_produced > 40
    assert summary.accounted, summary
    assert summary.jobs_completed > 0
    # every event the workers and producer sent was recorded, none rejected
    assert summary.events_sent >= summary.jobs_produced + 2 * summary.jobs_completed
    assert summary.events_accepted == summary.events_sent
    assert summary.events_rejected == 0
    assert summary.counters_queued >= summary.jobs_produced  # at-least-once counters
    # the controller raised desiredCount while the spike was on
    assert summary.desired_max_spike > summary.desired_start, summary
    assert summary.controller_errors == 0
    # the archive and summary are on disk
    assert summary.archive_objects > 0
    assert list((tmp_path / "out" / "archive" / "events").rglob("*.jsonl.gz"))
    assert list((tmp_path / "out" / "archive" / "decisions").rglob("*.jsonl.gz"))
    written = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert written["jobs_produced"] == summary.jobs_produced
    assert written["accounted"] is True


class _IdleSqs:
    """An SQS client with an empty queue (workers poll it and find nothing)."""

    def receive_message(self, **_: Any) -> dict[str, Any]:
        time.sleep(0.05)
        return {}


@pytest.mark.parametrize(
    ("phase_at", "expected"),
    [
        pytest.param(0.0, "quiet", id="start"),
        pytest.param(39.9, "quiet", id="end-of-first-third"),
        pytest.param(40.0, "spike", id="spike"),
        pytest.param(80.0, "quiet again", id="last-third"),
    ],
)
def test_phases_by_thirds(phase_at: float, expected: str) -> None:
    options = DemoOptions(duration_seconds=120.0, quiet_rate=2.0, spike_factor=5.0)
    assert options.phase_at(phase_at) == expected
    assert options.rate_at(phase_at) == (10.0 if expected == "spike" else 2.0)


def test_fleet_starts_workers_after_the_provisioning_delay_and_stops_at_once() -> None:
    # GIVEN a fleet of 1 with a 10 s provisioning delay (times are given, not read)
    stop = threading.Event()
    fleet = Fleet(
        _IdleSqs(),
        "url",
        "q",
        recorder=None,
        options=DemoOptions(provisioning_seconds=10.0),
        stop=stop,
    )
    try:
        fleet.start_now(1, now=100.0)
        # WHEN desiredCount rises to 4 at t=100
        fleet.follow(4, now=100.0)
        fleet.tick(now=109.9)
        # THEN nothing starts before the delay, all three start after it
        assert fleet.size == 1
        fleet.tick(now=110.0)
        assert fleet.size == 4
        # WHEN it falls to 2: two workers retire at once, their seconds are counted
        fleet.follow(2, now=120.0)
        assert fleet.size == 2
        assert fleet.worker_seconds == pytest.approx(2 * 10.0)
    finally:
        stop.set()
        fleet.stop_all(now=130.0)
    assert fleet.size == 0
    assert fleet.worker_seconds == pytest.approx(20.0 + 30.0 + 20.0)


def test_fleet_cancels_provisioning_tasks_when_desired_falls() -> None:
    # GIVEN 1 worker and a rise to 6 still provisioning
    stop = threading.Event()
    fleet = Fleet(
        _IdleSqs(),
        "url",
        "q",
        recorder=None,
        options=DemoOptions(provisioning_seconds=10.0),
        stop=stop,
    )
    try:
        fleet.start_now(1, now=0.0)
        fleet.follow(6, now=0.0)
        # WHEN desired falls to 3 before they are up
        fleet.follow(3, now=5.0)
        # THEN none starts early, and only 3 run once the delay has passed
        assert fleet.size == 1
        fleet.tick(now=10.0)
        assert fleet.size == 3
    finally:
        stop.set()
        fleet.stop_all(now=20.0)


def test_live_table_and_summary_render_the_values() -> None:
    row = TickRow(
        elapsed=42.0,
        phase="spike",
        rate=10.0,
        visible=57,
        in_flight=3,
        oldest_age=12.5,
        workers=2,
        desired=5,
        target=5,
        load_ratio=0.73,
        urgency="ELEVATED",
        action="up",
        reason="scale up 2 -> 5: drain won",
    )
    console = Console(record=True, width=200)
    console.print(render([row], "header line"))
    text = console.export_text()
    assert "header line" in text
    for value in ("spike", "57", "12.5", "0.73", "ELEVATED", "scale up 2 -> 5: drain won"):
        assert value in text
    summary = DemoSummary(
        jobs_produced=10, jobs_completed=7, jobs_left_visible=2, jobs_left_in_flight=1
    )
    assert summary.accounted
    console.print(summary_table(summary))
    assert "7 / 0 / 3" in console.export_text()
    assert not DemoSummary(jobs_produced=10, jobs_completed=7).accounted
