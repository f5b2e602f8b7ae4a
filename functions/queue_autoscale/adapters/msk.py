"""Kafka (Amazon MSK): a consumer group's lag, from CloudWatch or from the Kafka admin API.

CloudWatch (`AWS/Kafka`, dimensions Cluster Name, Consumer Group, Topic; published once a
minute when the cluster's consumer-lag monitoring is on): `SumOffsetLag` (messages behind,
summed over partitions), `MaxOffsetLag` and `EstimatedMaxTimeLag` (seconds the furthest-behind
partition lags). The time lag's datapoint is minutes old when read; like SQS's
ApproximateAgeOfOldestMessage it is returned with that lag so the core ages it forward.

The admin API (optional, `bootstrap_servers`) reads fresher offsets: lag is the sum over the
topic's partitions of log-end offset minus the group's committed offset (a partition with no
commit counts from its earliest offset). It needs the Lambda in the cluster's VPC and, with IAM
auth, `kafka-cluster:Connect`/`Describe*` (docs/sources.md).
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


def partition_lag(
    end_offsets: Mapping[int, int],
    committed: Mapping[int, int | None],
    earliest: Mapping[int, int],
    resource: str = "",
) -> ConsumerLag:
    """Lag = sum over partitions of log-end offset - committed offset (earliest if none).

    Every partition of `end_offsets` counts; a committed offset beyond the log end (a
    truncated or recreated topic) is malformed, not a negative lag.
    """
    if not end_offsets:
        raise MalformedResponse(ADMIN_OPERATION, "the topic has no partitions", resource=resource)
    total = biggest = 0
    for partition, end in end_offsets.items():
        start = committed.get(partition)
        if start is None:
            start = earliest.get(partition, 0)
        if end < 0 or start < 0 or start > end:
            raise MalformedResponse(
                ADMIN_OPERATION,
                f"partition {partition}: committed {start} and log end {end} give no lag",
                resource=resource,
            )
        total += end - start
        biggest = max(biggest, end - start)
    return ConsumerLag(lag=total, age=None, partitions=len(end_offsets), max_partition_lag=biggest)


class OffsetsClient(Protocol):
    """The three reads the admin path needs (kafka-python's clients provide them)."""

    def partitions(self, topic: str) -> list[int]:
        """Partition ids of the topic."""
        ...

    def end_offsets(self, topic: str, partitions: list[int]) -> dict[int, int]:
        """Log-end offset per partition."""
        ...

    def earliest_offsets(self, topic: str, partitions: list[int]) -> dict[int, int]:
        """Earliest retained offset per partition."""
        ...

    def committed(self, group: str, topic: str) -> dict[int, int | None]:
        """The group's committed offset per partition (None: never committed)."""
        ...


class KafkaAdminLag:
    """Lag and partition count from the brokers (the admin-API path)."""

    def __init__(self, client: OffsetsClient) -> None:
        self._client = client

    def lag(self, group: str, topic: str) -> ConsumerLag:
        """Read offsets and compute the lag; client failures become AdapterErrors."""
        resource = f"{group}/{topic}"
        try:
            partitions = self._client.partitions(topic)
            if not partitions:
                raise NotFound(ADMIN_OPERATION, "topic has no partitions", resource=resource)
            ends = self._client.end_offsets(topic, partitions)
            earliest = self._client.earliest_offsets(topic, partitions)
            committed = self._client.committed(group, topic)
        except AdapterError:
            raise
        except Exception as error:
            raise translate_kafka_error(error, resource) from error
        return partition_lag(ends, committed, earliest, resource)


def translate_kafka_error(error: Exception, resource: str) -> AdapterError:
    """kafka-python's errors as the project's: auth failures, missing topics, the rest 5xx-like."""
    name = type(error).__name__
    if "Authorization" in name or "Authentication" in name or "SaslAuthentication" in name:
        return AccessDenied(ADMIN_OPERATION, str(error), code=name, resource=resource)
    if "UnknownTopic" in name or "GroupIdNotFound" in name:
        return NotFound(ADMIN_OPERATION, str(error), code=name, resource=resource)
    return ServiceUnavailable(ADMIN_OPERATION, str(error) or name, code=name, resource=resource)
