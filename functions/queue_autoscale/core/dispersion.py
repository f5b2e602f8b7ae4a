"""The arrivals' index of dispersion as the controller reads it, for each rate window. Pure.

The snapshot measures the variance of the per-second arrival counts over their mean, over the
long window W and over the short one w (core/counters.py). A measured index is noise plus any
move of the rate within its window; these functions read the noise, a wider one as measured
(the cautious side) and a stream smoother than Poisson only beyond its sampling error
(docs/decision.md section 1).
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Sequence
from functools import cache
from operator import attrgetter
from typing import NamedTuple

from queue_autoscale.core.models import QueueSnapshot, Sample
from queue_autoscale.core.queueing import walk_quantile

POISSON = 1.0
"""Poisson arrivals' index of dispersion (variance / mean of per-second counts): the model the
arrivals are read as until the window shows otherwise (`long_window_dispersion`)."""
_AT = attrgetter("at")
_ROOT2 = math.sqrt(2.0)


def long_window_dispersion(snapshot: QueueSnapshot, percentile: float) -> float:
    """The arrivals' index of dispersion around their own level: Poisson's 1 unless the window
    shows otherwise.

    The snapshot's is the variance of the per-second counts over the long window W over their
    mean. When the rate moved within the window (a step, a burst's end), part of that variance
    is the move, not noise: with the short window's rate over its last w seconds and the rest's
    rate over the W - w before, the law of total variance takes out the between part,
    (w / W) (short - long)^2 + ((W - w) / W) (rest - long)^2. A queue watched for less than w
    (`snapshot.watched_view`) has both windows over the same seconds, so there is no rest to
    split a move from: there the index is read from successive per-second differences
    (`QueueSnapshot.arrival_dispersion_steps`), to which a step adds one term. Six seconds into
    a fivefold step, after 40 s of watch, the variance reads about 3.4 where the noise is 1,
    and the backlog's growth test (`drain.growth_arrival_rate`, its line proportional to
    sqrt(D)) stays silent for a tick.

    Above 1 it is read as measured (the cautious side). Below 1, a stream smoother than Poisson
    is assumed only where the window shows it beyond z of the percentile of its sampling error:
    over W seconds of Poisson counts at lambda jobs/s (fourth central moment lambda + 3
    lambda^2), D has standard deviation sqrt((2 + 1 / lambda) / W)."""
    measured = snapshot.arrival_dispersion
    long, short = snapshot.arrival_rate, snapshot.arrival_rate_short
    if measured is None or not math.isfinite(measured):
        return POISSON
    span, recent = snapshot.rate_window_seconds, snapshot.short_window_seconds
    if long is None or not long > 0 or not span > 0:
        return max(measured, POISSON)  # no rate to judge a smoother stream's evidence by
    within = measured
    steps = snapshot.arrival_dispersion_steps
    if not span > recent and steps is not None and math.isfinite(steps):
        return read_steps(steps, long, span, percentile)  # both windows hold one span
    if short is not None and span > recent:
        rest = (span * long - recent * short) / (span - recent)
        between = (recent * (short - long) ** 2 + (span - recent) * (rest - long) ** 2) / span
        within = (measured * long - between) / long
    return read_dispersion(within, long, span, percentile)


def read_dispersion(measured: float, rate: float, span: float, percentile: float) -> float:
    """An index of dispersion measured over `span` seconds of counts at `rate` jobs/s > 0, as
    the controller reads it: as measured at or above Poisson's 1; below 1 only beyond z of the
    percentile of its sampling error sqrt((2 + 1 / lambda) / span) (`long_window_dispersion`), and
    Poisson's 1 otherwise."""
    if measured >= POISSON:
        return measured
    error = math.sqrt((2.0 + 1.0 / rate) / span)
    smoother = measured < POISSON - walk_quantile(percentile) * error
    return max(measured, 0.0) if smoother else POISSON


