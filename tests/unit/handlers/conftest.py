"""Handler tests: canonical Lambda events from tests/events and a fake LambdaContext."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

EVENTS = Path(__file__).resolve().parents[2] / "events"


@dataclass
class FakeLambdaContext:
    """The LambdaContext attributes Powertools reads."""

    function_name: str = "queue-autoscale-test"
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:test"
    aws_request_id: str = "11111111-1111-1111-1111-111111111111"
    remaining_ms: int = 120_000

    def get_remaining_time_in_millis(self) -> int:
        """Milliseconds left in the invocation."""
        return self.remaining_ms


@pytest.fixture
def lambda_context() -> FakeLambdaContext:
    """A Powertools-compatible LambdaContext with two minutes left."""
    return FakeLambdaContext()


@pytest.fixture
def load_event() -> Any:
    """Load a canonical event from tests/events by file name (a fresh copy each call)."""

    def load(name: str) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((EVENTS / name).read_text(encoding="utf-8"))
        return data

    return load


@pytest.fixture(autouse=True)
def _quiet_tracing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")
