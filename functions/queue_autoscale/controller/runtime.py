"""What the controller uses, wired once per cold start (tests and the demo build their own)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from queue_autoscale.adapters.aws import AwsClients
from queue_autoscale.adapters.cloudwatch import OldestAgeReader
from queue_autoscale.adapters.dynamodb import LoadTable
from queue_autoscale.adapters.ecs import EcsServices
from queue_autoscale.adapters.eventbridge import EventPublisher
from queue_autoscale.adapters.firehose import archive_writer
from queue_autoscale.adapters.lambdas import FunctionInvoker
from queue_autoscale.adapters.sqs import SqsQueues, TickQueue
from queue_autoscale.config import QueueConfig
from queue_autoscale.constants import FLEET_SILENT_BELOW_THRESHOLD
from queue_autoscale.controller.config_loader import QueueConfigLoader, build_loader
from queue_autoscale.controller.ports import (
    DecisionArchive,
    DecisionBus,
    OldestAges,
    QueueDepths,
    Services,
    StateTable,
    TickScheduler,
)
from queue_autoscale.core import DEFAULT_POLICY
from queue_autoscale.settings import EvaluateSettings
from queue_autoscale.sources import Sources
from queue_autoscale.telemetry import (
    FLEET_ZERO_FLOORS,
    Clock,
    FleetSink,
    Floors,
    MetricsSink,
    emf_fleet_metrics,
    emf_metrics,
)


@dataclass
class EvaluateRuntime:
    """The evaluate tick's adapters, clock and limits."""

    settings: EvaluateSettings
    sqs: QueueDepths
    oldest: OldestAges
    ecs: Services
    table: StateTable
    archive: DecisionArchive
    events: DecisionBus
    clock: Clock = time.time
    sleep: Callable[[float], None] = time.sleep
    publish_metrics: MetricsSink = emf_metrics
    publish_fleet_metrics: FleetSink = emf_fleet_metrics
    policy: str = DEFAULT_POLICY
    sources: Sources | None = None
    """Kafka and RabbitMQ queues' readers (SQS is read by the tick's batched calls)."""
    max_concurrency: int = 16
    """Threads for the tick's reads and per-queue actions (STATE writes, UpdateService): AWS
    calls are latency-bound and boto3 clients are thread-safe."""
    invoker: FunctionInvoker | None = None
    """Starts the other shards (asynchronous Invoke of this function); None: no fan-out."""
    tick_budget_seconds: float | None = None
    """Wall-clock seconds one tick may take before it publishes what it has (None: the
    evaluation interval, so a tick never runs into the next)."""
    config: QueueConfigLoader | None = None
    """Where the queue list comes from (None: the settings' fixed $QUEUES_CONFIG)."""
    ticks: TickScheduler | None = None
    """Queues the minute's later ticks (tick mode); None: no tick queue configured."""
    jump_lines: bool = False
    """A clock tick leaves its jump line for the record path in the STATE item (`core.jump`):
    JumpTicks on, and a tick queue to carry the jump ticks."""

    def __post_init__(self) -> None:
        if self.config is None:
            self.config = build_loader(self.settings)

    def queues(self, now: float) -> tuple[QueueConfig, ...]:
        """The queues to evaluate at `now` (epoch s): the store's last good config
        (ConfigUnavailable when none was ever read)."""
        assert self.config is not None  # set by __post_init__
        return self.config.load(now)


def fleet_floors(settings: EvaluateSettings) -> Floors:
    """The fleet metrics' floors: 0 for FLEET_SILENT_WHEN_ZERO and, without the dashboard, the
    lowest threshold of the alarms that read each of FLEET_SILENT_BELOW_THRESHOLD (alarms that
    take a missing datapoint as one below it): a healthy stack sends none of them, and
    CloudWatch bills a metric only for the hours it is sent. A metric with an unknown threshold
    keeps its zero floor, or none."""
    if settings.dashboard:
        return FLEET_ZERO_FLOORS
    thresholds = {
        "OverloadingThreshold": settings.overloading_threshold,
        "OverloadedThreshold": settings.overloaded_threshold,
        "SlaUsageThreshold": settings.sla_usage_threshold,
        "FleetUsageThreshold": settings.fleet_usage_threshold,
    }
    floors = dict(FLEET_ZERO_FLOORS)
    for metric, parameters in FLEET_SILENT_BELOW_THRESHOLD.items():
        known = [thresholds[parameter] for parameter in parameters]
        if all(value is not None for value in known):
            floors[metric] = min(value for value in known if value is not None)
    return floors


def build_runtime(
    settings: EvaluateSettings,
    clients: AwsClients,
    clock: Clock = time.time,
    sleep: Callable[[float], None] = time.sleep,
) -> EvaluateRuntime:
    """Wire adapters from clients and settings."""
    sqs = SqsQueues(clients.sqs)
    tick_url = settings.tick_queue_url
    table = LoadTable(clients.dynamodb, settings.load_table)
    return EvaluateRuntime(
        settings=settings,
        sqs=sqs,
        oldest=OldestAgeReader(clients.cloudwatch),
        ecs=EcsServices(clients.ecs),
        table=table,
        archive=archive_writer(clients, settings.archive_bucket, settings.decisions_stream),
        events=EventPublisher(clients.events, settings.event_bus_name),
        sources=Sources(clients.cloudwatch, clients.secretsmanager, clients.ssm),
        config=build_loader(settings, clients),
        invoker=FunctionInvoker(clients.lambda_) if clients.lambda_ is not None else None,
        ticks=TickQueue(sqs, tick_url) if tick_url else None,
        jump_lines=bool(tick_url) and settings.jump_ticks,
        publish_fleet_metrics=partial(emf_fleet_metrics, floors=fleet_floors(settings)),
        clock=clock,
        sleep=sleep,
    )
