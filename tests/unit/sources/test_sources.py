"""The sources seam: RabbitMQ's API-then-CloudWatch fallback, staleness, Kafka's lag reading,
credentials from Powertools Parameters. CloudWatch answers through botocore's Stubber; the
management API through real sockets on loopback (a closed port refuses, as a dead broker does).
"""

from __future__ import annotations

import socket
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber

from queue_autoscale.adapters.errors import AccessDenied, NotFound, ServiceUnavailable, StaleReading
from queue_autoscale.adapters.msk import MskLagMetrics
from queue_autoscale.adapters.rabbitmq import AmazonMqMetrics, Credentials, RabbitManagement
from queue_autoscale.config import parse_queue
from queue_autoscale.sources import (
    KafkaQueueSource,
    RabbitQueueSource,
    credentials_from,
    fetch_credentials,
)

NOW = 1_763_000_000.0


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def cloudwatch() -> Any:
    return boto3.client(
        "cloudwatch", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )


def points(**series: tuple[float, float]) -> dict[str, Any]:
    """MetricDataResults with one datapoint (seconds before NOW, value) per id."""
    return {
        "MetricDataResults": [
            {
                "Id": key,
                "Label": key,
                "Timestamps": [datetime.fromtimestamp(NOW - ago, UTC)],
                "Values": [value],
                "StatusCode": "Complete",
            }
            for key, (ago, value) in series.items()
        ]
    }


def rabbit_config(**source: Any) -> Any:
    return parse_queue(
        {
            "queue": "orders",
            "source": {
                "type": "rabbitmq",
                "management_url": f"http://127.0.0.1:{closed_port()}",
                "prefetch": 10,
                "credentials_secret": "rabbit",
                "dead_letter_queue": "orders.dlq",
                **source,
            },
        }
    )


def dead_broker(config: Any) -> RabbitManagement:
    return RabbitManagement(
        config.source.management_url, Credentials("u", "p"), timeout_seconds=0.5
    )


def test_without_a_broker_name_a_failed_api_read_fails_the_queue() -> None:
    config = rabbit_config()
    source = RabbitQueueSource(config, dead_broker(config), None, None)
    with pytest.raises(ServiceUnavailable, match="RabbitMQ"):
        source.read(NOW)


def test_a_failed_api_read_falls_back_to_amazon_mq_cloudwatch_and_says_so() -> None:
    # GIVEN a dead management API and CloudWatch datapoints 2 minutes old
    config = rabbit_config(broker="b-1")
    client = cloudwatch()
    with Stubber(client) as stub:
        main = points(ready=(120, 30.0), unacked=(120, 40.0), consumers=(120, 4.0))
        stub.add_response(
            "get_metric_data",
            main,
            {"MetricDataQueries": ANY, "StartTime": ANY, "EndTime": ANY, "ScanBy": ANY},
        )
        dead = points(ready=(120, 3.0), unacked=(120, 0.0))
        stub.add_response(
            "get_metric_data",
            dead,
            {"MetricDataQueries": ANY, "StartTime": ANY, "EndTime": ANY, "ScanBy": ANY},
        )
        source = RabbitQueueSource(config, dead_broker(config), None, AmazonMqMetrics(client))
        # WHEN it is read
        reading = source.read(NOW)
    # THEN the counts are CloudWatch's, with 4 consumers x 1 job in service and 36 waiting
    assert reading.origin == "amazonmq-cloudwatch"
    assert (reading.depth.visible, reading.depth.in_flight) == (30 + 36, 4)
    assert reading.dlq_depth == 3
    assert reading.notes and "management API failed" in reading.notes[0]


def test_a_stale_fallback_datapoint_holds_the_queue() -> None:
    config = rabbit_config(broker="b-1", stale_after_seconds=120)
    client = cloudwatch()
    with Stubber(client) as stub:
        stub.add_response(
            "get_metric_data", points(ready=(600, 1.0), unacked=(600, 0.0), consumers=(600, 1.0))
        )
        source = RabbitQueueSource(config, dead_broker(config), None, AmazonMqMetrics(client))
        with pytest.raises(StaleReading, match="540 s old"):
            source.read(NOW)


