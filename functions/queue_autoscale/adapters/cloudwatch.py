"""CloudWatch: SQS `ApproximateAgeOfOldestMessage` for many queues in one GetMetricData.

SQS publishes this metric once a minute, a few minutes late; the lag is returned with the
value so the core can age it forward (DESIGN section 4, oldest-age rule). A reader asks
CloudWatch once per queue per metric period: the other ticks of that minute reuse the
datapoint, its lag recomputed for their `now` (GetMetricData is billed per metric requested).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from queue_autoscale.adapters.errors import MalformedResponse, aws_call
from queue_autoscale.core.snapshot import OldestAge

__all__ = [
    "AlarmReader",
    "AlarmState",
    "OldestAge",
    "OldestAgeReader",
    "build_queries",
    "parse_alarms",
    "parse_metric_data",
    "query_id",
]

SQS_NAMESPACE = "AWS/SQS"
"""Where SQS publishes ApproximateAgeOfOldestMessage (reserved: only AWS may publish there)."""
MAX_QUERIES = 500
"""GetMetricData takes at most 500 metric queries per call."""
PERIOD_SECONDS = 60
LOOKBACK_SECONDS = 900
"""How far back to look for the latest datapoint (SQS metrics can be minutes late)."""


def query_id(index: int) -> str:
    """A GetMetricData query id (must start with a lower-case letter)."""
    return f"q{index}"


def build_queries(
    queue_names: Sequence[str],
    period_seconds: int = PERIOD_SECONDS,
    namespace: str = SQS_NAMESPACE,
) -> list[dict[str, Any]]:
    """One MetricDataQuery per queue, ids `q0`, `q1`, ... in order."""
    return [
        {
            "Id": query_id(index),
            "MetricStat": {
                "Metric": {
                    "Namespace": namespace,
                    "MetricName": "ApproximateAgeOfOldestMessage",
                    "Dimensions": [{"Name": "QueueName", "Value": name}],
                },
                "Period": period_seconds,
                "Stat": "Maximum",
            },
            "ReturnData": True,
        }
        for index, name in enumerate(queue_names)
    ]


def _epoch(value: Any) -> float:
    if isinstance(value, datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=UTC)
        return moment.timestamp()
    if isinstance(value, int | float):
        return float(value)
    raise MalformedResponse("GetMetricData", f"timestamp {value!r} is not a time")


@dataclass(frozen=True, slots=True)
class _Point:
    """One queue's newest datapoint: its value (s) and when it was measured (epoch s)."""

    age_seconds: float
    measured_at: float

    def at(self, now: float) -> OldestAge:
        """The datapoint as read at `now` (epoch s): its lag is `now` minus when measured."""
        return OldestAge(age_seconds=self.age_seconds, lag_seconds=max(0.0, now - self.measured_at))


def parse_metric_data(
    results: Sequence[Mapping[str, Any]],
    queue_names: Sequence[str],
    now: float,
    period_seconds: int = PERIOD_SECONDS,
) -> dict[str, OldestAge | None]:
    """Latest datapoint per queue from MetricDataResults (None: no datapoint in the lookback).

    `now` is epoch seconds. A datapoint at timestamp t covers [t, t + period); the value
    is the maximum seen in it, so it is taken as measured at t + period.
    """
    points = _latest_points(results, queue_names, period_seconds)
    return {name: None if point is None else point.at(now) for name, point in points.items()}


def _latest_points(
    results: Sequence[Mapping[str, Any]], queue_names: Sequence[str], period_seconds: int
) -> dict[str, _Point | None]:
    """`parse_metric_data`'s newest datapoint per queue, with when it was measured."""
    latest: dict[str, _Point | None] = dict.fromkeys(queue_names)
    newest_at: dict[str, float] = {}
    ids = {query_id(index): name for index, name in enumerate(queue_names)}
    for result in results:
        name = ids.get(str(result.get("Id", "")))
        if name is None:
            continue
        timestamps = result.get("Timestamps", []) or []
        values = result.get("Values", []) or []
        if len(timestamps) != len(values):
            raise MalformedResponse(
                "GetMetricData",
                f"{len(timestamps)} timestamps but {len(values)} values",
                resource=name,
            )
        for stamp, value in zip(timestamps, values, strict=True):
            at = _epoch(stamp)
            if name in newest_at and newest_at[name] >= at:
                continue
            age = float(value)
            if age < 0:
                raise MalformedResponse(
                    "GetMetricData",
                    f"ApproximateAgeOfOldestMessage = {value!r} is negative",
                    resource=name,
                )
            newest_at[name] = at
            latest[name] = _Point(age_seconds=age, measured_at=at + period_seconds)
    return latest


