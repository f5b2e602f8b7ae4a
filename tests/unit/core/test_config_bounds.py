"""Every numeric config field has a floor and a ceiling, and any config validation accepts
decides without an exception for any snapshot (a setting of 1e-15 s once passed validation
and every tick then failed with ZeroDivisionError). A field the controller derives is refused,
saying so."""

from __future__ import annotations

import math
from typing import Any

import annotated_types
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from queue_autoscale.config import DERIVED_FIELDS, ConfigError, QueueConfig, parse_queue
from queue_autoscale.core import POLICIES, ControllerState, Sample
from queue_autoscale.core.models import QueueSnapshot
from tests.unit.core.builders import NOW
from tests.unit.core.test_bounded_work import snapshots

NUMERIC = (int, float)

REMOVED = (
    "stabilization_window_seconds",
    "scale_down_cooldown_seconds",
    "scale_down_step",
    "scale_down_percent",
    "recovery_horizon_seconds",
)
"""The scale-in settings the controller derives, written out here so the test does not read
the list it checks."""


def numeric_fields() -> dict[str, tuple[type, float | None, float | None, bool, bool]]:
    """name -> (type, floor, ceiling, floor excluded, ceiling excluded) of each numeric field."""
    found = {}
    for name, info in QueueConfig.model_fields.items():
        kinds = [k for k in (int, float) if k in _types(info.annotation)]
        if not kinds or info.annotation is bool:
            continue
        low = high = None
        low_open = high_open = False
        for item in info.metadata:
            if isinstance(item, annotated_types.Ge):
                low = item.ge
            elif isinstance(item, annotated_types.Gt):
                low, low_open = item.gt, True
            elif isinstance(item, annotated_types.Le):
                high = item.le
            elif isinstance(item, annotated_types.Lt):
                high, high_open = item.lt, True
        found[name] = (kinds[-1], low, high, low_open, high_open)
    return found


def _types(annotation: Any) -> tuple[Any, ...]:
    return getattr(annotation, "__args__", (annotation,))


FIELDS = numeric_fields()


def test_every_numeric_field_has_a_floor_and_a_ceiling() -> None:
    unbounded = sorted(
        n for n, (_, low, high, _, _) in FIELDS.items() if low is None or high is None
    )
    assert unbounded == []


def _values(kind: type, low: float, high: float, low_open: bool, high_open: bool) -> Any:
    if kind is int:
        lo, hi = int(low) + (1 if low_open else 0), int(high) - (1 if high_open else 0)
        return st.sampled_from([lo, hi]) | st.integers(lo, hi)
    lo = math.nextafter(low, math.inf) if low_open else float(low)
    hi = math.nextafter(high, -math.inf) if high_open else float(high)
    edges = [lo, hi, math.nextafter(lo, math.inf), min(hi, lo * 2 + 1e-15)]
    return st.sampled_from(edges) | st.floats(lo, hi)


@st.composite
def configs(draw: st.DrawFn) -> dict[str, Any]:
    """A queue config object: each numeric field left out or drawn within its own bounds."""
    data: dict[str, Any] = {"queue": "jobs"}
    for name, (kind, low, high, low_open, high_open) in FIELDS.items():
        if low is None or high is None or not draw(st.booleans()):
            continue
        data[name] = draw(_values(kind, low, high, low_open, high_open))
    return data


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(configs(), snapshots(), st.sampled_from(sorted(POLICIES)), st.booleans())
def test_any_config_validation_accepts_decides_for_any_snapshot(
    data: dict[str, Any], snap: QueueSnapshot, policy: str, with_history: bool
) -> None:
    # GIVEN any config object validation accepts
    try:
        cfg = parse_queue(data)
    except ConfigError:
        return
    cfg_settings = cfg.settings()
    samples = (Sample(at=NOW - 30, arrival_rate=1.0, visible=0, raw_target=1),)
    state = ControllerState("jobs", samples=samples if with_history else ())
    # WHEN a policy decides, THEN it answers (no exception) within the configured bounds
    decision = POLICIES[policy](snap, cfg_settings, state, NOW, None).decision
    assert decision.reason
    assert 0 <= decision.target <= max(cfg.max_workers, decision.current or 0)


@pytest.mark.parametrize("field", REMOVED)
def test_a_field_the_controller_derives_is_refused_with_why(field: str) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_queue({"queue": "jobs", field: 60})
    words = str(refused.value)
    assert f"queue 'jobs': {field}: not a setting" in words
    assert "lead + interval" in words and "remove it from the config" in words
    assert field not in QueueConfig.model_fields and field in DERIVED_FIELDS


def test_every_derived_field_set_is_named_in_one_refusal() -> None:
    with pytest.raises(ConfigError, match=r"scale_down_step, scale_down_percent: .*remove them"):
        parse_queue({"queue": "jobs", "scale_down_percent": 50, "scale_down_step": 3})
