"""KEDA's aws-sqs-queue scaler driving a Kubernetes HorizontalPodAutoscaler, as documented.

Sources: KEDA scaler docs (keda.sh/docs/latest/scalers/aws-sqs/) and code
(pkg/scalers/aws_sqs_queue_scaler.go): the metric is ApproximateNumberOfMessages +
ApproximateNumberOfMessagesNotVisible (scaleOnInFlight defaults to true), the target per pod is
`queueLength`. Kubernetes HPA (autoscaling/v2) with default behaviour: a sync every 15 s
(--horizontal-pod-autoscaler-sync-period), each sync reading the scaler afresh (KEDA's
useCachedMetrics defaults to false; its 30 s pollingInterval drives only activation 0 <-> 1);
for an AverageValue external metric desired = ceil(total / queueLength) unless
|total / (queueLength * replicas) - 1| <= 0.1 (tolerance); scale-up at most
max(+100 %, +4 pods) per 15 s; scale-down to the highest recommendation of the last 300 s.

On scale-in Kubernetes picks the pods to delete without asking whether they are busy, sends
SIGTERM and kills them after the grace period; a worker loop without a SIGTERM drain loses the
job it holds. `NAME_NO_DRAIN` is that case: the same decisions, with the engine stopping
workers at random and interrupting their jobs (`scale_in = "kill"`).

Tuning as the docs tell users: "if one pod can handle 10 messages, set queueLength to 10" - a
pod handles SLA * concurrency / job time messages within the SLA (AWS's acceptable backlog).
"""

from __future__ import annotations

import math

from queue_autoscale.core import Decision, QueueSettings, QueueSnapshot, Winner
from queue_autoscale.sim.engine import FleetView
from queue_autoscale.sim.peers._record import clamp, mean_job_seconds, peer_decision
from queue_autoscale.sim.workload import SCALE_IN_DRAIN, SCALE_IN_KILL

NAME = "keda"
NAME_NO_DRAIN = "keda-no-drain"
"""KEDA whose pods are stopped at random on scale-in with no protection and no drain."""
SYNC_SECONDS = 15
"""HPA controller sync period (kube-controller-manager default)."""
TOLERANCE = 0.1
SCALE_UP_PERCENT = 100
SCALE_UP_PODS = 4
SCALE_UP_PERIOD_SECONDS = 15
SCALE_DOWN_STABILIZATION_SECONDS = 300
ACTIVATION_QUEUE_LENGTH = 0


def queue_length(settings: QueueSettings, job_seconds: float | None = None) -> int:
    """queueLength = messages one pod can take within the SLA (at least 1)."""
    seconds = job_seconds if job_seconds else settings.expected_job_seconds
    return max(1, math.floor(settings.sla_seconds * settings.worker_concurrency / seconds + 1e-9))


def replica_count(total_messages: int, replicas: int, target_per_pod: int) -> int:
    """HPA's replica calculation for an AverageValue external metric (with the 10 % tolerance).

    `replicas` is the scale target's status replica count; 0 replicas is KEDA's activation case.
    """
    if replicas <= 0:
        if total_messages > ACTIVATION_QUEUE_LENGTH:
            return math.ceil(total_messages / target_per_pod)
        return 0
    ratio = total_messages / (target_per_pod * replicas)
    if abs(1.0 - ratio) <= TOLERANCE:
        return replicas
    return math.ceil(total_messages / target_per_pod)


class KedaPolicy:
    """KEDA + HPA in the simulator; state: recommendations and scale-up events."""

    interval_seconds = SYNC_SECONDS

    def __init__(
        self,
        settings: QueueSettings,
        drain: bool = True,
        queue_length_override: int | None = None,
    ) -> None:
        """`queue_length_override`: a queueLength other than the documented one (a sweep)."""
        self.name = NAME if drain else NAME_NO_DRAIN
        self.scale_in = SCALE_IN_DRAIN if drain else SCALE_IN_KILL
        """How the engine stops workers on scale-in (see sim.engine)."""
        self.settings = settings
        self.target_per_pod = queue_length_override or queue_length(settings)
        self._recommendations: list[tuple[float, int]] = []
        self._scale_ups: list[tuple[float, int]] = []

    def decide(self, view: FleetView) -> int:
        """One HPA sync."""
        now = view.now
        total = view.visible + view.in_flight
        current = view.desired
        status = view.running + view.pending
        recommendation = replica_count(total, status, self.target_per_pod)
        return self.stabilize(now, current, recommendation)

    def stabilize(self, now: float, current: int, recommendation: int) -> int:
        """HPA's behaviour: scale-down stabilization, scale-up rate limit, min/max."""
        window = now - SCALE_DOWN_STABILIZATION_SECONDS
        kept = [(at, rec) for at, rec in self._recommendations if at > window]
        kept.append((now, recommendation))
        self._recommendations = kept
        down = max(rec for _, rec in kept)
        result = max(current, recommendation)  # no scale-up stabilization by default
        result = min(result, down)
        cutoff = now - SCALE_UP_PERIOD_SECONDS
        self._scale_ups = [(at, n) for at, n in self._scale_ups if at > cutoff]
        period_start = current - sum(n for _, n in self._scale_ups)
        limit = max(
            period_start + math.ceil(period_start * SCALE_UP_PERCENT / 100),
            period_start + SCALE_UP_PODS,
        )
        result = clamp(min(result, limit), self.settings)
        if result > current:
            self._scale_ups.append((now, result - current))
        return result


def explain(snapshot: QueueSnapshot, settings: QueueSettings) -> Decision:
    """What KEDA + HPA would set once a sync reads this snapshot (no stabilization history)."""
    job = mean_job_seconds(snapshot, settings)
    per_pod = queue_length(settings, job)
    total = max(0, snapshot.visible or 0) + max(0, snapshot.in_flight or 0)
    replicas = max(0, snapshot.running or 0) + max(0, snapshot.pending or 0)
    target = clamp(replica_count(total, replicas, per_pod), settings)
    reason = (
        f"KEDA aws-sqs-queue: ({snapshot.visible or 0} visible + {snapshot.in_flight or 0} in "
        f"flight) / queueLength {per_pod} (= SLA {settings.sla_seconds:g} s x "
        f"{settings.worker_concurrency} / {job:g} s job) -> {target} pods "
        f"(HPA tolerance {TOLERANCE:.0%})"
    )
    return peer_decision(snapshot, settings, NAME, target, Winner.BACKLOG, reason)
