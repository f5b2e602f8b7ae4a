"""Pure parsers of the Kafka and RabbitMQ sources: tables of named cases."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from queue_autoscale.adapters.errors import (
    AccessDenied,
    MalformedResponse,
    NotFound,
    ServiceUnavailable,
)
from queue_autoscale.adapters.msk import (
    KafkaAdminLag,
    build_lag_queries,
    parse_lag_metrics,
    partition_lag,
)
from queue_autoscale.adapters.rabbitmq import (
    build_mq_queries,
    parse_mq_metrics,
    parse_queue,
    split_unacked,
)

NOW = 1_763_000_000.0


def at(seconds_before_now: float) -> datetime:
    return datetime.fromtimestamp(NOW - seconds_before_now, UTC)


# -- RabbitMQ management API -------------------------------------------------------------


def test_parse_queue_reads_the_counts_and_the_head_timestamp() -> None:
    body = {
        "name": "orders",
        "messages": 25,
        "messages_ready": 18,
        "messages_unacknowledged": 7,
        "consumers": 2,
        "head_message_timestamp": NOW - 42,
    }
    queue = parse_queue(body, "/orders")
    assert (queue.ready, queue.unacked, queue.consumers) == (18, 7, 2)
    assert queue.head_stamp == NOW - 42


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({"messages_unacknowledged": 1, "consumers": 0}, id="ready-missing"),
        pytest.param(
            {"messages_ready": -1, "messages_unacknowledged": 1, "consumers": 0}, id="negative"
        ),
        pytest.param(
            {"messages_ready": "5", "messages_unacknowledged": 1, "consumers": 0}, id="string"
        ),
        pytest.param(
            {"messages_ready": 1.5, "messages_unacknowledged": 1, "consumers": 0}, id="fraction"
        ),
        pytest.param(
            {"messages_ready": True, "messages_unacknowledged": 1, "consumers": 0}, id="bool"
        ),
        pytest.param(
            {"messages_ready": float("nan"), "messages_unacknowledged": 1, "consumers": 0},
            id="nan",
        ),
        pytest.param({"messages_ready": 1, "messages_unacknowledged": 1}, id="consumers-missing"),
        pytest.param([1, 2], id="not-an-object"),
    ],
)
def test_parse_queue_refuses_what_is_not_a_count(body: Any) -> None:
    with pytest.raises(MalformedResponse, match="RabbitMQ"):
        parse_queue(body, "/orders")


def test_a_queue_without_a_head_timestamp_has_no_age() -> None:
    queue = parse_queue(
        {"messages_ready": 3, "messages_unacknowledged": 0, "consumers": 1}, "/orders"
    )
    assert queue.head_stamp is None


@pytest.mark.parametrize(
    ("ready", "unacked", "consumers", "prefetch", "concurrency", "expected"),
    [
        pytest.param(0, 40, 4, 10, 1, (36, 4), id="prefetch-10-holds-9-per-worker-waiting"),
        pytest.param(0, 4, 4, 1, 1, (0, 4), id="prefetch-1-all-unacked-in-service"),
        pytest.param(5, 12, 3, 4, 4, (5, 12), id="prefetch-equals-concurrency"),
        pytest.param(5, 12, 3, 8, 2, (11, 6), id="concurrency-2-prefetch-8"),
        pytest.param(7, 3, 5, 10, 1, (7, 3), id="fewer-unacked-than-slots"),
        pytest.param(2, 9, None, 10, 1, (2, 9), id="consumers-unknown-broker-view"),
        pytest.param(9, 0, 0, 10, 1, (9, 0), id="no-consumers"),
    ],
)
def test_split_unacked_counts_prefetch_buffers_as_waiting(
    ready: int,
    unacked: int,
    consumers: int | None,
    prefetch: int,
    concurrency: int,
    expected: tuple[int, int],
) -> None:
    waiting, working = split_unacked(ready, unacked, consumers, prefetch, concurrency)
    assert (waiting, working) == expected
    assert waiting + working == ready + unacked  # nothing lost or invented


# -- CloudWatch AWS/AmazonMQ and AWS/Kafka ---------------------------------------------------


def test_mq_queries_name_the_broker_vhost_and_queue() -> None:
    queries = build_mq_queries("b-1", "/", "orders")
    names = {q["MetricStat"]["Metric"]["MetricName"] for q in queries}
    assert names == {"MessageReadyCount", "MessageUnacknowledgedCount", "ConsumerCount"}
    dims = queries[0]["MetricStat"]["Metric"]["Dimensions"]
    assert dims == [
        {"Name": "Broker", "Value": "b-1"},
        {"Name": "VirtualHost", "Value": "/"},
        {"Name": "Queue", "Value": "orders"},
    ]


def test_parse_mq_metrics_takes_the_newest_datapoint_as_of_its_minute_end() -> None:
    results = [
        {"Id": "ready", "Timestamps": [at(180), at(120)], "Values": [50.0, 60.0]},
        {"Id": "unacked", "Timestamps": [at(120)], "Values": [4.0]},
        {"Id": "consumers", "Timestamps": [at(120)], "Values": [2.0]},
    ]
    queue = parse_mq_metrics(results, "b-1//orders")
    assert queue is not None
    assert (queue.ready, queue.unacked, queue.consumers) == (60, 4, 2)
    assert queue.measured_at == NOW - 60


def test_parse_mq_metrics_without_a_count_is_no_reading() -> None:
    results = [{"Id": "ready", "Timestamps": [at(120)], "Values": [5.0]}]
    assert parse_mq_metrics(results, "b-1//orders") is None


def test_parse_mq_metrics_refuses_a_negative_count() -> None:
    results = [
        {"Id": "ready", "Timestamps": [at(120)], "Values": [-5.0]},
        {"Id": "unacked", "Timestamps": [at(120)], "Values": [1.0]},
    ]
    with pytest.raises(MalformedResponse, match="ready"):
        parse_mq_metrics(results, "b-1//orders")


def test_lag_queries_use_msk_consumer_lag_dimensions() -> None:
    queries = build_lag_queries("prod", "workers", "orders")
    names = [q["MetricStat"]["Metric"]["MetricName"] for q in queries]
    assert names == ["SumOffsetLag", "MaxOffsetLag", "EstimatedMaxTimeLag"]
    assert queries[0]["MetricStat"]["Metric"]["Namespace"] == "AWS/Kafka"
    dims = {d["Name"]: d["Value"] for d in queries[0]["MetricStat"]["Metric"]["Dimensions"]}
    assert dims == {"Cluster Name": "prod", "Consumer Group": "workers", "Topic": "orders"}


def test_parse_lag_metrics_returns_the_time_lag_with_its_publication_lag() -> None:
    results = [
        {"Id": "sumlag", "Timestamps": [at(180)], "Values": [1200.0]},
        {"Id": "maxlag", "Timestamps": [at(180)], "Values": [400.0]},
        {"Id": "timelag", "Timestamps": [at(180)], "Values": [35.0]},
    ]
    lag = parse_lag_metrics(results, NOW, "prod/workers/orders")
    assert lag is not None
    assert lag.lag == 1200 and lag.max_partition_lag == 400
    assert lag.age is not None
    # the datapoint covers [t, t + 60): 120 s have passed since it ended
    assert (lag.age.age_seconds, lag.age.lag_seconds) == (35.0, 120.0)
    assert lag.measured_at == NOW - 120


def test_parse_lag_metrics_without_sum_offset_lag_is_no_reading() -> None:
    results = [{"Id": "timelag", "Timestamps": [at(120)], "Values": [3.0]}]
    assert parse_lag_metrics(results, NOW, "x") is None


def test_parse_lag_metrics_refuses_mismatched_series() -> None:
    results = [{"Id": "sumlag", "Timestamps": [at(120), at(60)], "Values": [3.0]}]
    with pytest.raises(MalformedResponse, match="2 timestamps but 1 values"):
        parse_lag_metrics(results, NOW, "x")


# -- Kafka offsets (the admin path's arithmetic) ------------------------------------------


@pytest.mark.parametrize(
    ("ends", "committed", "earliest", "lag", "biggest"),
    [
        pytest.param({0: 100, 1: 50}, {0: 90, 1: 50}, {0: 0, 1: 0}, 10, 10, id="one-behind"),
        pytest.param({0: 100, 1: 80}, {0: 100}, {0: 0, 1: 30}, 50, 50, id="never-committed"),
        pytest.param({0: 7, 1: 7, 2: 7}, {0: 0, 1: 3, 2: 7}, {}, 11, 7, id="three-partitions"),
    ],
)
def test_partition_lag_sums_log_end_minus_committed(
    ends: dict[int, int],
    committed: dict[int, int | None],
    earliest: dict[int, int],
    lag: int,
    biggest: int,
) -> None:
    reading = partition_lag(ends, committed, earliest)
    assert reading.lag == lag
    assert reading.max_partition_lag == biggest
    assert reading.partitions == len(ends)


def test_partition_lag_refuses_a_commit_past_the_log_end() -> None:
    with pytest.raises(MalformedResponse, match="partition 0"):
        partition_lag({0: 10}, {0: 11}, {})


class Offsets:
    """An OffsetsClient answering from tables, or raising a named error from every call."""

    def __init__(self, error: Exception | None = None) -> None:
        self.error = error

    def partitions(self, topic: str) -> list[int]:
        if self.error:
            raise self.error
        return [0, 1]

    def end_offsets(self, topic: str, partitions: list[int]) -> dict[int, int]:
        return {0: 100, 1: 40}

    def earliest_offsets(self, topic: str, partitions: list[int]) -> dict[int, int]:
        return {0: 0, 1: 10}

    def committed(self, group: str, topic: str) -> dict[int, int | None]:
        return {0: 70, 1: None}


def test_admin_lag_reads_offsets_and_the_partition_count() -> None:
    lag = KafkaAdminLag(Offsets()).lag("workers", "orders")
    assert (lag.lag, lag.partitions, lag.max_partition_lag) == (30 + 30, 2, 30)


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        pytest.param(type("SaslAuthenticationFailedError", (Exception,), {})(), AccessDenied),
        pytest.param(type("TopicAuthorizationFailedError", (Exception,), {})(), AccessDenied),
        pytest.param(type("UnknownTopicOrPartitionError", (Exception,), {})(), NotFound),
        pytest.param(type("KafkaTimeoutError", (Exception,), {})(), ServiceUnavailable),
        pytest.param(type("NoBrokersAvailable", (Exception,), {})(), ServiceUnavailable),
    ],
)
def test_admin_client_errors_become_the_projects(error: Exception, kind: type) -> None:
    with pytest.raises(kind, match="Kafka admin offsets"):
        KafkaAdminLag(Offsets(error)).lag("workers", "orders")
