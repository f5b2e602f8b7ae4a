"""The Event contract (DESIGN section 3): what producers and workers send to the events queue.

One SQS message body holds one event object or a JSON array of up to 100. Each event is
validated on its own: a bad one is rejected with a reason naming the field and value, the
good ones beside it are still accepted. A body that is not strict JSON (NaN and Infinity
included), too large, nested deeper than MAX_JSON_DEPTH, holding a number too long to read,
or an array too long is rejected whole. Whatever goes wrong reading one body or one event
becomes that body's or that event's rejection with a reason, never an exception.
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

from queue_autoscale.core.models import DEFAULT_MAX_JOB_SECONDS
from queue_autoscale.validation import describe_error, shown

EventType = Literal["queued", "started", "completed", "failed"]
MAX_BODY_BYTES = 256 * 1024
"""Bodies larger than this are rejected whole."""
MAX_EVENTS_PER_BODY = 100
MAX_JSON_DEPTH = 8
"""An event body nests 2 deep (an array of flat objects); deeper than this is rejected whole
(Python's parser would raise RecursionError near 1,000)."""
MAX_SAFE_INTEGER = 2**53 - 1
"""Integer fields stay within what every JSON reader (and DynamoDB's ADD) holds exactly."""
MAX_PICKUP_MS = 14 * 86_400 * 1000
"""No job waits longer than SQS's 14-day retention."""
DEFAULT_MAX_SKEW_SECONDS = 300.0
"""How far in the future an event's `at` may be (producer clocks drift)."""
EVENTS_RETENTION_SECONDS = 4 * 86_400
"""The events queue's MessageRetentionPeriod (template.yaml repeats it; a test checks): no live
event can be older than this plus the allowed skew, so an older `at` is a producer's mistake."""


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
    """How far in the future an `at` may be, seconds (the same slack applies to the past)."""
    max_age_seconds: float = EVENTS_RETENTION_SECONDS
    """How old an `at` may be before the skew, seconds: the events queue's retention."""
    max_duration_ms: Mapping[str, int] = field(default_factory=dict)
    """Per queue: the longest plausible `duration_ms` (its max_job_seconds; default 12 h)."""

    def duration_limit_ms(self, queue: str) -> int:
        """The plausibility limit of one job's duration on `queue`, ms."""
        return self.max_duration_ms.get(queue, int(DEFAULT_MAX_JOB_SECONDS * 1000))


class Event(BaseModel):
    """One job lifecycle event. Times are epoch milliseconds, durations milliseconds."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: EventType
    """queued (a producer enqueued the job), started, completed or failed (a worker)."""
    queue: StrictStr = Field(min_length=1, max_length=80)
    """The work queue's name, one of the configured queues."""
    job_id: StrictStr = Field(min_length=1, max_length=512)
    """The job's id (the SQS message id, or the producer's own)."""
    at: StrictInt = Field(gt=0, le=MAX_SAFE_INTEGER)
    """When it happened, epoch ms."""
    duration_ms: StrictInt | None = Field(default=None, ge=0, le=MAX_SAFE_INTEGER)
    """How long the job ran (completed/failed), ms; at most the queue's max_job_seconds."""
    pickup_ms: StrictInt | None = Field(default=None, ge=0, le=MAX_PICKUP_MS)
    """started only: started-at minus enqueued-at, ms (the job's pickup time)."""
    attempt: StrictInt = Field(default=1, ge=1, le=MAX_SAFE_INTEGER)
    """Delivery attempt, from 1 (SQS ApproximateReceiveCount)."""
    event_id: StrictStr | None = Field(default=None, min_length=1, max_length=128)
    """De-duplication key; default a hash of (type, queue, job_id, attempt)."""

    @field_validator("queue")
    @classmethod
    def _known_queue(cls, value: str, info: ValidationInfo) -> str:
        context = info.context
        if isinstance(context, ValidationContext) and value not in context.queues:
            raise ValueError("unknown queue (not in the configured queues)")
        return value

    @field_validator("at")
    @classmethod
    def _plausible_time(cls, value: int, info: ValidationInfo) -> int:
        context = info.context
        if isinstance(context, ValidationContext):
            problem = time_problem(value, context)
            if problem is not None:
                raise ValueError(problem)
        return value

    @field_validator("duration_ms")
    @classmethod
    def _plausible_duration(cls, value: int | None, info: ValidationInfo) -> int | None:
        context = info.context
        queue = info.data.get("queue")
        if value is None or not isinstance(context, ValidationContext) or queue is None:
            return value
        limit = context.duration_limit_ms(queue)
        if value > limit:
            raise ValueError(
                f"longer than the queue's max_job_seconds {limit / 1000:g} s "
                "(a clock or unit error?)"
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


def time_problem(at_ms: int, context: ValidationContext) -> str | None:
    """Why `at` (epoch ms) cannot be a live event's time, naming the likely unit mistake; None
    when it lies within [now - retention - skew, now + skew]."""
    now_ms = context.now_ms
    skew_ms = int(context.max_skew_seconds * 1000)
    oldest_ms = now_ms - int(context.max_age_seconds * 1000) - skew_ms
    if oldest_ms <= at_ms <= now_ms + skew_ms:
        return None
    if at_ms > now_ms:
        ahead = (at_ms - now_ms) / 1000
        hint = (
            " (microseconds instead of ms?)"
            if oldest_ms <= at_ms // 1000 <= now_ms + skew_ms
            else ""
        )
        return (
            f"{ahead:.0f} s in the future (more than the allowed "
            f"{context.max_skew_seconds:g} s clock skew){hint}"
        )
    if oldest_ms <= at_ms * 1000 <= now_ms + skew_ms:
        hint = "epoch seconds instead of ms?"
    else:
        hint = "a clock or unit error?"
    days = (now_ms - at_ms) / 86_400_000
    return (
        f"{days:.1f} days ago ({hint}): older than the events queue's "
        f"{context.max_age_seconds / 86_400:g}-day retention, so no live event"
    )


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


def validate_event(data: Any, context: ValidationContext) -> Event:
    """One event object -> Event; raises ValueError with a reason naming field and value."""
    if not isinstance(data, Mapping):
        raise ValueError(f"event = {shown(data)}: expected a JSON object")
    try:
        return Event.model_validate(data, context=context)
    except ValidationError as error:
        raise ValueError(describe_error(error)) from None


class _NotJsonError(ValueError):
    """NaN / Infinity literals: Python's json reads them, RFC 8259 does not."""


def _no_constant(name: str) -> Any:
    raise _NotJsonError(f"{name} is not a JSON number")


def _depth(value: Any) -> int:
    """How deep arrays and objects nest in a parsed body (stops counting past the limit)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, list | dict):
            deepest = max(deepest, depth)
            if deepest > MAX_JSON_DEPTH:
                return deepest
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return deepest


def _load(body: str) -> tuple[Any, str | None]:
    """(parsed body, None) or (None, why the body is rejected whole)."""
    try:
        data = json.loads(body, parse_constant=_no_constant)
    except json.JSONDecodeError as error:
        return None, f"body is not JSON: {error.msg} at line {error.lineno} column {error.colno}"
    except _NotJsonError as error:
        return None, f"body is not JSON: {error}"
    except RecursionError:
        return None, f"body nests deeper than {MAX_JSON_DEPTH} levels"
    except ValueError as error:  # e.g. an integer of more than 4,300 digits
        return None, f"body holds a number that cannot be read: {str(error)[:80]}"
    if _depth(data) > MAX_JSON_DEPTH:
        return None, f"body nests deeper than {MAX_JSON_DEPTH} levels"
    return data, None


def parse_body(body: str, context: ValidationContext) -> ParsedBody:
    """Validate one SQS message body (an event or an array of events); never raises."""
    size = len(body.encode("utf-8", errors="surrogatepass"))
    if size > MAX_BODY_BYTES:
        return ParsedBody(
            rejected=[Rejection(f"body = {size} bytes: over the {MAX_BODY_BYTES} byte limit", body)]
        )
    data, problem = _load(body)
    if problem is not None:
        return ParsedBody(rejected=[Rejection(problem, body)])
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
        except Exception as error:  # any failure is this event's rejection
            parsed.rejected.append(_rejection(item, index, error, context))
    return parsed


def _rejection(
    item: Any, index: int | None, error: Exception, context: ValidationContext
) -> Rejection:
    queue = item.get("queue") if isinstance(item, Mapping) else None
    known = isinstance(queue, str) and queue in context.queues
    where = f"event [{index}]: " if index is not None else ""
    why = str(error) if isinstance(error, ValueError) else f"{type(error).__name__}: {error}"
    return Rejection(
        reason=f"{where}{why}",
        payload=json.dumps(item, separators=(",", ":"), default=str),
        queue=queue if known and isinstance(queue, str) else "unknown",
        index=index,
    )
