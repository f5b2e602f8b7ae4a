"""The demo's two handlers on its emulated stack: each runs with its function's environment as
template.yaml gives it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from queue_autoscale.demo.emulator import EmulatorStack
from queue_autoscale.demo.options import DemoOptions
from queue_autoscale.demo.stack import demo_stack, in_process_handlers
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
            assert demo.ticks is not None and demo.ticks.url == stack.tick_queue_url
            assert demo.ticks.batch_size == 1
            assert stack.tick_queue_url is not None
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
