"""The per-queue `source`: Kafka and RabbitMQ configs, their validation and their settings."""

from __future__ import annotations

import json
from typing import Any

import pytest

from queue_autoscale.config import ConfigError, KafkaSource, RabbitSource, SqsSource, parse_queue

RABBIT: dict[str, Any] = {
    "type": "rabbitmq",
    "management_url": "https://b-1234.mq.us-east-1.amazonaws.com",
    "prefetch": 10,
    "credentials_secret": "queue-autoscale/rabbit",
}
KAFKA: dict[str, Any] = {
    "type": "kafka",
    "cluster_name": "prod",
    "topic": "orders",
    "consumer_group": "order-workers",
    "partitions": 12,
}


def test_the_default_source_is_sqs() -> None:
    assert isinstance(parse_queue({"queue": "orders"}).source, SqsSource)


def test_a_kafka_queue_gets_a_partition_cap_of_partitions_over_consumers_per_worker() -> None:
    config = parse_queue({"queue": "orders", "source": {**KAFKA, "consumers_per_worker": 5}})
    assert isinstance(config.source, KafkaSource)
    # 12 partitions, 5 consumers a worker: 3 workers hold 15 consumer slots, 2 hold only 10
    assert config.settings().partition_cap == 3
    # a live partition count replaces the configured one
    assert config.settings(partitions=40).partition_cap == 8


def test_a_kafka_queue_without_partitions_has_no_cap() -> None:
    source = {k: v for k, v in KAFKA.items() if k != "partitions"}
    assert parse_queue({"queue": "orders", "source": source}).settings().partition_cap is None


def test_a_rabbit_prefetch_below_the_concurrency_caps_it() -> None:
    config = parse_queue(
        {"queue": "orders", "worker_concurrency": 4, "source": {**RABBIT, "prefetch": 2}}
    )
    assert isinstance(config.source, RabbitSource)
    assert config.settings().worker_concurrency == 2
    wide = parse_queue({"queue": "orders", "worker_concurrency": 4, "source": RABBIT})
    assert wide.settings().worker_concurrency == 4


@pytest.mark.parametrize(
    ("source", "message"),
    [
        pytest.param(
            {**RABBIT, "management_url": "http://b-1.mq.example.com"},
            "http only on loopback",
            id="plain-http-off-loopback",
        ),
        pytest.param(
            {**RABBIT, "management_url": "https://admin:hunter2@b-1.example.com"},
            "must not hold credentials",
            id="password-in-url",
        ),
        pytest.param({**RABBIT, "password": "hunter2"}, "Extra inputs", id="password-field"),
        pytest.param(
            {k: v for k, v in RABBIT.items() if k != "credentials_secret"},
            "exactly one of credentials_secret and credentials_parameter",
            id="no-credentials",
        ),
        pytest.param(
            {**RABBIT, "credentials_parameter": "/x"},
            "exactly one of",
            id="two-credential-sources",
        ),
        pytest.param({**RABBIT, "prefetch": 0}, "prefetch", id="prefetch-zero"),
        pytest.param({**RABBIT, "management_url": "ftp://x.example.com"}, "http", id="ftp"),
        pytest.param({**KAFKA, "partitions": 0}, "partitions", id="zero-partitions"),
        pytest.param({**KAFKA, "topic": "bad topic!"}, "topic", id="bad-topic"),
        pytest.param({"type": "nats"}, "does not match any of the expected tags", id="unknown"),
    ],
)
def test_bad_sources_are_refused_naming_queue_and_field(
    source: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        parse_queue({"queue": "orders", "source": source})
    assert "queue 'orders'" in str(caught.value) and "source" in str(caught.value)


def test_http_is_accepted_on_loopback() -> None:
    config = parse_queue(
        {"queue": "q", "source": {**RABBIT, "management_url": "http://127.0.0.1:15672"}}
    )
    assert isinstance(config.source, RabbitSource)


def test_a_partition_cap_below_min_workers_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"partition cap 2 .* below min_workers = 5"):
        parse_queue({"queue": "q", "min_workers": 5, "source": {**KAFKA, "partitions": 2}})


def test_an_sqs_dlq_field_is_refused_on_other_sources() -> None:
    with pytest.raises(ConfigError, match="dlq is an SQS queue"):
        parse_queue({"queue": "q", "dlq": "q-dlq", "source": RABBIT})


def test_validate_config_shows_each_source_and_what_it_implies(tmp_path: Any) -> None:
    from typer.testing import CliRunner

    from queue_autoscale.cli import app

    path = tmp_path / "queues.json"
    path.write_text(
        json.dumps(
            [
                {"queue": "orders", "max_workers": 24, "source": KAFKA},
                {"queue": "mails", "source": RABBIT},
                {"queue": "plain"},
            ]
        )
    )
    result = CliRunner().invoke(app, ["validate-config", str(path)])
    assert result.exit_code == 0, result.stderr
    for shown in ("kafka prod:", "rabbitmq", "sqs plain", "partition_cap"):
        assert shown in result.stdout  # (the table wraps long cells)
    assert "the partition cap 12 is below max_workers = 24" in result.stderr
    assert "prefetch 10 > worker_concurrency = 1: up to 9 jobs per worker" in result.stderr
    assert "no CloudWatch fallback" in result.stderr


def test_validate_config_fails_naming_the_bad_source_field(tmp_path: Any) -> None:
    from typer.testing import CliRunner

    from queue_autoscale.cli import app

    path = tmp_path / "queues.json"
    path.write_text(json.dumps({"queue": "mails", "source": {**RABBIT, "prefetch": -1}}))
    result = CliRunner().invoke(app, ["validate-config", str(path)])
    assert result.exit_code == 2
    assert "queue 'mails'" in result.stderr and "prefetch" in result.stderr