def read_steps(measured: float, rate: float, span: float, percentile: float) -> float:
    """The successive differences' index (`QueueSnapshot.arrival_dispersion_steps`) over `span`
    seconds of counts at `rate` jobs/s > 0, as the controller reads it: Poisson's 1 unless it
    departs from 1 by more than z of the percentile of its sampling error, either way. Over n
    seconds of Poisson counts the estimate has standard deviation sqrt((3 + 1 / lambda) / n),
    wider than the variance's, and it is read only over the first seconds of a watch: at 10 s
    of 20 jobs/s the error is 0.55, and a reading of 1.28 taken as measured ordered 30 workers
    where 27 meet p99.9."""
    error = math.sqrt((3.0 + 1.0 / rate) / span) if span > 0 else math.inf
    if abs(measured - POISSON) <= walk_quantile(percentile) * error:
        return POISSON
    return max(measured, 0.0)


def short_window_dispersion(snapshot: QueueSnapshot, dispersion: float, percentile: float) -> float:
    """The short rate's index of dispersion: the smaller of its own counts' (read as
    `read_dispersion` reads any) and the long window's `dispersion` (`long_window_dispersion`),
    which is also the one where the short window's is unknown. Both measure the same noise, and
    each is inflated by a different move: the long window's by a burst earlier in it (its
    two-part correction takes out a move at the windows' boundary only), which would hide the
    fall after the burst; the short window's by a step inside its own w seconds, which would
    hide the rise at a burst's onset."""
    measured, short = snapshot.arrival_dispersion_short, snapshot.arrival_rate_short
    recent = snapshot.short_window_seconds
    if measured is None or not math.isfinite(measured) or short is None or not short > 0:
        return dispersion
    if not recent > 0:
        return dispersion
    own = read_dispersion(measured, short, recent, percentile)
    return own if own < dispersion else dispersion


def effective_sla(sla_seconds: float, dispersion: float) -> float:
    """The SLA the Poisson model is asked about so its tail matches arrivals of `dispersion` D:
    S x 2 / (1 + D), seconds."""
    return sla_seconds * 2.0 / (1.0 + dispersion)


class HorizonReading(NamedTuple):
    """The arrivals' dispersion at the short window's scale, as the controller's own rate
    readings fell short of what came (`horizon_reading`)."""

    mean: float
    """The exponentially weighted mean of the ticks' readings (`horizon_error`), an index of
    dispersion (0 before any reading)."""
    weight: float
    """The readings' summed weights, sum of beta^k over the k-th newest (0 before any): a count
    of readings while they are few, at most about T / I once the average forgets."""


def horizon_error(
    samples: Sequence[Sample],
    short_rate: float | None,
    now: float,
    short_window: float,
    long_window: float,
    tolerance: float,
) -> float | None:
    """One tick's reading of the arrivals' index of dispersion at the short window's scale w,
    from how far what arrived over the last w seconds exceeded the rate the controller sized on
    w seconds ago: e = w (short - rate then), read as 2 max(e, 0)^2 over its Poisson-scaled
    model variance w (rate then) (1 + w / W) (the w seconds' counts, and the error of a rate
    read over the W before them). Only a shortfall is read: a rate read too high leaves no job
    late. Its mean is the per-second D where the counts are independent and the errors normal
    (half of them read 0, the other half twice a chi-square of one degree); where the rate
    moves over minutes (a web trace's clustered requests) it reads the moves too, which the
    per-second index cannot see. None without a tick within `tolerance` s of w ago, a rate
    then, or a short rate now."""
    if short_rate is None or not math.isfinite(short_rate) or short_rate < 0:
        return None
    if not short_window > 0 or not long_window > 0 or not samples:
        return None
    then = now - short_window
    index = bisect_left(samples, then, key=_AT)
    best = None
    for candidate in samples[max(0, index - 1) : index + 1]:
        gap = abs(candidate.at - then)
        if gap <= tolerance and (best is None or gap < abs(best.at - then)):
            best = candidate
    if best is None or not best.arrival_rate > 0 or not math.isfinite(best.arrival_rate):
        return None
    expected = short_window * best.arrival_rate
    short = short_window * short_rate - expected
    if not short > 0:
        return 0.0
    return 2.0 * short * short / (expected * (1.0 + short_window / long_window))


