"""A fixed fleet sized for the 99th-percentile arrival rate (what capacity planning does).

Sizing: the 99th percentile of the 1-minute arrival rates of the whole replayed window (the
planner is given the future: an upper bound on what a static fleet can do), turned into workers
with the same Erlang-C rule as our steady term, so the peer is not undersized by a naive
rate * job time.
"""

from __future__ import annotations

import numpy as np

from queue_autoscale.core import Decision, QueueSettings, QueueSnapshot, Winner, workers_for_sla
from queue_autoscale.sim.arrivals import Counts, minute_rates
from queue_autoscale.sim.engine import FleetView
from queue_autoscale.sim.peers._record import clamp, mean_job_seconds, peer_decision
from queue_autoscale.sim.peers.knobs import Knob, count

NAME = "static"
PERCENTILE_RATE = 99.0
KNOBS: dict[str, Knob] = {"size": count("the fixed fleet, workers")}
"""The settings `simulate --policy 'static(...)'` takes, and what each is."""


def p99_rate(counts: Counts) -> float:
    """99th percentile of the per-minute mean arrival rate, jobs/s."""
    return float(np.percentile(minute_rates(counts), PERCENTILE_RATE))


def fleet_size(rate: float, settings: QueueSettings, job_seconds: float | None = None) -> int:
    """Workers for `rate` jobs/s at the SLA percentile."""
    seconds = job_seconds if job_seconds else settings.expected_job_seconds
    needed = workers_for_sla(
        rate, seconds, settings.worker_concurrency, settings.sla_seconds, settings.percentile
    )
    return clamp(needed, settings)


class StaticPolicy:
    """Always the same count."""

    interval_seconds = 60

    def __init__(
        self, settings: QueueSettings, counts: Counts, size: int | None = None, name: str = NAME
    ) -> None:
        """`size`: a fleet size other than the p99-rate one (0..max_workers; a sweep)."""
        self.name = name
        self.rate = p99_rate(counts)
        if size is None:
            self.size = fleet_size(self.rate, settings)
        else:
            self.size = max(0, min(settings.max_workers, size))

    def decide(self, view: FleetView) -> int:
        """The fixed size."""
        return self.size


def explain(snapshot: QueueSnapshot, settings: QueueSettings) -> Decision:
    """The fixed size for the snapshot's arrival rate (the best rate estimate a snapshot has)."""
    job = mean_job_seconds(snapshot, settings)
    lam = max(snapshot.arrival_rate or 0.0, snapshot.arrival_rate_short or 0.0)
    target = fleet_size(lam, settings, job)
    reason = (
        f"static: sized once for {lam:g} jobs/s x {job:g} s at p{settings.percentile * 100:g} "
        f"within {settings.sla_seconds:g} s -> {target} workers"
    )
    return peer_decision(snapshot, settings, NAME, target, Winner.FIXED, reason)
