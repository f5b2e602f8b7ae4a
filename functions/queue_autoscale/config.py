"""Per-queue configuration: profiles, validation, loading from a file or the environment.

A queue's config is a profile (critical, balanced, bursty, background) plus overrides.
Every error names the queue, the field and the value.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import stat
from collections.abc import Mapping, Sequence
from enum import StrEnum
from ipaddress import ip_address
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from queue_autoscale.core.models import (
    DEFAULT_EVALUATION_INTERVAL_SECONDS,
    JOB_TIME_RESOLUTION_SECONDS,
    QueueSettings,
)
from queue_autoscale.validation import error_parts

ENV_VAR = "QUEUES_CONFIG"
"""Environment variable holding the JSON config (what the Lambda functions read)."""


CORE_DEFAULTS: Mapping[str, Any] = {
    f.name: f.default
    for f in dataclasses.fields(QueueSettings)
    if f.default is not dataclasses.MISSING
}
"""The defaults of the settings the core takes (core/models.py QueueSettings): the one source of
each default a queue's config leaves out."""

WORKER_POLL_FLOOR_SECONDS = 5.0
"""Seed 001's first floor: even an idle, running worker picks a job up only after its poll
cycle (a few seconds plus overhead); pickup SLAs below this breach whatever the fleet."""


class ConfigError(ValueError):
    """A config that cannot be used; the message names queue, field and value."""


class Profile(StrEnum):
    """Shipped defaults (seed 001): SLA, percentile and fleet bounds."""

    CRITICAL = "critical"
    BALANCED = "balanced"
    BURSTY = "bursty"
    BACKGROUND = "background"


def _profile(sla: float, percentile: float, low: int, high: int) -> dict[str, Any]:
    return {"sla_seconds": sla, "percentile": percentile, "min_workers": low, "max_workers": high}


PROFILE_DEFAULTS: dict[Profile, dict[str, Any]] = {
    Profile.CRITICAL: _profile(10.0, 0.99, 5, 50),
    Profile.BALANCED: _profile(30.0, 0.95, 1, 10),
    Profile.BURSTY: _profile(60.0, 0.90, 0, 100),
    Profile.BACKGROUND: _profile(300.0, 0.95, 0, 5),
}


class SqsSource(BaseModel):
    """The default source: the SQS work queue named by the queue's `queue` field."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["sqs"] = "sqs"


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ip_address(host).is_loopback
    except ValueError:
        return False


class KafkaSource(BaseModel):
    """An Amazon MSK (Kafka) consumer group on one topic: lag, time lag and the partition cap.

    Lag and time lag come from MSK's CloudWatch consumer-lag metrics (`AWS/Kafka`).
    docs/sources.md.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["kafka"]
    cluster_name: str = Field(min_length=1, max_length=64)
    """MSK cluster name (CloudWatch dimension `Cluster Name`)."""
    topic: str = Field(min_length=1, max_length=249, pattern=r"^[A-Za-z0-9._-]+$")
    consumer_group: str = Field(min_length=1, max_length=255)
    partitions: int | None = Field(default=None, ge=1, le=100_000)
    """The topic's partition count, for the partition cap."""
    consumers_per_worker: int = Field(default=1, ge=1, le=1_000)
    """Kafka consumers one worker runs in the group (each holds at least one partition)."""
    stale_after_seconds: float = Field(default=300.0, ge=60, le=3_600)
    """A CloudWatch lag datapoint older than this holds the queue."""
    bootstrap_servers: str | None = Field(
        default=None, min_length=3, max_length=2_048, pattern=r"^[A-Za-z0-9.:,_-]+$"
    )
    """host:port[,host:port...]: read offsets from the brokers (the admin API) instead of
    CloudWatch; needs the evaluate function in the cluster's VPC. None: CloudWatch only."""
    auth: Literal["iam", "scram", "tls", "plaintext"] = "iam"
    """How the admin client authenticates: MSK IAM (SASL/OAUTHBEARER, port 9098), SCRAM
    (SASL/SCRAM-SHA-512 over TLS, 9096, `credentials_secret`), TLS only (9094), or plaintext
    (loopback only)."""
    credentials_secret: str | None = Field(default=None, min_length=1, max_length=2_048)
    """SCRAM: the Secrets Manager secret (AmazonMSK_...) holding {"username", "password"}."""
    offset_reset_policy: Literal["latest", "earliest"] = "latest"
    """The consumers' auto.offset.reset: where a partition without a committed offset starts
    (latest: a lag of 1, as KEDA counts it; earliest: everything retained)."""
    exclude_persistent_lag: bool = False
    """KEDA's excludePersistentLag: a partition whose committed offset has not moved since the
    last read while it lags is stuck, and its lag does not call for more workers."""
    limit_to_partitions_with_lag: bool = False
    """KEDA's limitToPartitionsWithLag: the partition cap counts only partitions that lag."""
    timeout_seconds: float = Field(default=3.0, gt=0, le=10)
    """The total deadline of one admin read (all its requests), s."""

    @model_validator(mode="after")
    def _check_admin(self) -> KafkaSource:
        if self.auth == "scram" and self.credentials_secret is None:
            raise ValueError("auth scram needs credentials_secret (the AmazonMSK_ secret)")
        if self.auth == "plaintext" and self.bootstrap_servers:
            hosts = [server.rsplit(":", 1)[0] for server in self.bootstrap_servers.split(",")]
            if not all(_is_loopback(host) for host in hosts):
                raise ValueError("auth plaintext only on loopback bootstrap_servers")
        return self


