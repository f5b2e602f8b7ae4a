"""Tick mode: one evaluate invocation per tick. The scheduled invocation ticks and queues the
minute's later ticks; a queued tick is one invocation; duplicates, late deliveries, a failed
tick and a timed-out tick never decide twice or late, and never stop the next tick."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, cast

import pytest
from pydantic import ValidationError

from queue_autoscale.adapters.errors import ServiceUnavailable
from queue_autoscale.adapters.sqs import SendFailure
from queue_autoscale.controller.request import parse_request
from queue_autoscale.controller.ticks import is_stale, minute_dues
from queue_autoscale.core.jump import JumpLine, line_to_dict
from queue_autoscale.core.shard import shard_of
from queue_autoscale.handlers import evaluate
from tests.unit.controller.test_sharding import QUEUES, FakeInvoker
from tests.unit.handlers.conftest import FakeLambdaContext
from tests.unit.handlers.evaluate_world import NOW, build

INTERVAL = 15.0
SCHEDULED = datetime.fromtimestamp(NOW, tz=UTC).isoformat()


class FakeTicks:
    """The tick queue: what was queued, with its delay (s)."""

    def __init__(self, refuse: int | None = None) -> None:
        self.queued: list[tuple[dict[str, Any], float]] = []
        self.refuse = refuse

    def schedule(self, ticks: Sequence[tuple[Mapping[str, Any], float]]) -> list[SendFailure]:
        self.queued.extend((dict(request), delay) for request, delay in ticks)
        if self.refuse is None:
            return []
        return [SendFailure(self.refuse, "InternalError", "no", False)]


def tick_world(**options: Any) -> Any:
    runtime = build(interval=INTERVAL, mode="tick", **options)
    runtime.ticks = FakeTicks()
    evaluate.set_runtime(runtime)
    return runtime


@pytest.fixture(autouse=True)
def _reset() -> Any:
    yield
    evaluate.set_runtime(None)


def invoke(event: dict[str, Any]) -> dict[str, Any]:
    return evaluate.handler(event, cast(Any, FakeLambdaContext(remaining_ms=70_000)))


def scheduled() -> dict[str, Any]:
    """What the template's schedule sends (its scheduled time substituted)."""
    return {"source": "scheduler", "scheduled_time": SCHEDULED}


def queued(due: float) -> dict[str, Any]:
    """The tick queue's event source event for one message (batch size 1)."""
    body = json.dumps({"due": due})
    return {"Records": [{"messageId": "m-1", "eventSource": "aws:sqs", "body": body}]}


def test_the_scheduled_invocation_ticks_once_and_queues_the_minutes_other_ticks() -> None:
    # GIVEN tick mode at a 15 s interval, the scheduler invoking 0.4 s after its minute
    runtime = tick_world()
    runtime.clock.now = NOW + 0.4
    # WHEN the scheduled invocation runs
    answer = invoke(scheduled())
    # THEN it ticked once, without sleeping, for the minute's first due time
    assert (answer["ticks"], answer["due"], answer["skipped"]) == (1, NOW, None)
    assert runtime.clock.naps == []
    assert [d["queue"] for d in answer["decisions"]] == ["orders"]
    assert runtime.ecs.updates  # the backlog was acted on
    # AND queued the other three ticks of the minute, each delayed until it is due
    assert answer["scheduled_ticks"] == [NOW + 15, NOW + 30, NOW + 45]
    assert runtime.ticks.queued == [
        ({"due": NOW + 15}, pytest.approx(14.6)),
        ({"due": NOW + 30}, pytest.approx(29.6)),
        ({"due": NOW + 45}, pytest.approx(44.6)),
    ]


def test_each_queued_tick_is_one_tick_and_a_duplicate_decides_nothing() -> None:
    runtime = tick_world()
    invoke(scheduled())
    # WHEN the second tick's message arrives when due
    runtime.clock.now = NOW + 15.3
    answer = invoke(queued(NOW + 15))
    # THEN it ticks once, queues nothing
    assert (answer["ticks"], answer["due"], answer["scheduled_ticks"]) == (1, NOW + 15, [])
    assert len(runtime.archive.logs) == 2
    # WHEN SQS delivers the same message again (at-least-once) THEN nothing is decided
    runtime.clock.now = NOW + 16
    again = invoke(queued(NOW + 15))
    assert (again["ticks"], again["decisions"]) == (0, [])
    assert "already claimed" in again["skipped"]
    assert len(runtime.archive.logs) == 2
    kinds = [event.detail_type for event in runtime.events.published]
    assert kinds.count("ScalingDecisionMade") == 2


