"""Queue sources: one interface from which the tick gets each platform's readings.

A `QueueSource` reads one queue and returns a `SourceReading`: the same depth (waiting, in
flight), oldest-age datapoint and dead-letter depth that the SQS reads give, so the snapshot
builder and the core never learn which platform fed them. SQS keeps its batched reads in the
tick (one GetMetricData for every queue); Kafka (MSK) and RabbitMQ (Amazon MQ) go through here.

A failed read raises the project's AdapterError (the queue then holds); a RabbitMQ queue whose
management API fails falls back to CloudWatch when a `broker` is configured, and says so.
Credentials come from Secrets Manager or SSM through Powertools Parameters, cached 5 minutes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from aws_lambda_powertools.utilities import parameters

from queue_autoscale.adapters.cloudwatch import OldestAge
from queue_autoscale.adapters.errors import AccessDenied, AdapterError, NotFound, StaleReading
from queue_autoscale.adapters.msk import AdminRules, KafkaAdminLag, MskLagMetrics
from queue_autoscale.adapters.rabbitmq import (
    AmazonMqMetrics,
    Credentials,
    RabbitManagement,
    RabbitQueue,
    split_unacked,
    stamp_epoch_seconds,
)
from queue_autoscale.adapters.sqs import QueueDepth
from queue_autoscale.config import KafkaSource, QueueConfig, RabbitSource
from queue_autoscale.events import DEFAULT_MAX_SKEW_SECONDS, MAX_PICKUP_MS

SECRET_MAX_AGE_SECONDS = 300
"""Powertools caches a fetched secret this long (a rotated password is seen within 5 min)."""


@dataclass(frozen=True, slots=True)
class SourceReading:
    """One queue's reading in the snapshot builder's terms (messages, seconds)."""

    depth: QueueDepth
    """visible = waiting for a worker (ready, plus what sits in prefetch buffers), in_flight =
    being worked on."""
    age: OldestAge | None
    """The oldest waiting message's age and how stale that value is (None: not reported)."""
    dlq_depth: int | None
    """Messages in the dead-letter queue (None: none configured or unread)."""
    origin: str
    """Which read produced it: rabbitmq-management, amazonmq-cloudwatch, msk-cloudwatch."""
    partitions: int | None = None
    """A live partition count, when the platform read gave one."""
    notes: tuple[str, ...] = ()
    """Why a fallback was used (the primary read's error)."""
    reason_notes: tuple[str, ...] = ()
    """What the decision's reason should say about this reading (a broker timestamp refused
    or read as milliseconds): the reading is usable, so these are not errors."""


class QueueSource(Protocol):
    """Reads one queue of one platform."""

    def read(self, now: float) -> SourceReading:
        """The queue's reading at `now` (epoch seconds); AdapterError when it cannot be read."""
        ...


class SecretReader(Protocol):
    """Fetches a JSON secret (Powertools' SecretsProvider and SSMProvider both fit)."""

    def get(self, name: str, max_age: int | None = ..., transform: Any = ...) -> Any:
        """The secret's value."""
        ...


def credentials_from(value: Any, name: str) -> Credentials:
    """{"username", "password"} from a fetched secret; anything else is refused by name only."""
    if (
        not isinstance(value, Mapping)
        or not isinstance(value.get("username"), str)
        or not isinstance(value.get("password"), str)
        or not value["username"]
    ):
        raise AccessDenied(
            "read credentials",
            'the secret is not a JSON object with string "username" and "password"',
            code="BadSecret",
            resource=name,
        )
    return Credentials(value["username"], value["password"])


def fetch_credentials(
    source: RabbitSource | KafkaSource, secrets: SecretReader, ssm: SecretReader
) -> Credentials:
    """The broker user from Secrets Manager or SSM (never from the config file)."""
    parameter = getattr(source, "credentials_parameter", None)
    name = source.credentials_secret or parameter or ""
    reader = secrets if source.credentials_secret else ssm
    try:
        value = reader.get(name, max_age=SECRET_MAX_AGE_SECONDS, transform="json")
    except parameters.exceptions.TransformParameterError:
        raise AccessDenied(
            "read credentials", "the secret is not JSON", code="BadSecret", resource=name
        ) from None
    except parameters.exceptions.GetParameterError as error:
        raise AccessDenied(
            "read credentials", str(error), code="GetParameterError", resource=name
        ) from error
    return credentials_from(value, name)


def _check_fresh(measured_at: float | None, now: float, limit: float, what: str) -> None:
    if measured_at is not None and now - measured_at > limit:
        raise StaleReading(
            what, f"newest datapoint is {now - measured_at:.0f} s old (limit {limit:g} s)"
        )


