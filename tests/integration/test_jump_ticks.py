"""Jump ticks on an AWS endpoint, with both functions' template environments: a clock tick
leaves its jump line in the queue's STATE item; record_events counts each batch's arrivals
against it and, when they jump, claims it once and queues a tick of that queue on the tick
queue; the evaluate function, handed that message as its event source would, ticks that queue
alone, keeps the clock tick's readings and moves the line to now; a jump message that comes
after the next clock tick decides nothing.

What the endpoint really does here: the line's read (projected to its attributes), the counters'
strongly consistent Query, the one conditional claim, the tick queue and the evaluate function's
reading of its message.
What it cannot: run the event sources (as in test_evaluate_ticks.py, the test receives each
message and invokes the handler with the event the source would send).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from queue_autoscale.adapters.dynamodb import JUMP_FIELD, JUMP_FIRED_FIELD, LoadTable
from queue_autoscale.client import EventRecorder
from queue_autoscale.core import ControllerState
from queue_autoscale.core.jump import JumpLine, line_to_dict
from queue_autoscale.core.predictive_knobs import move_sigmas
from queue_autoscale.core.state import state_to_dict
from queue_autoscale.demo import sqs_event
from queue_autoscale.handlers import evaluate, record_events
from queue_autoscale.settings import EvaluateSettings, RecordSettings
from tests.integration.test_evaluate import NOW, SECOND, World, reset_runtime
from tests.integration.test_evaluate_ticks import as_event, receive, tick_queue

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("moto")]
__all__ = ["reset_runtime"]  # the fixture, used by name

INTERVAL = 10
"""The template's default interval."""


def line_item(world: World) -> dict[str, float]:
    """The queue's jump line as its STATE item holds it (numbers), with `fired_at` once
    claimed."""
    item = world.clients.dynamodb.get_item(
        TableName=world.table, Key={"pk": {"S": f"Q#{world.queue}"}, "sk": {"S": "STATE"}}
    ).get("Item")
    assert item is not None and JUMP_FIELD in item, "no jump line"
    line = {name: float(value["N"]) for name, value in item[JUMP_FIELD]["M"].items()}
    if JUMP_FIRED_FIELD in item:
        line["fired_at"] = float(item[JUMP_FIRED_FIELD]["N"])
    return line


def stored_state(world: World) -> dict[str, Any]:
    item = world.clients.dynamodb.get_item(
        TableName=world.table, Key={"pk": {"S": f"Q#{world.queue}"}, "sk": {"S": "STATE"}}
    )["Item"]
    return {name: value.get("N", value.get("S")) for name, value in item.items()}


def record(world: Any, setup: dict[str, Any], context: Any, seconds: dict[int, int]) -> Any:
    """Send `count` queued events in each epoch second through the client, hand them to
    record_events as one batch; its answer."""
    recorder = EventRecorder(world.clients.sqs, setup["events_url"], flush_interval_seconds=3600)
    for second, count in seconds.items():
        for index in range(count):
            recorder.queued(world.queue, f"j{second}-{index}", at_ms=second * 1000 + index)
    recorder.flush()
    messages = world.kit.receive_all(setup["events_url"])
    return record_events.handler(sqs_event(messages, setup["events_arn"]), context)