def test_a_duplicated_scheduled_invocation_neither_ticks_nor_queues() -> None:
    runtime = tick_world()
    invoke(scheduled())
    runtime.clock.now = NOW + 2  # the scheduler's duplicate carries the same scheduled time
    answer = invoke(scheduled())
    assert (answer["ticks"], answer["scheduled_ticks"]) == (0, [])
    assert len(runtime.ticks.queued) == 3


def test_a_tick_delivered_once_the_next_is_due_is_dropped_as_stale() -> None:
    runtime = tick_world()
    runtime.clock.now = NOW + 15 + INTERVAL  # the +15 s tick arrives when the +30 s one is due
    answer = invoke(queued(NOW + 15))
    assert answer["ticks"] == 0 and answer["skipped"].startswith("stale")
    assert runtime.archive.logs == []
    # AND the tick due then still runs
    assert invoke(queued(NOW + 30))["ticks"] == 1


def test_a_failed_tick_costs_that_tick_only() -> None:
    # GIVEN the minute scheduled, and the +15 s tick failing with a bug (the function errors,
    # the tick queue's redrive sends its message to the DLQ)
    runtime = tick_world()
    invoke(scheduled())
    runtime.clock.now = NOW + 15
    publish = runtime.events.publish

    def broken(events: Any) -> Any:
        raise RuntimeError("a bug")

    runtime.events.publish = broken
    with pytest.raises(RuntimeError):
        invoke(queued(NOW + 15))
    # WHEN the +30 s tick arrives THEN it ticks: the keeper queued it, no chain was broken
    runtime.events.publish = publish
    runtime.clock.now = NOW + 30
    assert invoke(queued(NOW + 30))["ticks"] == 1
    # AND the next minute's scheduled invocation ticks and queues that minute again
    runtime.clock.now = NOW + 60
    next_minute = datetime.fromtimestamp(NOW + 60, tz=UTC).isoformat()
    answer = invoke({"scheduled_time": next_minute})
    assert (answer["ticks"], len(answer["scheduled_ticks"])) == (1, 3)


def test_a_tick_redelivered_after_a_timeout_does_not_decide_again() -> None:
    # GIVEN a tick that claimed its due time and was then cut off by the Lambda timeout
    runtime = tick_world()
    runtime.table.claims[0] = round((NOW + 15) * 1000)
    # WHEN its message comes back (visibility timeout passed, within the interval here)
    runtime.clock.now = NOW + 20
    answer = invoke(queued(NOW + 15))
    # THEN it decides nothing
    assert answer["ticks"] == 0 and "already claimed" in answer["skipped"]
    assert runtime.ecs.updates == []


def test_a_scheduler_invocation_late_by_more_than_an_interval_runs_the_tick_due_now() -> None:
    runtime = tick_world()
    runtime.clock.now = NOW + 20  # 20 s late: the +15 s tick is the one due now
    answer = invoke(scheduled())
    assert (answer["ticks"], answer["due"], answer["scheduled_ticks"]) == (
        1,
        NOW + 15,
        [NOW + 30, NOW + 45],
    )


def test_each_tick_starts_the_shards_for_its_due_time_and_each_shard_claims_it() -> None:
    # GIVEN 40 queues in 3 shards
    runtime = tick_world(others=QUEUES[1:])
    runtime.settings = runtime.settings.model_copy(update={"shards": 3})
    runtime.invoker = FakeInvoker()
    # WHEN the scheduled invocation runs
    answer = invoke(scheduled())
    # THEN it started shards 1 and 2 for its due time and ticked shard 0's queues
    payloads = sorted((call[1] for call in runtime.invoker.calls), key=lambda p: p["shard"])
    assert payloads == [
        {"due": NOW, "shard": 1, "shards": 3},
        {"due": NOW, "shard": 2, "shards": 3},
    ]
    assert {d["queue"] for d in answer["decisions"]} == {q for q in QUEUES if shard_of(q, 3) == 0}
    # WHEN shard 2 runs, twice (asynchronous Invoke is at-least-once) THEN it ticks once
    first, second = invoke(payloads[1]), invoke(payloads[1])
    assert {d["queue"] for d in first["decisions"]} == {q for q in QUEUES if shard_of(q, 3) == 2}
    assert (second["ticks"], second["decisions"]) == (0, [])


def test_a_minute_not_queued_is_reported_and_its_first_tick_still_runs() -> None:
    runtime = tick_world()
    runtime.ticks = FakeTicks(refuse=1)
    answer = invoke(scheduled())
    assert answer["ticks"] == 1 and answer["scheduled_ticks"] == [NOW + 15, NOW + 45]
    assert answer["shard_errors"] == ["1 later tick(s) refused by the tick queue"]
    runtime.ticks = None
    runtime.clock.now = NOW + 60
    answer = invoke({"scheduled_time": datetime.fromtimestamp(NOW + 60, tz=UTC).isoformat()})
    assert answer["ticks"] == 1
    assert answer["shard_errors"] == ["3 later tick(s) not queued: no tick queue configured"]


