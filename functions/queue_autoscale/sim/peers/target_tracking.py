"""AWS target tracking on SQS backlog per task ("Scaling policy based on Amazon SQS").

Sources: Amazon EC2 Auto Scaling user guide, "Scaling policy based on Amazon SQS" (backlog per
instance = ApproximateNumberOfMessagesVisible / running capacity; acceptable backlog per
instance = acceptable latency / average processing time; example: 1,500 messages, 10
instances, 0.1 s jobs, 10 s latency -> target 100, scale to 15) and the Application Auto
Scaling guide "How target tracking scaling works" (the alarms it creates: scale out when the
metric is above target for 3 of 3 one-minute datapoints, scale in when below 90 % of target for
15 of 15; ECS cooldowns used here: 60 s out, 300 s in; a scale-out may interrupt a scale-in
cooldown). The new capacity keeps the metric in proportion to the target:
ceil(running * backlog per task / target) = ceil(visible / target).

The policy reads CloudWatch 1-minute datapoints, which are published with a lag.
"""

from __future__ import annotations

import math
from dataclasses import replace

from queue_autoscale.core import Decision, QueueSettings, QueueSnapshot, Winner
from queue_autoscale.sim.engine import Datapoint, FleetView
from queue_autoscale.sim.peers._record import clamp, mean_job_seconds, peer_decision
from queue_autoscale.sim.peers.knobs import MAX_COUNT, Knob, count, seconds

NAME = "target-tracking"
EVALUATION_SECONDS = 60
HIGH_DATAPOINTS = 3
LOW_DATAPOINTS = 15
LOW_FRACTION = 0.9
SCALE_OUT_COOLDOWN_SECONDS = 60
SCALE_IN_COOLDOWN_SECONDS = 300
KNOBS: dict[str, Knob] = {
    "target_value": Knob("target backlog per task, messages", False, 0, MAX_COUNT, True),
    "scale_in_cooldown": seconds("scale-in cooldown, s"),
    "min_capacity": count("the scalable target's minimum capacity, tasks"),
}
"""The settings `simulate --policy 'target-tracking(...)'` takes, and what each is."""


def acceptable_backlog(settings: QueueSettings, job_seconds: float | None = None) -> float:
    """Target backlog per task = acceptable latency (the SLA) / time per message."""
    seconds = job_seconds if job_seconds else settings.expected_job_seconds
    return settings.sla_seconds * settings.worker_concurrency / seconds


def backlog_per_task(visible: int, running: int) -> float:
    """The tracked metric; with no task running, the whole backlog."""
    return visible / running if running > 0 else float(visible)


def proportional_capacity(visible: int, target: float) -> int:
    """Tasks that bring the backlog per task back to the target."""
    return math.ceil(visible / target - 1e-9)


class TargetTrackingPolicy:
    """Application Auto Scaling target tracking in the simulator."""

    interval_seconds = EVALUATION_SECONDS

    def __init__(
        self,
        settings: QueueSettings,
        target: float | None = None,
        scale_in_cooldown: int = SCALE_IN_COOLDOWN_SECONDS,
        min_capacity: int | None = None,
        name: str = NAME,
    ) -> None:
        """`target`: a backlog per task other than the documented one; `scale_in_cooldown`
        (s); `min_capacity` (None: the queue's min_workers); `name`: the label reported."""
        self.name = name
        self.settings = replace(
            settings, min_workers=settings.min_workers if min_capacity is None else min_capacity
        )
        self.target = target or acceptable_backlog(settings)
        self.cooldown_seconds = scale_in_cooldown
        self._last_out: float | None = None
        self._last_in: float | None = None

    def decide(self, view: FleetView) -> int:
        """One alarm evaluation (every minute)."""
        return self.evaluate(view.now, view.desired, view.cloudwatch(LOW_DATAPOINTS))

    def evaluate(self, now: float, desired: int, points: list[Datapoint]) -> int:
        """The desired count after the alarms look at the published datapoints (oldest first)."""
        metric = [backlog_per_task(p.visible, p.running) for p in points]
        if len(metric) >= HIGH_DATAPOINTS and all(
            value > self.target for value in metric[-HIGH_DATAPOINTS:]
        ):
            wanted = clamp(proportional_capacity(points[-1].visible, self.target), self.settings)
            # In the 60 s scale-out cooldown the capacity just added counts toward the next
            # scale-out, so only a target above the current desired count goes through; outside
            # it the same test applies, so the cooldown never blocks a larger target.
            if wanted > desired:
                self._last_out = now
                self._last_in = None  # a scale-out interrupts the scale-in cooldown
                return wanted
            return desired
        low = LOW_FRACTION * self.target
        if len(metric) >= LOW_DATAPOINTS and all(value < low for value in metric[-LOW_DATAPOINTS:]):
            wanted = clamp(proportional_capacity(points[-1].visible, self.target), self.settings)
            cooling = self._last_in is not None and now - self._last_in < self.cooldown_seconds
            if wanted < desired and not cooling:
                self._last_in = now
                return wanted
        return clamp(desired, self.settings)


def explain(snapshot: QueueSnapshot, settings: QueueSettings) -> Decision:
    """What target tracking sets once its alarm has seen this backlog for 3 (or 15) minutes."""
    job = mean_job_seconds(snapshot, settings)
    target = acceptable_backlog(settings, job)
    visible = max(0, snapshot.visible or 0)
    running = max(0, snapshot.running or 0)
    current = snapshot.desired if snapshot.desired is not None else running
    metric = backlog_per_task(visible, running)
    wanted = clamp(proportional_capacity(visible, target), settings)
    if metric > target:
        count, words = max(current, wanted), "above target for 3 of 3 minutes: scale out"
    elif metric < LOW_FRACTION * target:
        count, words = min(current, wanted), "below 90% of target for 15 of 15 minutes: scale in"
    else:
        count, words = current, "within the alarm band: no alarm fires"
    count = clamp(count, settings)
    reason = (
        f"target tracking: backlog per task {visible}/{running} = {metric:g} vs target "
        f"{target:g} (= {settings.sla_seconds:g} s latency x {settings.worker_concurrency} / "
        f"{job:g} s job); {words} -> {count} tasks"
    )
    return peer_decision(snapshot, settings, NAME, count, Winner.BACKLOG, reason)
