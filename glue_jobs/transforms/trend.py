"""Per-queue arrival-rate model: level, linear slope and an hour-of-week seasonal profile.

rate(t) = max(0, (level + slope_per_hour * hours since fitted_at) * seasonal[how(t)]), how(t)
the UTC hour of the week (0 = Monday 00:00), as `queue_autoscale.core.trend.model_rate` reads it.

The fit is a multiplicative decomposition: a least-squares line through the hourly rates (each
hour at its midpoint); seasonal factors = sum of rates / sum of line values per hour of week,
normalised to mean 1 over the 168 hours (hours never seen get 1); the line refitted on the
deseasonalised rates; `iterations` rounds. The back-test holds out the last `holdout_days`,
fits on the rest and reports the MAPE over held-out hours with arrivals beside the MAPE of a
seasonal-naive forecast (the same hour one week earlier).

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
    "seasonal array<double>, hours long, mape double, naive_mape double, holdout_hours long"
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


def backtest_series(
    hours: IntArray, rates: FloatArray, holdout_days: int, iterations: int = 2
) -> tuple[float | None, float | None, int]:
    """(mape, naive_mape, holdout hours) with the last `holdout_days` held out.

    Needs a week of history before the holdout (the profile and the naive forecast both do);
    otherwise (None, None, 0). Hours without arrivals are left out of both MAPEs.
    """
    if holdout_days < 1:
        raise ValueError(f"holdout_days must be >= 1, got {holdout_days!r}")
    cutoff = int(hours.max()) + 1 - holdout_days * 24
    train = hours < cutoff
    if cutoff - int(hours.min()) < HOURS_PER_WEEK:
        return None, None, 0
    fit = fit_series(hours[train], rates[train], iterations)
    test_hours, actual = hours[~train], rates[~train]
    by_hour = dict(zip(hours.tolist(), rates.tolist(), strict=True))
    naive = np.array([by_hour.get(h - HOURS_PER_WEEK, np.nan) for h in test_hours.tolist()])
    positive = actual > 0
    if not positive.any():
        return None, None, int(test_hours.size)
    errors = np.abs(actual - fit.predict(test_hours))[positive] / actual[positive]
    naive_ok = positive & np.isfinite(naive)
    naive_errors = np.abs(actual - naive)[naive_ok] / actual[naive_ok]
    naive_mape = float(naive_errors.mean()) if naive_errors.size else None
    return float(errors.mean()), naive_mape, int(test_hours.size)


def fit_trend(hourly: DataFrame, holdout_days: int = 7, iterations: int = 2) -> DataFrame:
    """Models per queue fitted on all of `hourly` (queue, hour, rate), with back-tested error.

    Columns (MODEL_SCHEMA): queue, fitted_at (epoch s, the end of the last hour), level (jobs/s
    at fitted_at, deseasonalised), slope_per_hour (jobs/s per hour), seasonal (168 factors,
    mean 1), hours (of history), mape and naive_mape (null without enough history),
    holdout_hours.
    """
    if holdout_days < 1:
        raise ValueError(f"holdout_days must be >= 1, got {holdout_days!r}")

    def fit_group(frame: pd.DataFrame) -> pd.DataFrame:
        hours = frame["hour"].to_numpy(dtype=np.int64)
        rates = frame["rate"].to_numpy(dtype=float)
        fit = fit_series(hours, rates, iterations)
        mape, naive_mape, held = backtest_series(hours, rates, holdout_days, iterations)
        return pd.DataFrame(
            {
                "queue": [frame["queue"].iloc[0]],
                "fitted_at": [float(fit.end_hour * 3600)],
                "level": [fit.level],
                "slope_per_hour": [fit.slope],
                "seasonal": [fit.seasonal.tolist()],
                "hours": [int(hours.size)],
                "mape": [mape],
                "naive_mape": [naive_mape],
                "holdout_hours": [held],
            }
        )

    return (
        hourly.select("queue", "hour", "rate")
        .groupBy("queue")
        .applyInPandas(fit_group, schema=MODEL_SCHEMA)
    )
