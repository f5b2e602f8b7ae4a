"""SLA backlog drain (seeds 000 and 001, with arrivals during the remaining time counted)."""

from __future__ import annotations

import math

WARNING_USAGE = 0.8
"""SLA usage at which the safety margin starts (seed 000's 80% warning threshold)."""


def safety_margin(sla_usage: float) -> float:
    """1 + (usage - 0.8) * 2 from 80% SLA usage (1.2 at 90%), capped where usage reaches 1."""
    usage = min(max(sla_usage, WARNING_USAGE), 1.0)
    return 1.0 + (usage - WARNING_USAGE) * 2.0


def growth_arrival_rate(
    *,
    visible: int,
    previous_visible: int,
    seconds: float,
    running: int,
    service_rate: float,
    sigmas: float,
    dispersion: float = 1.0,
) -> float | None:
    """Arrival rate implied by a backlog that grew between two ticks, jobs/s, or None.

    While jobs wait, every running worker is busy, so arrivals = growth + running * mu. The
    windowed rates lag a step by most of their window; this sees it within one interval. Only
    growth beyond `sigmas` standard deviations of the noise of arrivals and departures in the
    interval counts, so a steady queue's jitter never reads as a surge. The arrivals' variance
    is `dispersion` (D, their index of dispersion, variance / mean of the per-second counts)
    times Poisson's: traffic that comes in batches (the NASA day x10 arrives in tens) moves the
    backlog by sqrt(D) times as much. D is taken as the caller read it: predictive reads it
    below 1 only where the window shows a smoother stream beyond its sampling error
    (`dispersion.long_window_dispersion`), so it is not floored again here.
    """
    if seconds <= 0 or visible <= max(previous_visible, 0):
        return None
    served = running * service_rate
    growth = visible - previous_visible
    arrived = served + growth / seconds
    if growth <= sigmas * math.sqrt((dispersion * arrived + served) * seconds):
        return None
    return arrived


def predicted_pickup_seconds(
    *, visible: int, running: int, service_rate: float, arrival_rate: float
) -> float | None:
    """Expected wait of a job enqueued now: the running fleet must start everything ahead of it.

    visible / (c * mu) seconds; None when nothing runs and work is waiting or arriving.
    """
    if running <= 0:
        return None if (visible > 0 or arrival_rate > 0) else 0.0
    return visible / (running * service_rate)


def predicted_breach_seconds(
    *,
    visible: int,
    oldest_age_seconds: float,
    running: int,
    service_rate: float,
    arrival_rate: float,
    sla_seconds: float,
) -> float | None:
    """Seconds until the SLA breaches at the current fleet, or None if the backlog clears first.

    The seed used an observed drain rate and gave up when the backlog grew; here the net drain
    is capacity minus arrivals, and a growing backlog predicts the breach at T = SLA - age.
    """
    if visible <= 0:
        return None
    remaining = max(0.0, sla_seconds - oldest_age_seconds)
    net_drain = running * service_rate - arrival_rate
    if net_drain > 0 and visible / net_drain < remaining:
        return None
    return remaining
