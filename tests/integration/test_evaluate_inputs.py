"""evaluate's adapters against an AWS endpoint: the batched reads and the guarded state write."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import pytest

from queue_autoscale.adapters.cloudwatch import OldestAgeReader
from queue_autoscale.adapters.dynamodb import LoadTable
from queue_autoscale.adapters.ecs import EcsServices, ServiceRef, ServiceStatus
from queue_autoscale.adapters.errors import NotFound, StateConflict
from queue_autoscale.adapters.sqs import QueueDepth, SqsQueues
from queue_autoscale.core import CounterRow

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("moto")]


def test_queue_depth_counts_visible_in_flight_and_delayed(kit: Any, clients: Any) -> None:
    url = kit.queue("work")
    for index in range(5):
        clients.sqs.send_message(QueueUrl=url, MessageBody=f"job {index}")
    clients.sqs.send_message(QueueUrl=url, MessageBody="later", DelaySeconds=600)
    clients.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=2, VisibilityTimeout=600)

    depth = SqsQueues(clients.sqs).depth(kit.name("work"))

    assert depth == QueueDepth(visible=3, in_flight=2, delayed=1)


def test_a_missing_queue_is_not_found(kit: Any, clients: Any) -> None:
    with pytest.raises(NotFound, match="GetQueueUrl"):
        SqsQueues(clients.sqs).depth(kit.name("nowhere"))


TEST_SQS_NAMESPACE = "QueueAutoscaleTest/SQS"
"""Stands in for AWS/SQS, where only AWS may publish (PutMetricData there is refused)."""


def test_oldest_age_reads_the_latest_datapoint_of_each_queue(kit: Any, clients: Any) -> None:
    # GIVEN SQS-style age datapoints for two of three queues, in a namespace a test may use
    now = time.time()
    minute = int(now // 60) * 60
    for name, series in (("a", [40.0, 55.0]), ("b", [7.0])):
        clients.cloudwatch.put_metric_data(
            Namespace=TEST_SQS_NAMESPACE,
            MetricData=[
                {
                    "MetricName": "ApproximateAgeOfOldestMessage",
                    "Dimensions": [{"Name": "QueueName", "Value": kit.name(name)}],
                    "Timestamp": datetime.fromtimestamp(minute - 60 * (len(series) - i), UTC),
                    "Value": age,
                    "Unit": "Seconds",
                }
                for i, age in enumerate(series)
            ],
        )

    # WHEN one GetMetricData asks for all three
    ages = OldestAgeReader(clients.cloudwatch, namespace=TEST_SQS_NAMESPACE).oldest_ages(
        [kit.name("a"), kit.name("b"), kit.name("c")], now
    )

    # THEN each queue has its newest value; the third has none
    a, b = ages[kit.name("a")], ages[kit.name("b")]
    assert a is not None and b is not None
    assert (a.age_seconds, b.age_seconds) == (55.0, 7.0)
    assert a.lag_seconds == pytest.approx(now - minute, abs=1.0)
    assert ages[kit.name("c")] is None


def test_describe_services_batches_beyond_ten_and_reports_missing(kit: Any, clients: Any) -> None:
    kit.require_ecs()
    cluster = kit.name("workers")
    for index in range(11):
        kit.service(cluster, f"svc-{index}", running=index)
    refs = [ServiceRef(cluster, f"svc-{index}") for index in range(11)]
    refs.append(ServiceRef(cluster, "ghost"))

    answer = EcsServices(clients.ecs).describe(refs)

    assert [answer[ref] for ref in refs[:11]] == [
        ServiceStatus(i, i, 0, False, "ACTIVE") for i in range(11)
    ]
    assert isinstance(answer[refs[11]], NotFound)


def test_update_service_sets_desired(kit: Any, clients: Any) -> None:
    kit.require_ecs()
    cluster = kit.name("workers")
    kit.service(cluster, "svc", running=1)
    assert EcsServices(clients.ecs).set_desired(ServiceRef(cluster, "svc"), 4) == 4
    service = clients.ecs.describe_services(cluster=cluster, services=["svc"])["services"][0]
    assert service["desiredCount"] == 4


def test_counters_state_and_model_round_trip(kit: Any, clients: Any) -> None:
    # GIVEN counters added twice to one second, once to another, and a model
    table = LoadTable(clients.dynamodb, kit.load_table())
    table.add_counters("orders", 100, {"queued": 2, "busy_ms": 500}, expires_at=1000)
    table.add_counters("orders", 100, {"queued": 1, "completed": 1}, expires_at=1000)
    table.add_counters("orders", 205, {"failed": 1}, expires_at=1000)
    table.add_counters("emails", 150, {"queued": 9}, expires_at=1000)
    model = {"queue": "orders", "fitted_at": 1.5, "level": 2.25, "slope_per_hour": -0.5}
    table.put_model("orders", model)

    # THEN a window query returns the summed rows of that queue only, in order
    assert table.counter_rows("orders", 0, 300) == [
        CounterRow(second=100, queued=3, completed=1, busy_ms=500),
        CounterRow(second=205, failed=1),
    ]
    assert table.counter_rows("orders", 101, 204) == []
    # AND the first state write succeeds, a stale one conflicts, a fresh one succeeds
    assert (
        table.write_state("orders", {"queue": "orders", "samples": [[1.5, 0.25, 3, 2, 0]]}, 0) == 1
    )
    with pytest.raises(StateConflict):
        table.write_state("orders", {"queue": "orders", "samples": []}, 0)
    assert table.write_state("orders", {"queue": "orders", "samples": []}, 1) == 2
    # AND one BatchGetItem reads STATE and MODEL of both queues
    documents = table.read_documents(["orders", "emails"])
    assert documents["orders"] == ({"queue": "orders", "samples": [], "version": 2}, model)
    assert documents["emails"] == (None, None)
