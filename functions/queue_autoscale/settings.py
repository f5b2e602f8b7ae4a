"""Lambda settings from environment variables, validated once per cold start.

A bad deploy fails at once with an error naming the variable and its value. Each handler
has its own model, holding only what it reads.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from queue_autoscale.config import ConfigError, QueueConfig, parse_json
from queue_autoscale.core.models import DEFAULT_EVALUATION_INTERVAL_SECONDS


class SettingsError(ValueError):
    """An environment variable is missing or invalid; the message names it."""


class _EnvSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    ENV: ClassVar[dict[str, str]] = {}
    """Field name -> environment variable name."""

    queues: tuple[QueueConfig, ...]
    """Parsed $QUEUES_CONFIG."""

    @field_validator("queues", mode="before")
    @classmethod
    def _parse_queues(cls, value: Any) -> Any:
        if isinstance(value, str):
            try:
                return tuple(parse_json(value, "$QUEUES_CONFIG"))
            except ConfigError as error:
                raise ValueError(str(error)) from None
        return value

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
                if item["type"] == "missing":
                    problems.append(f"${var} is not set")
                else:
                    shown = env.get(var, "")
                    shown = shown if len(shown) <= 80 else shown[:77] + "..."
                    problems.append(f"${var} = {json.dumps(shown)}: {message}")
            raise SettingsError("; ".join(problems)) from None

    @property
    def queue_names(self) -> frozenset[str]:
        """The configured work queue names (the events allowlist)."""
        return frozenset(queue.queue for queue in self.queues)


class RecordSettings(_EnvSettings):
    """record_events: where counters, the archive and rejected events go."""

    ENV: ClassVar[dict[str, str]] = {
        "queues": "QUEUES_CONFIG",
        "load_table": "LOAD_TABLE",
        "archive_bucket": "ARCHIVE_BUCKET",
        "events_dlq_url": "EVENTS_DLQ_URL",
        "max_clock_skew_seconds": "MAX_CLOCK_SKEW_SECONDS",
        "counter_ttl_seconds": "COUNTER_TTL_SECONDS",
    }

    load_table: str = Field(min_length=3, max_length=255)
    archive_bucket: str = Field(min_length=3, max_length=63)
    events_dlq_url: str = Field(pattern=r"^https?://\S+$")
    max_clock_skew_seconds: float = Field(default=300.0, ge=0, le=86_400)
    """Events whose `at` is further in the future than this are rejected."""
    counter_ttl_seconds: int = Field(default=2 * 86_400, ge=3_600, le=400 * 86_400)
    """Counters expire this long after their second (DynamoDB TTL)."""


class EvaluateSettings(_EnvSettings):
    """evaluate: what it reads and where it publishes."""

    ENV: ClassVar[dict[str, str]] = {
        "queues": "QUEUES_CONFIG",
        "load_table": "LOAD_TABLE",
        "archive_bucket": "ARCHIVE_BUCKET",
        "event_bus_name": "EVENT_BUS_NAME",
        "evaluation_interval_seconds": "EVALUATION_INTERVAL_SECONDS",
        "dry_run": "DRY_RUN",
    }

    load_table: str = Field(min_length=3, max_length=255)
    archive_bucket: str = Field(min_length=3, max_length=63)
    event_bus_name: str = Field(default="default", min_length=1, max_length=1600)
    evaluation_interval_seconds: float = Field(
        default=DEFAULT_EVALUATION_INTERVAL_SECONDS, ge=5, le=60
    )
    """Seconds between ticks within one scheduled minute."""
    dry_run: bool = False
    """Decide and publish, never call UpdateService."""
