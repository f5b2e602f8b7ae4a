"""Per-queue arrival-rate model: level, linear slope and an hour-of-week seasonal profile.

rate(t) = max(0, (level + slope_per_hour * hours since fitted_at) * seasonal[how(t)]), how(t)
the UTC hour of the week (0 = Monday 00:00), as `queue_autoscale.core.trend.model_rate` reads it.

The fit is a multiplicative decomposition: a least-squares line through the hourly rates (each
hour at its midpoint); seasonal factors = sum of rates / sum of line values per hour of week,
normalised to mean 1 over the 168 hours (hours never seen get 1); the line refitted on the
deseasonalised rates; `iterations` rounds.

The back-test holds out the last `holdout_days` (a week by default), fits on the hours before
them and forecasts every held-out hour, quiet ones included. Two forecasts are scored by MASE
(mean absolute scaled error: the mean absolute error over the held-out hours divided by the
mean absolute error of the seasonal-naive forecast *in sample*, |y(t) - y(t - 168 h)| over the
training hours): the model's, and the seasonal-naive forecast's, which repeats the last
training week. MASE is defined on hours with no arrivals, where a percentage error is not.
The controller lets the model raise capacity only where its MASE is below the naive one, with
its skill 1 - MASE / naive as its weight (`queue_autoscale.core.trend.model_weight`).

Spark groups the hourly series by queue (a few thousand rows each); each group is fitted with
numpy in one pass (`groupBy().applyInPandas`), which keeps the job to a handful of stages.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as sf

HOURS_PER_WEEK = 168
FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
EPOCH_MONDAY_OFFSET_HOURS = 72  # 1970-01-01 00:00 UTC was a Thursday

MODEL_SCHEMA = (
    "queue string, fitted_at double, level double, slope_per_hour double, "
    "seasonal array<double>, hours long, mase double, naive_mase double, holdout_hours long"
)


def hour_of_week(epoch_hour: Column) -> Column:
    """UTC hour of the week (0 = Monday 00:00) of an epoch-hour index column."""
    return sf.pmod(epoch_hour + sf.lit(EPOCH_MONDAY_OFFSET_HOURS), sf.lit(HOURS_PER_WEEK))


def hourly_arrivals(sla_hourly: DataFrame) -> DataFrame:
    """(queue, hour, arrivals) from the `sla_hourly` table: its `arrivals` are the queued
    attempts of each queue and hour (hour = epoch-hour index of `period_start`)."""
    return sla_hourly.select(
        "queue",
        sf.floor(sf.unix_seconds(sf.col("period_start").cast("timestamp")) / 3600)
        .cast("long")
        .alias("hour"),
        sf.col("arrivals").cast("long").alias("arrivals"),
    ).where(sf.col("arrivals") > 0)


def hourly_rates(arrivals: DataFrame) -> DataFrame:
    """(queue, hour, rate) from (queue, hour, arrivals): arrivals / 3600 (jobs/s), with the
    hours between a queue's first and last arrival that saw none filled with 0."""
    counts = arrivals.groupBy("queue", "hour").agg(sf.sum("arrivals").alias("arrivals"))
    spans = counts.groupBy("queue").agg(sf.min("hour").alias("lo"), sf.max("hour").alias("hi"))
    grid = spans.select("queue", sf.explode(sf.sequence("lo", "hi")).alias("hour"))
    return grid.join(counts, ["queue", "hour"], "left").select(
        "queue",
        "hour",
        (sf.coalesce(sf.col("arrivals"), sf.lit(0)) / 3600.0).alias("rate"),
    )


@dataclass(frozen=True)
class Fit:
    """One series' model: line through (end_hour, level) with `slope` per hour, 168 factors."""

    end_hour: int
    """Epoch hour just after the last observed hour (the model's fitted_at / 3600)."""
    level: float
    slope: float
    seasonal: FloatArray

    def predict(self, hours: IntArray) -> FloatArray:
        """Rates (jobs/s) for epoch-hour indices, each hour taken at its midpoint."""
        line = self.level + self.slope * (hours + 0.5 - self.end_hour)
        return np.maximum(0.0, line * self.seasonal[how_of(hours)])


def how_of(hours: IntArray) -> IntArray:
    """Hour of week (0 = Monday 00:00 UTC) of epoch-hour indices."""
    return np.asarray((hours + EPOCH_MONDAY_OFFSET_HOURS) % HOURS_PER_WEEK, dtype=np.int64)


def _line(x: FloatArray, y: FloatArray) -> tuple[float, float]:
    """Least squares y = a + b x over finite y; (mean_x, mean_y) form: returns (a, b)."""
    keep = np.isfinite(y)
    if keep.sum() == 0:
        return 0.0, 0.0
    xs, ys = x[keep], y[keep]
    if keep.sum() < 2 or np.ptp(xs) == 0:
        return float(ys.mean()), 0.0
    slope, intercept = np.polyfit(xs, ys, 1)
    return float(intercept), float(slope)


