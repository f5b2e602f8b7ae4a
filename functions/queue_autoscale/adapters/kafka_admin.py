"""The Kafka admin client (confluent-kafka, librdkafka) behind the MSK admin-API path.

One `AdminClient` per source, kept across ticks (librdkafka's own threads and connections are
made once, not per tick). Every read has a total deadline: each request gets what is left of
it, and a future still unanswered at the deadline is given up (ServiceUnavailable, code
Deadline); librdkafka drops its answer when it comes. Auth as MSK needs it: IAM (SASL/
OAUTHBEARER with a token from the MSK IAM SASL signer, port 9098), SCRAM-SHA-512 over TLS
(9096), TLS only (9094), or plaintext (loopback only, for tests).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._listoffsets import OffsetSpec

from queue_autoscale.adapters.errors import NotFound, ServiceUnavailable
from queue_autoscale.adapters.msk import ADMIN_OPERATION, PartitionOffsets, translate_kafka_error

NO_OFFSET = -1001
"""librdkafka's OFFSET_INVALID: the group never committed on this partition."""
LATEST: OffsetSpec = OffsetSpec.latest()  # type: ignore[no-untyped-call]
EARLIEST: OffsetSpec = OffsetSpec.earliest()  # type: ignore[no-untyped-call]


def iam_token(region: str) -> Callable[[Any], tuple[str, float]]:
    """An oauth_cb for MSK IAM: a SigV4-signed token from the task's role, with its expiry in
    epoch seconds (the signer returns milliseconds)."""

    def token(_: Any) -> tuple[str, float]:
        from aws_msk_iam_sasl_signer import MSKAuthTokenProvider  # noqa: PLC0415 - IAM only

        value, expiry_ms = MSKAuthTokenProvider.generate_auth_token(region)
        return value, expiry_ms / 1000.0

    return token


def client_config(
    bootstrap_servers: str,
    auth: str,
    *,
    region: str = "",
    username: str = "",
    password: str = "",
) -> dict[str, Any]:
    """librdkafka's settings for one cluster and one auth mode."""
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap_servers,
        "client.id": "queue-autoscale",
    }
    if auth == "iam":
        config.update(
            {
                "security.protocol": "SASL_SSL",
                "sasl.mechanisms": "OAUTHBEARER",
                "oauth_cb": iam_token(region),
            }
        )
    elif auth == "scram":
        config.update(
            {
                "security.protocol": "SASL_SSL",
                "sasl.mechanisms": "SCRAM-SHA-512",
                "sasl.username": username,
                "sasl.password": password,
            }
        )
    elif auth == "tls":
        config["security.protocol"] = "SSL"
    else:
        config["security.protocol"] = "PLAINTEXT"
    return config


class ConfluentOffsets:
    """Partition offsets and a group's commits through one AdminClient (an OffsetsClient)."""

    def __init__(self, config: dict[str, Any], deadline_seconds: float) -> None:
        self._admin = AdminClient(config)
        self._deadline = deadline_seconds
        if "oauth_cb" in config:  # librdkafka asks for the first token on a poll
            self._admin.poll(0)

    def offsets(self, group: str, topic: str) -> dict[int, PartitionOffsets]:
        """Log end, earliest and committed offset of every partition of `topic`, within the
        deadline; errors are the project's AdapterErrors."""
        resource = f"{group}/{topic}"
        until = time.monotonic() + self._deadline
        try:
            metadata = self._admin.list_topics(topic, timeout=_left(until, resource))
            found = metadata.topics.get(topic)
            if found is None or found.error is not None or not found.partitions:
                why = found.error if found is not None else "no such topic"
                raise NotFound(ADMIN_OPERATION, f"topic {topic}: {why}", resource=resource)
            partitions = [TopicPartition(topic, p) for p in sorted(found.partitions)]
            ends = self._offsets(partitions, LATEST, until, resource)
            earliest = self._offsets(partitions, EARLIEST, until, resource)
            committed = self._committed(group, partitions, until, resource)
        except KafkaException as error:
            raise translate_kafka_error(error, resource) from error
        return {
            p.partition: PartitionOffsets(
                end=ends[p.partition],
                earliest=earliest[p.partition],
                committed=committed.get(p.partition),
            )
            for p in partitions
        }

    def _offsets(
        self, partitions: list[TopicPartition], spec: OffsetSpec, until: float, resource: str
    ) -> dict[int, int]:
        futures = self._admin.list_offsets(
            {p: spec for p in partitions}, request_timeout=_left(until, resource)
        )
        return {
            p.partition: int(_result(future, until, resource).offset)
            for p, future in futures.items()
        }

    def _committed(
        self, group: str, partitions: list[TopicPartition], until: float, resource: str
    ) -> dict[int, int | None]:
        futures = self._admin.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group, partitions)],
            request_timeout=_left(until, resource),
        )
        answer = _result(futures[group], until, resource)
        committed: dict[int, int | None] = {}
        for p in answer.topic_partitions:
            if p.error is not None:
                raise KafkaException(p.error)
            committed[p.partition] = None if p.offset < 0 else int(p.offset)
        return committed


def _left(until: float, resource: str) -> float:
    """Seconds left before the deadline (ServiceUnavailable when none)."""
    left = until - time.monotonic()
    if left <= 0:
        raise _late(resource)
    return left


def _late(resource: str) -> ServiceUnavailable:
    return ServiceUnavailable(
        ADMIN_OPERATION, "no answer within the deadline", code="Deadline", resource=resource
    )


def _result(future: Future[Any], until: float, resource: str) -> Any:
    try:
        return future.result(timeout=_left(until, resource))
    except FutureTimeout:
        raise _late(resource) from None
