"""The decision record a peer policy reports, so `explain --policy` can show peers beside ours."""

from __future__ import annotations

from queue_autoscale.core import (
    Decision,
    QueueSettings,
    QueueSnapshot,
    Terms,
    Winner,
    measure,
)
from queue_autoscale.core.decision import action_for


def mean_job_seconds(snapshot: QueueSnapshot, settings: QueueSettings) -> float:
    """The job time a peer is tuned with: measured when known, else the configured prior (s)."""
    return measure(snapshot, settings).mean_job_seconds


def peer_decision(
    snapshot: QueueSnapshot,
    settings: QueueSettings,
    policy: str,
    target: int,
    winner: Winner,
    reason: str,
) -> Decision:
    """A Decision for a peer's target; rho, urgency and backlog measured by the core's
    `measure`, as for ours."""
    m = measure(snapshot, settings)
    return Decision(
        queue=snapshot.queue,
        at=snapshot.taken_at,
        policy=policy,
        current=m.current,
        target=target,
        action=action_for(m.current, target),
        terms=Terms(steady=target, trend=0, drain=0),
        raw_target=target,
        winner=winner,
        reason=reason,
        constraints=(),
        urgency=m.urgency,
        sla_usage=m.sla_usage,
        load_ratio=m.load_ratio,
        overloading=m.overloading,
        overloaded=m.overloaded,
        backlog_per_instance=m.backlog_per_instance,
        predicted_pickup_seconds=None,
        predicted_breach_seconds=None,
        arrival_rate=m.arrival_rate,
        forecast_rate=m.arrival_rate,
        service_rate=m.service_rate,
        oldest_age_seconds=m.oldest_age_seconds,
        oldest_age_source=snapshot.oldest_age_source,
        inputs_ok=snapshot.visible is not None and snapshot.running is not None,
        sla_seconds=settings.sla_seconds,
        percentile=settings.percentile,
    )


def clamp(value: int, settings: QueueSettings) -> int:
    """Within the queue's min/max workers."""
    return max(settings.min_workers, min(settings.max_workers, value))
