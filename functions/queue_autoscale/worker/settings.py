"""The worker's settings, validated (times in seconds)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from queue_autoscale.worker.protection import expiry_minutes

ECS_STOP_TIMEOUT_MAX_SECONDS = 120
"""ECS's largest container `stopTimeout` on Fargate: SIGKILL follows SIGTERM after it."""


class WorkerSettings(BaseModel):
    """What one worker process does; every field has a `WORKER_*` environment variable."""

    # infinity is no time limit here: --job-timeout inf overflowed the protection's minutes
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    queue_url: str = Field(min_length=1)
    queue: str = ""
    """The queue's name in events (default: the URL's last path segment)."""
    events_queue_url: str | None = None
    """Where started/completed/failed events go (none: no events, one log line)."""
    concurrency: int = Field(default=1, ge=1, le=100)
    """Jobs run at once."""
    prefetch: int = Field(default=0, ge=0, le=10)
    """Messages held beyond `concurrency` (returned at once on a drain). RabbitMQ's `basic.qos`
    and the simulator's `--prefetch` count the total held instead: `concurrency + prefetch`."""
    wait_seconds: int = Field(default=10, ge=0, le=20)
    """Long-poll wait per receive; an idle worker's drain waits at most this for the poll."""
    visibility_timeout_seconds: int = Field(default=30, ge=3, le=43_200)
    """Visibility set on receive and renewed by the heartbeat."""
    heartbeat_seconds: float = Field(default=0.0, ge=0.0)
    """How often held messages are made invisible again (0: a third of the visibility)."""
    job_timeout_seconds: float = Field(default=900.0, gt=0.0)
    """The hard limit of one job: past it the message is released and the worker exits 2."""
    drain_seconds: float = Field(default=25.0, gt=0.0, le=ECS_STOP_TIMEOUT_MAX_SECONDS)
    """After SIGTERM, how long jobs in flight may take (keep it below the task's stopTimeout)."""
    retry_base_seconds: float = Field(default=2.0, ge=0.0)
    """A failed job's message becomes visible again after base x 2^(attempt-1) seconds..."""
    retry_max_seconds: float = Field(default=300.0, ge=0.0, le=43_200)
    """... at most this long."""
    ecs_agent_uri: str | None = None
    """$ECS_AGENT_URI: the task-protection endpoint's base (none: protection off)."""

    @model_validator(mode="after")
    def _consistent(self) -> WorkerSettings:
        if not self.queue:
            object.__setattr__(self, "queue", self.queue_url.rstrip("/").rsplit("/", 1)[-1])
        if self.heartbeat_seconds == 0.0:
            object.__setattr__(self, "heartbeat_seconds", self.visibility_timeout_seconds / 3.0)
        if self.heartbeat_seconds >= self.visibility_timeout_seconds:
            raise ValueError(
                f"heartbeat_seconds ({self.heartbeat_seconds:g}) must be below "
                f"visibility_timeout_seconds ({self.visibility_timeout_seconds})"
            )
        return self

    @property
    def protection_minutes(self) -> int:
        """ExpiresInMinutes for each protection renewal: the hard job limit plus a minute."""
        return expiry_minutes(self.job_timeout_seconds)

    def retry_backoff_seconds(self, attempt: int) -> int:
        """Visibility (s) given to a failed job's message before its next delivery."""
        seconds = self.retry_base_seconds * 2.0 ** max(0, attempt - 1)
        return int(min(self.retry_max_seconds, seconds))
