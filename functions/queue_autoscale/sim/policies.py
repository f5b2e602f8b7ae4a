"""The policies the simulator compares, built from one set of queue settings."""

from __future__ import annotations

from queue_autoscale.core import (
    DEFAULT_EVALUATION_INTERVAL_SECONDS,
    POLICIES,
    ControllerState,
    Decision,
    QueueSettings,
    workers_for_sla,
)
from queue_autoscale.core import (
    Policy as CoreFunction,
)
from queue_autoscale.sim.arrivals import ArrivalError, Counts
from queue_autoscale.sim.bound import NAME as BOUND_NAME
from queue_autoscale.sim.bound import ReactionBoundPolicy
from queue_autoscale.sim.engine import FleetView, Policy
from queue_autoscale.sim.peers import KedaPolicy, StaticPolicy, TargetTrackingPolicy
from queue_autoscale.sim.peers.keda import NAME_NO_DRAIN as KEDA_NO_DRAIN

POLICY_NAMES: tuple[str, ...] = ("hybrid", "seed-hybrid", "keda", "target-tracking", "static")
DIAGNOSTICS: tuple[str, ...] = (BOUND_NAME, KEDA_NO_DRAIN)
"""Runnable by name, not part of `all`: a yardstick nobody would deploy, and KEDA as users suffer
it when pods are stopped at random mid-job (the `interrupted` score)."""


class CorePolicy:
    """A pure core policy (`queue_autoscale.core.POLICIES`), called every evaluation interval
    with the snapshot our evaluate function would build; its state is carried between ticks."""

    def __init__(
        self, name: str, function: CoreFunction, settings: QueueSettings, record: bool = False
    ) -> None:
        self.name = name
        self.function = function
        self.settings = settings
        self.interval_seconds = max(1, round(settings.evaluation_interval_seconds))
        self.state = ControllerState(queue=settings.queue)
        self.record = record
        self.decisions: list[Decision] = []
        """Every decision record, when `record` is set (for `simulate --decisions`)."""

    def decide(self, view: FleetView) -> int:
        """One evaluate tick."""
        evaluation = self.function(
            view.snapshot(self.settings.queue, self.settings.sla_seconds),
            self.settings,
            self.state,
            view.now,
            None,
        )
        self.state = evaluation.state
        if self.record:
            self.decisions.append(evaluation.decision)
        return evaluation.decision.target


def sim_settings(
    sla_seconds: float = 30.0,
    service_seconds: float = 1.0,
    concurrency: int = 1,
    provision_delay_seconds: float = 60.0,
    interval_seconds: float = DEFAULT_EVALUATION_INTERVAL_SECONDS,
    percentile: float = 0.999,
    min_workers: int = 1,
    max_workers: int = 1000,
) -> QueueSettings:
    """The queue settings every policy in a run shares (peers read SLA, job time, min/max)."""
    return QueueSettings(
        queue="sim",
        sla_seconds=sla_seconds,
        percentile=percentile,
        min_workers=min_workers,
        max_workers=max_workers,
        worker_concurrency=concurrency,
        provisioning_lead_seconds=provision_delay_seconds,
        evaluation_interval_seconds=interval_seconds,
        expected_job_seconds=service_seconds,
    )


def parse_policies(text: str) -> list[str]:
    """Comma-separated policy names, validated; 'all' means every policy."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    if names == ["all"]:
        return list(POLICY_NAMES)
    if not names:
        raise ArrivalError("policy: name at least one of " + ", ".join(POLICY_NAMES))
    for name in names:
        if name not in POLICY_NAMES + DIAGNOSTICS:
            raise ArrivalError(
                f"unknown policy {name!r}: choose from {', '.join(POLICY_NAMES)} (or all), "
                f"or the diagnostics {', '.join(DIAGNOSTICS)}"
            )
    return names


def make_policy(
    name: str, settings: QueueSettings, scored_counts: Counts, record: bool = False
) -> Policy:
    """A fresh policy instance (policies keep state, so one per run); `record` keeps a core
    policy's decision records."""
    if name in POLICIES:
        return CorePolicy(name, POLICIES[name], settings, record)
    if name == "keda":
        return KedaPolicy(settings)
    if name == KEDA_NO_DRAIN:
        return KedaPolicy(settings, drain=False)
    if name == "target-tracking":
        return TargetTrackingPolicy(settings)
    if name == "static":
        return StaticPolicy(settings, scored_counts)
    if name == BOUND_NAME:
        return ReactionBoundPolicy(settings)
    raise ArrivalError(f"unknown policy {name!r}: choose from {', '.join(POLICY_NAMES)}")


def initial_workers(policy: Policy, settings: QueueSettings, warm_rate: float) -> int:
    """The fleet every policy starts the warm-up with: sized for the warm-up rate (a static
    fleet starts at its own size)."""
    if isinstance(policy, StaticPolicy):
        return policy.size
    needed = workers_for_sla(
        warm_rate,
        settings.expected_job_seconds,
        settings.worker_concurrency,
        settings.sla_seconds,
        settings.percentile,
    )
    return max(settings.min_workers, min(settings.max_workers, needed))