class RabbitSource(BaseModel):
    """A RabbitMQ (Amazon MQ) queue read through the management HTTP API, with CloudWatch
    `AWS/AmazonMQ` as the fallback. docs/sources.md."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["rabbitmq"]
    management_url: str = Field(min_length=8, max_length=2_048)
    """https://<broker host> (Amazon MQ: the web console URL); http only on loopback."""
    vhost: str = Field(default="/", min_length=1, max_length=255)
    queue: str | None = Field(default=None, min_length=1, max_length=255)
    """The RabbitMQ queue name (default: the queue's `queue` field)."""
    dead_letter_queue: str | None = Field(default=None, min_length=1, max_length=255)
    """The queue bound to the dead-letter exchange: its depth counts poison messages."""
    prefetch: int = Field(ge=1, le=65_535)
    """The workers' consumer prefetch count (basic.qos): unacked messages one consumer holds."""
    credentials_secret: str | None = Field(default=None, min_length=1, max_length=2_048)
    """Secrets Manager secret (name or ARN) holding {"username", "password"}."""
    credentials_parameter: str | None = Field(default=None, min_length=1, max_length=2_048)
    """SSM SecureString parameter holding {"username", "password"} as JSON."""
    broker: str | None = Field(default=None, min_length=1, max_length=50)
    """Amazon MQ broker name (CloudWatch dimension `Broker`): enables the fallback."""
    timeout_seconds: float = Field(default=3.0, gt=0, le=10)
    """The total deadline of one management API call, s."""
    stale_after_seconds: float = Field(default=300.0, ge=60, le=3_600)
    """A CloudWatch fallback datapoint older than this holds the queue."""
    max_message_age_seconds: float | None = Field(default=None, gt=0, le=1_209_600)
    """The oldest a message can be, s, where the queue has no message TTL (x-message-ttl or a
    policy's message-ttl): an older `head_message_timestamp` is a publisher's clock or unit
    error, so the age is unknown (default: 14 days, SQS's longest retention)."""

    @model_validator(mode="after")
    def _check(self) -> RabbitSource:
        parts = urlsplit(self.management_url)
        if parts.scheme not in {"http", "https"} or not parts.hostname:
            raise ValueError(f"management_url {self.management_url!r} is not an http(s) URL")
        if parts.username or parts.password:
            raise ValueError(
                "management_url must not hold credentials: use credentials_secret or "
                "credentials_parameter"
            )
        if parts.scheme == "http" and not _is_loopback(parts.hostname):
            raise ValueError(f"management_url {self.management_url!r}: http only on loopback")
        if (self.credentials_secret is None) == (self.credentials_parameter is None):
            raise ValueError("give exactly one of credentials_secret and credentials_parameter")
        return self


Source = Annotated[SqsSource | KafkaSource | RabbitSource, Field(discriminator="type")]
"""Where a queue's depth comes from; `type` picks sqs (default), kafka or rabbitmq."""


