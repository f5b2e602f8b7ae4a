"""evaluate: the controller's entry point (EventBridge Scheduler once a minute, the tick queue).

Parse the request, run what it asks (`controller.ticks.serve`), summarize it. In tick mode (the
default) the scheduled invocation runs the minute's first tick and queues the others on the
tick queue, whose messages invoke one tick each (`controller.ticks`); in loop mode it ticks
every EVALUATION_INTERVAL_SECONDS for the minute (`controller.tick.run`). Either way a tick
starts the other shards and runs shard 0 (`controller.shards`); an event with `shard` and
`shards` runs that shard. No tick runs past the invocation's remaining time.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from queue_autoscale.adapters.aws import make_clients
from queue_autoscale.controller.request import parse_request, summary
from queue_autoscale.controller.runtime import EvaluateRuntime, build_runtime
from queue_autoscale.controller.ticks import serve
from queue_autoscale.settings import EvaluateSettings
from queue_autoscale.telemetry import logger, tracer

__all__ = ["build_runtime", "get_runtime", "handler", "logger", "set_runtime"]

DEADLINE_MARGIN_SECONDS = 10.0
"""A tick does not start, or run, within this much of the invocation's end."""

_runtime: EvaluateRuntime | None = None


def get_runtime() -> EvaluateRuntime:
    """The cached runtime; the first call reads the environment (a bad one fails here)."""
    global _runtime  # noqa: PLW0603 - one runtime per Lambda container, by design
    if _runtime is None:
        _runtime = build_runtime(EvaluateSettings.from_environ(), make_clients())
    return _runtime


def set_runtime(runtime: EvaluateRuntime | None) -> None:
    """Replace the cached runtime (tests, the demo); None makes the next call rebuild it."""
    global _runtime  # noqa: PLW0603
    _runtime = runtime


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Scheduler or tick-queue entry point: run the tick(s) asked for, return their decisions."""
    runtime = get_runtime()
    request = parse_request(event)
    deadline = None
    remaining_ms = getattr(context, "get_remaining_time_in_millis", None)
    if callable(remaining_ms):
        deadline = runtime.clock() + remaining_ms() / 1000.0 - DEADLINE_MARGIN_SECONDS
    result = serve(
        runtime,
        request,
        function_name=str(getattr(context, "function_name", "")),
        owner=getattr(context, "aws_request_id", None),
        deadline=deadline,
    )
    return summary(result)
