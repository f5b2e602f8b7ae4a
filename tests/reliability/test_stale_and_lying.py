"""Stale and lying metrics through the evaluate handler on the embedded emulator: an AWS
answer rewritten by a botocore `after-call` hook (negative or absurd counts), a gather that
outlasts the interval, a fleet whose running count never rises. Each has one defined
behaviour (hold, clamp to max, stop climbing) and UpdateService never gets a wild value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from queue_autoscale.adapters.aws import AwsClients, make_clients
from queue_autoscale.controller import tick
from queue_autoscale.core.models import Action
from queue_autoscale.handlers import evaluate
from tests.integration.conftest import REGION, Endpoint
from tests.reliability.faults import CallLog
from tests.reliability.worlds import MAX_WORKERS, NOW, START_WORKERS, Fleet, MetricsRecorder

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("moto")]

ABSURD = 10**12


def rewrite(client: Any, operation: str, change: Callable[[dict[str, Any]], None]) -> None:
    """Let `change` edit every parsed answer of `operation` before the adapter sees it."""
    service = client.meta.service_model.service_id.hyphenize()

    def hook(parsed: dict[str, Any], **_: Any) -> None:
        if "Error" not in parsed:
            change(parsed)

    client.meta.events.register(f"after-call.{service}.{operation}", hook)


def ecs_counts(**counts: int) -> Callable[[dict[str, Any]], None]:
    def change(parsed: dict[str, Any]) -> None:
        for service in parsed.get("services", []):
            service.update(counts)

    return change


def sqs_visible(value: int) -> Callable[[dict[str, Any]], None]:
    def change(parsed: dict[str, Any]) -> None:
        parsed["Attributes"]["ApproximateNumberOfMessages"] = str(value)

    return change


@pytest.fixture
def hooked(endpoint: Endpoint) -> AwsClients:
    """Clients for the controller, separate from the fleet's, so rewrites fool only it."""
    return make_clients(endpoint_url=endpoint.url, region_name=REGION)


@pytest.fixture
def fleet(kit: Any, clients: Any) -> Fleet:
    """One backlogged queue at 2 workers, max 5 (the core wants 6 when inputs are true)."""
    return Fleet.create(kit, clients, bases=("lying",))


HOLDS = {
    "running negative": ("ecs", "DescribeServices", ecs_counts(runningCount=-3), "running = -3"),
    "desired negative": ("ecs", "DescribeServices", ecs_counts(desiredCount=-1), "desired = -1"),
    "pending negative": ("ecs", "DescribeServices", ecs_counts(pendingCount=-2), "pending = -2"),
    "visible negative": ("sqs", "GetQueueAttributes", sqs_visible(-5), "is negative"),
    "visible not a number": ("sqs", "GetQueueAttributes", sqs_visible("lots"), "not an integer"),  # type: ignore[arg-type]
}


@pytest.mark.parametrize("case", list(HOLDS.values()), ids=list(HOLDS))
def test_an_impossible_count_holds_the_fleet(
    fleet: Fleet, hooked: Any, case: tuple[str, str, Callable[[dict[str, Any]], None], str]
) -> None:
    client, operation, change, words = case
    # GIVEN an answer that cannot be true
    rewrite(getattr(hooked, client), operation, change)
    runtime = fleet.runtime(hooked)
    metrics = MetricsRecorder()
    runtime.publish_metrics = metrics
    updates = CallLog("UpdateService").install(hooked.ecs)

    # WHEN one tick runs
    (outcome,) = tick.run_tick(runtime, NOW)

    # THEN the fleet holds: no UpdateService, desiredCount unchanged, the reason says why
    assert updates.calls == []
    assert fleet.desired(fleet.queues[0]) == START_WORKERS
    assert outcome.decision is not None
    assert outcome.decision.action is Action.HOLD
    if client == "sqs":  # the adapter refused the answer: an input error, counted
        assert any(words in error for error in outcome.errors)
        assert metrics.last(fleet.queues[0])["ControllerErrors"] >= 1
    else:  # ECS's answer reached the core, which named the impossible input
        assert words in outcome.decision.reason


def test_an_absurd_backlog_scales_to_max_and_no_further(fleet: Fleet, hooked: Any) -> None:
    # GIVEN SQS claiming 10^12 visible messages
    rewrite(hooked.sqs, "GetQueueAttributes", sqs_visible(ABSURD))
    updates = CallLog("UpdateService").install(hooked.ecs)

    # WHEN one tick runs
    (outcome,) = tick.run_tick(fleet.runtime(hooked), NOW)

    # THEN the target is clamped to max_workers (defined behaviour: clamp, and say so)
    assert outcome.decision is not None
    assert outcome.decision.target == MAX_WORKERS
    assert "max_workers" in outcome.decision.constraints
    assert [call["desiredCount"] for call in updates.calls] == [MAX_WORKERS]


