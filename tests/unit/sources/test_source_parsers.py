"""Pure parsers of the Kafka and RabbitMQ sources: tables of named cases."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from queue_autoscale.adapters.errors import (
    AccessDenied,
    MalformedResponse,
    NotFound,
    ServiceUnavailable,
)
from queue_autoscale.adapters.msk import (
    AdminRules,
    KafkaAdminLag,
    PartitionOffsets,
    admin_reading,
    build_lag_queries,
    parse_lag_metrics,
    partition_lags,
    stuck_partitions,
    translate_kafka_error,
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


def at_(end: int, committed: int | None, earliest: int = 0) -> PartitionOffsets:
    return PartitionOffsets(end=end, earliest=earliest, committed=committed)


@pytest.mark.parametrize(
    ("offsets", "policy", "lags"),
    [
        pytest.param({0: at_(100, 90), 1: at_(50, 50)}, "latest", {0: 10, 1: 0}, id="one-behind"),
        pytest.param(
            {0: at_(100, 100), 1: at_(80, None, 30)},
            "latest",
            {0: 0, 1: 1},
            id="never committed, reset latest: KEDA's lag of 1",
        ),
        pytest.param(
            {0: at_(100, 100), 1: at_(80, None, 30)},
            "earliest",
            {0: 0, 1: 50},
            id="never committed, reset earliest: everything retained",
        ),
        pytest.param(
            {0: at_(7, 0), 1: at_(7, 3), 2: at_(7, 7)}, "latest", {0: 7, 1: 4, 2: 0}, id="three"
        ),
    ],
)
def test_partition_lags_follow_the_commits_and_the_reset_policy(
    offsets: dict[int, PartitionOffsets], policy: str, lags: dict[int, int]
) -> None:
    assert partition_lags(offsets, policy) == lags


def test_partition_lags_refuse_a_commit_past_the_log_end() -> None:
    with pytest.raises(MalformedResponse, match="partition 0"):
        partition_lags({0: at_(10, 11)}, "latest")


@pytest.mark.parametrize(
    ("lags", "stuck", "limit", "lag", "partitions"),
    [
        pytest.param({0: 10, 1: 0, 2: 5}, frozenset(), False, 15, 3, id="every partition"),
        pytest.param({0: 10, 1: 0, 2: 5}, frozenset(), True, 15, 2, id="partitions with lag"),
        pytest.param({0: 10, 1: 0, 2: 5}, frozenset({0}), False, 5, 3, id="stuck left out"),
        pytest.param({0: 10, 1: 0, 2: 5}, frozenset({0}), True, 5, 1, id="stuck, with lag"),
        pytest.param({0: 0, 1: 0}, frozenset(), True, 0, 1, id="no lag: cap of one"),
    ],
)
def test_admin_reading_applies_kedas_rules(
    lags: dict[int, int], stuck: frozenset[int], limit: bool, lag: int, partitions: int
) -> None:
    reading = admin_reading(lags, stuck=stuck, limit_to_lagging=limit)
    assert (reading.lag, reading.partitions) == (lag, partitions)


def test_a_partition_is_stuck_when_it_lags_and_its_commit_has_not_moved() -> None:
    now = {0: at_(100, 40), 1: at_(100, 60), 2: at_(100, 100), 3: at_(100, None)}
    lags = partition_lags(now, "latest")
    previous: dict[int, int | None] = {0: 40, 1: 50, 2: 100, 3: None}
    assert stuck_partitions(previous, now, lags) == frozenset({0})


class Offsets:
    """An OffsetsClient answering from a table, or raising a named error."""

    def __init__(self, error: Exception | None = None) -> None:
        self.error = error
        self.table = {0: at_(100, 70), 1: at_(40, None, 10)}

    def offsets(self, group: str, topic: str) -> dict[int, PartitionOffsets]:
        if self.error:
            raise self.error
        return dict(self.table)


def test_admin_lag_reads_offsets_and_the_partition_count() -> None:
    lag, stuck = KafkaAdminLag(Offsets()).lag("workers", "orders")
    assert (lag.lag, lag.partitions, lag.max_partition_lag, stuck) == (30 + 1, 2, 30, frozenset())


def test_admin_lag_leaves_out_a_partition_stuck_since_the_last_read() -> None:
    offsets = Offsets()
    reader = KafkaAdminLag(offsets, AdminRules(exclude_persistent_lag=True))
    assert reader.lag("workers", "orders")[0].lag == 31  # first read: nothing to compare with
    offsets.table = {0: at_(120, 70), 1: at_(50, 50, 10)}  # partition 0 did not move
    lag, stuck = reader.lag("workers", "orders")
    assert (lag.lag, stuck) == (0, frozenset({0}))


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


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        pytest.param("SASL_AUTHENTICATION_FAILED", AccessDenied, id="sasl"),
        pytest.param("TOPIC_AUTHORIZATION_FAILED", AccessDenied, id="topic acl"),
        pytest.param("UNKNOWN_TOPIC_OR_PART", NotFound, id="no topic"),
        pytest.param("_TIMED_OUT", ServiceUnavailable, id="timeout"),
    ],
)
def test_confluent_kafka_errors_become_the_projects(code: str, kind: type) -> None:
    error = KafkaException(KafkaError(getattr(KafkaError, code)))
    assert isinstance(translate_kafka_error(error, "g/t"), kind)
