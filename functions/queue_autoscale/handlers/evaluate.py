"""evaluate: the controller loop (EventBridge Scheduler, once a minute).

Within the minute it runs a tick every EVALUATION_INTERVAL_SECONDS. A tick gathers every
queue's inputs in batched calls (one GetQueueAttributes per queue and DLQ, one
GetMetricData per 500 queues, one DescribeServices per 10 services, one BatchGetItem per
50 queues, one counters Query per queue), asks the core for a decision per queue, stores
the controller state under optimistic concurrency, sets desiredCount (unless dry-run,
hold, or another controller won the state race), and publishes metrics, decision events
and the decision log. A failed input becomes a None in the snapshot (the core holds);
one queue's failure never stops the others and is counted in ControllerErrors.
"""

from __future__ import annotations

import math
import os
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, ConfigDict, Field

from queue_autoscale.adapters.aws import AwsClients, make_clients
from queue_autoscale.adapters.cloudwatch import OldestAge, OldestAgeReader
from queue_autoscale.adapters.dynamodb import LoadTable
from queue_autoscale.adapters.ecs import EcsServices, ServiceRef, ServiceStatus
from queue_autoscale.adapters.errors import AdapterError, StateConflict
from queue_autoscale.adapters.eventbridge import DecisionEvent, EventPublisher
from queue_autoscale.adapters.s3 import Archive
from queue_autoscale.adapters.sqs import QueueDepth, SqsQueues
from queue_autoscale.config import QueueConfig, SqsSource
from queue_autoscale.constants import BREACH_EVENT, DECISION_EVENT, SCALED_EVENT
from queue_autoscale.core import (
    POLICIES,
    ControllerState,
    CounterRow,
    Decision,
    Policy,
    Readings,
    TrendModel,
    build_snapshot,
    decision_to_dict,
    model_from_dict,
    state_from_dict,
    state_to_dict,
)
from queue_autoscale.core.models import Action
from queue_autoscale.core.snapshot import counter_lookback_seconds
from queue_autoscale.handlers._common import Clock, MetricsSink, emf_metrics
from queue_autoscale.settings import EvaluateSettings
from queue_autoscale.sources import Sources

logger = Logger(service=os.environ.get("POWERTOOLS_SERVICE_NAME") or "queue-autoscale")
tracer = Tracer(service=os.environ.get("POWERTOOLS_SERVICE_NAME") or "queue-autoscale")

MINUTE_SECONDS = 60.0
"""The scheduler fires once a minute; ticks fill that minute."""
DEADLINE_MARGIN_SECONDS = 10.0
"""A tick does not start when less than this is left of the invocation."""


@dataclass
class EvaluateRuntime:
    """What the controller uses, built once per cold start (tests and the demo build their own)."""

    settings: EvaluateSettings
    sqs: SqsQueues
    oldest: OldestAgeReader
    ecs: EcsServices
    table: LoadTable
    archive: Archive
    events: EventPublisher
    clock: Clock = time.time
    sleep: Callable[[float], None] = time.sleep
    publish_metrics: MetricsSink = emf_metrics
    policy: str = "hybrid"
    sources: Sources | None = None
    """Kafka and RabbitMQ queues' readers (SQS is read by the tick's batched calls)."""
    max_concurrency: int = 8
    """Threads for the tick's reads (AWS calls are latency-bound)."""


def build_runtime(
    settings: EvaluateSettings,
    clients: AwsClients,
    clock: Clock = time.time,
    sleep: Callable[[float], None] = time.sleep,
) -> EvaluateRuntime:
    """Wire adapters from clients and settings."""
    return EvaluateRuntime(
        settings=settings,
        sqs=SqsQueues(clients.sqs),
        oldest=OldestAgeReader(clients.cloudwatch),
        ecs=EcsServices(clients.ecs),
        table=LoadTable(clients.dynamodb, settings.load_table),
        archive=Archive(clients.s3, settings.archive_bucket),
        events=EventPublisher(clients.events, settings.event_bus_name),
        sources=Sources(clients.cloudwatch, clients.secretsmanager, clients.ssm),
        clock=clock,
        sleep=sleep,
    )


_runtime: EvaluateRuntime | None = None


