"""Trend fitting recovers a synthetic series' level, slope and weekly profile."""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime

import numpy as np
import pytest

from glue_jobs.transforms.trend import (
    backtest_series,
    fit_trend,
    hourly_arrivals,
    hourly_rates,
)
from glue_jobs.trend_fit import backtest_lines, backtest_rows
from queue_autoscale.core.models import TrendModel

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

MONDAY = int(datetime(2026, 9, 7, tzinfo=UTC).timestamp()) // 3600  # epoch hour, Mon 00:00
WEEKS = 5
LEVEL = 20.0  # jobs/s at the end of the series
SLOPE = 0.01  # jobs/s per hour
NOISE = 0.02  # multiplicative, standard deviation


def profile() -> list[float]:
    """A daily sine peaking at 12:00, weekends at half volume, normalised to mean 1."""
    raw = []
    for how in range(168):
        day, hour = divmod(how, 24)
        shape = 1.0 + 0.6 * math.sin(2 * math.pi * (hour - 6) / 24)
        raw.append(shape * (0.5 if day >= 5 else 1.0))
    mean = sum(raw) / len(raw)
    return [value / mean for value in raw]


def test_fit_recovers_level_slope_and_profile(spark) -> None:
    # GIVEN five weeks of hourly rates = (line) x (weekly profile) x (2% noise), two queues
    generator = random.Random(7)
    truth = profile()
    end = MONDAY + WEEKS * 168
    rows = []
    for queue, scale in (("web", 1.0), ("batch", 0.25)):
        for hour in range(MONDAY, end):
            line = scale * (LEVEL + SLOPE * (hour + 0.5 - end))
            rate = line * truth[(hour - MONDAY) % 168] * (1 + generator.gauss(0, NOISE))
            rows.append((queue, hour, rate))
    hourly = spark.createDataFrame(rows, "queue string, hour long, rate double")
    # WHEN fitted with the last week held out
    models = {row.queue: row for row in fit_trend(hourly, holdout_days=7).collect()}
    # THEN level within 2%, slope within 5%, every seasonal factor within 0.05 of the truth
    for queue, scale in (("web", 1.0), ("batch", 0.25)):
        model = models[queue]
        assert model.fitted_at == end * 3600
        assert model.level == pytest.approx(LEVEL * scale, rel=0.02)
        assert model.slope_per_hour == pytest.approx(SLOPE * scale, rel=0.05)
        assert len(model.seasonal) == 168
        assert sum(model.seasonal) / 168 == pytest.approx(1.0, abs=1e-9)
        assert max(abs(a - b) for a, b in zip(model.seasonal, truth, strict=True)) < 0.05
        # the back-test: the model's error is the noise's; last week's value misses a
        # week of growth (0.01 x 168 = 1.7 jobs/s x scale) besides its own noise, and MASE
        # scales both by that same in-sample week-on-week error
        assert model.holdout_hours == 168
        assert model.mase < 0.5
        assert model.naive_mase > 1.5 * model.mase


def test_backtest_scores_by_mase_against_the_last_training_week() -> None:
    # GIVEN three weeks: every hour of week 1 at 1 job/s, week 2 at 2, the held-out week 3 at 4
    hours = np.arange(MONDAY, MONDAY + 3 * 168)
    rates = np.repeat([1.0, 2.0, 4.0], 168)
    # WHEN back-tested with the last week held out
    test = backtest_series(hours, rates, holdout_days=7)
    # THEN the in-sample seasonal-naive error is |2 - 1| = 1 per hour (the scale); the naive
    # forecast repeats week 2 (2 against 4: MASE 2); the line through the two steps gives
    # about 3 (MASE about 1)
    assert test.holdout_hours == 168
    assert test.naive_mase == pytest.approx(2.0)
    assert test.mase == pytest.approx(1.0, abs=0.05)


