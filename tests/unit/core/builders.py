"""Builders for core tests: a snapshot and settings with overridable fields, and the
controller's default policy."""

from __future__ import annotations

from typing import Any

from queue_autoscale.core import DEFAULT_POLICY, POLICIES
from queue_autoscale.core.models import (
    AgeSource,
    ControllerState,
    Evaluation,
    QueueSettings,
    QueueSnapshot,
    TrendModel,
)

NOW = 1_700_000_000.0


def settings(**overrides: Any) -> QueueSettings:
    base: dict[str, Any] = {
        "queue": "jobs",
        "sla_seconds": 30.0,
        "percentile": 0.95,
        "min_workers": 1,
        "max_workers": 100,
        "scale_up_cooldown_seconds": 0.0,
        "evaluation_interval_seconds": 30.0,  # the cases were worked at 30 s
    }
    base.update(overrides)
    return QueueSettings(**base)


def snapshot(**overrides: Any) -> QueueSnapshot:
    base: dict[str, Any] = {
        "queue": "jobs",
        "taken_at": NOW,
        "visible": 0,
        "in_flight": 0,
        "delayed": 0,
        "oldest_age_seconds": 0.0,
        "oldest_age_source": AgeSource.GIVEN,
        "arrival_rate": 0.0,
        "arrival_rate_short": None,
        "mean_job_seconds": 1.0,
        "completion_rate": 0.0,
        "running": 1,
        "desired": 1,
        "pending": 0,
        "deployment_in_progress": False,
        "dlq_depth": 0,
        "failure_rate": 0.0,
    }
    base.update(overrides)
    return QueueSnapshot(**base)


def decide_default(
    snapshot: QueueSnapshot,
    settings: QueueSettings,
    state: ControllerState,
    now: float,
    model: TrendModel | None = None,
) -> Evaluation:
    """One tick of the controller's default policy (`core.DEFAULT_POLICY`), whichever it is."""
    return POLICIES[DEFAULT_POLICY](snapshot, settings, state, now, model)
