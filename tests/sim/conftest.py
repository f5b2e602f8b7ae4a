"""Shared helpers for the simulator tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from queue_autoscale.sim.engine import FleetView

NASA_TRACE = Path(__file__).resolve().parents[3] / "shared" / "traces" / "nasa-1995-per-second.tbz2"


class FixedFleet:
    """A policy that always wants `size` workers (a static fleet without the p99 sizing)."""

    name = "fixed"

    def __init__(self, size: int, interval_seconds: int = 60) -> None:
        self.size = size
        self.interval_seconds = interval_seconds

    def decide(self, view: FleetView) -> int:
        return self.size


@pytest.fixture
def nasa_trace() -> Path:
    if not NASA_TRACE.is_file():
        pytest.skip(f"the NASA trace is not here: {NASA_TRACE} (../shared/traces/ is absent)")
    return NASA_TRACE