def test_without_the_claim_nothing_is_decided() -> None:
    runtime = tick_world()

    def unavailable(*_args: Any) -> None:
        raise ServiceUnavailable("PutItem", "down")

    runtime.table.claim_tick = unavailable
    answer = invoke(scheduled())
    assert answer["ticks"] == 0 and answer["scheduled_ticks"] == []
    assert "tick claim not written" in answer["shard_errors"][0]
    # AND its queue is published undecided (the queue-silent alarm's metric): the invocation
    # logs, so only this tells the operator that nothing decides it
    assert runtime.publish_fleet_metrics.published == [{"UndecidedQueues": 1.0}]


def test_a_claim_refused_as_a_duplicate_publishes_nothing() -> None:
    # GIVEN the tick claimed already by another invocation, which decides its queues
    runtime = tick_world()
    assert invoke(scheduled())["ticks"] == 1
    published = len(runtime.publish_fleet_metrics.published)
    # WHEN the schedule delivers the same tick again THEN it decides and publishes nothing
    answer = invoke(scheduled())
    assert answer["ticks"] == 0
    assert len(runtime.publish_fleet_metrics.published) == published


def test_once_still_runs_one_tick_in_tick_mode() -> None:
    # the demo and the integration tests drive single ticks with `once`
    runtime = tick_world()
    answer = invoke({"once": True})
    assert (answer["ticks"], answer["scheduled_ticks"]) == (1, [])
    assert runtime.ticks.queued == []


LINE = line_to_dict(JumpLine(NOW, 2.0, 1.0, 3.64, ticked_at=NOW + 0.3, expires_at=NOW + 20.3))


def jump_message(**fields: Any) -> dict[str, Any]:
    """The tick-queue event of a jump message (`ingest.jumps`), with `fields` changed (None:
    left out)."""
    body = {"jump": "orders", "line": LINE, "arrived": 40.0, "until": NOW + 4, **fields}
    body = {name: value for name, value in body.items() if value is not None}
    return {"Records": [{"messageId": "m", "body": json.dumps(body)}]}


@pytest.mark.parametrize(
    "event",
    [
        pytest.param({"Records": []}, id="no-record"),
        pytest.param({"Records": [queued(NOW)["Records"][0]] * 2}, id="two-records"),
        pytest.param({"Records": [{"body": "not json"}]}, id="not-json"),
        pytest.param({"Records": [{"body": "[1]"}]}, id="not-an-object"),
        pytest.param({"Records": [{"body": "{}"}]}, id="no-due"),
        pytest.param({"Records": [{"body": '{"due": "NaN"}'}]}, id="nan-due"),
        pytest.param({"Records": [{"body": '{"due": -5}'}]}, id="negative-due"),
        pytest.param({"Records": "x"}, id="records-not-a-list"),
        pytest.param(jump_message(line=None), id="jump-without-line"),
        pytest.param(jump_message(jump=None), id="line-without-jump"),
        pytest.param(jump_message(jump=""), id="jump-empty-queue"),
        pytest.param(jump_message(line={**LINE, "rate": -1.0}), id="jump-negative-rate"),
        pytest.param(jump_message(line={**LINE, "sigmas": "NaN"}), id="jump-nan-sigmas"),
        pytest.param(jump_message(line={"since": NOW}), id="jump-line-cut-short"),
        pytest.param(jump_message(arrived=-3), id="jump-negative-count"),
    ],
)
def test_a_malformed_tick_message_is_refused(event: dict[str, Any]) -> None:
    with pytest.raises((ValueError, ValidationError)):
        parse_request(event)


def test_a_jump_message_is_read_as_a_jump_tick_of_its_queue() -> None:
    request = parse_request(jump_message())
    assert (request.jump, request.due, request.arrived) == ("orders", None, 40.0)
    line = request.jump_line()
    assert line is not None and line_to_dict(line) == LINE


@pytest.mark.parametrize(
    ("interval", "dues"),
    [
        pytest.param(15.0, [0.0, 15.0, 30.0, 45.0], id="15s"),
        pytest.param(25.0, [0.0, 25.0, 50.0], id="25s-not-dividing"),
        pytest.param(60.0, [0.0], id="60s"),
    ],
)
def test_minute_dues(interval: float, dues: list[float]) -> None:
    assert minute_dues(NOW, interval) == [NOW + due for due in dues]
    assert not is_stale(NOW, NOW + interval - 0.001, interval)
    assert is_stale(NOW, NOW + interval, interval)
