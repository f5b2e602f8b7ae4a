"""The arrivals' index of dispersion as the controller reads it, for each rate window. Pure.

The snapshot measures the variance of the per-second arrival counts over their mean, over the
long window W and over the short one w (core/counters.py). A measured index is noise plus any
move of the rate within its window; these functions read the noise, and a stream smoother than
Poisson only beyond its sampling error (docs/decision.md section 1).
"""

from __future__ import annotations

import math

from queue_autoscale.core.models import QueueSnapshot
from queue_autoscale.core.queueing import walk_quantile

POISSON = 1.0
"""Poisson arrivals' index of dispersion (variance / mean of per-second counts): the model the
arrivals are read as until the window shows otherwise (`long_window_dispersion`)."""


def long_window_dispersion(snapshot: QueueSnapshot, percentile: float) -> float:
    """The arrivals' index of dispersion around their own level: Poisson's 1 unless the window
    shows otherwise.

    The snapshot's is the variance of the per-second counts over the long window W over their
    mean. When the rate moved within the window (a step, a burst's end), part of that variance
    is the move, not noise: with the short window's rate over its last w seconds and the rest's
    rate over the W - w before, the law of total variance takes out the between part,
    (w / W) (short - long)^2 + ((W - w) / W) (rest - long)^2.

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
