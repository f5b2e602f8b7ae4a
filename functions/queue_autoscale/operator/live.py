"""What a deployed stack is doing now, per queue, from what the stack already stores.

- the configuration: the evaluate function's own environment (adapters.stack);
- the latest decision per queue: the decision log in the S3 archive (workers, target, the
  winning term, load ratio, backlog per instance, oldest age against the SLA, urgency,
  predicted pickup, the reason);
- the last action and when: the controller's STATE item in the load table;
- the realized compliance over the last hour: the archived `started` events' `pickup_ms`;
- the alarm states: CloudWatch DescribeAlarms for the stack's alarms, and for each alarm on a
  fleet metric the queues whose latest decision meets its condition (an alarm says "some
  queue"; this names which).

Every read goes through an adapter; a failed read leaves its fields None and adds an error,
never stopping the others. `build_status` is pure (records in, a frozen status out, `now`
passed in) so it is tested on plain dicts.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from queue_autoscale.adapters.aws import make_client
from queue_autoscale.adapters.cloudwatch import AlarmReader, AlarmState
from queue_autoscale.adapters.dynamodb import LoadTable
from queue_autoscale.adapters.errors import AdapterError
from queue_autoscale.adapters.s3 import Archive
from queue_autoscale.adapters.stack import StackReader
from queue_autoscale.config import QueueConfig
from queue_autoscale.controller.config_loader import (
    ConfigUnavailable,
    QueueConfigLoader,
    store_reader,
)
from queue_autoscale.settings import EvaluateSettings, SettingsError

COMPLIANCE_WINDOW_SECONDS = 3600.0
"""Realized compliance is measured over this trailing window."""
DECISION_LOOKBACK_SECONDS = 900.0
"""The latest decision is looked for in the decision log of this trailing window."""
MAX_EVENT_OBJECTS = 500
"""At most this many archived event batches are read for the compliance (newest hours first);
beyond it the compliance is marked partial."""
MAX_DECISION_OBJECTS = 60
"""At most this many decision-log objects (one per tick) are read, newest first."""


class StatusError(RuntimeError):
    """The stack cannot be read at all (no such stack, no evaluate function, bad settings)."""


@dataclass(frozen=True)
class QueueStatus:
    """One queue's live state; None where the store holding it could not be read."""

    queue: str
    sla_seconds: float
    percentile: float
    decided_at: float | None = None
    """Epoch seconds of the latest logged decision."""
    running: int | None = None
    """Running workers (ECS tasks) at that decision."""
    current: int | None = None
    """The fleet size the decision started from (desired, else running)."""
    target: int | None = None
    action: str | None = None
    winner: str | None = None
    """The term that set the raw target: steady, trend, drain or none."""
    load_ratio: float | None = None
    backlog_per_instance: float | None = None
    """Visible jobs per running worker."""
    oldest_age_seconds: float | None = None
    sla_usage: float | None = None
    """oldest age / SLA."""
    urgency: str | None = None
    predicted_pickup_seconds: float | None = None
    reason: str | None = None
    last_action: str | None = None
    """'up to N' or 'down to N', from the controller state."""
    last_action_at: float | None = None
    compliance: float | None = None
    """Share of jobs started in the last hour whose pickup was within the SLA (0..1)."""
    compliance_jobs: int = 0
    """Started jobs with a known pickup time behind `compliance`."""
    compliance_partial: bool = False
    """True when not every archived batch of the hour was read (see MAX_EVENT_OBJECTS)."""
    decision: dict[str, Any] | None = None
    """The latest decision record as logged (for `explain --stack`)."""


@dataclass(frozen=True)
class StackStatus:
    """Every configured queue of a stack, and the stack's alarms, at `at`."""

    stack: str
    at: float
    """Epoch seconds the status was read."""
    queues: tuple[QueueStatus, ...]
    alarms: tuple[AlarmState, ...] | None
    """None when the alarms could not be read."""
    errors: tuple[str, ...] = field(default=())
    conditions: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Alarm name -> the queues whose latest decision meets that alarm's condition now."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form (`status --json`), non-finite floats as null."""
        return dict(_finite(asdict(self)))


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


