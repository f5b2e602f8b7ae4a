"""Kafka (Amazon MSK): a consumer group's lag, from CloudWatch or from the Kafka admin API.

CloudWatch (`AWS/Kafka`, dimensions Cluster Name, Consumer Group, Topic; published once a
minute when the cluster's consumer-lag monitoring is on): `SumOffsetLag` (messages behind,
summed over partitions), `MaxOffsetLag` and `EstimatedMaxTimeLag` (seconds the furthest-behind
partition lags). The time lag's datapoint is minutes old when read; like SQS's
ApproximateAgeOfOldestMessage it is returned with that lag so the core ages it forward.

The admin API (optional, `bootstrap_servers`) reads live offsets: lag is the sum over the
topic's partitions of log-end offset minus the group's committed offset; a partition with no
commit follows the consumers' reset policy; KEDA's persistent-lag and partitions-with-lag rules
are options. It needs the Lambda in the cluster's VPC and, with IAM auth,
`kafka-cluster:Connect`/`Describe*` (docs/sources.md); the client is adapters/kafka_admin.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from queue_autoscale.adapters.cloudwatch import OldestAge
from queue_autoscale.adapters.errors import (
    AccessDenied,
    AdapterError,
    MalformedResponse,
    NotFound,
    ServiceUnavailable,
)
from queue_autoscale.adapters.rabbitmq import PERIOD_SECONDS, latest_values, recent_metric_results

CLOUDWATCH_OPERATION = "GetMetricData AWS/Kafka"
ADMIN_OPERATION = "Kafka admin offsets"
LAG_METRICS = {
    "sumlag": "SumOffsetLag",
    "maxlag": "MaxOffsetLag",
    "timelag": "EstimatedMaxTimeLag",
}


@dataclass(frozen=True, slots=True)
class ConsumerLag:
    """One consumer group's position on one topic."""

    lag: int
    """Messages behind the log end, summed over partitions."""
    age: OldestAge | None
    """EstimatedMaxTimeLag and how old that datapoint is (None: not published)."""
    partitions: int | None = None
    """The topic's partition count (admin path only)."""
    measured_at: float | None = None
    """Epoch seconds the lag refers to (a CloudWatch datapoint); None: read live."""
    max_partition_lag: int | None = None


def build_lag_queries(cluster: str, group: str, topic: str) -> list[dict[str, Any]]:
    """One query per consumer-lag metric (ids are the keys of LAG_METRICS)."""
    dimensions = [
        {"Name": "Cluster Name", "Value": cluster},
        {"Name": "Consumer Group", "Value": group},
        {"Name": "Topic", "Value": topic},
    ]
    return [
        {
            "Id": key,
            "MetricStat": {
                "Metric": {
                    "Namespace": "AWS/Kafka",
                    "MetricName": metric,
                    "Dimensions": dimensions,
                },
                "Period": PERIOD_SECONDS,
                "Stat": "Maximum",
            },
            "ReturnData": True,
        }
        for key, metric in LAG_METRICS.items()
    ]


def parse_lag_metrics(results: Any, now: float, resource: str) -> ConsumerLag | None:
    """The latest lag reading; None when SumOffsetLag has no datapoint in the lookback.

    A datapoint at t covers [t, t + 60 s) and is taken as measured at its end.
    """
    newest = latest_values(results, CLOUDWATCH_OPERATION, resource)
    if "sumlag" not in newest:
        return None
    lag_at, lag = newest["sumlag"]
    age: OldestAge | None = None
    if "timelag" in newest:
        at, seconds = newest["timelag"]
        age = OldestAge(age_seconds=seconds, lag_seconds=max(0.0, now - (at + PERIOD_SECONDS)))
    biggest = newest.get("maxlag")
    return ConsumerLag(
        lag=round(lag),
        age=age,
        measured_at=lag_at + PERIOD_SECONDS,
        max_partition_lag=round(biggest[1]) if biggest else None,
    )