class RabbitQueueSource:
    """A RabbitMQ queue: the management API, else Amazon MQ's CloudWatch metrics."""

    def __init__(
        self,
        config: QueueConfig,
        management: RabbitManagement | None,
        credentials: Any,
        cloudwatch: AmazonMqMetrics | None,
    ) -> None:
        if not isinstance(config.source, RabbitSource):
            raise TypeError(f"queue {config.queue!r} is not a RabbitMQ queue")
        self._config = config
        self._source: RabbitSource = config.source
        self._management = management
        self._credentials = credentials
        """A callable returning Credentials (fetched on first use, so a missing secret costs
        only this queue's reading, at its tick)."""
        self._cloudwatch = cloudwatch
        self._lock = threading.Lock()

    @property
    def queue_name(self) -> str:
        """The RabbitMQ queue's own name."""
        return self._source.queue or self._config.queue

    def _api(self) -> RabbitManagement:
        with self._lock:
            if self._management is None:
                self._management = RabbitManagement(
                    self._source.management_url,
                    self._credentials(),
                    timeout_seconds=self._source.timeout_seconds,
                )
            return self._management

    def _from_api(self, now: float) -> tuple[RabbitQueue, int | None]:
        api = self._api()
        try:
            main = api.queue(self._source.vhost, self.queue_name)
        except AccessDenied:
            with self._lock:  # a rotated password: fetch the secret again next time
                self._management = None
            raise
        dead: int | None = None
        if self._source.dead_letter_queue:
            letters = api.queue(self._source.vhost, self._source.dead_letter_queue)
            dead = letters.ready + letters.unacked
        return main, dead

    def _from_cloudwatch(self, now: float) -> tuple[RabbitQueue, int | None]:
        assert self._cloudwatch is not None and self._source.broker is not None
        broker, vhost = self._source.broker, self._source.vhost
        main = self._cloudwatch.queue(broker, vhost, self.queue_name, now)
        if main is None:
            raise NotFound(
                "GetMetricData AWS/AmazonMQ",
                "no datapoint in the lookback",
                resource=f"{broker}/{vhost}/{self.queue_name}",
            )
        _check_fresh(main.measured_at, now, self._source.stale_after_seconds, "AWS/AmazonMQ")
        dead: int | None = None
        if self._source.dead_letter_queue:
            letters = self._cloudwatch.queue(broker, vhost, self._source.dead_letter_queue, now)
            dead = letters.ready + letters.unacked if letters else None
        return main, dead

    def read(self, now: float) -> SourceReading:
        """Counts with the prefetch in mind; the API first, CloudWatch when it fails."""
        notes: tuple[str, ...] = ()
        try:
            main, dead = self._from_api(now)
            origin = "rabbitmq-management"
        except AdapterError as error:
            if self._cloudwatch is None or self._source.broker is None:
                raise
            main, dead = self._from_cloudwatch(now)
            origin = "amazonmq-cloudwatch"
            notes = (f"management API failed, CloudWatch used: {error}",)
        waiting, working = split_unacked(
            main.ready,
            main.unacked,
            main.consumers,
            self._source.prefetch,
            self._config.worker_concurrency,
        )
        age, note = self._age(main, now)
        return SourceReading(
            depth=QueueDepth(visible=waiting, in_flight=working, delayed=0),
            age=age,
            dlq_depth=dead,
            origin=origin,
            notes=notes,
            reason_notes=(note,) if note else (),
        )

    def _age(self, main: RabbitQueue, now: float) -> tuple[OldestAge | None, str | None]:
        """The head message's age (an upper bound: it may be unacked), if its stamp is
        believable (`stamp_epoch_seconds`); None leaves the age to the counters."""
        if main.head_stamp is None:
            return None, None
        limit = (
            main.ttl_seconds
            if main.ttl_seconds is not None
            else self._source.max_message_age_seconds or MAX_PICKUP_MS / 1000.0
        )
        at, note = stamp_epoch_seconds(main.head_stamp, now, limit, DEFAULT_MAX_SKEW_SECONDS)
        if at is None:
            return None, note
        return OldestAge(age_seconds=max(0.0, now - at), lag_seconds=0.0), note


