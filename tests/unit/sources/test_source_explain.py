"""Explain-level: the partition cap binding, and prefetch changing what "in flight" means.

Each decision is made from the snapshot the evaluate tick builds out of a source's reading,
and read back as `explain` shows it (target, constraints, reason).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from queue_autoscale.adapters.cloudwatch import OldestAge
from queue_autoscale.adapters.rabbitmq import split_unacked
from queue_autoscale.adapters.sqs import QueueDepth
from queue_autoscale.cli import app
from queue_autoscale.config import parse_queue
from queue_autoscale.core import (
    ControllerState,
    CounterRow,
    Decision,
    Readings,
    build_snapshot,
)
from tests.unit.core.builders import decide_default

NOW = 1_763_000_000.0
RUNNING = 4


def rows(rate: int, job_ms: int = 1000) -> list[CounterRow]:
    """Five minutes of counters: `rate` jobs/s queued and completed, 1 s jobs."""
    return [
        CounterRow(
            second=int(NOW) - s,
            queued=rate,
            started=rate,
            completed=rate,
            busy_ms=rate * job_ms,
            pickup_ms=0,
        )
        for s in range(1, 301)
    ]


class Service:
    running = RUNNING
    desired = RUNNING
    pending = 0
    deployment_in_progress = False


def decide_for(
    config: Any, depth: QueueDepth, age: float, partitions: int | None = None
) -> Decision:
    readings = Readings(
        depth=depth,
        oldest_age=OldestAge(age_seconds=age, lag_seconds=0.0),
        fleet=Service(),
        dlq_depth=None,
        rows=rows(2),
    )
    snapshot = build_snapshot(config.queue, NOW, readings)
    settings = config.settings(30.0, partitions)
    return decide_default(snapshot, settings, ControllerState(config.queue), NOW).decision


KAFKA = {
    "queue": "orders",
    "max_workers": 50,
    "source": {
        "type": "kafka",
        "cluster_name": "prod",
        "topic": "orders",
        "consumer_group": "workers",
        "partitions": 6,
    },
}


def test_the_partition_cap_binds_and_says_so() -> None:
    # GIVEN a consumer group 20,000 messages behind on a 6-partition topic (max 50 workers)
    config = parse_queue(KAFKA)
    # WHEN the controller decides
    decision = decide_for(config, QueueDepth(visible=20_000, in_flight=0, delayed=0), age=25.0)
    # THEN the drain wants far more than 6, and the partition cap holds it at 6
    assert decision.terms.drain > 6
    assert decision.target == 6
    assert decision.constraints == ("partition_cap",)
    assert "capped at partition_cap 6" in decision.reason


def test_two_consumers_per_worker_halve_the_cap_and_a_live_count_replaces_it() -> None:
    config = parse_queue({**KAFKA, "source": {**KAFKA["source"], "consumers_per_worker": 2}})
    depth = QueueDepth(visible=20_000, in_flight=0, delayed=0)
    assert decide_for(config, depth, age=25.0).target == 3
    assert decide_for(config, depth, age=25.0, partitions=24).target == 12


def test_without_the_cap_max_workers_binds_instead() -> None:
    config = parse_queue({**KAFKA, "source": {**KAFKA["source"], "partitions": 500}})
    decision = decide_for(config, QueueDepth(visible=20_000, in_flight=0, delayed=0), age=25.0)
    assert decision.target == 50 and decision.constraints == ("max_workers",)


RABBIT = {
    "queue": "orders",
    "max_workers": 60,
    "source": {
        "type": "rabbitmq",
        "management_url": "https://b-1.mq.us-east-1.amazonaws.com",
        "prefetch": 10,
        "credentials_secret": "rabbit",
    },
}


def test_prefetch_changes_what_in_flight_means() -> None:
    # GIVEN 4 workers with prefetch 10 holding 40 unacked messages, none ready: each works on
    # one and keeps 9 in its buffer; the oldest buffered job has waited 20 s of a 30 s SLA
    config = parse_queue(RABBIT)
    waiting, working = split_unacked(0, 40, 4, prefetch=10, concurrency=1)
    read_with_prefetch = QueueDepth(visible=waiting, in_flight=working, delayed=0)
    broker_view = QueueDepth(visible=0, in_flight=40, delayed=0)

    with_prefetch = decide_for(config, read_with_prefetch, age=20.0)
    as_broker_says = decide_for(config, broker_view, age=20.0)

    # THEN read with the prefetch, 36 jobs wait and 4 are worked on: the 4 busy workers stay,
    # and the 36 waiting jobs count as backlog (9 per worker) for the sizing terms
    assert (waiting, working) == (36, 4)
    assert with_prefetch.target == RUNNING
    assert with_prefetch.backlog_per_instance == 36 / RUNNING
    assert "kept 4 workers busy with 4 jobs" in with_prefetch.reason
    # AND taken as the broker says, 40 "in flight" no longer pins 40 workers as busy: busy
    # workers are running ones, so the floor keeps the 4 that hold messages, as with the
    # prefetch read
    assert as_broker_says.target == RUNNING
    assert "kept 40 workers busy" not in as_broker_says.reason
    assert "kept 4 workers busy with 40 jobs" in as_broker_says.reason


def test_explain_cli_reports_the_partition_cap(tmp_path: Path) -> None:
    config = tmp_path / "kafka.json"
    config.write_text(json.dumps(KAFKA))
    snapshot = tmp_path / "snapshot.json"
    snapshot.write_text(
        json.dumps(
            {
                "queue": "orders",
                "now": NOW,
                "visible": 20_000,
                "in_flight": 0,
                "delayed": 0,
                "oldest_age_seconds": 25.0,
                "arrival_rate": 2.0,
                "mean_job_seconds": 1.0,
                "running": RUNNING,
                "desired": RUNNING,
                "pending": 0,
                "deployment_in_progress": False,
                "dlq_depth": 0,
                "failure_rate": 0.0,
            }
        )
    )
    result = CliRunner().invoke(
        app, ["explain", "--config", str(config), "--snapshot", str(snapshot), "--json"]
    )
    assert result.exit_code == 0, result.stdout
    data = json.loads(result.stdout)
    assert data["target"] == 6 and data["constraints"] == ["partition_cap"]
