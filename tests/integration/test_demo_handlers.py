"""The demo's two handlers on its emulated stack: each runs with its function's environment as
template.yaml gives it, and the jump ticks the record path asks for on the tick queue reach
evaluate one message an invocation, as the stack's event source would deliver them."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from queue_autoscale.adapters.dynamodb import JUMP_FIELD
from queue_autoscale.client import EventRecorder
from queue_autoscale.config import Profile
from queue_autoscale.demo.driver import pump_once
from queue_autoscale.demo.emulator import EmulatorStack
from queue_autoscale.demo.fleet import WorkerFleet, WorkerLaunch
from queue_autoscale.demo.options import DemoOptions
from queue_autoscale.demo.run import Parts, RunState, jump_ticks, ticks_now
from queue_autoscale.demo.stack import demo_stack, in_process_handlers
from queue_autoscale.demo.summary import queue_counts
from queue_autoscale.demo.template import function_environment, load_template
from queue_autoscale.handlers import evaluate, record_events

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("moto")]

LAMBDA_RUNTIME_VARIABLES = ("AWS_LAMBDA_LOG_FORMAT", "AWS_LAMBDA_LOG_LEVEL")
"""What Lambda derives from a function's LoggingConfig, beside its Environment.Variables."""


def template_variables(stack: EmulatorStack, logical_id: str) -> dict[str, str]:
    """`logical_id`'s Environment.Variables as read from template.yaml by the template tests'
    reader (not the emulator's resolver), with this stack's parameters and resource names."""
    names = {
        "QueueConfigParameter": stack.config_parameter,
        "LoadTable": stack.load_table,
        "ArchiveBucket": stack.archive_bucket,
        "EventsDeadLetterQueue": stack.events_dlq_url,
        "AWS::StackName": stack.stack_name,
        # not created on the emulator: the functions write the archive straight to the bucket
        "EventsDeliveryStream": "",
        "DecisionsDeliveryStream": "",
    }
    if stack.tick_queue_url is not None:
        names["EvaluateTickQueue"] = stack.tick_queue_url
    found = function_environment(load_template(), logical_id, {**stack.parameters, **names})
    return {name: value for name, value in found.items() if name not in LAMBDA_RUNTIME_VARIABLES}


def options_for(tmp_path: Path, endpoint: Any, **changes: Any) -> DemoOptions:
    """A demo run's options on the test endpoint, nothing shown or built at the end."""
    return DemoOptions(
        output=tmp_path, endpoint_url=endpoint.url, report=False, live=False, **changes
    )


@pytest.mark.parametrize(
    ("interval", "tick_queue"),
    [
        pytest.param(5.0, True, id="5s-interval-has-the-tick-queue"),
        pytest.param(60.0, False, id="60s-interval-has-none"),
    ],
)
def test_the_handlers_run_with_their_functions_template_environment(
    endpoint: Any, tmp_path: Path, interval: float, tick_queue: bool
) -> None:
    endpoint.require("ecs", "dynamodb")
    # GIVEN the demo's stack at an evaluation interval under a minute (HasTickQueue, and with
    # JumpTicks' default HasJumpTicks) or at a minute (neither)
    options = options_for(tmp_path, endpoint, interval_seconds=interval)
    # WHEN the demo installs its in-process handlers
    with demo_stack(options, lambda _message: None) as demo, in_process_handlers(demo) as handlers:
        stack = demo.stack
        # THEN each runs with its function's template variables, nothing added or changed
        assert handlers.record_environment == template_variables(stack, "RecordEventsFunction")
        assert handlers.evaluate_environment == template_variables(stack, "EvaluateFunction")
        record_settings = record_events.get_runtime().settings
        evaluate_runtime = evaluate.get_runtime()
        assert evaluate_runtime.settings.evaluation_interval_seconds == interval
        assert handlers.evaluate_environment["TICK_MODE"] == "tick"
        if tick_queue:
            # AND the stack has its tick queue, which both functions name, and the demo reads
            assert stack.tick_queue_url is not None
            assert demo.ticks is not None and demo.ticks.url == stack.tick_queue_url
            assert demo.ticks.batch_size == 1
            assert handlers.record_environment["TICK_QUEUE_URL"] == stack.tick_queue_url
            assert handlers.evaluate_environment["TICK_QUEUE_URL"] == stack.tick_queue_url
            assert handlers.evaluate_environment["JUMP_TICKS"] == "true"
            assert record_settings.tick_queue_url == stack.tick_queue_url
            assert evaluate_runtime.jump_lines and evaluate_runtime.ticks is not None
        else:
            # AND at a minute there is no tick queue, so no jump ticks either
            assert stack.tick_queue_url is None and demo.ticks is None
            assert "TICK_QUEUE_URL" not in handlers.record_environment
            assert "TICK_QUEUE_URL" not in handlers.evaluate_environment
            assert handlers.evaluate_environment["JUMP_TICKS"] == "false"
            assert record_settings.tick_queue_url is None
            assert not evaluate_runtime.jump_lines and evaluate_runtime.ticks is None