@pytest.fixture
def jumpy(
    kit: Any, clients: Any, function_environ: Any, reset_runtime: Any
) -> Iterator[dict[str, Any]]:
    """A queue served at 2 jobs/s for five minutes (a 30 s SLA the next clock tick's order
    cannot save: lead 60 s + interval 10 s), its tick queue and both functions' environments."""
    world = World(kit, clients, function_environ, running=2, max_workers=50, sla_seconds=30)
    world.count(range(SECOND - 300, SECOND), queued=2, started=2, completed=2, busy_ms=2_000)
    url, _ = tick_queue(kit, clients)
    events_url = kit.queue("events")
    names = {
        "QueuesConfig": json.dumps([world.config]),
        "LoadTable": world.table,
        "ArchiveBucket": world.bucket,
        "EvaluationIntervalSeconds": str(INTERVAL),
        "EvaluateTickQueue": url,
    }
    clock = {"now": NOW}
    settings = EvaluateSettings.from_environ(world.environ("EvaluateFunction", **names))
    evaluate.set_runtime(evaluate.build_runtime(settings, clients, clock=lambda: clock["now"]))
    dlq = kit.queue("events-dlq")
    recording = RecordSettings.from_environ(
        world.environ("RecordEventsFunction", **names, EventsDeadLetterQueue=dlq)
    )
    assert recording.tick_queue_url == url
    record_events.set_runtime(
        record_events.build_runtime(recording, clients, clock=lambda: clock["now"])
    )
    yield {
        "world": world,
        "url": url,
        "clock": clock,
        "events_url": events_url,
        "events_arn": kit.queue_arn(events_url),
    }
    record_events.set_runtime(None)


def test_a_jump_in_arrivals_ticks_its_queue_between_clock_ticks(
    jumpy: dict[str, Any], clients: Any, lambda_context: Any
) -> None:
    world, url, clock, setup = jumpy["world"], jumpy["url"], jumpy["clock"], jumpy
    # GIVEN the clock ticked the queue once before: a queue's first tick draws no line (no tick
    # watched its windows)
    clock["now"] = NOW - INTERVAL
    evaluate.handler({"once": True}, lambda_context)
    assert JUMP_FIELD not in stored_state(world)
    clock["now"] = NOW
    # WHEN the clock ticks
    answer = evaluate.handler({"once": True}, lambda_context)
    assert answer["decisions"][0]["queue"] == world.queue
    # THEN it leaves the line its 2 jobs/s drew, counted from its second
    line = line_item(world)
    assert line["since"] == SECOND and line["ticked_at"] == NOW
    assert line["rate"] == pytest.approx(2.0, rel=0.05)
    assert line["sigmas"] == pytest.approx(move_sigmas(1.0))
    assert line["expires_at"] == NOW + 2 * INTERVAL
    assert "fired_at" not in line

    # WHEN 3 s of arrivals at the rate it sized on are recorded
    clock["now"] = NOW + 3.5
    quiet = record(world, setup, lambda_context, {SECOND: 2, SECOND + 1: 2, SECOND + 2: 2})
    # THEN they ask for nothing, and the line is left as drawn
    assert quiet == {"batchItemFailures": []}
    assert receive(clients, url, 0) == []
    assert "fired_at" not in line_item(world)

    # WHEN 60 jobs arrive in the next second (and events queued before the line's second)
    clock["now"] = NOW + 4.5
    record(world, setup, lambda_context, {SECOND - 1: 5, SECOND + 3: 60})
    # THEN the line is claimed and one tick of that queue is asked for, on the 66 jobs queued
    # since the line's second (the 5 queued before it do not count)
    assert line_item(world)["fired_at"] == NOW + 4.5
    (message,) = receive(clients, url, 2)
    body = json.loads(message["Body"])
    assert (body["jump"], body["arrived"], body["until"]) == (world.queue, 66, NOW + 4.5)
    assert body["line"]["since"] == SECOND
    # AND a second burst asks for no second tick
    clock["now"] = NOW + 5.0
    record(world, setup, lambda_context, {SECOND + 4: 60})
    assert receive(clients, url, 0) == []

    the_jump_tick_runs_once(world, clock, message, lambda_context)


