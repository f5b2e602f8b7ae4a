"""Trend fitting recovers a synthetic series' level, slope and weekly profile."""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime

import pytest

from glue_jobs.transforms.trend import fit_trend, hourly_arrivals, hourly_rates

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
        # the back-test: close to the noise, and better than last week's value (which
        # misses a week of growth)
        assert model.holdout_hours == 168
        assert model.mape < 0.04
        assert model.naive_mape > model.mape


def test_short_history_gets_no_backtest(spark) -> None:
    rows = [("q", MONDAY + h, 1.0) for h in range(200)]
    model = fit_trend(spark.createDataFrame(rows, "queue string, hour long, rate double"), 7)
    row = model.first()
    assert row.mape is None
    assert row.naive_mape is None
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
