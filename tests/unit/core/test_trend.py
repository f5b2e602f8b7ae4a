"""The two named forecasts: seed 001's line and our persistent slope, each blended the same way."""

from __future__ import annotations

from dataclasses import replace

import pytest

from queue_autoscale.core import Sample, TrendModel
from queue_autoscale.core.trend import (
    linear_forecast_rate,
    persistent_forecast_rate,
    step_onset,
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


def test_a_window_still_filling_on_a_cold_start_is_not_extrapolated() -> None:
    # GIVEN counters that began 90 s ago at a steady 20 jobs/s, read by ticks every 30 s: the
    # 300 s window reads 20 x 30 / 300 = 2, then 4, and 6 jobs/s now, a ramp of 1 / 15 a second
    conf = settings()
    assert conf.evaluation_interval_seconds == 30.0
    filling = history({60.0: 2.0, 30.0: 4.0})
    # THEN no slope is extrapolated: the ticks reach back 60 s of the window's 300
    assert persistent_forecast_rate(filling, 6.0, NOW, conf) == pytest.approx(6.0)
    # AND the same ramp over ticks that reach back to the window's start less an interval is one
    ramp = history({float(age): 20.0 - age / 15.0 for age in range(30, 271, 30)})
    expected = 20.0 + conf.forecast_horizon_seconds / 15.0
    assert persistent_forecast_rate(ramp, 20.0, NOW, conf) == pytest.approx(expected)
    # AND one more interval short, it is not
    short = history({float(age): 20.0 - age / 15.0 for age in range(30, 241, 30)})
    assert persistent_forecast_rate(short, 20.0, NOW, conf) == pytest.approx(20.0)


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


def step_history(
    onset_age: float, height: float, slope: float = 0.0, base: float = 10.0
) -> tuple[tuple[Sample, ...], float]:
    """Ticks every 10 s over the 300 s window of a rate `base` + `slope` x t that steps up by
    `height` jobs/s `onset_age` seconds ago, as both windows read it: the short one (60 s)
    smears the step into a ramp over its span. Returns (samples oldest first, the short rate
    now); each sample's rate is its short rate (the sizing rate once the load has moved)."""

    def short(age: float) -> float:
        filled = min(max((onset_age - age) / 60.0, 0.0), 1.0)
        return base + slope * (300.0 - age - 30.0) + height * filled  # the window's mean

    samples = tuple(
        Sample(NOW - age, short(age), 0, 0, short_rate=short(age)) for age in range(300, 0, -10)
    )
    return samples, short(0.0)


def test_a_step_still_filling_the_short_window_is_not_extrapolated() -> None:
    # GIVEN 10 -> 20 jobs/s 80 s ago: the short window's rate rose over 80..20 s ago, then held
    conf = settings()
    samples, now_rate = step_history(onset_age=80.0, height=10.0)
    assert now_rate == pytest.approx(20.0)
    # WHEN the forecast reads only the rates (no short window recorded), both fits still rise
    rates_only = tuple(replace(s, short_rate=None) for s in samples)
    assert persistent_forecast_rate(rates_only, now_rate, NOW, conf) > 21.0
    # THEN with the short window's rates the step is told from a rise: the level is the forecast
    assert step_onset(samples, now_rate, NOW, 60.0, 1.645) == pytest.approx(-80.0)
    assert persistent_forecast_rate(
        samples, now_rate, NOW, conf, None, 1.645, now_rate
    ) == pytest.approx(20.0)


def test_a_rise_on_a_ramp_keeps_the_ramp_before_it() -> None:
    # GIVEN a ramp of 0.01 jobs/s per s with a 5 jobs/s step on it 80 s ago
    conf = settings()
    samples, now_rate = step_history(onset_age=80.0, height=5.0, slope=0.01)
    # THEN the step is a change of level, and the ramp before it goes on over the horizon
    forecast = persistent_forecast_rate(samples, now_rate, NOW, conf, None, 1.645, now_rate)
    assert forecast == pytest.approx(now_rate + 0.01 * conf.forecast_horizon_seconds)


def test_a_ramp_is_not_read_as_a_step() -> None:
    # GIVEN +0.05 jobs/s every second, the short window's rates a line over its two spans
    conf = settings()
    samples, now_rate = step_history(onset_age=0.0, height=0.0, slope=0.05)
    # THEN no step fits better than the line, and the ramp is extrapolated at its slope
    assert step_onset(samples, now_rate, NOW, 60.0, 1.645) is None
    forecast = persistent_forecast_rate(samples, now_rate, NOW, conf, None, 1.645, now_rate)
    assert forecast == pytest.approx(now_rate + 0.05 * conf.forecast_horizon_seconds)


def test_a_small_step_within_the_noise_is_not_a_step() -> None:
    # GIVEN 20 jobs/s with a 1 jobs/s step 80 s ago: the line's squared error over the last
    # 120 s is 0.18 (the step's 0), within z^2 D lambda / w = 1.645^2 x 21 / 60 = 0.95
    samples, now_rate = step_history(onset_age=80.0, height=1.0, base=20.0)
    assert step_onset(samples, now_rate, NOW, 60.0, 1.645) is None
    # AND the same step five times higher is one (the line's error 4.56 against 1.13)
    samples, now_rate = step_history(onset_age=80.0, height=5.0, base=20.0)
    assert step_onset(samples, now_rate, NOW, 60.0, 1.645) == pytest.approx(-80.0)