def test_backtest_counts_quiet_hours_and_repeats_the_last_week_over_longer_holdouts() -> None:
    # GIVEN work in weekday working hours only (40 of 168 hours), week by week at 1x, 2x,
    # then 3x and 3x in the two held-out weeks
    profile = np.array([1.0 if how < 120 and 9 <= how % 24 < 17 else 0.0 for how in range(168)])
    rates = np.concatenate([profile, 2 * profile, 3 * profile, 3 * profile])
    hours = np.arange(MONDAY, MONDAY + rates.size)
    # WHEN the last two weeks are held out
    test = backtest_series(hours, rates, holdout_days=14)
    # THEN every hour counts, quiet ones too: the scale is |2p - p| averaged over a week
    # (40/168); the naive forecast is week 2 (2p) for *both* held-out weeks, 1 off in every
    # working hour: MAE 40/168, MASE 1.0 (week 3's actuals would have made week 4 exact)
    assert test.holdout_hours == 336
    assert test.naive_mase == pytest.approx(1.0)
    assert test.mase is not None and test.mase >= 0


def test_flat_training_series_has_no_scale() -> None:
    hours = np.arange(MONDAY, MONDAY + 3 * 168)
    test = backtest_series(hours, np.ones(hours.size), holdout_days=7)
    assert (test.mase, test.naive_mase, test.holdout_hours) == (None, None, 168)


def test_short_history_gets_no_backtest(spark) -> None:
    rows = [("q", MONDAY + h, 1.0) for h in range(200)]
    model = fit_trend(spark.createDataFrame(rows, "queue string, hour long, rate double"), 7)
    row = model.first()
    assert row.mase is None
    assert row.naive_mase is None
    assert row.holdout_hours == 0
    assert row.level == pytest.approx(1.0)
    assert row.slope_per_hour == pytest.approx(0.0, abs=1e-12)


def test_hourly_rates_fill_quiet_hours_with_zero(spark) -> None:
    # GIVEN sla_hourly rows: 2 arrivals at hour 0, an hour with breach minutes only, 1 at hour 3
    hour = datetime.fromtimestamp(MONDAY * 3600, UTC).replace(tzinfo=None)
    sla_hourly = spark.createDataFrame(
        [
            ("q", hour, 2),
            ("q", hour.replace(hour=1), 0),
            ("q", hour.replace(hour=3), 1),
        ],
        "queue string, period_start timestamp, arrivals long",
    )
    got = sorted(
        (row.hour - MONDAY, row.rate) for row in hourly_rates(hourly_arrivals(sla_hourly)).collect()
    )
    assert got == [(0, 2 / 3600), (1, 0.0), (2, 0.0), (3, 1 / 3600)]


def test_the_job_reports_the_backtest_and_the_gate_per_queue() -> None:
    # GIVEN four queues' models: 25% and 5% better than seasonal-naive, 5% worse, unscored
    models = [
        TrendModel("web", 0.0, 1.0, 0.0, mase=0.6, naive_mase=0.8),
        TrendModel("batch", 0.0, 1.0, 0.0, mase=0.95, naive_mase=1.0),
        TrendModel("slow", 0.0, 1.0, 0.0, mase=1.05, naive_mase=1.0),
        TrendModel("new", 0.0, 1.0, 0.0),
    ]
    # WHEN reported
    rows = backtest_rows(models, {"web": 168, "batch": 168, "slow": 168})
    lines = backtest_lines(rows)
    # THEN the two better than naive may raise capacity, each weighted by its skill, and each
    # queue has its line
    assert [(row["queue"], row["raises_capacity"]) for row in rows] == [
        ("web", True),
        ("batch", True),
        ("slow", False),
        ("new", False),
    ]
    assert rows[0]["weight"] == pytest.approx(0.25)
    assert lines[2].split() == ["web", "168", "0.600", "0.800", "0.25", "yes"]
    assert lines[3].split() == ["batch", "168", "0.950", "1.000", "0.05", "yes"]
    assert lines[4].split() == ["slow", "168", "1.050", "1.000", "0.00", "no"]
    assert lines[5].split() == ["new", "0", "-", "-", "0.00", "no"]
