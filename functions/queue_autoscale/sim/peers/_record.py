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
from queue_autoscale.core.decision import decision_record


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
    """A Decision for a peer's target, through the core's one `decision_record`: rho, urgency
    and backlog measured by the core's `measure`, as for ours; the peer's own `reason` as is;
    no prediction (a peer makes none)."""
    m = measure(snapshot, settings)
    return decision_record(
        snapshot=snapshot,
        settings=settings,
        now=snapshot.taken_at,
        measures=m,
        policy=policy,
        target=target,
        terms=Terms(steady=target, trend=0, drain=0),
        raw=target,
        winner=winner,
        reason=reason,
        forecast=m.arrival_rate,
        inputs_ok=snapshot.visible is not None and snapshot.running is not None,
        predicts=False,
    )


def clamp(value: int, settings: QueueSettings) -> int:
    """Within the queue's min/max workers."""
    return max(settings.min_workers, min(settings.max_workers, value))
