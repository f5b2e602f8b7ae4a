"""The Event contract (DESIGN section 3): what producers and workers send to the events queue.

One SQS message body holds one event object or a JSON array of up to 100. Each event is
validated on its own: a bad one is rejected with a reason naming the field and value, the
good ones beside it are still accepted. A body that is not JSON, too large, or an array
too long is rejected whole.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

EventType = Literal["queued", "started", "completed", "failed"]
MAX_BODY_BYTES = 256 * 1024
"""Bodies larger than this are rejected whole."""
MAX_EVENTS_PER_BODY = 100
DEFAULT_MAX_SKEW_SECONDS = 300.0
"""How far in the future an event's `at` may be (producer clocks drift)."""


def default_event_id(event_type: str, queue: str, job_id: str, attempt: int) -> str:
    """Deterministic id of an event: a hash of (type, queue, job_id, attempt), 32 hex chars."""
    text = "\x1f".join((event_type, queue, job_id, str(attempt)))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class ValidationContext:
    """What validating an event needs besides the event: the allowlist and the clock."""

    queues: Collection[str]
    """Configured queue names; any other queue is rejected."""
    now_ms: int
    """Epoch milliseconds of the validation (passed in, never read here)."""
    max_skew_seconds: float = DEFAULT_MAX_SKEW_SECONDS


class Event(BaseModel):
    """One job lifecycle event. Times are epoch milliseconds, durations milliseconds."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: EventType
    queue: StrictStr = Field(min_length=1, max_length=80)
    job_id: StrictStr = Field(min_length=1, max_length=512)
    at: StrictInt = Field(gt=0)
    """When it happened, epoch ms."""
    duration_ms: StrictInt | None = Field(default=None, ge=0)
    """How long the job ran (completed/failed), ms."""
    pickup_ms: StrictInt | None = Field(default=None, ge=0)
    """started only: started-at minus enqueued-at, ms (the job's pickup time)."""
    attempt: StrictInt = Field(default=1, ge=1)
    event_id: StrictStr | None = Field(default=None, min_length=1, max_length=128)

    @field_validator("queue")
    @classmethod
    def _known_queue(cls, value: str, info: ValidationInfo) -> str:
        context = info.context
        if isinstance(context, ValidationContext) and value not in context.queues:
            raise ValueError("unknown queue (not in the configured queues)")
        return value

    @field_validator("at")
    @classmethod
    def _not_in_future(cls, value: int, info: ValidationInfo) -> int:
        context = info.context
        if isinstance(context, ValidationContext):
            limit = context.now_ms + int(context.max_skew_seconds * 1000)
            if value > limit:
                ahead = (value - context.now_ms) / 1000
                raise ValueError(
                    f"{ahead:.0f} s in the future (more than the allowed "
                    f"{context.max_skew_seconds:g} s clock skew)"
                )
        return value

    @model_validator(mode="after")
    def _type_rules(self) -> Event:
        if self.type in ("completed", "failed") and self.duration_ms is None:
            raise ValueError(f"field 'duration_ms' is required when type = {self.type!r}")
        if self.type in ("queued", "started") and self.duration_ms is not None:
            raise ValueError(f"field 'duration_ms' is only for completed/failed, not {self.type!r}")
        if self.pickup_ms is not None and self.type != "started":
            raise ValueError(f"field 'pickup_ms' is only for started, not {self.type!r}")
        if self.event_id is None:
            object.__setattr__(
                self,
                "event_id",
                default_event_id(self.type, self.queue, self.job_id, self.attempt),
            )
        return self

    @property
    def second(self) -> int:
        """The epoch second the event counts in."""
        return self.at // 1000

    def record(self) -> dict[str, Any]:
        """The archived form: every field, event_id filled in, absent optionals left out."""
        return self.model_dump(exclude_none=True)


@dataclass(frozen=True, slots=True)
class Rejection:
    """One rejected event (or whole body) and why."""

    reason: str
    """Names the field and the value."""
    payload: str
    """The rejected event as JSON, or the whole body when it was rejected whole."""
    queue: str = "unknown"
    """The event's queue when it could be read (the RejectedEvents metric dimension)."""
    index: int | None = None
    """Position in the body's array (None: a single object or the whole body)."""


@dataclass(frozen=True, slots=True)
class ParsedBody:
    """The outcome of one message body: accepted events and rejections."""

    accepted: list[Event] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)


def _shown(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 120 else text[:117] + "..."


def describe_error(error: ValidationError) -> str:
    """A pydantic error as 'field 'x' = value: message; ...'."""
    parts = []
    for item in error.errors():
        loc = ".".join(str(part) for part in item["loc"])
        message = str(item["msg"]).removeprefix("Value error, ")
        if item["type"] == "missing":
            parts.append(f"field {loc!r} is missing")
        elif loc:
            parts.append(f"field {loc!r} = {_shown(item.get('input'))}: {message}")
        else:
            parts.append(message)
    return "; ".join(parts)


def validate_event(data: Any, context: ValidationContext) -> Event:
    """One event object -> Event; raises ValueError with a reason naming field and value."""
    if not isinstance(data, Mapping):
        raise ValueError(f"event = {_shown(data)}: expected a JSON object")
    try:
        return Event.model_validate(data, context=context)
    except ValidationError as error:
        raise ValueError(describe_error(error)) from None


def parse_body(body: str, context: ValidationContext) -> ParsedBody:
    """Validate one SQS message body (an event or an array of events)."""
    size = len(body.encode("utf-8"))
    if size > MAX_BODY_BYTES:
        return ParsedBody(
            rejected=[Rejection(f"body = {size} bytes: over the {MAX_BODY_BYTES} byte limit", body)]
        )
    try:
        data = json.loads(body)
    except json.JSONDecodeError as error:
        reason = f"body is not JSON: {error.msg} at line {error.lineno} column {error.colno}"
        return ParsedBody(rejected=[Rejection(reason, body)])
    if isinstance(data, list):
        if not data:
            return ParsedBody(
                rejected=[Rejection("body = []: an empty array holds no event", body)]
            )
        if len(data) > MAX_EVENTS_PER_BODY:
            reason = f"body holds {len(data)} events: more than {MAX_EVENTS_PER_BODY}"
            return ParsedBody(rejected=[Rejection(reason, body)])
        items: list[tuple[int | None, Any]] = list(enumerate(data))
    else:
        items = [(None, data)]
    parsed = ParsedBody()
    for index, item in items:
        try:
            parsed.accepted.append(validate_event(item, context))
        except ValueError as error:
            queue = item.get("queue") if isinstance(item, Mapping) else None
            known = isinstance(queue, str) and queue in context.queues
            where = f"event [{index}]: " if index is not None else ""
            parsed.rejected.append(
                Rejection(
                    reason=f"{where}{error}",
                    payload=json.dumps(item, separators=(",", ":"), default=str),
                    queue=queue if known and isinstance(queue, str) else "unknown",
                    index=index,
                )
            )
    return parsed


def encode_events(events: list[Mapping[str, Any]]) -> str:
    """Events -> a message body (a compact JSON array)."""
    return json.dumps(events, separators=(",", ":"))