def the_jump_tick_runs_once(
    world: World, clock: dict[str, float], message: dict[str, Any], lambda_context: Any
) -> None:
    """The evaluate function, handed the jump message: it ticks the queue once, keeps the clock
    tick's time, moves the line; after the next clock tick, or once stale, it does nothing."""
    # WHEN the tick queue's event source hands the message to the evaluate function
    clock["now"] = NOW + 5.5
    before = stored_state(world)
    jumped = evaluate.handler(as_event(message), lambda_context)
    # THEN that queue alone is decided, said to be a jump tick, and scaled up
    (decision,) = jumped["decisions"]
    assert decision["queue"] == world.queue and decision["action"] == "up"
    assert "jump tick: 66 arrivals since" in decision["reason"]
    # AND the clock tick's time and shard stay in the state; the line counts from now
    after = stored_state(world)
    assert float(after["ticked_at"]) == float(before["ticked_at"]) == NOW
    assert after["shard"] == before["shard"]
    assert int(after["version"]) == int(before["version"]) + 1
    moved = line_item(world)
    assert moved["since"] == SECOND + 5 and moved["ticked_at"] == NOW
    assert "fired_at" not in moved

    # WHEN the next clock tick runs and the same jump message comes again (SQS delivers at
    # least once) THEN it decides nothing: the clock tick read the jump
    clock["now"] = NOW + INTERVAL
    evaluate.handler({"once": True}, lambda_context)
    assert line_item(world)["ticked_at"] == NOW + INTERVAL
    again = evaluate.handler(as_event(message), lambda_context)
    assert again["decisions"] == []
    # AND once its line's inputs are stale, it is not even read
    clock["now"] = NOW + 2 * INTERVAL + 1
    stale = evaluate.handler(as_event(message), lambda_context)
    assert stale["skipped"].startswith("stale:") and stale["ticks"] == 0


def test_record_events_claims_the_line_its_state_item_holds_once(
    kit: Any, clients: Any, function_environ: Any, lambda_context: Any
) -> None:
    """The record path alone (no ECS: every endpoint): the line as the evaluate function's
    STATE write leaves it, the projected read, the counters' consistent Query, the claim on the
    line's second, and the tick queue."""
    # GIVEN a queue whose STATE item holds a line of 2 jobs/s drawn at NOW
    queue, table, bucket = kit.name("orders"), kit.load_table(), kit.bucket()
    url, _ = tick_queue(kit, clients)
    events_url = kit.queue("events")
    line = JumpLine(SECOND, 2.0, 1.0, move_sigmas(1.0), ticked_at=NOW, expires_at=NOW + 20)
    state = {**state_to_dict(ControllerState(queue=queue)), "ticked_at": NOW, "shard": "0/1"}
    LoadTable(clients.dynamodb, table).write_state(
        queue, {**state, JUMP_FIELD: line_to_dict(line)}, 0
    )
    recording = RecordSettings.from_environ(
        function_environ(
            "RecordEventsFunction",
            QueuesConfig=json.dumps([{"queue": queue}]),
            LoadTable=table,
            ArchiveBucket=bucket,
            EventsDeadLetterQueue=kit.queue("events-dlq"),
            EvaluationIntervalSeconds=str(INTERVAL),
            EvaluateTickQueue=url,
        )
    )
    clock = {"now": NOW + 2.5}
    record_events.set_runtime(
        record_events.build_runtime(recording, clients, clock=lambda: clock["now"])
    )
    setup = {"events_url": events_url, "events_arn": kit.queue_arn(events_url)}
    world = SimpleNamespace(queue=queue, clients=clients, kit=kit)
    try:
        # WHEN 4 jobs are queued in 2 s THEN nothing is asked
        record(world, setup, lambda_context, {SECOND: 2, SECOND + 1: 2})
        assert receive(clients, url, 0) == []
        # WHEN 40 more arrive in the next second THEN one tick is asked, and the line claimed
        clock["now"] = NOW + 3.5
        record(world, setup, lambda_context, {SECOND + 2: 40})
        (message,) = receive(clients, url, 2)
        assert json.loads(message["Body"])["arrived"] == 44
        stored = clients.dynamodb.get_item(
            TableName=table, Key={"pk": {"S": f"Q#{queue}"}, "sk": {"S": "STATE"}}
        )["Item"]
        assert float(stored[JUMP_FIRED_FIELD]["N"]) == NOW + 3.5
        assert int(stored["version"]["N"]) == 1  # the claim leaves the state's version alone
        # AND another burst asks for nothing more
        record(world, setup, lambda_context, {SECOND + 3: 40})
        assert receive(clients, url, 0) == []
    finally:
        record_events.set_runtime(None)