def test_an_absurd_desired_count_is_brought_back_within_max(fleet: Fleet, hooked: Any) -> None:
    # GIVEN ECS claiming desired = running = 10^12
    rewrite(hooked.ecs, "DescribeServices", ecs_counts(desiredCount=ABSURD, runningCount=ABSURD))
    updates = CallLog("UpdateService").install(hooked.ecs)

    # WHEN one tick runs
    (outcome,) = tick.run_tick(fleet.runtime(hooked), NOW)

    # THEN the only UpdateService asks for a count within [min, max]
    assert all(1 <= call["desiredCount"] <= MAX_WORKERS for call in updates.calls)
    assert outcome.decision is not None and outcome.decision.target <= MAX_WORKERS


def test_an_absurd_running_count_never_scales_below_the_backlog_need(
    fleet: Fleet, hooked: Any
) -> None:
    # GIVEN ECS claiming 10^12 running tasks while desired is 6 (running can lag desired,
    # never exceed it by that much)
    rewrite(hooked.ecs, "DescribeServices", ecs_counts(runningCount=ABSURD))
    updates = CallLog("UpdateService").install(hooked.ecs)

    # WHEN one tick runs
    (outcome,) = tick.run_tick(fleet.runtime(hooked), NOW)

    # THEN no UpdateService goes below the current 6 or above max
    assert outcome.decision is not None
    assert all(START_WORKERS <= call["desiredCount"] <= MAX_WORKERS for call in updates.calls)


def test_inputs_gathered_slower_than_two_intervals_are_stale_and_hold(
    fleet: Fleet, hooked: Any
) -> None:
    # GIVEN a gather that takes 70 s (retries, timeouts) with a 30 s interval (stale after 60 s)
    clock = [NOW]

    def slow(**_: Any) -> None:
        clock[0] = NOW + 70.0

    hooked.sqs.meta.events.register("before-call.sqs.GetQueueAttributes", slow)
    runtime = fleet.runtime(hooked)
    runtime.clock = lambda: clock[0]
    updates = CallLog("UpdateService").install(hooked.ecs)

    # WHEN one tick runs (read at NOW, decided 70 s later)
    (outcome,) = tick.run_tick(runtime, NOW)

    # THEN the core sees a 70 s old snapshot and holds
    assert outcome.decision is not None
    assert outcome.decision.action is Action.HOLD
    assert "snapshot is 70 s old" in outcome.decision.reason
    assert updates.calls == []


def test_a_fleet_that_never_starts_stops_the_climb(fleet: Fleet, hooked: Any) -> None:
    # GIVEN max 50, a service whose running count stays at 6 whatever desiredCount says,
    # and a backlog that grows by 120 jobs a tick (nobody is working it off)
    queue = fleet.queues[0]
    rewrite(hooked.ecs, "DescribeServices", ecs_counts(runningCount=START_WORKERS))
    clock = [NOW]

    def growing(parsed: dict[str, Any]) -> None:
        index = round((clock[0] - NOW) / 30.0)
        parsed["Attributes"]["ApproximateNumberOfMessages"] = str(120 * (index + 1))

    rewrite(hooked.sqs, "GetQueueAttributes", growing)
    runtime = evaluate.build_runtime(
        fleet.settings(max_workers=200, provisioning_lead_seconds=10),
        hooked,
        clock=lambda: clock[0],
        sleep=lambda _: None,
    )
    settings = runtime.queues(clock[0])[0].settings(runtime.settings.evaluation_interval_seconds)
    updates = CallLog("UpdateService").install(hooked.ecs)

    # WHEN the controller ticks every 30 s for 10 minutes
    decisions = []
    desired: dict[float, int] = {}
    for index in range(20):
        clock[0] = NOW + 30.0 * index
        (outcome,) = tick.run_tick(runtime, clock[0])
        assert outcome.decision is not None
        decisions.append(outcome.decision)
        desired[clock[0] - NOW] = fleet.desired(queue)

    # THEN it asked for more at first, and stopped well short of max
    targets = [call["desiredCount"] for call in updates.calls]
    assert targets and targets[0] > START_WORKERS
    assert max(targets) < 200
    # AND once running stayed below desired for 3 provisioning leads + 1 interval (60 s) from
    # the tick after the first scale-up, every later decision holds the scale-up with
    # `fleet_stuck` and no UpdateService rises
    stuck_after = settings.stuck_after
    assert stuck_after == 60.0
    first_up = min(d.at - NOW for d in decisions if d.action is Action.UP)
    stuck = [d.at - NOW for d in decisions if "fleet_stuck" in d.constraints]
    assert stuck and stuck[0] <= first_up + 30.0 + stuck_after
    # AND from then on desiredCount never rises again, though the backlog keeps growing
    frozen = {desired[at] for at in desired if at >= stuck[0]}
    assert frozen == {desired[stuck[0]]}
