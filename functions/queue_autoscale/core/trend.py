"""Arrival-rate forecasts: a least-squares line over recent samples, blended with a fitted model."""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Sequence

from queue_autoscale.core.models import (
    RATE_WINDOW_SECONDS,
    SHORT_WINDOW_SECONDS,
    QueueSettings,
    Sample,
    TrendModel,
)

_SECONDS_PER_HOUR = 3600.0
_EPOCH_MONDAY_OFFSET_HOURS = 72  # 1970-01-01 was a Thursday: hour 0 of the epoch is Thu 00:00


def hour_of_week(epoch_seconds: float) -> int:
    """Hour of the week in UTC, 0 = Monday 00:00 .. 167 = Sunday 23:00."""
    hours = int(epoch_seconds // _SECONDS_PER_HOUR)
    return (hours + _EPOCH_MONDAY_OFFSET_HOURS) % 168


def linear_fit(points: Sequence[tuple[float, float]]) -> tuple[float, float] | None:
    """Least-squares (intercept at x=0, slope) of y on x; None with < 2 distinct x."""
    sx = sy = sxx = sxy = 0.0
    for x, y in points:
        sx += x
        sy += y
        sxx += x * x
        sxy += x * y
    return _fit(len(points), sx, sy, sxx, sxy)


def _fit(n: int, sx: float, sy: float, sxx: float, sxy: float) -> tuple[float, float] | None:
    """(intercept, slope) from least-squares running sums; None with < 2 distinct x."""
    if n < 2:
        return None
    var = sxx - sx * sx / n
    if var <= 1e-12 * max(1.0, sxx):
        return None
    slope = (sxy - sx * sy / n) / var
    return (sy - slope * sx) / n, slope


def window_points(
    samples: Sequence[Sample], current_rate: float, now: float, window_seconds: float
) -> list[tuple[float, float]]:
    """(sample time minus now, seconds, <= 0; rate, jobs/s) of the samples within the window,
    oldest first, and the point now, (0, `current_rate`)."""
    first = _window_start(samples, now, window_seconds)
    points = [(s.at - now, s.arrival_rate) for s in samples[first:]]
    points.append((0.0, current_rate))
    return points


def _window_start(samples: Sequence[Sample], now: float, window_seconds: float) -> int:
    """The index of the first sample within the window (now - at <= window, s): samples are
    oldest first, so the window's are a suffix, found by bisection."""
    return bisect_left(samples, -window_seconds, key=lambda s: s.at - now)


def linear_forecast(
    samples: Sequence[Sample],
    current_rate: float,
    now: float,
    horizon_seconds: float,
    window_seconds: float,
) -> float:
    """lambda at now + horizon from a line fitted to the samples in the window and the current
    rate (jobs/s, never below 0). With too little history the current rate is the forecast."""
    points = window_points(samples, current_rate, now, window_seconds)
    if len(points) < 3:
        return current_rate
    fit = linear_fit(points)
    if fit is None:
        return current_rate
    intercept, slope = fit
    return max(0.0, intercept + slope * horizon_seconds)


def _window_sums(
    samples: Sequence[Sample], now: float, window_seconds: float, y0: float
) -> tuple[int, float, float, float, float, float]:
    """Running sums for a least-squares line over the samples within the window and the point
    now: (points counting the point now, sum x, y0 + sum y, sum x^2, sum xy, the earliest x),
    x the sample time minus now (s, <= 0), y its rate (jobs/s); the earliest x is 0 with no
    sample in the window (`_window_start`); no point list (this runs every tick). `y0` is
    where the sum of y starts: the callers keep the order their float additions had."""
    first = _window_start(samples, now, window_seconds)
    n, sx, sy, sxx, sxy = 1 + len(samples) - first, 0.0, y0, 0.0, 0.0
    earliest = samples[first].at - now if first < len(samples) else 0.0
    for sample in samples[first:]:
        x = sample.at - now
        y = sample.arrival_rate
        sx += x
        sy += y
        sxx += x * x
        sxy += x * y
    return n, sx, sy, sxx, sxy, earliest


def window_fit(
    samples: Sequence[Sample], current_rate: float, now: float, window_seconds: float
) -> tuple[tuple[float, float] | None, float]:
    """`linear_fit` of `window_points` without the list: the least-squares (intercept, slope)
    of the samples within the window and the point now, (0, `current_rate`) added last (None
    with fewer than 3 points or 2 distinct x), and the span they cover, s (the earliest
    sample's age, 0 with none). The point now adds 0 to the x sums, so they are the window's
    own (`_window_sums`; `current_rate` finite)."""
    n, sx, sy, sxx, sxy, earliest = _window_sums(samples, now, window_seconds, 0.0)
    fit = _fit(n, sx, sy + current_rate, sxx, sxy) if n >= 3 else None
    return fit, -earliest


def flat_slope_sd(rate: float, dispersion: float, span: float) -> float:
    """The standard error of a least-squares slope fitted to a flat rate, jobs/s per s:
    arrivals of intensity `rate` x `dispersion` (jobs/s) over `span` seconds give a slope of
    variance 12 lambda D / L^3."""
    return math.sqrt(12.0 * rate * dispersion / span**3)


def persistent_forecast(
    samples: Sequence[Sample],
    current_rate: float,
    now: float,
    horizon_seconds: float,
    window_seconds: float = RATE_WINDOW_SECONDS,
    recent_seconds: float = SHORT_WINDOW_SECONDS,
) -> float:
    """lambda at now + horizon: the current rate plus a slope that persists, jobs/s (>= 0).

    The slope is fitted over the ticks of the long rate window W and again over those of the
    short one w; it counts only when both agree in sign, and then at the smaller magnitude. A
    windowed rate turns a step into a ramp as long as its window; a line over the longer window
    goes on extrapolating that ramp for minutes after the rate has levelled, the recent fit
    sees the level at once.
    """
    # local running sums, no point lists (this runs every tick); the point now is (0, rate).
    # Samples are oldest first: the recent ones, and the window's, are suffixes.
    rn, rsx, rsy, rsxx, rsxy = 1, 0.0, current_rate, 0.0, 0.0
    for sample in reversed(samples):
        x = sample.at - now
        if x < -recent_seconds:
            break
        y = sample.arrival_rate
        rn += 1
        rsx += x
        rsy += y
        rsxx += x * x
        rsxy += x * y
    recent = _fit(rn, rsx, rsy, rsxx, rsxy) if rn >= 3 else None
    if recent is None:
        return current_rate
    n, sx, sy, sxx, sxy, _ = _window_sums(samples, now, window_seconds, current_rate)
    whole = _fit(n, sx, sy, sxx, sxy)
    if whole is None or whole[1] * recent[1] <= 0:
        return current_rate
    slope = min(whole[1], recent[1], key=abs)
    return max(0.0, current_rate + slope * horizon_seconds)


def model_rate(model: TrendModel, at: float) -> float:
    """The fitted model's arrival rate at epoch second `at`, jobs/s."""
    hours = (at - model.fitted_at) / _SECONDS_PER_HOUR
    level = model.level + model.slope_per_hour * hours
    factor = model.seasonal[hour_of_week(at)] if len(model.seasonal) == 168 else 1.0
    return max(0.0, level * factor)


def model_weight(model: TrendModel) -> float:
    """How much the seasonal model counts in the blend, 0..1: its skill.

    The skill is 1 - MASE / naive MASE from `trend_fit`'s back-test on held-out weeks: the share
    of repeating last week's error the model removed. 0 for a model no better than repeating
    last week (or without a back-test), 0.5 for one with half its error. A model that removed
    little error counts little, so no threshold is needed; and the blend never lowers the live
    forecast, so no cap is needed to keep the live line reacting to a rise.
    """
    if model.mase is None or model.naive_mase is None or model.naive_mase <= 0:
        return 0.0
    return max(0.0, 1.0 - model.mase / model.naive_mase)


def linear_forecast_rate(
    samples: Sequence[Sample],
    current_rate: float,
    now: float,
    settings: QueueSettings,
    model: TrendModel | None = None,
) -> float:
    """Seed 001's forecast at now + the settings' horizon, jobs/s: the least-squares line over
    the ticks of the long rate window (`linear_forecast`), blended with the seasonal model."""
    horizon = settings.forecast_horizon_seconds
    live = linear_forecast(samples, current_rate, now, horizon, RATE_WINDOW_SECONDS)
    return _blend(live, model, now + horizon)


def persistent_forecast_rate(
    samples: Sequence[Sample],
    current_rate: float,
    now: float,
    settings: QueueSettings,
    model: TrendModel | None = None,
) -> float:
    """Our hybrid's forecast at now + the settings' horizon, jobs/s: the current rate plus only
    a slope that persists (`persistent_forecast`), blended with the seasonal model."""
    horizon = settings.forecast_horizon_seconds
    live = persistent_forecast(samples, current_rate, now, horizon)
    return _blend(live, model, now + horizon)


def _blend(live: float, model: TrendModel | None, at: float) -> float:
    """The live forecast weighted against the seasonal model's rate at epoch second `at` by the
    model's back-tested skill (`model_weight`: 0 for a model no better than naive), jobs/s;
    the model only ever raises it."""
    if model is None:
        return live
    weight = model_weight(model)
    if weight <= 0:
        return live
    # the model may raise the forecast, never lower it below the live one
    return max(live, (1 - weight) * live + weight * model_rate(model, at))
