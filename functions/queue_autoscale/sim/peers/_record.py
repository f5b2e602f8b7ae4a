"""The decision record a peer policy reports, so `explain --policy` can show peers beside ours."""

from __future__ import annotations

from queue_autoscale.core import (
    Action,
    Decision,
    QueueSettings,
    QueueSnapshot,
    Terms,
    load_ratio,
    load_states,
    service_rate,
    urgency_for,
)


def mean_job_seconds(snapshot: QueueSnapshot, settings: QueueSettings) -> float:
    """The job time a peer is tuned with: measured when known, else the configured prior (s)."""
    measured = snapshot.mean_job_seconds
    if measured is not None and measured > 0:
        return measured
    return settings.expected_job_seconds


def peer_decision(
    snapshot: QueueSnapshot,
    settings: QueueSettings,
    policy: str,
    target: int,
    winner: str,
    reason: str,
) -> Decision:
    """A Decision for a peer's target; rho, urgency and backlog measured as for ours."""
    visible = max(0, snapshot.visible or 0)
    running = max(0, snapshot.running or 0)
    current = snapshot.desired if snapshot.desired is not None else running
    lam = max(snapshot.arrival_rate or 0.0, snapshot.arrival_rate_short or 0.0)
    mu = service_rate(mean_job_seconds(snapshot, settings), settings.worker_concurrency)
    rho = load_ratio(lam, running, mu)
    overloading, overloaded = load_states(rho, settings.overloading_threshold)
    age = max(0.0, snapshot.oldest_age_seconds or 0.0)
    action = Action.UP if target > current else Action.DOWN if target < current else Action.HOLD
    return Decision(
        queue=snapshot.queue,
        at=snapshot.taken_at,
        policy=policy,
        current=current,
        target=target,
        action=action,
        terms=Terms(steady=target, trend=0, drain=0),
        raw_target=target,
        winner=winner,
        reason=reason,
        constraints=(),
        urgency=urgency_for(age, settings.sla_seconds),
        sla_usage=age / settings.sla_seconds,
        load_ratio=rho,
        overloading=overloading,
        overloaded=overloaded,
        backlog_per_instance=visible / running if running else float(visible),
        predicted_pickup_seconds=None,
        predicted_breach_seconds=None,
        arrival_rate=lam,
        forecast_rate=lam,
        service_rate=mu,
        oldest_age_seconds=age,
        oldest_age_source=snapshot.oldest_age_source,
        inputs_ok=snapshot.visible is not None and snapshot.running is not None,
    )


def clamp(value: int, settings: QueueSettings) -> int:
    """Within the queue's min/max workers."""
    return max(settings.min_workers, min(settings.max_workers, value))
