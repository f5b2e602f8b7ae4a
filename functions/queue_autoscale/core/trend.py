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
from queue_autoscale.core.queueing import walk_quantile

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


def persistent_forecast(  # noqa: PLR0913 - the windows, the step test and the ticks' spacing
    samples: Sequence[Sample],
    current_rate: float,
    now: float,
    horizon_seconds: float,
    window_seconds: float = RATE_WINDOW_SECONDS,
    recent_seconds: float = SHORT_WINDOW_SECONDS,
    noise: float = 0.0,
    short_now: float | None = None,
    interval_seconds: float = 0.0,
) -> float:
    """lambda at now + horizon: the current rate plus a slope that persists, jobs/s (>= 0).

    The slope is fitted over the ticks of the long rate window W and again over those of the
    short one w; it counts only when both agree in sign, and then at the smaller magnitude. A
    windowed rate turns a step into a ramp as long as its window; a line over the longer window
    goes on extrapolating that ramp for minutes after the rate has levelled, the recent fit
    sees the level at once. Where the short window's rates (`short_now` now, the samples'
    `short_rate`) are a step it smeared (`step_onset`, `noise` the test's z sqrt(D)), the step
    is a change of level, not of slope: the slope is the one before its onset, counted the same
    way (agreeing in sign, the smaller). No slope where the ticks within W do not reach back to
    its start (within `interval_seconds`, their spacing): on a cold start, or the first ticks
    after a gap, the counters may have begun within the window, whose rate then fills from 0 and
    reads any load as a ramp (extrapolated over the horizon, a steady 20 jobs/s read past 30
    and ordered 213 workers where 21 serve it, tests/sim/test_cold_start.py).
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
    n, sx, sy, sxx, sxy, earliest = _window_sums(samples, now, window_seconds, current_rate)
    if -earliest < window_seconds - interval_seconds:  # the window's ticks do not cover it
        return current_rate
    whole = _fit(n, sx, sy, sxx, sxy)
    if whole is None or whole[1] * recent[1] <= 0:
        return current_rate
    slope = min(whole[1], recent[1], key=abs)
    onset = step_onset(samples, short_now, now, recent_seconds, noise)
    if onset is not None:
        first = _window_start(samples, now, window_seconds)
        points = [(s.at - now, s.arrival_rate) for s in samples[first:] if s.at - now < onset]
        before = linear_fit(points) if len(points) >= 3 else None  # as the fits above
        if before is None or before[1] * slope <= 0:
            return current_rate
        slope = min(slope, before[1], key=abs)
    return max(0.0, current_rate + slope * horizon_seconds)


def step_span_seconds(fill: float = SHORT_WINDOW_SECONDS) -> float:
    """The span of short-window rates the step test reads (`step_onset`), s: a step's fill of
    `fill` seconds and as long again after it, where its level is seen."""
    return 2.0 * fill


def step_onset(
    samples: Sequence[Sample], short_now: float | None, now: float, fill: float, noise: float
) -> float | None:
    """When a step the short window smeared began, s from now (<= 0), or None: the short
    window's rates over its last two spans (`fill` = w seconds each; the samples' `short_rate`
    and `short_now`, jobs/s) fit a smeared step better than a line by more than noise explains.

    A rate over a window of w seconds turns a step of height h at t0 into a ramp from t0 to
    t0 + w and a level after it: b + h clip((t - t0) / w, 0, 1). A rise that persists is a line
    however long it is watched; over two spans of w, a step's ramp and the level after it are
    both seen. The step is fitted with its onset at each sample's time (least squares in b and
    h). Its squared error counts as lower than the line's only past `noise`^2 times one short
    rate's variance D lambda / w (`noise` = z sqrt(D), z the percentile's normal quantile,
    lambda the span's highest rate): the extra freedom of a step also fits the window's own
    noise. Work: O(n^2) in the n samples within the span (2 w / I + 1 at one a tick; at most
    `decision.MAX_SAMPLES`, benchmarks/results/decision_worst_case_predictive.md)."""
    if short_now is None or fill <= 0:
        return None
    xs: list[float] = []
    ys: list[float] = []
    for sample in samples[_window_start(samples, now, step_span_seconds(fill)) :]:
        if sample.short_rate is not None:
            xs.append(sample.at - now)
            ys.append(sample.short_rate)
    xs.append(0.0)
    ys.append(short_now)
    n = len(xs)
    if n < 4:
        return None
    sx, sy = sum(xs), sum(ys)
    sxx = sum(x * x for x in xs) - sx * sx / n
    syy = sum(y * y for y in ys) - sy * sy / n
    if sxx <= 0:
        return None
    sxy = sum(x * y for x, y in zip(xs, ys, strict=True)) - sx * sy / n
    # the line's squared error, less what a step's extra freedom fits of the noise
    best = syy - sxy * sxy / sxx - noise * noise * max(ys) / fill
    onset = None
    for j in range(n - 1):  # the step's onset at each sample; u = 0 at and before it
        t0 = xs[j]
        su = suu = suy = 0.0
        for i in range(j + 1, n):
            v = (xs[i] - t0) / fill if xs[i] - t0 < fill else 1.0  # the window's fill
            su += v
            suu += v * v
            suy += v * ys[i]
        var_u = suu - su * su / n
        if var_u <= 0:
            continue
        cov = suy - su * sy / n
        error = syy - cov * cov / var_u
        if error < best:
            best, onset = error, t0
    return onset


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
    noise: float = 0.0,
    short_now: float | None = None,
) -> float:
    """Our forecast at now + the settings' horizon, jobs/s: the current rate plus only a slope
    that persists (`persistent_forecast`, with the step test's `noise`, the short window's rate
    now and the settings' interval), blended with the seasonal model."""
    horizon = settings.forecast_horizon_seconds
    live = persistent_forecast(
        samples,
        current_rate,
        now,
        horizon,
        RATE_WINDOW_SECONDS,
        SHORT_WINDOW_SECONDS,
        noise,
        short_now,
        settings.evaluation_interval_seconds,
    )
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


def rise_slope(
    samples: Sequence[Sample],
    rate: float,
    dispersion: float,
    settings: QueueSettings,
    now: float,
) -> float:
    """The arrival rate's rise, jobs/s per s, or 0 where there is none to tell from noise.

    The least-squares slope of the samples' rates over the long rate window W and the rate
    now, taken when it exceeds z of a flat rate's slope error sqrt(12 lambda D / W^3) (z the
    percentile's normal quantile; lambda D the arrivals' variance a second) and the slope over
    the short window w is not below it by more than z of that one's error: a rise that went on
    until now, not one that levelled off (a step the rate window smeared into a ramp). The
    short window alone is too short to tell a ramp's sign (on 30 jobs/s its slope error is
    about five times a 0.5 jobs/s-a-minute ramp's slope), so it only vetoes."""
    if not rate > 0:
        return 0.0
    z = walk_quantile(settings.percentile)
    whole, span = window_fit(samples, rate, now, RATE_WINDOW_SECONDS)
    if whole is None or not span > 0:
        return 0.0
    slope = whole[1]
    if not slope > z * flat_slope_sd(rate, dispersion, span):
        return 0.0
    fit, recent = window_fit(samples, rate, now, SHORT_WINDOW_SECONDS)
    if fit is not None and recent > 0:
        error = flat_slope_sd(rate, dispersion, recent)
        if fit[1] < slope - z * error:
            return 0.0
    return slope