@cache  # a pure function of the percentile, asked for every tick
def _clipped_mean(z: float) -> float:
    """E[min(X, z^2)] for X chi-square of one degree: the mean of a normal error's reading
    (`horizon_error`) clipped at z standard deviations, P(chi2_3 <= z^2) + z^2 P(chi2_1 > z^2)."""
    half = z / _ROOT2
    below = math.erf(half) - z * math.sqrt(2.0 / math.pi) * math.exp(-z * z / 2.0)
    return below + z * z * math.erfc(half)


def horizon_reading(
    previous: HorizonReading,
    reading: float | None,
    seconds: float,
    window: float,
    dispersion: float,
    percentile: float,
) -> HorizonReading:
    """`previous` with this tick's `reading` added: an exponentially weighted mean that forgets
    over `window` T seconds (the SLA loop's, `knobs.loop_window_seconds`: the span the budget
    is judged over), `seconds` since the last tick. The weights are summed, not assumed, so its
    first readings are their plain mean; with an infinite T it stays that mean.

    A reading of a shortfall past z of the percentile standard deviations of the spread read so
    far (the higher of the mean and the per-second `dispersion`) is clipped there, and the
    clipped mean is scaled back by what the clip takes from normal errors (`_clipped_mean`): a
    shortfall past the plan's own quantile is a burst's onset, which the onset tests read; one
    burst must not widen every later tick's spread. Unchanged without a reading."""
    if reading is None:
        return previous
    z = walk_quantile(percentile)
    if z > 0:
        bound = 2.0 * z * z * max(previous.mean, dispersion)  # a shortfall of z sd
        reading = (reading if reading < bound else bound) / _clipped_mean(z)
    keep = math.exp(-seconds / window) if seconds > 0 and window > 0 else 1.0
    weight = previous.weight * keep + 1.0
    return HorizonReading(previous.mean + (reading - previous.mean) / weight, weight)


def read_horizon(
    dispersion: float,
    horizon: HorizonReading,
    short_window: float,
    span: float,
    interval: float,
    window: float,
    memory: float = math.inf,
) -> float:
    """The index of dispersion the sizing reads over `span` seconds, the time no order can
    correct (`Knobs.uncorrected_seconds`): the per-second `dispersion` D_1, raised towards the
    horizon's D_w (`horizon_reading`, read at the short window's scale w, its weighted mean)
    where that is higher. Between the two scales the index grows as a power of the scale (the
    counts of a self-similar stream, D_m = D_1 m^(2H - 1)), so over the span it is
    D_1 (D_w / D_1)^(ln span / ln w), capped at D_w: a span of a second reads D_1, one of w
    reads D_w. A wider spread is read as measured, as the per-second index is
    (`read_dispersion`: the cautious side), once it is measured over as long as that index:
    its readings, one an `interval` I, span the long rate `window` W, or the readings'
    `memory` T (`horizon_reading`) where that is shorter (weight x I >= min(W, T); the weight
    counts the readings while they are few, and tends to 1 / (1 - exp(-I / T)), at least T / I).
    A horizon no wider than D_1, or read over less, leaves D_1: a few readings' mean is no
    measurement (at a cold start on a steady 20 jobs/s, three readings' mean of 2.5 times D_1
    kept 26 workers where 22 serve 10 s p99.9)."""
    if not horizon.weight * interval >= min(window, memory) or not horizon.mean > dispersion:
        return dispersion
    if not span > 1.0 or not short_window > 1.0 or not dispersion > 0:
        return dispersion
    reach = math.log(span) / math.log(short_window)
    return dispersion * math.pow(horizon.mean / dispersion, reach if reach < 1.0 else 1.0)
