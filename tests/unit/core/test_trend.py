"""The two named forecasts: seed 001's line and our persistent slope, each blended the same way."""

from __future__ import annotations

import pytest

from queue_autoscale.core import Sample, TrendModel
from queue_autoscale.core.trend import (
    linear_forecast_rate,
    persistent_forecast_rate,
)
from tests.unit.core.builders import NOW, settings


def history(rate_at: dict[float, float]) -> tuple[Sample, ...]:
    """Samples at NOW - age with the given rates (jobs/s), oldest first."""
    ages = sorted(rate_at, reverse=True)
    return tuple(
        Sample(at=NOW - age, arrival_rate=rate_at[age], visible=0, raw_target=0) for age in ages
    )


def test_a_steady_ramp_is_extrapolated_by_both() -> None:
    # +0.05 jobs/s every second over the 300 s window: 20 jobs/s now, 26 in 120 s
    conf = settings()
    horizon = conf.forecast_horizon_seconds
    ramp = history({float(age): 20.0 - 0.05 * age for age in range(15, 301, 15)})
    expected = 20.0 + 0.05 * horizon
    assert linear_forecast_rate(ramp, 20.0, NOW, conf) == pytest.approx(expected)
    assert persistent_forecast_rate(ramp, 20.0, NOW, conf) == pytest.approx(expected)


def test_a_levelled_step_stops_only_the_persistent_slope() -> None:
    # 10 jobs/s, then 20 jobs/s for the last fifth of the window: the rise is over
    conf = settings()
    step = history({float(age): 10.0 if age > 60 else 20.0 for age in range(15, 301, 15)})
    assert persistent_forecast_rate(step, 20.0, NOW, conf) == pytest.approx(20.0)
    assert linear_forecast_rate(step, 20.0, NOW, conf) > 20.5  # the line goes on climbing


def test_both_blend_the_model_by_its_skill() -> None:
    # half the naive error: weight 0.5 on a flat 40 jobs/s model against a flat live 20
    conf = settings()
    flat = history({float(age): 20.0 for age in range(15, 301, 15)})
    model = TrendModel(
        "jobs", fitted_at=NOW, level=40.0, slope_per_hour=0.0, mase=0.1, naive_mase=0.2
    )
    assert linear_forecast_rate(flat, 20.0, NOW, conf, model) == pytest.approx(30.0)
    assert persistent_forecast_rate(flat, 20.0, NOW, conf, model) == pytest.approx(30.0)
    unskilled = TrendModel(
        "jobs", fitted_at=NOW, level=40.0, slope_per_hour=0.0, mase=0.3, naive_mase=0.2
    )
    assert persistent_forecast_rate(flat, 20.0, NOW, conf, unskilled) == pytest.approx(20.0)
