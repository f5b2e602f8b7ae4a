"""Peer policies beside ours, each implemented to its documented behaviour (see each module)."""

from __future__ import annotations

from collections.abc import Callable

from queue_autoscale.core import Decision, QueueSettings, QueueSnapshot
from queue_autoscale.sim.peers import keda, static, target_tracking
from queue_autoscale.sim.peers.keda import KedaPolicy
from queue_autoscale.sim.peers.static import StaticPolicy
from queue_autoscale.sim.peers.target_tracking import TargetTrackingPolicy

Explainer = Callable[[QueueSnapshot, QueueSettings], Decision]

EXPLAINERS: dict[str, Explainer] = {
    keda.NAME: keda.explain,
    target_tracking.NAME: target_tracking.explain,
    static.NAME: static.explain,
}
"""For `explain --policy`: the count a peer would set once its own trigger conditions hold."""

__all__ = ["EXPLAINERS", "Explainer", "KedaPolicy", "StaticPolicy", "TargetTrackingPolicy"]