class OldestAgeReader:
    """Reads the oldest-message age of many queues (one GetMetricData per 500 queues), each
    queue at most once per metric period: SQS publishes one datapoint a minute, so a second
    read within the same minute could only return what the first did."""

    def __init__(
        self, client: Any, period_seconds: int = PERIOD_SECONDS, namespace: str = SQS_NAMESPACE
    ) -> None:
        """`namespace` is AWS/SQS in production; tests read a namespace they may publish to."""
        self._client = client
        self._period = period_seconds
        self._namespace = namespace
        self._read: dict[str, tuple[int, _Point | None]] = {}
        """Per queue: the period index (epoch s // period) it was read in, and what was read."""

    def oldest_ages(
        self, queue_names: Sequence[str], now: float, lookback_seconds: float = LOOKBACK_SECONDS
    ) -> dict[str, OldestAge | None]:
        """Latest age and its lag per queue name; `now` is epoch seconds. Queues already read
        in `now`'s period are answered from that read (lag recomputed); the rest are asked."""
        period_index = math.floor(now / self._period)
        known = {
            name: read[1]
            for name in queue_names
            if (read := self._read.get(name)) is not None and read[0] == period_index
        }
        asked = [name for name in queue_names if name not in known]
        fresh = self._ask(asked, now, lookback_seconds) if asked else {}
        # Only the queues of this call are kept: the memory is bounded by the queue list.
        self._read = {name: (period_index, point) for name, point in {**known, **fresh}.items()}
        return {
            name: None if (point := self._read[name][1]) is None else point.at(now)
            for name in queue_names
        }

    def _ask(
        self, queue_names: Sequence[str], now: float, lookback_seconds: float
    ) -> dict[str, _Point | None]:
        """The newest datapoint of each queue from CloudWatch (epoch s `now`)."""
        answer: dict[str, _Point | None] = {}
        # Whole periods, as CloudWatch rounds them anyway: datapoints then start on the minute.
        period = self._period
        end = datetime.fromtimestamp(math.ceil(now / period) * period, UTC)
        start = datetime.fromtimestamp(math.floor((now - lookback_seconds) / period) * period, UTC)
        for first in range(0, len(queue_names), MAX_QUERIES):
            names = list(queue_names[first : first + MAX_QUERIES])
            results: list[Mapping[str, Any]] = []
            token: str | None = None
            while True:
                kwargs: dict[str, Any] = {
                    "MetricDataQueries": build_queries(names, self._period, self._namespace),
                    "StartTime": start,
                    "EndTime": end,
                    "ScanBy": "TimestampDescending",
                }
                if token:
                    kwargs["NextToken"] = token
                with aws_call("GetMetricData", f"{len(names)} queues"):
                    response = self._client.get_metric_data(**kwargs)
                results.extend(response.get("MetricDataResults", []))
                token = response.get("NextToken")
                if not token:
                    break
            answer.update(_latest_points(results, names, self._period))
        return answer


@dataclass(frozen=True, slots=True)
class AlarmState:
    """One CloudWatch alarm's state as DescribeAlarms reports it."""

    name: str
    state: str
    """OK, ALARM or INSUFFICIENT_DATA."""
    reason: str
    updated_at: float | None
    """Epoch seconds of the last state change (None when not reported)."""
    metric: str | None = None
    """The metric a plain metric alarm reads (None for metric math and composite alarms)."""
    threshold: float | None = None


def parse_alarms(response: Mapping[str, Any]) -> list[AlarmState]:
    """Metric and composite alarms of one DescribeAlarms page, by name."""
    alarms = []
    for item in [*response.get("MetricAlarms", []), *response.get("CompositeAlarms", [])]:
        name, state = item.get("AlarmName"), item.get("StateValue")
        if not isinstance(name, str) or not isinstance(state, str):
            raise MalformedResponse("DescribeAlarms", f"alarm without name or state: {item!r}")
        updated = item.get("StateUpdatedTimestamp")
        alarms.append(
            AlarmState(
                name=name,
                state=state,
                reason=str(item.get("StateReason", "")),
                updated_at=_epoch(updated) if updated is not None else None,
                metric=item["MetricName"] if isinstance(item.get("MetricName"), str) else None,
                threshold=float(item["Threshold"])
                if isinstance(item.get("Threshold"), int | float)
                else None,
            )
        )
    return sorted(alarms, key=lambda alarm: alarm.name)


class AlarmReader:
    """Reads the states of a stack's alarms (DescribeAlarms by name prefix)."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def alarms(self, name_prefix: str) -> list[AlarmState]:
        """Every alarm whose name starts with `name_prefix` (e.g. '<stack>-')."""
        found: list[AlarmState] = []
        kwargs: dict[str, Any] = {
            "AlarmNamePrefix": name_prefix,
            "AlarmTypes": ["MetricAlarm", "CompositeAlarm"],
        }
        while True:
            with aws_call("DescribeAlarms", name_prefix):
                response = self._client.describe_alarms(**kwargs)
            found += parse_alarms(response)
            token = response.get("NextToken")
            if not token:
                return sorted(found, key=lambda alarm: alarm.name)
            kwargs["NextToken"] = token