MAX_WORKERS = 10_000
"""The largest fleet a config may ask for (min/max workers, the capacity cap)."""
MAX_SLA_SECONDS = 43_200.0
"""12 h, SQS's longest visibility timeout: the longest SLA, and the longest recovery horizon."""
MAX_JOB_SECONDS_LIMIT = 1_209_600.0
"""SQS's 14-day retention: no job (or prior job time) is longer."""
MAX_ACTIVATION_JOBS = 10**9
"""Visible jobs needed to scale up from zero: at most a billion."""
DERIVED_FIELDS: tuple[str, ...] = (
    "stabilization_window_seconds",
    "scale_down_cooldown_seconds",
    "scale_down_step",
    "scale_down_percent",
    "recovery_horizon_seconds",
)
"""Fields a queue's config cannot set: the controller derives them from the SLA, percentile,
lead and interval (docs/decision.md). A config naming one is rejected, saying so."""


class QueueConfig(BaseModel):
    """One queue's config as users write it (JSON keys are these field names)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    queue: str = Field(min_length=1, max_length=80, pattern=r"^[A-Za-z0-9_-]+(\.fifo)?$")
    """SQS work queue name."""
    cluster: str = Field(default="default", min_length=1)
    """ECS cluster name or ARN."""
    service: str = Field(default="", min_length=0)
    """ECS service name or ARN (default: the queue name)."""
    dlq: str | None = None
    """The work queue's dead-letter queue name, if any."""
    profile: Profile = Profile.BALANCED
    """Defaults for sla_seconds, percentile, min_workers and max_workers."""
    sla_seconds: float = Field(gt=0, le=MAX_SLA_SECONDS)
    """The pickup-time SLA, s: P(pickup > sla_seconds) <= 1 - percentile."""
    percentile: float = Field(gt=0, lt=1)
    """Share of jobs that must be picked up within the SLA."""
    min_workers: int = Field(ge=0, le=MAX_WORKERS)
    """Fleet floor (0 allows scale to zero)."""
    max_workers: int = Field(ge=0, le=MAX_WORKERS)
    """Fleet ceiling."""
    worker_concurrency: int = Field(default=CORE_DEFAULTS["worker_concurrency"], ge=1, le=1_000)
    """Jobs one task runs at once (mu = concurrency / mean job seconds)."""
    provisioning_lead_seconds: float = Field(
        default=CORE_DEFAULTS["provisioning_lead_seconds"], ge=0, le=3_600
    )
    """From UpdateService to a new task taking jobs, s; the trend horizon. Set the least such
    time (the fastest start-up seen), not the typical one: it is the earliest an order can land,
    and a longer lead leaves more of the coming jobs to no order at all."""
    scale_up_cooldown_seconds: float = Field(
        default=CORE_DEFAULTS["scale_up_cooldown_seconds"], ge=0, le=3_600
    )
    """Minimum time between two scale-ups, s."""
    activation_threshold: int = Field(
        default=CORE_DEFAULTS["activation_threshold"], ge=1, le=MAX_ACTIVATION_JOBS
    )
    """Visible jobs needed to scale up from zero (fewer still start a worker once waiting
    another tick would pass the SLA)."""
    capacity_cap: int | None = Field(default=None, ge=0, le=MAX_WORKERS)
    """A hard cap besides max_workers (an account quota); at least min_workers."""
    overloading_threshold: float = Field(default=CORE_DEFAULTS["overloading_threshold"], gt=0, lt=1)
    """Load ratio (rho) at which the queue reads overloading."""
    expected_job_seconds: float = Field(
        default=CORE_DEFAULTS["expected_job_seconds"],
        ge=JOB_TIME_RESOLUTION_SECONDS,
        le=MAX_JOB_SECONDS_LIMIT,
    )
    """Prior mean job time until a completion is measured, s."""
    max_job_seconds: float = Field(
        default=CORE_DEFAULTS["max_job_seconds"],
        ge=JOB_TIME_RESOLUTION_SECONDS,
        le=MAX_JOB_SECONDS_LIMIT,
    )
    """Plausibility limit of one job's duration, s: longer `duration_ms` are rejected at ingest
    (at most SQS's 14-day retention)."""
    dry_run: bool = False
    """Decide and publish, never call UpdateService."""
    source: Source = Field(default_factory=SqsSource)
    """The platform the depth is read from (SQS unless given)."""

    @model_validator(mode="before")
    @classmethod
    def _apply_profile(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        derived = [name for name in DERIVED_FIELDS if name in data]
        if derived:
            raise ValueError(
                f"{', '.join(derived)}: not a setting; the controller derives when and how "
                "far it scales in from the lead and interval (a worker stays lead + interval "
                "after its need ends, then goes at once, draining) and sizes for every job due "
                "within lead + interval + SLA (docs/decision.md): remove "
                + ("it" if len(derived) == 1 else "them")
                + " from the config"
            )
        raw_profile = data.get("profile", Profile.BALANCED.value)
        try:
            profile = Profile(raw_profile)
        except ValueError:  # the field validator reports it; the default's fields stand in,
            profile = Profile.BALANCED  # so the profile is the one error, not five
        merged = dict(PROFILE_DEFAULTS[profile])
        merged.update(data)
        if not merged.get("service"):
            merged["service"] = merged.get("queue", "")
        return merged

    @model_validator(mode="after")
    def _check_bounds(self) -> QueueConfig:
        if self.min_workers > self.max_workers:
            raise ValueError(
                f"min_workers = {self.min_workers} is above max_workers = {self.max_workers}"
            )
        if self.expected_job_seconds > self.max_job_seconds:
            raise ValueError(
                f"expected_job_seconds = {self.expected_job_seconds:g} is above "
                f"max_job_seconds = {self.max_job_seconds:g}"
            )
        if self.capacity_cap is not None and self.capacity_cap < self.min_workers:
            raise ValueError(
                f"capacity_cap = {self.capacity_cap} is below min_workers = {self.min_workers}"
            )
        cap = self.partition_cap()
        if cap is not None and cap < self.min_workers:
            raise ValueError(
                f"the partition cap {cap} (partitions / consumers_per_worker) is below "
                f"min_workers = {self.min_workers}: the extra workers would sit idle"
            )
        if self.dlq is not None and not isinstance(self.source, SqsSource):
            raise ValueError(
                f"dlq is an SQS queue: a {self.source.type} source names its own dead letters"
            )
        return self

    def partition_cap(self, partitions: int | None = None) -> int | None:
        """Workers that can hold a partition: ceil(partitions / consumers per worker).

        `partitions` is a live reading (the admin API); without it the configured count.
        None for sources without partitions.
        """
        if not isinstance(self.source, KafkaSource):
            return None
        count = partitions if partitions is not None else self.source.partitions
        if count is None:
            return None
        return math.ceil(count / self.source.consumers_per_worker)

    @property
    def effective_concurrency(self) -> int:
        """Jobs one worker can run at once: a RabbitMQ prefetch below the concurrency caps it
        (a consumer never holds more unacked messages than its prefetch)."""
        if isinstance(self.source, RabbitSource):
            return min(self.worker_concurrency, self.source.prefetch)
        return self.worker_concurrency

    def warnings(
        self, evaluation_interval_seconds: float = DEFAULT_EVALUATION_INTERVAL_SECONDS
    ) -> list[str]:
        """Why this SLA may not be met whatever the controller does (seed 001's floors), each
        saying what would be needed; empty when none applies."""
        sla, found = self.sla_seconds, []
        if sla < WORKER_POLL_FLOOR_SECONDS:
            found.append(
                f"queue {self.queue!r}: sla_seconds = {sla:g} is below the "
                f"~{WORKER_POLL_FLOOR_SECONDS:g} s worker poll floor: pickups breach it whatever "
                f"the fleet; an SLA of at least {WORKER_POLL_FLOOR_SECONDS:g} s is needed"
            )
        cold = (
            evaluation_interval_seconds + self.provisioning_lead_seconds + WORKER_POLL_FLOOR_SECONDS
        )
        if self.min_workers == 0 and sla < cold:
            found.append(
                f"queue {self.queue!r}: with min_workers = 0 a job reaching an idle queue waits "
                f"up to the {evaluation_interval_seconds:g} s poll interval + "
                f"{self.provisioning_lead_seconds:g} s start-up lead + "
                f"~{WORKER_POLL_FLOOR_SECONDS:g} s worker poll = {cold:g} s, above "
                f"sla_seconds = {sla:g}: set min_workers >= 1, or an SLA of at least {cold:g} s"
            )
        return found

    def source_summary(self) -> str:
        """One line naming where the depth is read (validate-config's table)."""
        source = self.source
        if isinstance(source, KafkaSource):
            return (
                f"kafka {source.cluster_name}: {source.consumer_group} on {source.topic} "
                f"({source.partitions or '?'} partitions, {source.consumers_per_worker} "
                f"consumer(s)/worker)"
            )
        if isinstance(source, RabbitSource):
            fallback = f", fallback AWS/AmazonMQ {source.broker}" if source.broker else ""
            return (
                f"rabbitmq {source.management_url} {source.vhost} "
                f"{source.queue or self.queue} (prefetch {source.prefetch}{fallback})"
            )
        return f"sqs {self.queue}"

    def source_warnings(self) -> list[str]:
        """What the source's settings imply for scaling (docs/sources.md); empty when nothing."""
        found: list[str] = []
        where = f"queue {self.queue!r}: source"
        source = self.source
        if isinstance(source, KafkaSource):
            cap = self.partition_cap()
            if cap is None:
                found.append(f"{where}: no partitions given, so no partition cap")
            elif cap < self.max_workers:
                found.append(
                    f"{where}: the partition cap {cap} is below max_workers = "
                    f"{self.max_workers}: workers above {cap} would sit idle, never asked for"
                )
        elif isinstance(source, RabbitSource):
            k, prefetch = self.worker_concurrency, source.prefetch
            if prefetch < k:
                found.append(
                    f"{where}: prefetch {prefetch} is below worker_concurrency = {k}: a worker "
                    f"never holds more than {prefetch} jobs, so sizing uses {prefetch}"
                )
            elif prefetch > k:
                found.append(
                    f"{where}: prefetch {prefetch} > worker_concurrency = {k}: up to "
                    f"{prefetch - k} jobs per worker wait in its buffer behind its current one "
                    f"(counted as waiting), even while another worker is idle"
                )
            if source.broker is None:
                found.append(
                    f"{where}: no broker name, so no CloudWatch fallback: the queue holds "
                    f"whenever the management API cannot be read"
                )
        return found

    def settings(
        self,
        evaluation_interval_seconds: float = DEFAULT_EVALUATION_INTERVAL_SECONDS,
        partitions: int | None = None,
    ) -> QueueSettings:
        """The frozen settings the core takes (`partitions`: a live partition count)."""
        return QueueSettings(
            queue=self.queue,
            sla_seconds=self.sla_seconds,
            percentile=self.percentile,
            min_workers=self.min_workers,
            max_workers=self.max_workers,
            worker_concurrency=self.effective_concurrency,
            provisioning_lead_seconds=self.provisioning_lead_seconds,
            evaluation_interval_seconds=evaluation_interval_seconds,
            scale_up_cooldown_seconds=self.scale_up_cooldown_seconds,
            activation_threshold=self.activation_threshold,
            capacity_cap=self.capacity_cap,
            partition_cap=self.partition_cap(partitions),
            overloading_threshold=self.overloading_threshold,
            expected_job_seconds=self.expected_job_seconds,
            max_job_seconds=self.max_job_seconds,
            dry_run=self.dry_run,
        )


def _describe(error: ValidationError, queue: str) -> str:
    return "; ".join(f"queue {queue!r}: {part}" for part in error_parts(error))


def parse_queue(data: Any, index: int = 0) -> QueueConfig:
    """Validate one queue's config object; raise ConfigError naming queue, field and value."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"queue #{index}: expected a JSON object, got {type(data).__name__}")
    name = str(data.get("queue", f"#{index}"))
    try:
        return QueueConfig.model_validate(data)
    except ValidationError as error:
        raise ConfigError(_describe(error, name)) from None


def parse_config(data: Any) -> list[QueueConfig]:
    """Validate a config document: one queue object, a list of them, or {"queues": [...]}."""
    items: Sequence[Any]
    if isinstance(data, Mapping) and "queues" in data:
        items = data["queues"]
        if not isinstance(items, list):
            raise ConfigError("field 'queues' must be a list of queue objects")
    elif isinstance(data, list):
        items = data
    else:
        items = [data]
    if not items:
        raise ConfigError("no queues configured")
    queues = [parse_queue(item, index) for index, item in enumerate(items)]
    seen: set[str] = set()
    owners: dict[tuple[str, str], str] = {}
    for queue in queues:
        if queue.queue in seen:
            raise ConfigError(f"queue {queue.queue!r}: configured twice")
        seen.add(queue.queue)
        service = service_identity(queue.cluster, queue.service)
        if service in owners:
            raise ConfigError(
                f"queues {owners[service]!r} and {queue.queue!r} both scale ECS service "
                f"{service[1]!r} in cluster {service[0]!r}: one service takes one controller "
                "(each would count the other's tasks as its own and undo its scaling); give each "
                "queue its own service, or let one worker service read both queues under one "
                "queue entry"
            )
        owners[service] = queue.queue
    return queues


def service_identity(cluster: str, service: str) -> tuple[str, str]:
    """(cluster name, service name) of an ECS service named by name or ARN
    (`arn:...:cluster/<name>`, `arn:...:service/<cluster>/<name>` or `arn:...:service/<name>`)."""
    cluster_name = cluster.rsplit("/", 1)[-1] if cluster.startswith("arn:") else cluster
    if not service.startswith("arn:"):
        return cluster_name, service
    parts = service.split(":", 5)[-1].split("/")
    if len(parts) == 3:  # service/<cluster>/<name>
        return parts[1], parts[2]
    return cluster_name, parts[-1]


def parse_json(text: str, source: str = "config") -> list[QueueConfig]:
    """Parse JSON text into queue configs; bad JSON names the source, line and column."""
    return parse_config(load_json(text, source, ConfigError))


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def load_json(text: str, source: str, error_type: type[ValueError] = ValueError) -> Any:
    """Strict JSON (no NaN/Infinity) from text; any problem raises `error_type` with one line
    naming `source` and what is wrong (bad syntax, a number too long to read, nesting)."""
    try:
        return json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as error:
        raise error_type(
            f"{source}: invalid JSON at line {error.lineno} column {error.colno}: {error.msg}"
        ) from None
    except RecursionError:
        raise error_type(f"{source}: invalid JSON: nested too deeply") from None
    except ValueError as error:  # NaN/Infinity, or an integer of more than 4,300 digits
        raise error_type(f"{source}: invalid JSON: {str(error)[:100]}") from None


MAX_INPUT_BYTES = 16 * 1024 * 1024
"""The largest file a command reads (a config, a snapshot, a state): the config store's own
limit for a document."""


def read_text(
    path: Path,
    what: str,
    error_type: type[ValueError] = ValueError,
    max_bytes: int = MAX_INPUT_BYTES,
) -> str:
    """A UTF-8 text file of at most `max_bytes`; a device, a fifo, a folder, a larger file,
    unreadable or not UTF-8 raises `error_type` in one line naming the file (never blocks on a
    fifo, never reads past the limit)."""
    try:
        status = path.stat()
        if not stat.S_ISREG(status.st_mode):
            raise error_type(f"{what}{path}: not a regular file ({_file_kind(status.st_mode)})")
        if status.st_size > max_bytes:
            raise error_type(
                f"{what}{path}: {status.st_size} bytes, over the {max_bytes} byte limit"
            )
        with path.open("rb") as handle:
            data = handle.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise error_type(f"{what}{path}: over the {max_bytes} byte limit")
        return data.decode("utf-8")
    except OSError as error:
        raise error_type(f"{what}{path}: cannot read: {error.strerror}") from None
    except UnicodeDecodeError as error:
        raise error_type(
            f"{what}{path}: not UTF-8 text (byte 0x{error.object[error.start]:02x} at offset "
            f"{error.start})"
        ) from None


def _file_kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a fifo"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a socket or other special file"


def load_config(
    path: str | Path | None = None, environ: Mapping[str, str] | None = None
) -> list[QueueConfig]:
    """Load queue configs: explicit file path > $QUEUES_CONFIG (JSON text) > error."""
    if path is not None:
        file = Path(path)
        return parse_json(read_text(file, "config ", ConfigError), str(file))
    env = os.environ if environ is None else environ
    text = env.get(ENV_VAR, "")
    if not text:
        raise ConfigError(f"no config: pass a file or set ${ENV_VAR} to the JSON config")
    return parse_json(text, f"${ENV_VAR}")