def get_runtime() -> EvaluateRuntime:
    """The cached runtime; the first call reads the environment (a bad one fails here)."""
    global _runtime  # noqa: PLW0603 - one runtime per Lambda container, by design
    if _runtime is None:
        _runtime = build_runtime(EvaluateSettings.from_environ(), make_clients())
    return _runtime


def set_runtime(runtime: EvaluateRuntime | None) -> None:
    """Replace the cached runtime (tests, the demo); None makes the next call rebuild it."""
    global _runtime  # noqa: PLW0603
    _runtime = runtime


@dataclass
class Inputs:
    """Everything gathered for one tick; None where a call failed (see `errors`)."""

    depth: dict[str, QueueDepth | None] = field(default_factory=dict)
    dlq_depth: dict[str, int | None] = field(default_factory=dict)
    ages: dict[str, OldestAge | None] = field(default_factory=dict)
    services: dict[str, ServiceStatus | None] = field(default_factory=dict)
    states: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    models: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    documents_ok: bool = True
    rows: dict[str, list[CounterRow] | None] = field(default_factory=dict)
    partitions: dict[str, int | None] = field(default_factory=dict)
    """Live partition counts (Kafka sources that report one)."""
    errors: dict[str, list[str]] = field(default_factory=dict)

    def readings(self, queue: str) -> Readings:
        """One queue's readings, for the core's snapshot builder."""
        return Readings(
            depth=self.depth.get(queue),
            oldest_age=self.ages.get(queue),
            fleet=self.services.get(queue),
            dlq_depth=self.dlq_depth.get(queue),
            rows=self.rows.get(queue),
        )

    def fail(self, queue: str, error: Exception | str) -> None:
        """Remember one failed input of a queue."""
        self.errors.setdefault(queue, []).append(str(error))
        logger.warning("input unavailable", queue=queue, error=str(error))


@dataclass
class QueueOutcome:
    """One queue's result of one tick."""

    queue: str
    decision: Decision | None = None
    running: int | None = None
    desired_before: int | None = None
    applied: bool = False
    """True when UpdateService set the new desiredCount."""
    dry_run: bool = False
    conflict: bool = False
    """Another controller wrote the state first: this one did not act."""
    errors: list[str] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        """The decision-log line: decision_to_dict plus what the handler did."""
        base: dict[str, Any] = (
            decision_to_dict(self.decision) if self.decision else {"queue": self.queue}
        )
        base.update(
            running=self.running,
            applied=self.applied,
            dry_run=self.dry_run,
            conflict=self.conflict,
            errors=list(self.errors),
        )
        return base


@dataclass
class _QueueReads:
    """The per-queue reads of one tick (run concurrently across queues)."""

    depth: QueueDepth | None = None
    dlq_depth: int | None = None
    age: OldestAge | None = None
    """A non-SQS source's age datapoint (SQS ages come from the batched GetMetricData)."""
    partitions: int | None = None
    rows: list[CounterRow] | None = None
    errors: list[AdapterError | str] = field(default_factory=list)


def _read_source(
    runtime: EvaluateRuntime, config: QueueConfig, now: float, reads: _QueueReads
) -> None:
    """A Kafka or RabbitMQ queue's depth, age and dead letters through its QueueSource."""
    if runtime.sources is None:
        reads.errors.append(AdapterError("read source", "no source readers in this runtime"))
        return
    try:
        reading = runtime.sources.read(config, now)
    except AdapterError as error:
        reads.errors.append(error)
        return
    if reading is not None:
        reads.depth, reads.age = reading.depth, reading.age
        reads.dlq_depth, reads.partitions = reading.dlq_depth, reading.partitions
        reads.errors.extend(reading.notes)


def _read_queue(runtime: EvaluateRuntime, config: QueueConfig, now: float) -> _QueueReads:
    reads = _QueueReads()
    if not isinstance(config.source, SqsSource):
        _read_source(runtime, config, now, reads)
    else:
        try:
            reads.depth = runtime.sqs.depth(config.queue)
        except AdapterError as error:
            reads.errors.append(error)
    if config.dlq:
        try:
            reads.dlq_depth = runtime.sqs.depth(config.dlq).visible
        except AdapterError as error:
            reads.errors.append(error)
    second = int(now)
    try:
        reads.rows = runtime.table.counter_rows(
            config.queue, second - counter_lookback_seconds(config.sla_seconds), second
        )
    except AdapterError as error:
        reads.errors.append(error)
    return reads


