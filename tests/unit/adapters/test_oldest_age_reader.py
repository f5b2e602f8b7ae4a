"""OldestAgeReader asks CloudWatch once per queue per metric period (SQS publishes the age
once a minute) and answers the other ticks of that minute from the same datapoint."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from botocore.exceptions import EndpointConnectionError

from queue_autoscale.adapters.cloudwatch import OldestAge, OldestAgeReader
from queue_autoscale.adapters.errors import AdapterError

MINUTE = datetime(2025, 11, 13, 2, 0, tzinfo=UTC).timestamp()
"""A minute boundary (epoch s)."""


class FakeCloudWatch:
    """Answers GetMetricData with one datapoint per asked queue: the minute before the ask's
    minute, value 30 s; records the queue names of every call."""

    def __init__(self) -> None:
        self.asked: list[list[str]] = []
        self.down = False

    def get_metric_data(self, **kwargs: Any) -> dict[str, Any]:
        if self.down:
            raise EndpointConnectionError(endpoint_url="http://127.0.0.1:1")
        queries = kwargs["MetricDataQueries"]
        self.asked.append([q["MetricStat"]["Metric"]["Dimensions"][0]["Value"] for q in queries])
        # EndTime is the ask's minute's end: the newest datapoint is the minute before it.
        newest = datetime.fromtimestamp(kwargs["EndTime"].timestamp() - 120, UTC)
        return {
            "MetricDataResults": [
                {"Id": q["Id"], "Timestamps": [newest], "Values": [30.0]} for q in queries
            ]
        }


def test_the_ticks_of_one_minute_share_one_read_with_their_own_lag() -> None:
    cloudwatch = FakeCloudWatch()
    reader = OldestAgeReader(cloudwatch)

    # WHEN four 15 s ticks of the same minute read two queues, then the next minute's first
    answers = [reader.oldest_ages(["a", "b"], MINUTE + 1 + 15 * tick) for tick in range(4)]
    next_minute = reader.oldest_ages(["a", "b"], MINUTE + 61)

    # THEN CloudWatch was asked once a minute, not once a tick
    assert cloudwatch.asked == [["a", "b"], ["a", "b"]]
    # AND every tick sees the minute's datapoint (measured at MINUTE), aged to its own now
    assert [answer["a"] for answer in answers] == [
        OldestAge(30.0, 1.0),
        OldestAge(30.0, 16.0),
        OldestAge(30.0, 31.0),
        OldestAge(30.0, 46.0),
    ]
    assert answers[3]["b"] == OldestAge(30.0, 46.0)
    # AND the next minute's read brings its newer datapoint (measured at MINUTE + 60)
    assert next_minute["a"] == OldestAge(30.0, 1.0)


def test_a_queue_added_within_the_minute_is_asked_alone() -> None:
    cloudwatch = FakeCloudWatch()
    reader = OldestAgeReader(cloudwatch)

    reader.oldest_ages(["a"], MINUTE + 1)
    ages = reader.oldest_ages(["a", "new"], MINUTE + 16)

    assert cloudwatch.asked == [["a"], ["new"]]
    assert ages == {"a": OldestAge(30.0, 16.0), "new": OldestAge(30.0, 16.0)}


def test_a_failed_read_is_not_remembered_and_the_next_tick_asks_again() -> None:
    cloudwatch = FakeCloudWatch()
    reader = OldestAgeReader(cloudwatch)

    cloudwatch.down = True
    with pytest.raises(AdapterError, match="GetMetricData"):
        reader.oldest_ages(["a"], MINUTE + 1)
    cloudwatch.down = False
    ages = reader.oldest_ages(["a"], MINUTE + 16)

    assert cloudwatch.asked == [["a"]]
    assert ages == {"a": OldestAge(30.0, 16.0)}


def test_a_queue_with_no_datapoint_stays_none_for_the_minute_without_a_second_ask() -> None:
    class Silent(FakeCloudWatch):
        def get_metric_data(self, **kwargs: Any) -> dict[str, Any]:
            super().get_metric_data(**kwargs)
            return {"MetricDataResults": []}

    cloudwatch = Silent()
    reader = OldestAgeReader(cloudwatch)

    first = reader.oldest_ages(["a"], MINUTE + 1)
    second = reader.oldest_ages(["a"], MINUTE + 31)

    assert first == second == {"a": None}
    assert cloudwatch.asked == [["a"]]
