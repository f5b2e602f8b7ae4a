"""What ingest uses, wired once per cold start (tests and the demo build their own)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from queue_autoscale.adapters.aws import AwsClients
from queue_autoscale.adapters.dynamodb import LoadTable
from queue_autoscale.adapters.firehose import archive_writer
from queue_autoscale.adapters.sqs import DeadLetters, SqsQueues, TickQueue
from queue_autoscale.config import QueueConfig
from queue_autoscale.controller.config_loader import QueueConfigLoader, build_loader
from queue_autoscale.controller.ports import (
    CounterTable,
    DeadLetterQueue,
    EventArchive,
    JumpLines,
    TickScheduler,
)
from queue_autoscale.settings import RecordSettings
from queue_autoscale.telemetry import Clock, MetricsSink, emf_metrics

COUNTER_WRITE_CONCURRENCY = 10
"""botocore's default connection pool per client (max_pool_connections): more threads would
wait for a connection, not write sooner."""


@dataclass
class RecordRuntime:
    """What the handler uses, built once per cold start (tests and the demo build their own)."""

    settings: RecordSettings
    table: CounterTable
    archive: EventArchive
    dead_letters: DeadLetterQueue
    clock: Clock = time.time
    publish_metrics: MetricsSink = emf_metrics
    max_concurrency: int = COUNTER_WRITE_CONCURRENCY
    """Counter writes in flight at once."""
    config: QueueConfigLoader | None = None
    """Where the queue list (the events allowlist) comes from (None: the settings' fixed
    $QUEUES_CONFIG)."""
    jumps: JumpLines | None = None
    """The queues' jump lines (`ingest.jumps`); None, or no `ticks`: no jump ticks."""
    ticks: TickScheduler | None = None
    """The evaluate function's tick queue, where a jump tick is asked for."""

    def __post_init__(self) -> None:
        if self.config is None:
            self.config = build_loader(self.settings)

    def queues(self, now: float) -> tuple[QueueConfig, ...]:
        """The configured queues at `now` (epoch s), the config store's last good document."""
        assert self.config is not None  # set by __post_init__
        return self.config.load(now)


def build_runtime(
    settings: RecordSettings, clients: AwsClients, clock: Clock = time.time
) -> RecordRuntime:
    """Wire adapters from clients and settings."""
    table = LoadTable(clients.dynamodb, settings.load_table)
    sqs = SqsQueues(clients.sqs)
    tick_url = settings.tick_queue_url
    return RecordRuntime(
        settings=settings,
        table=table,
        archive=archive_writer(clients, settings.archive_bucket, settings.events_stream),
        dead_letters=DeadLetters(sqs, settings.events_dlq_url),
        clock=clock,
        config=build_loader(settings, clients),
        jumps=table if tick_url else None,
        ticks=TickQueue(sqs, tick_url) if tick_url else None,
    )