@tracer.capture_method
def gather(runtime: EvaluateRuntime, queues: Sequence[QueueConfig], now: float) -> Inputs:
    """Read every queue's inputs in batched calls; failures become None plus an error.

    The batched calls (GetMetricData, DescribeServices, BatchGetItem) and the per-queue
    calls (GetQueueAttributes, counters Query) run on a small thread pool: they are
    latency-bound, and boto3 clients are thread-safe.
    """
    inputs = Inputs()
    names = [config.queue for config in queues]
    sqs_names = [config.queue for config in queues if isinstance(config.source, SqsSource)]
    refs = {config.queue: ServiceRef(config.cluster, config.service) for config in queues}
    workers = max(1, min(runtime.max_concurrency, len(queues) + 3))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="gather") as pool:
        ages_call = pool.submit(runtime.oldest.oldest_ages, sqs_names, now)
        services_call = pool.submit(runtime.ecs.describe, list(refs.values()))
        documents_call = pool.submit(runtime.table.read_documents, names)
        per_queue = list(pool.map(lambda config: _read_queue(runtime, config, now), queues))

        try:
            inputs.ages = dict(ages_call.result()) if sqs_names else {}
        except AdapterError as error:
            inputs.ages = dict.fromkeys(sqs_names)
            for name in sqs_names:
                inputs.fail(name, error)
        for config, reads in zip(queues, per_queue, strict=True):
            inputs.depth[config.queue] = reads.depth
            inputs.rows[config.queue] = reads.rows
            if config.dlq or reads.dlq_depth is not None:
                inputs.dlq_depth[config.queue] = reads.dlq_depth
            if not isinstance(config.source, SqsSource):
                inputs.ages[config.queue] = reads.age
                inputs.partitions[config.queue] = reads.partitions
            for problem in reads.errors:
                inputs.fail(config.queue, problem)
        described = services_call.result()
        for queue, ref in refs.items():
            status = described.get(ref)
            if isinstance(status, ServiceStatus):
                inputs.services[queue] = status
            else:
                inputs.services[queue] = None
                inputs.fail(queue, status or AdapterError("DescribeServices", "no answer"))
        try:
            for queue, (state, model) in documents_call.result().items():
                inputs.states[queue] = state
                inputs.models[queue] = model
        except AdapterError as error:
            inputs.documents_ok = False
            for name in names:
                inputs.fail(name, error)
    return inputs


def evaluate_queue(
    runtime: EvaluateRuntime,
    config: QueueConfig,
    inputs: Inputs,
    now: float,
    decided_at: float | None = None,
) -> QueueOutcome:
    """Decide, store the state, act for one queue (raises only on a bug; AWS errors are kept).

    `now` is when the inputs were read (the snapshot's time), `decided_at` when the core
    decides (default `now`), both epoch seconds: inputs older than the core's stale limit
    at decision time make it hold.
    """
    settings = config.settings(
        runtime.settings.evaluation_interval_seconds, inputs.partitions.get(config.queue)
    )
    dry_run = runtime.settings.dry_run or config.dry_run
    if dry_run and not settings.dry_run:
        settings = replace(settings, dry_run=True)
    queue = config.queue
    service = inputs.services.get(queue)
    outcome = QueueOutcome(
        queue=queue,
        running=service.running if service else None,
        desired_before=service.desired if service else None,
        dry_run=dry_run,
        errors=list(inputs.errors.get(queue, [])),
    )
    if not inputs.documents_ok:
        outcome.errors.append("controller state unavailable: not deciding")
        return outcome
    stored = inputs.states.get(queue)
    state = state_from_dict(stored) if stored else ControllerState(queue=queue)
    raw_model = inputs.models.get(queue)
    model: TrendModel | None = model_from_dict(raw_model) if raw_model else None
    snapshot = build_snapshot(queue, now, inputs.readings(queue))
    policy: Policy = POLICIES[runtime.policy]
    evaluation = policy(snapshot, settings, state, now if decided_at is None else decided_at, model)
    decision = evaluation.decision
    outcome.decision = decision
    try:
        runtime.table.write_state(queue, state_to_dict(evaluation.state), state.version)
    except StateConflict:
        outcome.conflict = True
        logger.info("state race lost: another controller acts this tick", queue=queue)
        return outcome
    except AdapterError as error:
        outcome.errors.append(f"state not stored, not acting: {error}")
        return outcome
    wants_change = (
        decision.action is not Action.HOLD
        and service is not None
        and decision.target != service.desired
    )
    if wants_change and not dry_run:
        try:
            runtime.ecs.set_desired(ServiceRef(config.cluster, config.service), decision.target)
            outcome.applied = True
        except AdapterError as error:
            outcome.errors.append(str(error))
    return outcome


