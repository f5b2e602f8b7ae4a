"""evaluate's adapters against an AWS endpoint: the batched reads and the guarded state write."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import pytest

from queue_autoscale.adapters.cloudwatch import OldestAgeReader
from queue_autoscale.adapters.counter_migration import Migration, migrate_legacy_counters
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
    table.add_counters_once("orders", 100, {"m1": {"queued": 2, "busy_ms": 500}}, expires_at=1000)
    table.add_counters_once("orders", 100, {"m2": {"queued": 1, "completed": 1}}, expires_at=1000)
    table.add_counters_once("orders", 205, {"m3": {"failed": 1}}, expires_at=1000)
    table.add_counters_once("emails", 150, {"m4": {"queued": 9}}, expires_at=1000)
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


NOW_SECOND = 1_763_000_000


def test_a_window_query_returns_only_rows_within_its_seconds(kit: Any, clients: Any) -> None:
    # GIVEN a row in January 1970 (an `at` sent in seconds, divided again) and one inside the
    # window; unpadded keys compared as strings put S#1762999 between S#1762998800 and S#1763000000
    table = LoadTable(clients.dynamodb, kit.load_table())
    table.add_counters_once(
        "orders", 1_762_999, {"m5": {"queued": 5}}, expires_at=1_762_999 + 86_400
    )
    table.add_counters_once(
        "orders", NOW_SECOND - 10, {"m6": {"queued": 1}}, expires_at=NOW_SECOND + 86_400
    )
    # WHEN the controller reads its 1,200 s window
    rows = table.counter_rows("orders", NOW_SECOND - 1_200, NOW_SECOND)
    # THEN only the row inside it comes back
    assert rows == [CounterRow(second=NOW_SECOND - 10, queued=1)]


def _legacy_counter(clients: Any, table: str, second: int, **counts: int) -> None:
    item = {"pk": {"S": "Q#orders"}, "sk": {"S": f"S#{second}"}}
    item |= {field: {"N": str(value)} for field, value in counts.items()}
    item["expires_at"] = {"N": str(second + 86_400)}
    clients.dynamodb.put_item(TableName=table, Item=item)


def test_legacy_counters_move_to_the_new_keys_once_and_1970_rows_go(kit: Any, clients: Any) -> None:
    # GIVEN the earlier layout's counters (pk Q#, unpadded sk) for two live seconds and a 1970
    # one, a STATE item beside them, and a count the new layout already wrote for one second
    name = kit.load_table()
    table = LoadTable(clients.dynamodb, name)
    _legacy_counter(clients, name, NOW_SECOND - 20, queued=2, busy_ms=700, completed=1)
    _legacy_counter(clients, name, NOW_SECOND - 10, queued=3)
    _legacy_counter(clients, name, 1_762_999, queued=9)
    table.write_state("orders", {"queue": "orders", "samples": []}, 0)
    table.add_counters_once("orders", NOW_SECOND - 10, {"m7": {"queued": 1}}, expires_at=NOW_SECOND)

    def migrate() -> Migration:
        return migrate_legacy_counters(
            clients.dynamodb, name, now=NOW_SECOND, keep_seconds=2 * 86_400, skew_seconds=300
        )

    # WHEN the migration runs twice
    first, second = migrate(), migrate()
    # THEN the live seconds moved (summed with the new count), the 1970 row is deleted, and the
    # second run had nothing left to do
    assert first == Migration(moved=2, deleted=1)
    assert second == Migration()
    assert table.counter_rows("orders", 0, NOW_SECOND) == [
        CounterRow(second=NOW_SECOND - 20, queued=2, completed=1, busy_ms=700),
        CounterRow(second=NOW_SECOND - 10, queued=4),
    ]
    # AND no legacy counter item is left, while STATE is untouched
    left = clients.dynamodb.scan(TableName=name)["Items"]
    assert sorted((i["pk"]["S"], i["sk"]["S"][:2]) for i in left) == [
        ("C#orders", "S#"),
        ("C#orders", "S#"),
        ("Q#orders", "ST"),
    ]
