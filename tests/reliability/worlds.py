"""Resources on the endpoint for the reliability tests, and the controller wired to them."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from queue_autoscale.adapters.aws import AwsClients
from queue_autoscale.adapters.dynamodb import counter_pk, second_sk
from queue_autoscale.controller.runtime import EvaluateRuntime
from queue_autoscale.handlers import evaluate
from queue_autoscale.settings import EvaluateSettings

NOW = 1_763_000_000.0
"""2025-11-13T02:13:20Z: the controller's clock."""
SECOND = int(NOW)
MAX_WORKERS = 5
START_WORKERS = 2
BACKLOG = 120
"""Jobs waiting per queue (6/s over the last 20 s, 1 s jobs, SLA 30 s): the core wants
6 > max 5 (2 + 120 / 30 s, the landing-clear fleet)."""


@dataclass
class Fleet:
    """Two queues (separate clusters, so each has its own DescribeServices call), a load
    table, an archive bucket; both queues backlogged so the controller wants to scale up."""

    kit: Any
    clients: AwsClients
    queues: list[str] = field(default_factory=list)
    clusters: dict[str, str] = field(default_factory=dict)
    urls: dict[str, str] = field(default_factory=dict)
    table: str = ""
    bucket: str = ""

    @classmethod
    def create(
        cls, kit: Any, clients: AwsClients, bases: tuple[str, ...] = ("hurt", "other")
    ) -> Fleet:
        """Build the resources; `bases` name the queues (no name contains another)."""
        kit.require_ecs()
        fleet = cls(kit, clients)
        fleet.table = kit.load_table()
        fleet.bucket = kit.bucket()
        for base in bases:
            queue = kit.name(base)
            cluster = kit.name(f"c{base}")
            fleet.queues.append(queue)
            fleet.clusters[queue] = cluster
            fleet.urls[queue] = kit.queue(base)
            kit.service(cluster, queue, START_WORKERS)
            fleet.backlog(queue, BACKLOG)
            fleet.count(queue, range(SECOND - 20, SECOND), queued=6)
            fleet.count(queue, range(SECOND - 300, SECOND - 20, 10), completed=10, busy_ms=10_000)
        return fleet

    def backlog(self, queue: str, jobs: int) -> None:
        """Put `jobs` messages on the queue."""
        for first in range(0, jobs, 10):
            self.clients.sqs.send_message_batch(
                QueueUrl=self.urls[queue],
                Entries=[
                    {"Id": str(i), "MessageBody": "job"} for i in range(min(10, jobs - first))
                ],
            )

    def count(self, queue: str, seconds: range, **counts: int) -> None:
        """Counter items as record_events leaves them (25 per BatchWriteItem)."""
        items = [
            {
                "pk": {"S": counter_pk(queue)},
                "sk": {"S": second_sk(second)},
                "expires_at": {"N": str(second + 86_400)},
                **{name: {"N": str(value)} for name, value in counts.items()},
            }
            for second in seconds
        ]
        for first in range(0, len(items), 25):
            requests = [{"PutRequest": {"Item": item}} for item in items[first : first + 25]]
            self.clients.dynamodb.batch_write_item(RequestItems={self.table: requests})

    def settings(self, interval_seconds: float = 30.0, **overrides: Any) -> EvaluateSettings:
        """Evaluate settings for every queue of the fleet (`overrides` go into each config)."""
        configs = [
            {
                "queue": queue,
                "cluster": self.clusters[queue],
                "max_workers": MAX_WORKERS,
                "sla_seconds": 30,
                # New workers useful at once: the backlog alone decides (14 > max here).
                "provisioning_lead_seconds": 0,
                **overrides,
            }
            for queue in self.queues
        ]
        settings: EvaluateSettings = EvaluateSettings.from_environ(
            {
                "QUEUES_CONFIG": json.dumps(configs),
                "LOAD_TABLE": self.table,
                "ARCHIVE_BUCKET": self.bucket,
                "EVENT_BUS_NAME": "default",
                "EVALUATION_INTERVAL_SECONDS": str(interval_seconds),
            }
        )
        return settings

    def runtime(self, clients: AwsClients | None = None, **overrides: Any) -> EvaluateRuntime:
        """A controller on these resources with a fixed clock and a recording metrics sink."""
        runtime = evaluate.build_runtime(
            self.settings(**overrides),
            clients or self.clients,
            clock=lambda: NOW,
            sleep=lambda _: None,
        )
        return runtime

    def desired(self, queue: str) -> int:
        """The service's desiredCount now."""
        answer = self.clients.ecs.describe_services(cluster=self.clusters[queue], services=[queue])
        return int(answer["services"][0]["desiredCount"])

    def state_version(self, queue: str) -> int:
        """The STATE item's version (0 when absent)."""
        item = self.clients.dynamodb.get_item(
            TableName=self.table,
            Key={"pk": {"S": f"Q#{queue}"}, "sk": {"S": "STATE"}},
            ConsistentRead=True,
        ).get("Item")
        return int(item["version"]["N"]) if item else 0


class MetricsRecorder:
    """A MetricsSink that keeps what each queue published."""

    def __init__(self) -> None:
        self.published: list[tuple[str, dict[str, float]]] = []

    def __call__(self, queue: str, values: Any) -> None:
        self.published.append((queue, dict(values)))

    def last(self, queue: str) -> dict[str, float]:
        """The latest values published for a queue."""
        return next(values for name, values in reversed(self.published) if name == queue)


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextmanager
def captured_logs(logger: Any) -> Iterator[list[logging.LogRecord]]:
    """Log records a Powertools Logger emits inside the block (extra keys are attributes)."""
    handler = _Records()
    logger.addHandler(handler)
    try:
        yield handler.records
    finally:
        logger.removeHandler(handler)