SLA_FIELDS = ("sla_seconds", "percentile", "predicted_pickup_seconds")
"""Every decision event carries the SLA aimed at and the pickup time predicted (seed 001)."""


def decision_events(outcome: QueueOutcome) -> list[DecisionEvent]:
    """ScalingDecisionMade always; WorkersScaled when applied; SlaBreachPredicted when predicted."""
    if outcome.decision is None:
        return []
    decision = outcome.decision
    record = decision_to_dict(decision)
    sla = {name: record[name] for name in SLA_FIELDS}
    events = [DecisionEvent(DECISION_EVENT, outcome.record())]
    if outcome.applied:
        events.append(
            DecisionEvent(
                SCALED_EVENT,
                {
                    "queue": decision.queue,
                    "at": decision.at,
                    "from": outcome.desired_before,
                    "to": decision.target,
                    "action": decision.action.value,
                    "reason": decision.reason,
                    **sla,
                },
            )
        )
    if decision.predicted_breach_seconds is not None:
        events.append(
            DecisionEvent(
                BREACH_EVENT,
                {
                    "queue": decision.queue,
                    "at": decision.at,
                    "predicted_breach_seconds": decision.predicted_breach_seconds,
                    "urgency": decision.urgency.value,
                    "oldest_age_seconds": decision.oldest_age_seconds,
                    "sla_usage": decision.sla_usage,
                    "current": decision.current,
                    "target": decision.target,
                    **sla,
                },
            )
        )
    return events


def queue_metrics(outcome: QueueOutcome) -> dict[str, float]:
    """The QUEUE_METRICS values of one outcome (ControllerErrors always, 0 when none)."""
    values: dict[str, float] = {"ControllerErrors": float(len(outcome.errors))}
    decision = outcome.decision
    if decision is None:
        return values
    values.update(
        LoadRatio=decision.load_ratio,
        ArrivalRate=decision.arrival_rate,
        ServiceRate=decision.service_rate,
        BacklogPerInstance=decision.backlog_per_instance,
        OldestJobAgeSeconds=decision.oldest_age_seconds,
        SlaUsage=decision.sla_usage,
        CurrentWorkers=float(outcome.running if outcome.running is not None else decision.current),
        TargetWorkers=float(decision.target),
    )
    if decision.predicted_pickup_seconds is not None:
        values["PredictedPickupSeconds"] = decision.predicted_pickup_seconds
    if decision.realized_compliance is not None:
        values["RealizedCompliance"] = decision.realized_compliance
    if decision.fleet_usage is not None:  # seed 003's per-queue 80%-of-max alarm reads this
        values["FleetUsage"] = decision.fleet_usage
    return values