def fit_series(hours: IntArray, rates: FloatArray, iterations: int = 2) -> Fit:
    """Fit one queue's hourly series (epoch-hour indices, jobs/s); see the module doc."""
    order = np.argsort(hours)
    hours, rates = hours[order].astype(np.int64), rates[order].astype(float)
    x = hours + 0.5
    how = how_of(hours)
    intercept, slope = _line(x, rates)
    seasonal = np.ones(HOURS_PER_WEEK)
    for _ in range(max(1, iterations)):
        line = intercept + slope * x
        rate_sum = np.bincount(how, weights=rates, minlength=HOURS_PER_WEEK)
        line_sum = np.bincount(how, weights=line, minlength=HOURS_PER_WEEK)
        ratio = np.ones(HOURS_PER_WEEK)
        seen = line_sum > 0
        ratio[seen] = rate_sum[seen] / line_sum[seen]
        mean = ratio.mean()
        seasonal = ratio / mean if mean > 0 else np.ones(HOURS_PER_WEEK)
        factor = seasonal[how]
        adjusted = np.where(factor > 0, rates / np.where(factor > 0, factor, 1.0), np.nan)
        intercept, slope = _line(x, adjusted)
    end_hour = int(hours[-1]) + 1
    return Fit(end_hour, intercept + slope * end_hour, slope, seasonal)


@dataclass(frozen=True)
class Backtest:
    """One series' back-test on its held-out hours (MASE: see the module doc)."""

    mase: float | None
    """The model's MASE; None without enough history or a flat training series."""
    naive_mase: float | None
    """The seasonal-naive forecast's MASE on the same hours."""
    holdout_hours: int


def backtest_series(
    hours: IntArray, rates: FloatArray, holdout_days: int, iterations: int = 2
) -> Backtest:
    """Back-test with the last `holdout_days` held out (see the module doc).

    Needs more than a week of history before the holdout (the seasonal profile, the naive
    forecast and the MASE scale all do), else no scores and 0 hours. A training series whose
    seasonal-naive error is 0 (flat) gives no scale: no scores.
    """
    if holdout_days < 1:
        raise ValueError(f"holdout_days must be >= 1, got {holdout_days!r}")
    order = np.argsort(hours)
    hours, rates = hours[order].astype(np.int64), rates[order].astype(float)
    cutoff = int(hours[-1]) + 1 - holdout_days * 24
    train = hours < cutoff
    if cutoff - int(hours[0]) <= HOURS_PER_WEEK:
        return Backtest(None, None, 0)
    by_hour = dict(zip(hours.tolist(), rates.tolist(), strict=True))
    train_hours = hours[train]
    lagged = np.array([by_hour.get(h - HOURS_PER_WEEK, np.nan) for h in train_hours.tolist()])
    in_sample = np.abs(rates[train] - lagged)
    in_sample = in_sample[np.isfinite(in_sample)]
    scale = float(in_sample.mean()) if in_sample.size else 0.0
    test_hours, actual = hours[~train], rates[~train]
    if scale <= 0 or test_hours.size == 0:
        return Backtest(None, None, int(test_hours.size))
    fit = fit_series(train_hours, rates[train], iterations)
    # seasonal naive over a horizon of any length: the same hour of the last training week
    weeks_ahead = (test_hours - cutoff) // HOURS_PER_WEEK + 1
    naive_hours = test_hours - weeks_ahead * HOURS_PER_WEEK
    naive = np.array([by_hour.get(h, 0.0) for h in naive_hours.tolist()])
    mase = float(np.abs(actual - fit.predict(test_hours)).mean() / scale)
    naive_mase = float(np.abs(actual - naive).mean() / scale)
    return Backtest(mase, naive_mase, int(test_hours.size))


def fit_trend(hourly: DataFrame, holdout_days: int = 7, iterations: int = 2) -> DataFrame:
    """Models per queue fitted on all of `hourly` (queue, hour, rate), with back-tested error.

    Columns (MODEL_SCHEMA): queue, fitted_at (epoch s, the end of the last hour), level (jobs/s
    at fitted_at, deseasonalised), slope_per_hour (jobs/s per hour), seasonal (168 factors,
    mean 1), hours (of history), mase and naive_mase (the back-test; null without enough
    history), holdout_hours.
    """
    if holdout_days < 1:
        raise ValueError(f"holdout_days must be >= 1, got {holdout_days!r}")

    def fit_group(frame: pd.DataFrame) -> pd.DataFrame:
        hours = frame["hour"].to_numpy(dtype=np.int64)
        rates = frame["rate"].to_numpy(dtype=float)
        fit = fit_series(hours, rates, iterations)
        test = backtest_series(hours, rates, holdout_days, iterations)
        return pd.DataFrame(
            {
                "queue": [frame["queue"].iloc[0]],
                "fitted_at": [float(fit.end_hour * 3600)],
                "level": [fit.level],
                "slope_per_hour": [fit.slope],
                "seasonal": [fit.seasonal.tolist()],
                "hours": [int(hours.size)],
                "mase": [test.mase],
                "naive_mase": [test.naive_mase],
                "holdout_hours": [test.holdout_hours],
            }
        )

    return (
        hourly.select("queue", "hour", "rate")
        .groupBy("queue")
        .applyInPandas(fit_group, schema=MODEL_SCHEMA)
    )
