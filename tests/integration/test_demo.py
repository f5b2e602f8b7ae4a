"""The demo end to end, compressed: quiet, spike, quiet in about 24 s of real time."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from queue_autoscale.config import Profile
from queue_autoscale.demo import DemoOptions, run_demo

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