class MskLagMetrics:
    """Reads a consumer group's lag on a topic from CloudWatch (one GetMetricData)."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def lag(self, cluster: str, group: str, topic: str, now: float) -> ConsumerLag | None:
        """The latest reading (None: no datapoint, e.g. lag monitoring off or no commits)."""
        resource = f"{cluster}/{group}/{topic}"
        queries = build_lag_queries(cluster, group, topic)
        results = recent_metric_results(self._client, queries, now, CLOUDWATCH_OPERATION, resource)
        return parse_lag_metrics(results, now, resource)


NO_COMMIT_LAG_LATEST = 1
"""A partition with no committed offset under offset reset `latest`: its consumer will start at
the log end, so nothing retained is backlog, but one consumer is still needed there to commit
(KEDA's documented default for an invalid offset, scaleToZeroOnInvalidOffset false)."""


@dataclass(frozen=True, slots=True)
class PartitionOffsets:
    """One partition's offsets as the brokers report them."""

    end: int
    """The log-end offset (the next offset to be written)."""
    earliest: int
    """The earliest offset still retained."""
    committed: int | None
    """The group's committed offset (None: never committed)."""


def partition_lags(
    offsets: Mapping[int, PartitionOffsets], reset_policy: str, resource: str = ""
) -> dict[int, int]:
    """Lag per partition: log end - committed offset. With no commit the consumers' own reset
    policy says where they would start: `latest` gives NO_COMMIT_LAG_LATEST (the log end, plus
    the one consumer the partition still needs), `earliest` the whole retained log. A commit
    beyond the log end (a truncated or recreated topic) is malformed, not a negative lag."""
    if not offsets:
        raise MalformedResponse(ADMIN_OPERATION, "the topic has no partitions", resource=resource)
    lags: dict[int, int] = {}
    for partition, at in sorted(offsets.items()):
        if at.committed is None:
            if at.end < at.earliest or at.earliest < 0:
                raise MalformedResponse(
                    ADMIN_OPERATION,
                    f"partition {partition}: earliest {at.earliest} after log end {at.end}",
                    resource=resource,
                )
            whole = at.end - at.earliest
            lags[partition] = NO_COMMIT_LAG_LATEST if reset_policy == "latest" else whole
            continue
        if at.end < 0 or at.committed < 0 or at.committed > at.end:
            raise MalformedResponse(
                ADMIN_OPERATION,
                f"partition {partition}: committed {at.committed} and log end {at.end} give no lag",
                resource=resource,
            )
        lags[partition] = at.end - at.committed
    return lags


def stuck_partitions(
    previous: Mapping[int, int | None], now: Mapping[int, PartitionOffsets], lags: Mapping[int, int]
) -> frozenset[int]:
    """KEDA's persistent lag: partitions that lag while their committed offset has not moved
    since the previous read (a stuck consumer or a poison record: more workers do not help)."""
    return frozenset(
        partition
        for partition, at in now.items()
        if lags.get(partition, 0) > 0
        and at.committed is not None
        and previous.get(partition) == at.committed
    )


def admin_reading(
    lags: Mapping[int, int], *, stuck: frozenset[int] = frozenset(), limit_to_lagging: bool = False
) -> ConsumerLag:
    """The source's reading: the lag summed over the partitions not stuck, and the partitions
    consumers can usefully hold (all of them, or with `limit_to_lagging` those that lag, at
    least one), for the partition cap."""
    counted = {p: lag for p, lag in lags.items() if p not in stuck}
    lagging = sum(1 for lag in counted.values() if lag > 0)
    return ConsumerLag(
        lag=sum(counted.values()),
        age=None,
        partitions=max(1, lagging) if limit_to_lagging else len(lags),
        max_partition_lag=max(counted.values(), default=0),
    )


class OffsetsClient(Protocol):
    """Reads a topic's partition offsets and a group's commits (adapters/kafka_admin.py)."""

    def offsets(self, group: str, topic: str) -> dict[int, PartitionOffsets]:
        """Every partition's offsets; AdapterError (or the client's own error) on failure."""
        ...


@dataclass(frozen=True, slots=True)
class AdminRules:
    """KEDA's rules as the source's config sets them."""

    reset_policy: str = "latest"
    exclude_persistent_lag: bool = False
    limit_to_partitions_with_lag: bool = False


class KafkaAdminLag:
    """Lag and partition count from the brokers (the admin-API path). Keeps the previous read's
    committed offsets for the persistent-lag rule (a new instance, as after a cold start,
    cannot tell a stuck partition on its first read)."""

    def __init__(self, client: OffsetsClient, rules: AdminRules | None = None) -> None:
        self._client = client
        self._rules = rules or AdminRules()
        self._previous: dict[int, int | None] = {}

    def lag(self, group: str, topic: str) -> tuple[ConsumerLag, frozenset[int]]:
        """(the reading, the partitions left out as stuck); failures become AdapterErrors."""
        resource = f"{group}/{topic}"
        try:
            offsets = self._client.offsets(group, topic)
        except AdapterError:
            raise
        except Exception as error:
            raise translate_kafka_error(error, resource) from error
        rules = self._rules
        lags = partition_lags(offsets, rules.reset_policy, resource)
        stuck: frozenset[int] = frozenset()
        if rules.exclude_persistent_lag:
            stuck = stuck_partitions(self._previous, offsets, lags)
        self._previous = {partition: at.committed for partition, at in offsets.items()}
        reading = admin_reading(
            lags, stuck=stuck, limit_to_lagging=rules.limit_to_partitions_with_lag
        )
        return reading, stuck


def translate_kafka_error(error: Exception, resource: str) -> AdapterError:
    """A Kafka client's error as the project's: auth failures, missing topics, the rest
    5xx-like. confluent-kafka's KafkaException carries a KafkaError whose name() says which."""
    inner: Any = error.args[0] if error.args else None
    named = getattr(inner, "name", None)
    name = str(named()) if callable(named) else type(error).__name__
    upper = name.upper()
    if "AUTHORIZATION" in upper or "AUTHENTICATION" in upper:
        return AccessDenied(ADMIN_OPERATION, str(error), code=name, resource=resource)
    if "UNKNOWN_TOPIC" in upper or "UNKNOWNTOPIC" in upper or "GROUP_ID_NOT_FOUND" in upper:
        return NotFound(ADMIN_OPERATION, str(error), code=name, resource=resource)
    return ServiceUnavailable(ADMIN_OPERATION, str(error) or name, code=name, resource=resource)
