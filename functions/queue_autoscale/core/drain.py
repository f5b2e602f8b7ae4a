"""SLA backlog drain (seeds 000 and 001, with arrivals during the remaining time counted)."""

from __future__ import annotations

import math

WARNING_USAGE = 0.8
"""SLA usage at which the safety margin starts (seed 000's 80% warning threshold)."""


def safety_margin(sla_usage: float) -> float:
    """1 + (usage - 0.8) * 2 from 80% SLA usage (1.2 at 90%), capped where usage reaches 1."""
    usage = min(max(sla_usage, WARNING_USAGE), 1.0)
    return 1.0 + (usage - WARNING_USAGE) * 2.0


def workers_to_clear(
    backlog: float, arrival_rate: float, service_rate: float, seconds: float
) -> float:
    """Workers that start `backlog` jobs plus those arriving meanwhile within `seconds`.

    (backlog + lambda * T) / (mu * T); fractional, the caller rounds up.
    """
    if backlog <= 0:
        return 0.0
    return (backlog + arrival_rate * seconds) / (service_rate * seconds)


def drain_workers(
    backlog: int,
    oldest_age_seconds: float,
    arrival_rate: float,
    service_rate: float,
    sla_seconds: float,
    recovery_horizon_seconds: float,
) -> int:
    """Workers needed to start every waiting job before the oldest breaches the SLA.

    Time remaining T = SLA - oldest age, never less than the recovery horizon: at or past breach
    the backlog is cleared within that horizon. The floor keeps the term monotone (it never
    falls as the oldest job ages) where the seed jumps from huge to max at breach. From 80% SLA
    usage the seed's safety margin applies.
    """
    if backlog <= 0:
        return 0
    usage = oldest_age_seconds / sla_seconds
    remaining = sla_seconds - oldest_age_seconds
    seconds = max(remaining, recovery_horizon_seconds)
    workers = workers_to_clear(backlog, arrival_rate, service_rate, seconds)
    if usage >= WARNING_USAGE:
        workers *= safety_margin(usage)
    return math.ceil(workers - 1e-9)


def predicted_pickup_seconds(
    visible: int, running: int, service_rate: float, arrival_rate: float
) -> float | None:
    """Expected wait of a job enqueued now: the running fleet must start everything ahead of it.

    visible / (c * mu) seconds; None when nothing runs and work is waiting or arriving.
    """
    if running <= 0:
        return None if (visible > 0 or arrival_rate > 0) else 0.0
    return visible / (running * service_rate)


def predicted_breach_seconds(
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