@tracer.capture_method
def run_tick(runtime: EvaluateRuntime, now: float) -> list[QueueOutcome]:
    """One evaluation of every configured queue at `now` (epoch seconds)."""
    queues = list(runtime.settings.queues)
    started = runtime.clock()
    inputs = gather(runtime, queues, now)
    # A gather slowed by timeouts and retries read the world as it was at `now`: the core
    # judges that snapshot's age when it decides (stale after 2 intervals: hold).
    decided_at = now + max(0.0, runtime.clock() - started)
    outcomes: list[QueueOutcome] = []
    for config in queues:
        try:
            outcome = evaluate_queue(runtime, config, inputs, now, decided_at)
        except Exception as error:  # one queue's bug must not stop the others
            logger.exception("queue evaluation failed", queue=config.queue)
            outcome = QueueOutcome(queue=config.queue, errors=[f"evaluation failed: {error!r}"])
        outcomes.append(outcome)

    events = [event for outcome in outcomes for event in decision_events(outcome)]
    try:
        refused = runtime.events.publish(events)
    except AdapterError as error:
        refused = []
        for outcome in outcomes:
            outcome.errors.append(f"decision events not published: {error}")
    for failure in refused:
        queue = str(events[failure.index].detail.get("queue", ""))
        for outcome in outcomes:
            if outcome.queue == queue:
                outcome.errors.append(f"event refused: {failure.code} {failure.message}")
    tick_id = f"{int(now)}-{uuid.uuid4().hex[:12]}"
    try:
        runtime.archive.put_decisions(now, tick_id, [outcome.record() for outcome in outcomes])
    except AdapterError as error:
        for outcome in outcomes:
            outcome.errors.append(f"decision log not archived: {error}")

    for outcome in outcomes:
        runtime.publish_metrics(outcome.queue, queue_metrics(outcome))
        if outcome.errors:
            logger.error("queue tick had errors", queue=outcome.queue, errors=outcome.errors)
        if outcome.decision is not None:
            logger.info(
                "decision",
                queue=outcome.queue,
                current=outcome.decision.current,
                target=outcome.decision.target,
                action=outcome.decision.action.value,
                applied=outcome.applied,
                reason=outcome.decision.reason,
            )
    return outcomes


def tick_count(interval_seconds: float, max_ticks: int | None = None) -> int:
    """Ticks starting within one minute at this interval (ticks at 0, interval, ... < 60 s)."""
    count = max(1, math.ceil(MINUTE_SECONDS / interval_seconds))
    return min(count, max_ticks) if max_ticks else count


def run(
    runtime: EvaluateRuntime, max_ticks: int | None = None, deadline: float | None = None
) -> list[list[QueueOutcome]]:
    """Run ticks every interval until the minute (or `deadline`, epoch seconds) is used."""
    interval = runtime.settings.evaluation_interval_seconds
    start = runtime.clock()
    ticks: list[list[QueueOutcome]] = []
    for index in range(tick_count(interval, max_ticks)):
        due = start + index * interval
        if index and deadline is not None and due > deadline:
            break
        wait = due - runtime.clock()
        if wait > 0:
            runtime.sleep(wait)
        ticks.append(run_tick(runtime, runtime.clock()))
    return ticks


class EvaluateRequest(BaseModel):
    """Options a scheduled event may carry (at top level or under `detail`)."""

    model_config = ConfigDict(extra="ignore")

    max_ticks: int | None = Field(default=None, ge=1, le=60)
    once: bool = False


def parse_request(event: Mapping[str, Any] | None) -> EvaluateRequest:
    """The options of a scheduler event; anything else in the event is ignored."""
    if not isinstance(event, Mapping):
        return EvaluateRequest()
    detail = event.get("detail")
    source = detail if isinstance(detail, Mapping) and detail else event
    return EvaluateRequest.model_validate(dict(source))


def summary(ticks: Sequence[Sequence[QueueOutcome]]) -> dict[str, Any]:
    """The handler's JSON answer: every tick's decisions, in brief."""
    return {
        "ticks": len(ticks),
        "decisions": [
            {
                "queue": outcome.queue,
                "at": outcome.decision.at if outcome.decision else None,
                "current": outcome.decision.current if outcome.decision else None,
                "target": outcome.decision.target if outcome.decision else None,
                "action": outcome.decision.action.value if outcome.decision else None,
                "reason": outcome.decision.reason if outcome.decision else None,
                "running": outcome.running,
                "applied": outcome.applied,
                "dry_run": outcome.dry_run,
                "conflict": outcome.conflict,
                "errors": outcome.errors,
            }
            for tick in ticks
            for outcome in tick
        ],
    }


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Scheduler entry point: run the minute's ticks and return their decisions."""
    runtime = get_runtime()
    request = parse_request(event)
    max_ticks = 1 if request.once else request.max_ticks
    deadline = None
    remaining_ms = getattr(context, "get_remaining_time_in_millis", None)
    if callable(remaining_ms):
        deadline = runtime.clock() + remaining_ms() / 1000.0 - DEADLINE_MARGIN_SECONDS
    return summary(run(runtime, max_ticks=max_ticks, deadline=deadline))
