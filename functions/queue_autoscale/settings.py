"""Lambda settings from environment variables, validated once per cold start.

A bad deploy fails at once with an error naming the variable and its value. Each handler
has its own model, holding only what it reads. The queue config itself is not here: the
settings say where it is (`$QUEUES_CONFIG_PARAMETER`, the config store) and the handlers
read it through `controller.config_loader` every tick.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from enum import StrEnum
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from queue_autoscale.config import ENV_VAR, ConfigError, parse_json
from queue_autoscale.core.models import DEFAULT_EVALUATION_INTERVAL_SECONDS
from queue_autoscale.core.shard import DEFAULT_MAX_SHARDS, MAX_SHARDS

CONFIG_PARAMETER_VAR = "QUEUES_CONFIG_PARAMETER"
CONFIG_ENV = {
    "config_parameter": CONFIG_PARAMETER_VAR,
    "queues_config": ENV_VAR,
    "config_max_age_seconds": "CONFIG_MAX_AGE_SECONDS",
}
"""The variables that say where the queue config comes from (both functions read them)."""


class SettingsError(ValueError):
    """An environment variable is missing or invalid; the message names it."""


DEFAULT_CONFIG_MAX_AGE_SECONDS = 5
"""How long the functions cache the config store's document, s: shorter than the shortest
evaluation interval (5 s), so each tick sees a change made before it started."""

SSM_PARAMETER_NAME = r"^(/[A-Za-z0-9_.-]+)+$|^[A-Za-z0-9_.-]+$"
"""An SSM parameter name (a path of letters, digits, `_.-`), as CloudFormation creates them."""
DELIVERY_STREAM_NAME = r"^[a-zA-Z0-9_.-]{1,64}$"
"""A Firehose delivery stream name."""


class HandlerSettings(BaseModel):
    """What both functions read: where the queue config comes from."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    ENV: ClassVar[dict[str, str]] = {}
    """Field name -> environment variable name."""

    config_parameter: str | None = Field(
        default=None, min_length=1, max_length=1011, pattern=SSM_PARAMETER_NAME
    )
    """$QUEUES_CONFIG_PARAMETER: the SSM parameter holding the config document or an
    s3://bucket/key pointer to it (the stack's config store, docs/config.md)."""
    queues_config: str | None = None
    """$QUEUES_CONFIG: the document itself (tests, benchmarks, stacks from before the store);
    validated here, so a bad one fails the cold start naming the variable."""
    config_max_age_seconds: int = Field(default=DEFAULT_CONFIG_MAX_AGE_SECONDS, ge=1, le=60)
    """$CONFIG_MAX_AGE_SECONDS: how long a read document is cached (Powertools' TTL), s."""

    @field_validator("queues_config")
    @classmethod
    def _parse_queues(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                parse_json(value, f"${ENV_VAR}")
            except ConfigError as error:
                raise ValueError(str(error)) from None
        return value

    @model_validator(mode="after")
    def _one_config_source(self) -> HandlerSettings:
        if (self.config_parameter is None) == (self.queues_config is None):
            raise ValueError(
                f"set exactly one of ${CONFIG_PARAMETER_VAR} (the config store) and ${ENV_VAR} "
                "(the config itself)"
            )
        return self

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> Any:
        """Read and validate the variables; raise SettingsError naming the bad one."""
        env = os.environ if environ is None else environ
        data = {field: env[var] for field, var in cls.ENV.items() if env.get(var, "") != ""}
        try:
            return cls.model_validate(data)
        except ValidationError as error:
            problems = []
            for item in error.errors():
                field = str(item["loc"][0]) if item["loc"] else ""
                var = cls.ENV.get(field, field)
                message = str(item["msg"]).removeprefix("Value error, ")
                if not field:
                    problems.append(message)
                elif item["type"] == "missing":
                    problems.append(f"${var} is not set")
                else:
                    shown = env.get(var, "")
                    shown = shown if len(shown) <= 80 else shown[:77] + "..."
                    problems.append(f"${var} = {json.dumps(shown)}: {message}")
            raise SettingsError("; ".join(problems)) from None


class RecordSettings(HandlerSettings):
    """record_events: where counters, the archive and rejected events go."""

    ENV: ClassVar[dict[str, str]] = {
        **CONFIG_ENV,
        "load_table": "LOAD_TABLE",
        "archive_bucket": "ARCHIVE_BUCKET",
        "events_stream": "EVENTS_DELIVERY_STREAM",
        "events_dlq_url": "EVENTS_DLQ_URL",
        "max_clock_skew_seconds": "MAX_CLOCK_SKEW_SECONDS",
        "counter_ttl_seconds": "COUNTER_TTL_SECONDS",
        "tick_queue_url": "TICK_QUEUE_URL",
    }

    load_table: str = Field(min_length=3, max_length=255)
    archive_bucket: str = Field(min_length=3, max_length=63)
    events_stream: str | None = Field(default=None, pattern=DELIVERY_STREAM_NAME)
    """The Firehose delivery stream the accepted events go through to the archive (None:
    one S3 object per batch, straight to the bucket)."""
    events_dlq_url: str = Field(pattern=r"^https?://\S+$")
    max_clock_skew_seconds: float = Field(default=300.0, ge=0, le=86_400)
    """Events whose `at` is further in the future than this are rejected."""
    counter_ttl_seconds: int = Field(default=2 * 86_400, ge=3_600, le=400 * 86_400)
    """Counters expire this long after their second (DynamoDB TTL)."""
    tick_queue_url: str | None = Field(default=None, pattern=r"^https?://\S+$")
    """The evaluate function's tick queue, where a batch asks for a jump tick (`ingest.jumps`);
    None: no jump ticks (loop mode, or a 60 s interval)."""


class TickMode(StrEnum):
    """How the evaluate function spends its minute (the template's EvaluateTickMode)."""

    TICK = "tick"
    """One invocation per tick: the scheduled one runs the minute's first tick and queues the
    others on the tick queue with a delay (`controller.ticks`); billed for the work only."""
    LOOP = "loop"
    """One invocation per minute that ticks every interval and sleeps between ticks."""


class EvaluateSettings(HandlerSettings):
    """evaluate: what it reads and where it publishes."""

    ENV: ClassVar[dict[str, str]] = {
        **CONFIG_ENV,
        "load_table": "LOAD_TABLE",
        "archive_bucket": "ARCHIVE_BUCKET",
        "decisions_stream": "DECISIONS_DELIVERY_STREAM",
        "event_bus_name": "EVENT_BUS_NAME",
        "evaluation_interval_seconds": "EVALUATION_INTERVAL_SECONDS",
        "dry_run": "DRY_RUN",
        "shards": "EVALUATE_SHARDS",
        "max_shards": "MAX_EVALUATE_SHARDS",
        "memory_mb": "AWS_LAMBDA_FUNCTION_MEMORY_SIZE",
        "tick_mode": "TICK_MODE",
        "tick_queue_url": "TICK_QUEUE_URL",
        "jump_ticks": "JUMP_TICKS",
        "overloading_threshold": "OVERLOADING_THRESHOLD",
        "overloaded_threshold": "OVERLOADED_THRESHOLD",
        "sla_usage_threshold": "SLA_USAGE_THRESHOLD",
        "fleet_usage_threshold": "FLEET_USAGE_THRESHOLD",
        "dashboard": "DASHBOARD_ENABLED",
    }

    load_table: str = Field(min_length=3, max_length=255)
    archive_bucket: str = Field(min_length=3, max_length=63)
    decisions_stream: str | None = Field(default=None, pattern=DELIVERY_STREAM_NAME)
    """The Firehose delivery stream the decision log goes through to the archive (None: one
    S3 object per shard tick, straight to the bucket)."""
    event_bus_name: str = Field(default="default", min_length=1, max_length=1600)
    evaluation_interval_seconds: float = Field(
        default=DEFAULT_EVALUATION_INTERVAL_SECONDS, ge=5, le=60
    )
    """Seconds between ticks within one scheduled minute."""
    dry_run: bool = False
    """Decide and publish, never call UpdateService."""
    shards: int = Field(default=0, ge=0, le=MAX_SHARDS)
    """Concurrent evaluate shards; 0 derives them from the queue count and the tick cost."""
    max_shards: int = Field(default=DEFAULT_MAX_SHARDS, ge=1, le=MAX_SHARDS)
    """At most this many derived shards (the function's reserved concurrency)."""
    memory_mb: int | None = Field(default=None, ge=128, le=10_240)
    """The function's memory (Lambda sets it); CPU, and so a shard's capacity, scale with it."""
    tick_mode: TickMode = TickMode.TICK
    tick_queue_url: str | None = Field(default=None, pattern=r"^https?://\S+$")
    """The tick queue (tick mode): the scheduled invocation queues the minute's later ticks."""
    jump_ticks: bool = False
    """A clock tick leaves its jump line for the record path, which asks for jump ticks on the
    tick queue (template: JumpTicks where the tick queue exists; `core.jump`)."""
    overloading_threshold: float | None = Field(default=None, gt=0)
    """The overloading alarm's threshold, a load ratio (template: OverloadingThreshold). None:
    unknown, so MaxLoadRatio is a metric every tick."""
    overloaded_threshold: float | None = Field(default=None, gt=0)
    """The overloaded alarm's threshold, a load ratio (template: OverloadedThreshold). None:
    unknown, so MaxLoadRatio is a metric every tick."""
    sla_usage_threshold: float | None = Field(default=None, gt=0)
    """The SLA-breach alarm's threshold, oldest age / SLA (template: SlaUsageThreshold; its
    default is the one default). None: unknown, so MaxSlaUsage is a metric every tick."""
    fleet_usage_threshold: float | None = Field(default=None, gt=0, le=1)
    """The fleet-near-max alarm's threshold, running / max_workers (template:
    FleetUsageThreshold). None: unknown, so MaxFleetUsage is a metric every tick."""
    dashboard: bool = False
    """The stack has its dashboard (template: DashboardEnabled), which charts every fleet
    metric: none stays a plain field below its alarm's threshold."""

    @model_validator(mode="after")
    def _fresh_within_a_tick(self) -> EvaluateSettings:
        if self.config_max_age_seconds > self.evaluation_interval_seconds:
            raise ValueError(
                f"$CONFIG_MAX_AGE_SECONDS = {self.config_max_age_seconds} is above "
                f"$EVALUATION_INTERVAL_SECONDS = {self.evaluation_interval_seconds:g}: a config "
                "change would take more than one tick to be seen"
            )
        return self