def latest_decisions(records: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The newest decision record per queue (by `at`); records without a decision are skipped."""
    latest: dict[str, dict[str, Any]] = {}
    for record in records:
        queue, at = record.get("queue"), record.get("at")
        if not isinstance(queue, str) or not isinstance(at, int | float) or "target" not in record:
            continue
        if queue not in latest or at > latest[queue]["at"]:
            latest[queue] = dict(record)
    return latest


def realized_compliance(
    events: Iterable[Mapping[str, Any]], queue: str, sla_seconds: float, since: float, until: float
) -> tuple[float | None, int]:
    """(share of the queue's jobs started in [since, until] picked up within the SLA, how many).

    Reads `started` events carrying `pickup_ms` (the worker's started-at minus enqueued-at);
    times are epoch seconds, `at` in the events epoch ms. None when no such job started.
    """
    limit_ms = sla_seconds * 1000.0
    seen: set[str] = set()
    within = total = 0
    for event in events:
        if event.get("type") != "started" or event.get("queue") != queue:
            continue
        at, pickup = event.get("at"), event.get("pickup_ms")
        if not isinstance(at, int | float) or not isinstance(pickup, int | float):
            continue
        if not since * 1000 <= at <= until * 1000:
            continue
        key = str(event.get("event_id") or (event.get("job_id"), event.get("attempt")))
        if key in seen:  # the archive is at-least-once: count a redelivered event once
            continue
        seen.add(key)
        total += 1
        within += pickup <= limit_ms
    return (within / total if total else None), total


def last_action(state: Mapping[str, Any] | None) -> tuple[str | None, float | None]:
    """('up to N' / 'down to N', epoch seconds) of the controller's last scaling, or Nones."""
    if not state:
        return None, None
    up, down = state.get("last_scale_up_at"), state.get("last_scale_down_at")
    moves = [(at, name) for at, name in ((up, "up"), (down, "down")) if isinstance(at, int | float)]
    if not moves:
        return None, None
    at, direction = max(moves)
    count = state.get("last_set_desired")
    return (f"{direction} to {count}" if count is not None else direction), float(at)


def _number(record: Mapping[str, Any], key: str) -> float | None:
    value = record.get(key)
    return float(value) if isinstance(value, int | float) else None


def queue_status(
    config: QueueConfig,
    decision: Mapping[str, Any] | None,
    state: Mapping[str, Any] | None,
    compliance: tuple[float | None, int],
    compliance_partial: bool,
) -> QueueStatus:
    """One queue's status from its latest decision record, its state and its compliance."""
    action, action_at = last_action(state)
    base = QueueStatus(
        queue=config.queue,
        sla_seconds=config.sla_seconds,
        percentile=config.percentile,
        last_action=action,
        last_action_at=action_at,
        compliance=compliance[0],
        compliance_jobs=compliance[1],
        compliance_partial=compliance_partial,
    )
    if decision is None:
        return base
    running = decision.get("running")
    return QueueStatus(
        **{
            **asdict(base),
            "decided_at": _number(decision, "at"),
            "running": running if isinstance(running, int) else None,
            "current": decision.get("current"),
            "target": decision.get("target"),
            "action": decision.get("action"),
            "winner": decision.get("winner"),
            "load_ratio": _number(decision, "load_ratio"),
            "backlog_per_instance": _number(decision, "backlog_per_instance"),
            "oldest_age_seconds": _number(decision, "oldest_age_seconds"),
            "sla_usage": _number(decision, "sla_usage"),
            "urgency": decision.get("urgency"),
            "predicted_pickup_seconds": _number(decision, "predicted_pickup_seconds"),
            "reason": decision.get("reason"),
            "decision": dict(decision),
        }
    )


CONDITION_FIELDS = {
    "MaxLoadRatio": "load_ratio",
    "MaxSlaUsage": "sla_usage",
    "MaxFleetUsage": "fleet_usage",
}
"""A fleet alarm's metric -> the decision field whose highest value over the queues it is."""


def queues_in_condition(alarm: AlarmState, queues: Sequence[QueueStatus]) -> tuple[str, ...]:
    """The queues whose latest logged decision meets `alarm`'s condition: a field at or over its
    threshold (MaxLoadRatio, MaxSlaUsage, MaxFleetUsage), errors (QueueErrors), or no decision
    (UndecidedQueues); () for an alarm not on a per-queue condition."""
    records = [(q.queue, q.decision or {}) for q in queues]
    if alarm.metric in CONDITION_FIELDS and alarm.threshold is not None:
        name, limit = CONDITION_FIELDS[alarm.metric], alarm.threshold
        values = [(queue, _number(record, name)) for queue, record in records]
        return tuple(queue for queue, value in values if value is not None and value >= limit)
    if alarm.metric == "QueueErrors":
        return tuple(queue for queue, record in records if record.get("errors"))
    if alarm.metric == "UndecidedQueues":
        return tuple(q.queue for q in queues if q.decided_at is None)
    return ()


def build_status(  # noqa: PLR0913 - one per store read; None = unreadable
    stack: str,
    now: float,
    queues: Sequence[QueueConfig],
    decisions: Iterable[Mapping[str, Any]] | None,
    states: Mapping[str, Mapping[str, Any] | None] | None,
    events: Iterable[Mapping[str, Any]] | None,
    events_partial: bool,
    alarms: Sequence[AlarmState] | None,
    errors: Sequence[str] = (),
) -> StackStatus:
    """The stack's status from what was read (None: that store could not be read)."""
    latest = latest_decisions(decisions or [])
    event_list = list(events or [])
    rows = []
    for config in queues:
        compliance: tuple[float | None, int] = (None, 0)
        if events is not None:
            compliance = realized_compliance(
                event_list, config.queue, config.sla_seconds, now - COMPLIANCE_WINDOW_SECONDS, now
            )
        rows.append(
            queue_status(
                config,
                latest.get(config.queue),
                (states or {}).get(config.queue),
                compliance,
                events_partial,
            )
        )
    return StackStatus(
        stack=stack,
        at=now,
        queues=tuple(rows),
        alarms=tuple(alarms) if alarms is not None else None,
        errors=tuple(errors),
        conditions={alarm.name: queues_in_condition(alarm, rows) for alarm in alarms or ()},
    )


@dataclass(frozen=True)
class StackClients:
    """The boto3 clients `read_status` uses (built with the project's retry/timeouts)."""

    cloudformation: Any
    lambda_: Any
    dynamodb: Any
    s3: Any
    cloudwatch: Any
    ssm: Any = None
    """Reads the queue config store (`QUEUES_CONFIG_PARAMETER`)."""

    @classmethod
    def create(cls, endpoint_url: str | None = None, region: str | None = None) -> StackClients:
        """Clients for the endpoint (None: AWS, or $AWS_ENDPOINT_URL as botocore reads it)."""

        def build(service: str) -> Any:
            return make_client(service, endpoint_url=endpoint_url, region_name=region)

        return cls(
            cloudformation=build("cloudformation"),
            lambda_=build("lambda"),
            dynamodb=build("dynamodb"),
            s3=build("s3"),
            cloudwatch=build("cloudwatch"),
            ssm=build("ssm"),
        )


def stack_settings(stack: str, clients: StackClients) -> EvaluateSettings:
    """The evaluate function's settings, read from its environment on the stack."""
    try:
        environment = StackReader(clients.cloudformation, clients.lambda_).evaluate_environment(
            stack
        )
        return EvaluateSettings.from_environ(environment)  # type: ignore[no-any-return]
    except (AdapterError, SettingsError) as error:
        raise StatusError(f"stack {stack!r}: {error}") from None


def read_status(
    stack: str, clients: StackClients, now: float, queue: str | None = None
) -> StackStatus:
    """Read every store once and build the status (only `queue` when given)."""
    settings = stack_settings(stack, clients)
    reader = store_reader(settings, clients.ssm, clients.s3)
    try:
        configured = QueueConfigLoader(reader, publish=lambda _source, _values: None).load(now)
    except ConfigUnavailable as error:
        raise StatusError(f"stack {stack!r}: {error}") from None
    queues = [c for c in configured if queue is None or c.queue == queue]
    if queue is not None and not queues:
        names = ", ".join(c.queue for c in configured)
        raise StatusError(f"stack {stack!r} has no queue {queue!r} (it has: {names})")
    errors: list[str] = []
    archive = Archive(clients.s3, settings.archive_bucket)
    decisions: list[dict[str, Any]] | None = None
    states: dict[str, dict[str, Any] | None] | None = None
    events: list[dict[str, Any]] | None = None
    partial = False
    alarms: list[AlarmState] | None = None
    try:
        decisions, _ = archive.recent_records(
            "decisions", now - DECISION_LOOKBACK_SECONDS, now, max_objects=MAX_DECISION_OBJECTS
        )
    except AdapterError as error:
        errors.append(f"decision log: {error}")
    try:
        documents = LoadTable(clients.dynamodb, settings.load_table).read_documents(
            [c.queue for c in queues]
        )
        states = {name: state for name, (state, _model) in documents.items()}
    except AdapterError as error:
        errors.append(f"controller state: {error}")
    try:
        events, partial = archive.recent_records(
            "events", now - COMPLIANCE_WINDOW_SECONDS, now, max_objects=MAX_EVENT_OBJECTS
        )
    except AdapterError as error:
        errors.append(f"archived events: {error}")
    try:
        alarms = AlarmReader(clients.cloudwatch).alarms(f"{stack}-")
    except AdapterError as error:
        errors.append(f"alarms: {error}")
    return build_status(stack, now, queues, decisions, states, events, partial, alarms, errors)