def test_a_jump_tick_the_record_path_asks_for_runs_one_evaluate_tick(
    endpoint: Any, tmp_path: Path
) -> None:
    endpoint.require("ecs", "dynamodb")
    # GIVEN the critical profile's queue (SLA 10 s <= lead 10 s + interval 5 s: a clock tick
    # leaves a jump line) and two clock ticks, the second of which reads the first's samples
    options = options_for(tmp_path, endpoint, profile=Profile.CRITICAL)
    with demo_stack(options, lambda _message: None) as demo, in_process_handlers(demo) as handlers:
        assert demo.ticks is not None
        sqs = demo.clients.sqs
        launch = WorkerLaunch(demo.worker_environment(options), tmp_path / "workers.log", 1.0)
        fleet = WorkerFleet(launch, options.provisioning_seconds, options.max_workers)
        parts = Parts(demo, handlers, options, fleet, time.time())
        state = RunState()
        clock = ticks_now(parts, state, clock=True) + ticks_now(parts, state, clock=True)
        assert [row.jump for row in clock] == [False, False]
        assert JUMP_FIELD in stored_state(demo)
        # a clock tick queues nothing on the tick queue: the demo's own clock is its only one
        assert queue_counts(sqs, demo.ticks.url) == (0, 0)
        # WHEN 30 jobs are queued at once and the events pump hands their events to
        # record_events
        recorder = EventRecorder(sqs, demo.events.url, flush_interval_seconds=3600)
        at_ms = int(time.time() * 1000)
        for index in range(30):
            recorder.queued(demo.work.name, f"burst-{index}", at_ms=at_ms)
        assert recorder.flush() == 30
        assert pump_once(sqs, demo.events, handlers.record, state.pump) > 0
        # THEN the record path asked for one jump tick on the tick queue
        assert queue_counts(sqs, demo.ticks.url) == (1, 0)
        # AND the demo delivers it: one evaluate invocation of one record, one jump-tick row
        rows = jump_ticks(parts, state)
        assert [row.jump for row in rows] == [True]
        assert "jump tick: 30 arrivals since" in rows[0].reason, rows[0].reason
        assert (state.tick_pump.invocations, state.tick_pump.records) == (1, 1)
        assert queue_counts(sqs, demo.ticks.url) == (0, 0)
        # AND the next pass finds nothing: the jump ran once
        assert jump_ticks(parts, state) == []
        assert state.tick_pump.invocations == 1


def stored_state(demo: Any) -> dict[str, Any]:
    """The demo queue's STATE item."""
    key = {"pk": {"S": f"Q#{demo.work.name}"}, "sk": {"S": "STATE"}}
    item = demo.clients.dynamodb.get_item(TableName=demo.stack.load_table, Key=key).get("Item")
    assert item is not None, "no STATE item"
    return dict(item)
