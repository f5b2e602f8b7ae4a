"""ScalingDecisionMade is published when a queue's decision says something new: its headline
(target, action, inputs usable, overloading / overloaded, urgency, breach predicted) changed
since the last one published, or it acted, has errors or lost the state race."""

from __future__ import annotations

from typing import Any

from queue_autoscale.adapters.dynamodb import deserialize_item, serialize_item
from queue_autoscale.adapters.ecs import ServiceRef, ServiceStatus
from queue_autoscale.adapters.errors import ServiceUnavailable
from queue_autoscale.adapters.sqs import QueueDepth
from queue_autoscale.constants import DECISION_EVENT
from queue_autoscale.controller.tick import ANNOUNCED, run_tick
from queue_autoscale.core import OldestAge
from tests.unit.handlers.evaluate_world import NOW, build

INTERVAL = 30.0


def idle_world() -> Any:
    """Queue `orders`, empty, no events counted, its 1 worker (min_workers) running."""
    runtime = build(interval=INTERVAL, min_workers=1)
    runtime.sqs.depths["orders"] = QueueDepth(visible=0, in_flight=0, delayed=0)
    runtime.ecs.services[ServiceRef("workers", "orders")] = ServiceStatus(1, 1, 0, False, "ACTIVE")
    runtime.table.rows["orders"] = []
    return runtime


def published(runtime: Any) -> list[str]:
    """The queues of the ScalingDecisionMade events published so far."""
    events = runtime.events.published
    return [e.detail["queue"] for e in events if e.detail_type == DECISION_EVENT]


def tick(runtime: Any, at: float) -> None:
    runtime.clock.now = at
    run_tick(runtime, at, budget_seconds=INTERVAL)


def test_a_repeated_decision_is_logged_not_published_again() -> None:
    # GIVEN an idle queue held at its one worker
    runtime = idle_world()
    # WHEN it is ticked three times with nothing changing
    for index in range(3):
        tick(runtime, NOW + index * INTERVAL)
    # THEN the first decision is published, the two repeats only logged
    assert published(runtime) == ["orders"]
    assert [len(log) for log in runtime.archive.logs] == [1, 1, 1]
    stored = runtime.table.states["orders"]
    assert stored[ANNOUNCED] == [1, "hold", True, False, False, "NORMAL", False]


def test_a_new_target_is_published() -> None:
    # GIVEN the idle queue, its decision published once
    runtime = idle_world()
    tick(runtime, NOW)
    # WHEN a backlog of 120 jobs, the oldest 40 s old, shows on its one worker
    runtime.sqs.depths["orders"] = QueueDepth(visible=120, in_flight=1, delayed=0)
    runtime.oldest.ages["orders"] = OldestAge(age_seconds=40.0, lag_seconds=30.0)
    tick(runtime, NOW + INTERVAL)
    # THEN the scale-up is published (and WorkersScaled with it)
    assert published(runtime) == ["orders", "orders"]
    assert runtime.table.states["orders"][ANNOUNCED][:2] == [
        runtime.archive.logs[-1][0]["target"],
        "up",
    ]


def test_a_decision_with_errors_is_published_every_tick() -> None:
    # GIVEN the idle queue, whose ECS service cannot be read (the fleet unknown: it holds)
    runtime = idle_world()
    ref = ServiceRef("workers", "orders")
    runtime.ecs.services[ref] = ServiceUnavailable("DescribeServices", "down")
    # WHEN it is ticked twice THEN both decisions are published, each with its errors
    tick(runtime, NOW)
    tick(runtime, NOW + INTERVAL)
    assert published(runtime) == ["orders", "orders"]


def test_the_headline_survives_the_state_items_round_trip() -> None:
    headline = [12, "hold", False, True, False, "high", True]
    item = serialize_item({ANNOUNCED: headline})
    assert deserialize_item(item)[ANNOUNCED] == headline
