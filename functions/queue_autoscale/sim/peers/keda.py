"""KEDA's aws-sqs-queue scaler driving a Kubernetes HorizontalPodAutoscaler, as documented.

Sources: KEDA scaler docs (keda.sh/docs/latest/scalers/aws-sqs/) and code
(pkg/scalers/aws_sqs_queue_scaler.go): the metric is ApproximateNumberOfMessages +
ApproximateNumberOfMessagesNotVisible (scaleOnInFlight defaults to true), the target per pod is
`queueLength`. Kubernetes HPA (autoscaling/v2) with default behaviour: a sync every 15 s
(--horizontal-pod-autoscaler-sync-period), each sync reading the scaler afresh (KEDA's
useCachedMetrics defaults to false; its 30 s pollingInterval drives only activation 0 <-> 1);
for an AverageValue external metric desired = ceil(total / queueLength) unless
|total / (queueLength * replicas) - 1| <= 0.1 (tolerance). HPA's default behaviour (the
Kubernetes HPA page, "Default Behavior"): scaleUp with no stabilization and the policies 100 %
and 4 pods per 15 s, selectPolicy Max (the higher limit); scaleDown to the highest
recommendation of the last 300 s (`behavior.scaleDown.stabilizationWindowSeconds`, the first
knob an expert turns: 0, 60 and 300 s here), 100 % per 15 s. HPA's minReplicas is
max(1, minReplicaCount): with `minReplicaCount` 0 (KEDA's default) KEDA itself takes the
deployment to 0 once the queue has been empty for `cooldownPeriod` (300 s), and back to 1 at
the first poll (every `pollingInterval`, 30 s) that sees a message; HPA scales from there.

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
from queue_autoscale.sim.peers.knobs import Knob, count, seconds
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
"""HPA's default scale-down stabilization window, s."""
ACTIVATION_QUEUE_LENGTH = 0
POLLING_SECONDS = 30
"""KEDA's pollingInterval (default): how often activation 0 <-> 1 is checked, s."""
COOLDOWN_SECONDS = 300
"""KEDA's cooldownPeriod (default): the queue empty this long before scaling to 0, s."""
KNOBS: dict[str, Knob] = {
    "queue_length": count("queueLength, messages per pod", low=1),
    "scale_down_stabilization": seconds("HPA scale-down stabilization window, s"),
    "min_replicas": count("minReplicaCount, pods"),
}
"""The settings `simulate --policy 'keda(...)'` takes, and what each is."""


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
        scale_down_stabilization: int = SCALE_DOWN_STABILIZATION_SECONDS,
        min_replicas: int | None = None,
        name: str | None = None,
    ) -> None:
        """`queue_length_override`: a queueLength other than the documented one;
        `scale_down_stabilization` (s); `min_replicas` (None: the queue's min_workers);
        `name`: the label the run is reported under (default: keda / keda-no-drain)."""
        self.name = name or (NAME if drain else NAME_NO_DRAIN)
        self.scale_in = SCALE_IN_DRAIN if drain else SCALE_IN_KILL
        """How the engine stops workers on scale-in (see sim.engine)."""
        self.settings = settings
        self.target_per_pod = queue_length_override or queue_length(settings)
        self.window_seconds = scale_down_stabilization
        self.min_replicas = settings.min_workers if min_replicas is None else min_replicas
        self._recommendations: list[tuple[float, int]] = []
        self._scale_ups: list[tuple[float, int]] = []
        self._last_poll = -math.inf
        self._last_active = -math.inf

    def decide(self, view: FleetView) -> int:
        """One HPA sync (and KEDA's activation poll when one is due)."""
        now = view.now
        total = view.visible + view.in_flight
        current = view.desired
        if self.min_replicas == 0:
            active = self.activation(now, current, total)
            if active is not None:
                return active
        status = view.running + view.pending
        recommendation = replica_count(total, status, self.target_per_pod)
        return self.stabilize(now, current, recommendation)

    def activation(self, now: float, current: int, total: int) -> int | None:
        """KEDA's scale to and from zero (minReplicaCount 0): 0 once no message was seen for
        `COOLDOWN_SECONDS`, 1 at the first poll that sees one; None: HPA decides."""
        if total > ACTIVATION_QUEUE_LENGTH or self._last_active == -math.inf:
            self._last_active = now  # the cooldown also runs from the first sync
        if current > 0:
            if now - self._last_active >= COOLDOWN_SECONDS:
                self._recommendations.clear()
                return 0
            return None
        if now - self._last_poll < POLLING_SECONDS:
            return 0
        self._last_poll = now
        return 1 if total > ACTIVATION_QUEUE_LENGTH else 0

    def stabilize(self, now: float, current: int, recommendation: int) -> int:
        """HPA's behaviour: scale-down stabilization, scale-up rate limit, min/max."""
        window = now - self.window_seconds
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
        floor = max(1, self.min_replicas)  # HPA's minReplicas
        result = max(floor, min(result, limit, self.settings.max_workers))
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
