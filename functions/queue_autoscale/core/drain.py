"""SLA backlog drain (seeds 000 and 001, with arrivals during the remaining time counted)."""

from __future__ import annotations

import math

WARNING_USAGE = 0.8
"""SLA usage at which the safety margin starts (seed 000's 80% warning threshold)."""


def safety_margin(sla_usage: float) -> float:
    """1 + (usage - 0.8) * 2 from 80% SLA usage (1.2 at 90%), capped where usage reaches 1."""
    usage = min(max(sla_usage, WARNING_USAGE), 1.0)
    return 1.0 + (usage - WARNING_USAGE) * 2.0


def drain_workers(
    backlog: int,
    oldest_age_seconds: float,
    arrival_rate: float,
    service_rate: float,
    sla_seconds: float,
    recovery_horizon_seconds: float,
    lead_seconds: float = 0.0,
    running: int = 0,
) -> int:
    """Workers needed to start every waiting job, and those arriving meanwhile, in time.

    A worker ordered now takes jobs only after the provisioning lead L, while the running fleet
    keeps serving: by L + T the fleet must have started the backlog plus lambda (L + T) jobs,
    running * mu * L of which the current workers manage during L (the backlog when the new
    workers land is never below zero). T is the time left after
    the lead, SLA - age - L, never less than the recovery horizon: past (or near) the breach,
    the backlog is cleared within that horizon once the new workers land. T shrinks as the
    oldest job ages, so the term never falls as age or backlog grow. From 80% SLA usage the
    seed's safety margin applies. With L = 0 this is DESIGN's (backlog + lambda T) / (mu T).
    """
    if backlog <= 0:
        return 0
    usage = oldest_age_seconds / sla_seconds
    seconds = max(sla_seconds - oldest_age_seconds - lead_seconds, recovery_horizon_seconds)
    at_landing = max(0.0, backlog + (arrival_rate - running * service_rate) * lead_seconds)
    workers = (at_landing + arrival_rate * seconds) / (service_rate * seconds)
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
