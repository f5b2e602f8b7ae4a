"""The demo's emulated system: the embedded endpoint, template.yaml's stack on it, the clients,
and the two Lambda handlers invoked in-process with runtimes built from the stack."""

from __future__ import annotations

import logging
import math
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from queue_autoscale.adapters.aws import LAMBDA_CONFIG, AwsClients, make_clients, make_session
from queue_autoscale.config import QueueConfig
from queue_autoscale.demo.driver import EVENTS_BATCH_SIZE, TICK_BATCH_SIZE, EventSource
from queue_autoscale.demo.emulator import (
    DUMMY_CREDENTIALS,
    EmulatorStack,
    WorkQueue,
    bootstrap,
    embedded_endpoint,
)
from queue_autoscale.demo.options import DemoOptions, demo_queue
from queue_autoscale.handlers import evaluate, record_events
from queue_autoscale.settings import EvaluateSettings, RecordSettings

# The two functions' logical ids in template.yaml.
RECORD_FUNCTION = "RecordEventsFunction"
EVALUATE_FUNCTION = "EvaluateFunction"
EVENTS_VISIBILITY_SECONDS = 10
"""How long the events pump hides a batch it received, s: longer than record_events takes."""


@dataclass
class FakeContext:
    """The LambdaContext attributes the handlers and Powertools read."""

    function_name: str
    invoked_function_arn: str
    memory_limit_in_mb: int = 512
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    timeout_seconds: float = 70.0

    def get_remaining_time_in_millis(self) -> int:
        """Milliseconds left (a fresh invocation each time)."""
        return int(self.timeout_seconds * 1000)


@dataclass
class DemoStack:
    """Everything the run needs about the emulated system."""

    url: str
    queue: QueueConfig
    stack: EmulatorStack
    work: WorkQueue
    clients: AwsClients
    events: EventSource
    """The events queue, read into record_events (the stack's RecordEventsFunctionEvents)."""
    ticks: EventSource | None
    """The tick queue, read into evaluate (EvaluateFunctionTick); None where the stack has none."""

    @property
    def region(self) -> str:
        """The stack's region."""
        return self.stack.region

    def worker_environment(self, options: DemoOptions) -> dict[str, str]:
        """A worker task's environment, as examples/worker's task definition sets it."""
        return {
            **DUMMY_CREDENTIALS,
            "AWS_DEFAULT_REGION": self.region,
            "AWS_ENDPOINT_URL": self.url,
            "WORKER_QUEUE_URL": self.work.url,
            "WORKER_QUEUE": self.work.name,
            "WORKER_EVENTS_QUEUE_URL": self.stack.events_queue_url,
            "WORKER_JOB": "queue_autoscale.worker.jobs:sleep_job",
            "WORKER_PREFETCH": str(options.worker_prefetch),
            "WORKER_WAIT_SECONDS": "1",
            "WORKER_DRAIN_SECONDS": f"{options.worker_drain_seconds:g}",
            "WORKER_JOB_TIMEOUT": f"{options.mean_job_seconds * 20:g}",
            "PATH": "/usr/bin:/bin",
        }


@contextmanager
def demo_stack(options: DemoOptions, log: Callable[[str], None]) -> Iterator[DemoStack]:
    """Start the endpoint (unless --endpoint-url), create the stack; stop the endpoint after."""
    # Its own server unless --endpoint-url: a stray $AWS_ENDPOINT_URL must not send the
    # demo's traffic elsewhere.
    with embedded_endpoint(options.endpoint_url, from_environment=False) as url:
        if options.endpoint_url is None:
            log(f"embedded AWS emulator (moto) on {url}")
        suffix = "" if options.endpoint_url is None else f"-{uuid.uuid4().hex[:6]}"
        queue = demo_queue(options, suffix)
        stack = bootstrap(
            url,
            [queue],
            stack_name=f"queue-autoscale{suffix}",
            evaluation_interval_seconds=evaluation_interval(options),
            dry_run=options.dry_run,
            log=log,
        )
        session = make_session(stack.region, DUMMY_CREDENTIALS)
        clients = make_clients(
            session=session, endpoint_url=url, region_name=stack.region, config=LAMBDA_CONFIG
        )
        events = EventSource(
            stack.events_queue_url,
            queue_arn(clients.sqs, stack.events_queue_url),
            EVENTS_BATCH_SIZE,
            EVENTS_VISIBILITY_SECONDS,
        )
        ticks = None
        if stack.tick_queue_url is not None:
            arn = queue_arn(clients.sqs, stack.tick_queue_url)
            ticks = EventSource(stack.tick_queue_url, arn, TICK_BATCH_SIZE)
        yield DemoStack(url, queue, stack, stack.work_queues[0], clients, events, ticks)


def queue_arn(sqs: Any, url: str) -> str:
    """A queue's ARN."""
    answer = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])
    return str(answer["Attributes"]["QueueArn"])


