"""evaluate in-process with the canonical scheduler event, in-memory adapters and a fake clock."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from queue_autoscale.adapters.cloudwatch import OldestAge
from queue_autoscale.adapters.errors import ServiceUnavailable, Throttled
from queue_autoscale.adapters.sqs import QueueDepth
from queue_autoscale.controller import tick
from queue_autoscale.controller.request import parse_request
from queue_autoscale.controller.runtime import EvaluateRuntime
from queue_autoscale.core import CounterRow
from queue_autoscale.handlers import evaluate
from tests.unit.handlers.evaluate_world import (
    ORDERS,
    SECOND,
    build,
)


@pytest.fixture
def installed() -> Iterator[Any]:
    def install(runtime: EvaluateRuntime) -> EvaluateRuntime:
        evaluate.set_runtime(runtime)
        return runtime

    yield install
    evaluate.set_runtime(None)


@pytest.mark.parametrize(
    ("interval", "max_ticks", "count"),
    [
        pytest.param(5, None, 12, id="5s-twelve"),
        pytest.param(7, None, 9, id="7s-nine"),
        pytest.param(30, None, 2, id="30s-two"),
        pytest.param(60, None, 1, id="60s-one"),
        pytest.param(5, 3, 3, id="capped"),
    ],
)
def test_tick_count_fills_the_minute(interval: float, max_ticks: int | None, count: int) -> None:
    assert tick.tick_count(interval, max_ticks) == count


@pytest.mark.parametrize(
    ("event", "max_ticks", "once"),
    [
        pytest.param({"detail": {}}, None, False, id="scheduled-event"),
        pytest.param({"once": True}, None, True, id="once"),
        pytest.param({"detail": {"max_ticks": 2}}, 2, False, id="detail-max-ticks"),
        pytest.param({"detail": "{}", "max_ticks": 3}, 3, False, id="string-detail"),
    ],
)
def test_parse_request(event: dict[str, Any], max_ticks: int | None, once: bool) -> None:
    request = parse_request(event)
    assert (request.max_ticks, request.once) == (max_ticks, once)


def test_the_scheduled_minute_runs_a_tick_every_interval(
    installed: Any, load_event: Any, lambda_context: Any
) -> None:
    # GIVEN a 30 s interval and a backlog the plan sizes at 7 workers
    runtime = installed(build(interval=30))

    # WHEN the canonical scheduler event arrives
    answer = evaluate.handler(load_event("scheduler_evaluate.json"), lambda_context)

    # THEN two ticks ran 30 s apart. The first scaled 2 -> 7: the plan is the fewest workers
    # whose predicted share of late jobs, among those due within lead + interval + SLA
    # (120 s), fits the 95 % target's 5 % budget. 120 wait and 2 jobs/s arrive (dispersion 4);
    # the 2 running workers only keep pace, so the backlog waits for workers ordered now, which
    # take jobs 75 s later: 6 workers leave 5.06 % of those jobs late, 7 leave 1.25 %.
    assert answer["ticks"] == 2
    assert runtime.sleep.__self__.naps == [30.0]
    assert runtime.ecs.updates == [(ORDERS, 7)]
    first, second = answer["decisions"]
    assert (first["current"], first["target"], first["action"], first["applied"]) == (
        2,
        7,
        "up",
        True,
    )
    assert "plan 7 (predicted miss share 1.25% of the jobs due within 120 s" in first["reason"]
    # In this frozen world nothing drained, so at the second tick the oldest job is 50 s old.
    # The plan counts the 5 workers ordered at the first tick, 45 s from taking jobs; with
    # them, no job that can still be on time is late: hold at 7.
    assert (second["current"], second["target"], second["action"]) == (7, 7, "hold")
    assert "120 waiting (oldest 50 s)" in second["reason"]
    assert "fleet: 2 running, ordered earlier and landing: 5 in 45 s" in second["reason"]
    # AND each tick published a decision event, the first also WorkersScaled
    kinds = [event.detail_type for event in runtime.events.published]
    assert kinds.count("ScalingDecisionMade") == 2
    scaled = [e.detail for e in runtime.events.published if e.detail_type == "WorkersScaled"]
    assert [(d["from"], d["to"]) for d in scaled] == [(2, 7)]
    # AND every event and the decision log carry the SLA aimed at and the predicted pickup
    decided = [e.detail for e in runtime.events.published if e.detail_type != "WorkersScaled"]
    for detail in [*scaled, *decided, *(log[0] for log in runtime.archive.logs)]:
        assert (detail["sla_seconds"], detail["percentile"]) == (30.0, 0.95)
        assert "predicted_pickup_seconds" in detail
    assert scaled[0]["predicted_pickup_seconds"] > 30.0  # 120 waiting on 2 workers
    # AND the state was stored twice with increasing versions, and the log archived each tick
    assert runtime.table.states["orders"]["version"] == 2
    assert [len(log) for log in runtime.archive.logs] == [1, 1]


def test_the_deadline_stops_the_loop(installed: Any, lambda_context: Any) -> None:
    runtime = installed(build(interval=20))
    lambda_context.remaining_ms = 40_000  # deadline = 40 s - 10 s margin: ticks at 0 and 20
    answer = evaluate.handler({}, lambda_context)
    assert answer["ticks"] == 2
    assert runtime.sleep.__self__.naps == [20.0]


def test_dry_run_decides_and_publishes_but_never_updates(
    installed: Any, lambda_context: Any
) -> None:
    runtime = installed(build(global_dry_run=True))
    answer = evaluate.handler({"once": True}, lambda_context)
    (decision,) = answer["decisions"]
    assert (decision["target"], decision["applied"], decision["dry_run"]) == (7, False, True)
    assert runtime.ecs.updates == []


def test_a_per_queue_dry_run_is_honoured(installed: Any, lambda_context: Any) -> None:
    runtime = installed(build(dry_run=True))
    answer = evaluate.handler({"once": True}, lambda_context)
    assert answer["decisions"][0]["dry_run"] is True
    assert runtime.ecs.updates == []


def test_an_unreadable_queue_holds_and_counts_an_error(installed: Any, lambda_context: Any) -> None:
    # GIVEN SQS throttles the depth read
    runtime = installed(build())
    runtime.sqs.depths["orders"] = Throttled("GetQueueAttributes", "slow", code="Throttling")

    # WHEN a tick runs
    answer = evaluate.handler({"once": True}, lambda_context)

    # THEN the core holds on the missing input; nothing is updated; the error is counted
    (decision,) = answer["decisions"]
    assert (decision["action"], decision["target"], decision["applied"]) == ("hold", 2, False)
    assert "visible unknown" in decision["reason"]
    assert runtime.ecs.updates == []
    assert runtime.publish_metrics.last("orders")["ControllerErrors"] == 1.0


def test_without_the_state_item_nothing_is_decided(installed: Any, lambda_context: Any) -> None:
    runtime = installed(build())
    runtime.table.read_error = ServiceUnavailable("BatchGetItem", "503")
    answer = evaluate.handler({"once": True}, lambda_context)
    (decision,) = answer["decisions"]
    assert decision["target"] is None
    assert any("controller state unavailable" in error for error in decision["errors"])
    assert runtime.ecs.updates == []
    assert runtime.publish_metrics.last("orders") == {"ControllerErrors": 2.0}


def test_a_failed_update_is_reported_not_raised(installed: Any, lambda_context: Any) -> None:
    runtime = installed(build())
    runtime.ecs.update_error = Throttled(
        "UpdateService", "slow", code="ThrottlingException", resource="orders"
    )
    answer = evaluate.handler({"once": True}, lambda_context)
    (decision,) = answer["decisions"]
    assert (decision["action"], decision["applied"]) == ("up", False)
    assert decision["errors"] == ["UpdateService on orders failed (ThrottlingException): slow"]
    kinds = [event.detail_type for event in runtime.events.published]
    assert "WorkersScaled" not in kinds


def test_a_steady_fleet_holds_without_calling_update(installed: Any, lambda_context: Any) -> None:
    runtime = installed(build())
    runtime.sqs.depths["orders"] = QueueDepth(0, 0, 0)
    runtime.table.rows["orders"] = [
        CounterRow(second=s, queued=1, completed=1, busy_ms=1000)
        for s in range(SECOND - 300, SECOND)
    ]
    answer = evaluate.handler({"once": True}, lambda_context)
    (decision,) = answer["decisions"]
    assert decision["action"] == "hold"
    assert runtime.ecs.updates == []
    metrics = runtime.publish_metrics.last("orders")
    assert metrics["LoadRatio"] == pytest.approx(0.5)
    assert metrics["CurrentWorkers"] == 2.0
    assert metrics["FleetUsage"] == pytest.approx(2 / 50)  # current / this queue's max


@pytest.mark.parametrize(("max_workers", "usage"), [(5, 0.4), (2, 1.0), (200, 0.01)])
def test_fleet_usage_is_relative_to_each_queues_own_max(
    installed: Any, lambda_context: Any, max_workers: int, usage: float
) -> None:
    # GIVEN 2 workers on queues of different maxima (seed 003: alert at 80% of each one's max)
    runtime = installed(build(max_workers=max_workers, min_workers=0))
    runtime.sqs.depths["orders"] = QueueDepth(0, 0, 0)
    # WHEN a tick runs, THEN FleetUsage is 2 / max for that queue
    evaluate.handler({"once": True}, lambda_context)
    assert runtime.publish_metrics.last("orders")["FleetUsage"] == pytest.approx(usage)


def test_a_predicted_breach_is_announced(installed: Any, lambda_context: Any) -> None:
    # GIVEN CloudWatch says the oldest job is 25 s old with 2 workers for 120 jobs (SLA 30 s)
    runtime = installed(build())
    runtime.oldest.ages["orders"] = OldestAge(age_seconds=25.0, lag_seconds=0.0)
    runtime.ecs.update_error = Throttled("UpdateService", "slow")

    evaluate.handler({"once": True}, lambda_context)

    breach = [e for e in runtime.events.published if e.detail_type == "SlaBreachPredicted"]
    assert len(breach) == 1
    assert breach[0].detail["oldest_age_seconds"] == 25.0
    assert (breach[0].detail["sla_seconds"], breach[0].detail["percentile"]) == (30.0, 0.95)
    assert breach[0].detail["predicted_pickup_seconds"] > 0
    assert runtime.archive.logs[0][0]["oldest_age_source"] == "cloudwatch"


def test_a_refused_event_is_counted_against_its_queue(installed: Any, lambda_context: Any) -> None:
    runtime = installed(build())
    runtime.events.refuse = {"WorkersScaled"}
    answer = evaluate.handler({"once": True}, lambda_context)
    (decision,) = answer["decisions"]
    assert decision["errors"] == ["event refused: InternalFailure no"]
    assert runtime.publish_metrics.last("orders")["ControllerErrors"] == 1.0


def test_the_oldest_age_is_asked_only_of_queues_with_waiting_jobs(
    installed: Any, lambda_context: Any
) -> None:
    # GIVEN three queues: orders backlogged, `idle` empty, `unread` whose depth read fails
    runtime = installed(build(others=("idle", "unread")))
    runtime.sqs.depths["idle"] = QueueDepth(visible=0, in_flight=3, delayed=0)
    runtime.sqs.depths["unread"] = Throttled("GetQueueAttributes", "slow", code="Throttling")
    runtime.oldest.ages["idle"] = OldestAge(age_seconds=50.0, lag_seconds=30.0)

    # WHEN a tick runs
    evaluate.handler({"once": True}, lambda_context)

    # THEN one GetMetricData asked about orders and the unread queue (its depth is unknown:
    # asked, as before), not about the empty queue
    assert runtime.oldest.asked == [["orders", "unread"]]
    # AND the empty queue's decision is what it was with the age read: CloudWatch's 50 s is
    # not used for a queue with no visible message (the core takes its age as 0)
    records = {record["queue"]: record for record in runtime.archive.logs[0]}
    assert (records["idle"]["oldest_age_seconds"], records["idle"]["oldest_age_source"]) == (
        0.0,
        "empty",
    )
    assert records["orders"]["oldest_age_source"] != "empty"