def test_no_fallback_datapoint_is_missing_not_zero() -> None:
    config = rabbit_config(broker="b-1")
    client = cloudwatch()
    with Stubber(client) as stub:
        stub.add_response("get_metric_data", {"MetricDataResults": []})
        source = RabbitQueueSource(config, dead_broker(config), None, AmazonMqMetrics(client))
        with pytest.raises(NotFound, match="no datapoint"):
            source.read(NOW)


def kafka_config(**source: Any) -> Any:
    return parse_queue(
        {
            "queue": "orders",
            "source": {
                "type": "kafka",
                "cluster_name": "prod",
                "topic": "orders",
                "consumer_group": "workers",
                "partitions": 6,
                **source,
            },
        }
    )


def test_kafka_lag_is_the_backlog_and_nothing_is_in_flight() -> None:
    client = cloudwatch()
    with Stubber(client) as stub:
        stub.add_response(
            "get_metric_data",
            points(sumlag=(120, 5000.0), maxlag=(120, 900.0), timelag=(120, 48.0)),
        )
        reading = KafkaQueueSource(kafka_config(), MskLagMetrics(client)).read(NOW)
    assert reading.origin == "msk-cloudwatch"
    assert (reading.depth.visible, reading.depth.in_flight) == (5000, 0)
    assert reading.age is not None
    assert (reading.age.age_seconds, reading.age.lag_seconds) == (48.0, 60.0)


def test_kafka_without_a_lag_datapoint_is_missing() -> None:
    client = cloudwatch()
    with Stubber(client) as stub:
        stub.add_response("get_metric_data", {"MetricDataResults": []})
        with pytest.raises(NotFound, match="consumer-lag monitoring"):
            KafkaQueueSource(kafka_config(), MskLagMetrics(client)).read(NOW)


def test_a_stale_kafka_lag_holds() -> None:
    client = cloudwatch()
    with Stubber(client) as stub:
        stub.add_response("get_metric_data", points(sumlag=(1000, 5.0)))
        with pytest.raises(StaleReading, match="SumOffsetLag"):
            KafkaQueueSource(kafka_config(), MskLagMetrics(client)).read(NOW)


class Secrets:
    """A SecretReader answering from a dict (what Powertools returns after transform=json)."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.values = values
        self.asked: list[tuple[str, Any]] = []

    def get(self, name: str, max_age: int | None = None, transform: Any = None) -> Any:
        self.asked.append((name, transform))
        return self.values[name]


def test_credentials_come_from_the_named_secret_or_parameter() -> None:
    secrets = Secrets({"rabbit": {"username": "monitor", "password": "s3cret"}})
    ssm = Secrets({"/mq/monitor": {"username": "ssm-user", "password": "p"}})
    by_secret = rabbit_config().source
    by_parameter = rabbit_config(credentials_secret=None, credentials_parameter="/mq/monitor")
    assert fetch_credentials(by_secret, secrets, ssm) == Credentials("monitor", "s3cret")
    assert fetch_credentials(by_parameter.source, secrets, ssm).username == "ssm-user"
    assert secrets.asked == [("rabbit", "json")]
    assert "s3cret" not in repr(Credentials("monitor", "s3cret"))


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("user:pass", id="not-json-object"),
        pytest.param({"username": "u"}, id="no-password"),
        pytest.param({"username": "", "password": "p"}, id="empty-user"),
    ],
)
def test_a_malformed_secret_is_refused_without_echoing_it(value: Any) -> None:
    with pytest.raises(AccessDenied, match="rabbit") as caught:
        credentials_from(value, "rabbit")
    assert "pass" not in str(caught.value).replace("password", "")