def evaluation_interval(options: DemoOptions) -> int:
    """EvaluationIntervalSeconds for the stack: the demo's interval within the template's 5..60."""
    return max(5, min(60, math.ceil(options.interval_seconds)))


@dataclass
class Handlers:
    """record_events and evaluate invoked in-process, with the metrics they would publish."""

    queue_metrics: dict[str, dict[str, float]] = field(default_factory=dict)
    fleet_metrics: dict[str, float] = field(default_factory=dict)
    """The last tick's fleet metrics (what the stack's alarms read)."""
    ingest_counts: dict[str, float] = field(
        default_factory=lambda: {"AcceptedEvents": 0.0, "RejectedEvents": 0.0}
    )
    record_context: FakeContext | None = None
    evaluate_context: FakeContext | None = None
    record_environment: dict[str, str] = field(default_factory=dict)
    """The variables record_events' settings were read from."""
    evaluate_environment: dict[str, str] = field(default_factory=dict)
    """The variables evaluate's settings were read from."""

    def record(self, event: dict[str, Any]) -> dict[str, Any]:
        """One record_events invocation."""
        return record_events.handler(event, self.record_context)  # type: ignore[arg-type]

    def evaluate(self, event: dict[str, Any]) -> dict[str, Any]:
        """One evaluate invocation; its answer (`controller.request.summary`)."""
        return dict(evaluate.handler(event, self.evaluate_context))

    def evaluate_once(self) -> dict[str, Any]:
        """One clock tick, as the scheduled invocation's `once` runs it (it queues no later
        ticks); the first decision (or {})."""
        answer = self.evaluate({"source": "scheduler", "once": True})
        return first_decision(answer)


def first_decision(answer: Mapping[str, Any]) -> dict[str, Any]:
    """An evaluate answer's first decision ({} when it decided nothing)."""
    decisions = answer.get("decisions")
    return dict(decisions[0]) if decisions else {}


@contextmanager
def in_process_handlers(demo: DemoStack) -> Iterator[Handlers]:
    """Install the handlers' runtimes, built from each function's environment as the stack
    holds it (template.yaml's Environment.Variables resolved on the emulator) and the stack's
    clients; the runtimes are removed again on the way out.

    Nothing is added to or overridden in those environments: the endpoint and the dummy
    credentials reach the handlers through the clients, as the role's credentials would
    through Lambda. The variables Lambda's runtime sets (AWS_LAMBDA_*) are not set: of them the
    settings read only the memory size, which no tick uses.
    """
    stack = demo.stack
    handlers = Handlers(
        record_environment=dict(stack.environments[RECORD_FUNCTION]),
        evaluate_environment=dict(stack.environments[EVALUATE_FUNCTION]),
    )
    arn = f"arn:aws:lambda:{stack.region}:123456789012:function:"
    handlers.record_context = FakeContext(
        stack.record_function, arn + stack.record_function, timeout_seconds=30
    )
    handlers.evaluate_context = FakeContext(stack.evaluate_function, arn + stack.evaluate_function)

    def capture_queue_metrics(name: str, values: Mapping[str, float]) -> None:
        handlers.queue_metrics[name] = dict(values)

    def capture_fleet_metrics(values: Mapping[str, float]) -> None:
        handlers.fleet_metrics = dict(values)

    def capture_ingest_metrics(_name: str, values: Mapping[str, float]) -> None:
        for key in handlers.ingest_counts:
            handlers.ingest_counts[key] += values.get(key, 0.0)

    record_runtime = record_events.build_runtime(
        RecordSettings.from_environ(handlers.record_environment), demo.clients
    )
    record_runtime.publish_metrics = capture_ingest_metrics
    evaluate_runtime = evaluate.build_runtime(
        EvaluateSettings.from_environ(handlers.evaluate_environment), demo.clients
    )
    evaluate_runtime.publish_metrics = capture_queue_metrics
    evaluate_runtime.publish_fleet_metrics = capture_fleet_metrics
    record_events.set_runtime(record_runtime)
    evaluate.set_runtime(evaluate_runtime)
    try:
        yield handlers
    finally:
        record_events.set_runtime(None)
        evaluate.set_runtime(None)


@contextmanager
def logs_to_file(path: Path) -> Iterator[None]:
    """Handler and library logs go to `path`, not over the live output (warnings and up)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as stream:
        file_handler = logging.StreamHandler(stream)
        file_handler.setFormatter(
            logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s")
        )
        # Powertools loggers keep their JSON handler; only its stream and level change.
        saved: list[tuple[Any, Any, Any, Any]] = []
        for logger in (evaluate.logger, record_events.logger):
            handler: Any = logger.registered_handler
            saved.append((logger, logger.log_level, handler, handler.setStream(stream)))
            logger.setLevel("WARNING")
        root = logging.getLogger()
        root.addHandler(file_handler)
        try:
            yield
        finally:
            root.removeHandler(file_handler)
            for logger, level, handler, previous in saved:
                handler.setStream(previous)
                logger.setLevel(level)