class KafkaQueueSource:
    """An MSK consumer group on a topic: the brokers' admin API when `bootstrap_servers` is
    set (CloudWatch when it fails), else CloudWatch's consumer-lag metrics.

    Kafka has no in-flight state: a record a consumer fetched but has not committed is still
    lag. So the lag is the backlog and in flight is 0 (the in-flight floor does not apply).
    """

    def __init__(
        self,
        config: QueueConfig,
        metrics: MskLagMetrics,
        admin: Callable[[], KafkaAdminLag] | None = None,
    ) -> None:
        if not isinstance(config.source, KafkaSource):
            raise TypeError(f"queue {config.queue!r} is not a Kafka queue")
        self._source: KafkaSource = config.source
        self._metrics = metrics
        self._make_admin = admin
        """Builds the admin reader on first use (a missing secret costs only this queue)."""
        self._admin: KafkaAdminLag | None = None
        self._lock = threading.Lock()

    def _from_admin(self) -> SourceReading:
        assert self._make_admin is not None
        with self._lock:
            if self._admin is None:
                self._admin = self._make_admin()
            admin = self._admin
        s = self._source
        reading, stuck = admin.lag(s.consumer_group, s.topic)
        notes: tuple[str, ...] = ()
        if stuck:
            listed = ", ".join(str(p) for p in sorted(stuck))
            notes = (f"lag of partitions {listed} left out: committed offset has not moved",)
        return SourceReading(
            depth=QueueDepth(visible=reading.lag, in_flight=0, delayed=0),
            age=None,
            dlq_depth=None,
            origin="kafka-admin",
            partitions=reading.partitions,
            reason_notes=notes,
        )

    def _from_cloudwatch(self, now: float, notes: tuple[str, ...] = ()) -> SourceReading:
        s = self._source
        reading = self._metrics.lag(s.cluster_name, s.consumer_group, s.topic, now)
        if reading is None:
            raise NotFound(
                "GetMetricData AWS/Kafka",
                "no SumOffsetLag datapoint in the lookback (consumer-lag monitoring on?)",
                resource=f"{s.cluster_name}/{s.consumer_group}/{s.topic}",
            )
        _check_fresh(reading.measured_at, now, s.stale_after_seconds, "AWS/Kafka SumOffsetLag")
        return SourceReading(
            depth=QueueDepth(visible=reading.lag, in_flight=0, delayed=0),
            age=reading.age,
            dlq_depth=None,
            origin="msk-cloudwatch",
            partitions=reading.partitions,
            notes=notes,
        )

    def read(self, now: float) -> SourceReading:
        """The lag from the brokers, else the latest CloudWatch lag and time lag; a missing or
        stale lag datapoint raises."""
        if self._make_admin is None:
            return self._from_cloudwatch(now)
        try:
            return self._from_admin()
        except AdapterError as error:
            return self._from_cloudwatch(
                now, (f"Kafka admin API failed, CloudWatch used: {error}",)
            )


class Sources:
    """Builds and keeps one QueueSource per non-SQS queue (credentials fetched lazily)."""

    def __init__(self, cloudwatch: Any, secretsmanager: Any = None, ssm: Any = None) -> None:
        self._cloudwatch = cloudwatch
        self._secrets_client = secretsmanager
        self._ssm_client = ssm
        self._providers: tuple[SecretReader, SecretReader] | None = None
        self._built: dict[str, QueueSource] = {}
        self._lock = threading.Lock()

    def credentials(self, source: RabbitSource | KafkaSource) -> Credentials:
        """Fetch a source's credentials (the Powertools providers are built on first use)."""
        with self._lock:
            if self._providers is None:
                self._providers = (
                    parameters.SecretsProvider(boto3_client=self._secrets_client),
                    parameters.SSMProvider(boto3_client=self._ssm_client),
                )
            secrets, ssm = self._providers
        return fetch_credentials(source, secrets, ssm)

    def kafka_admin(self, source: KafkaSource) -> KafkaAdminLag:
        """The admin-API reader of a Kafka source (SCRAM credentials fetched here)."""
        from queue_autoscale.adapters import kafka_admin  # noqa: PLC0415 - admin path only

        login = self.credentials(source) if source.auth == "scram" else Credentials("", "")
        config = kafka_admin.client_config(
            source.bootstrap_servers or "",
            source.auth,
            region=str(getattr(getattr(self._cloudwatch, "meta", None), "region_name", "")),
            username=login.username,
            password=login.password,
        )
        rules = AdminRules(
            reset_policy=source.offset_reset_policy,
            exclude_persistent_lag=source.exclude_persistent_lag,
            limit_to_partitions_with_lag=source.limit_to_partitions_with_lag,
        )
        return KafkaAdminLag(kafka_admin.ConfluentOffsets(config, source.timeout_seconds), rules)

    def source(self, config: QueueConfig) -> QueueSource | None:
        """The queue's source; None for SQS (read in the tick's batched calls)."""
        with self._lock:
            if config.queue in self._built:
                return self._built[config.queue]
            built: QueueSource
            if isinstance(config.source, RabbitSource):
                rabbit = config.source
                built = RabbitQueueSource(
                    config,
                    None,
                    lambda: self.credentials(rabbit),
                    AmazonMqMetrics(self._cloudwatch) if rabbit.broker else None,
                )
            elif isinstance(config.source, KafkaSource):
                kafka = config.source
                admin = (lambda: self.kafka_admin(kafka)) if kafka.bootstrap_servers else None
                built = KafkaQueueSource(config, MskLagMetrics(self._cloudwatch), admin)
            else:
                return None
            self._built[config.queue] = built
            return built

    def read(self, config: QueueConfig, now: float) -> SourceReading | None:
        """One queue's reading (None for SQS); AdapterError when it cannot be read."""
        found = self.source(config)
        return found.read(now) if found else None
