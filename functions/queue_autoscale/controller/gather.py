"""Read every queue's inputs for one tick in batched calls, within the tick's read budget.

One GetQueueAttributes per queue and DLQ (or the queue's Kafka/RabbitMQ source), one
GetMetricData per 500 queues, one DescribeServices per 10 services, one BatchGetItem per 50
queues and one counters Query per queue, all on the tick's thread pool (they are latency-bound
and boto3 clients are thread-safe). A failed call, or one still running when the read budget
is spent, becomes None plus an error for the queues it concerns; the core holds on None.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import Executor, Future, wait
from dataclasses import dataclass, field
from typing import Any, TypeVar

from queue_autoscale.adapters.ecs import ServiceRef, ServiceStatus
from queue_autoscale.adapters.errors import AdapterError
from queue_autoscale.adapters.sqs import QueueDepth
from queue_autoscale.config import QueueConfig, SqsSource
from queue_autoscale.controller.runtime import EvaluateRuntime
from queue_autoscale.core import CounterRow, DepthReading, OldestAge, Readings
from queue_autoscale.core.snapshot import counter_lookback_seconds
from queue_autoscale.telemetry import logger, tracer

T = TypeVar("T")
AGE_WAIT_SHARE = 0.5
"""The SQS depths get up to this share of the read budget left before the oldest-age read is
sent for the queues they show non-empty; the rest of the budget is the age read's."""


@dataclass
class Inputs:
    """Everything gathered for one tick; None where a call failed (see `errors`)."""

    depth: dict[str, DepthReading | None] = field(default_factory=dict)
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
    notes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """What a source asks the decision's reason to say (not errors: the reading is usable)."""

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
class _QueueReads:
    """The per-queue reads of one tick (run concurrently across queues)."""

    depth: DepthReading | None = None
    dlq_depth: int | None = None
    age: OldestAge | None = None
    """A non-SQS source's age datapoint (SQS ages come from the batched GetMetricData)."""
    partitions: int | None = None
    rows: list[CounterRow] | None = None
    errors: list[AdapterError | str] = field(default_factory=list)
    notes: tuple[str, ...] = ()


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
        reads.notes = reading.reason_notes


def _read_queue(runtime: EvaluateRuntime, config: QueueConfig, now: float) -> _QueueReads:
    """A queue's reads other than an SQS queue's own depth (read first, apart: `gather`)."""
    reads = _QueueReads()
    if not isinstance(config.source, SqsSource):
        _read_source(runtime, config, now, reads)
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


def _finished(call: Future[T], what: str) -> T:
    """The call's answer; a call still running past the read budget is an AdapterError."""
    if not call.done():
        raise AdapterError(what, "not answered within the tick's read budget")
    return call.result()


@tracer.capture_method
def gather(
    runtime: EvaluateRuntime,
    queues: Sequence[QueueConfig],
    now: float,
    pool: Executor,
    reads_until: float,
) -> Inputs:
    """Read every queue's inputs on `pool`; what is not read by `reads_until` (a
    `time.monotonic()` instant) is None plus an error, for the queues it concerns only."""
    inputs = Inputs()
    names = [config.queue for config in queues]
    sqs_names = [config.queue for config in queues if isinstance(config.source, SqsSource)]
    refs = {config.queue: ServiceRef(config.cluster, config.service) for config in queues}
    depth_calls = {name: pool.submit(runtime.sqs.depth, name) for name in sqs_names}
    services_call = pool.submit(runtime.ecs.describe, list(refs.values()))
    documents_call = pool.submit(runtime.table.read_documents, names)
    per_queue = [pool.submit(_read_queue, runtime, config, now) for config in queues]
    asked = _may_wait(depth_calls, reads_until)
    ages_call = pool.submit(runtime.oldest.oldest_ages, asked, now) if asked else None
    calls: list[Future[Any]] = [services_call, documents_call, *per_queue, *depth_calls.values()]
    if ages_call is not None:
        calls.append(ages_call)
    wait(calls, timeout=max(0.0, reads_until - time.monotonic()))

    if ages_call is not None:
        _ages(inputs, ages_call, asked)
    for config, call in zip(queues, per_queue, strict=True):
        reads = _queue_reads(config, call, depth_calls.get(config.queue))
        inputs.depth[config.queue] = reads.depth
        inputs.rows[config.queue] = reads.rows
        if config.dlq or reads.dlq_depth is not None:
            inputs.dlq_depth[config.queue] = reads.dlq_depth
        if not isinstance(config.source, SqsSource):
            inputs.ages[config.queue] = reads.age
            inputs.partitions[config.queue] = reads.partitions
            if reads.notes:
                inputs.notes[config.queue] = reads.notes
        for problem in reads.errors:
            inputs.fail(config.queue, problem)
    _services(inputs, refs, services_call)
    try:
        for queue, (state, model) in _finished(documents_call, "BatchGetItem").items():
            inputs.states[queue] = state
            inputs.models[queue] = model
    except AdapterError as error:
        inputs.documents_ok = False
        for name in names:
            inputs.fail(name, error)
    return inputs


def _queue_reads(
    config: QueueConfig, call: Future[_QueueReads], depth_call: Future[QueueDepth] | None
) -> _QueueReads:
    """One queue's reads, its SQS depth (read apart) included; what failed is in `errors`."""
    try:
        reads = _finished(call, f"read queue {config.queue}")
    except AdapterError as error:
        reads = _QueueReads(errors=[error])
    if depth_call is not None:
        try:
            reads.depth = _finished(depth_call, "GetQueueAttributes")
        except AdapterError as error:
            reads.errors.insert(0, error)
    return reads


def _may_wait(depth_calls: dict[str, Future[QueueDepth]], reads_until: float) -> list[str]:
    """The SQS queues whose oldest-message age is worth a GetMetricData: all but those whose
    depth read shows no visible message (the core takes an empty queue's age as 0 whatever
    CloudWatch says). Waits for the depths up to AGE_WAIT_SHARE of the read budget left; a
    depth not read by then is asked for, as before."""
    left = reads_until - time.monotonic()
    wait(depth_calls.values(), timeout=max(0.0, AGE_WAIT_SHARE * left))
    return [name for name, call in depth_calls.items() if not _known_empty(call)]


def _known_empty(call: Future[QueueDepth]) -> bool:
    return call.done() and call.exception() is None and call.result().visible == 0


def _ages(inputs: Inputs, call: Future[dict[str, OldestAge | None]], asked: list[str]) -> None:
    """The ages asked for; a failed GetMetricData is an error of the queues it asked about."""
    try:
        ages: dict[str, OldestAge | None] = _finished(call, "GetMetricData")
        inputs.ages = dict(ages)
    except AdapterError as error:
        inputs.ages = dict.fromkeys(asked)
        for name in asked:
            inputs.fail(name, error)


def _services(
    inputs: Inputs,
    refs: dict[str, ServiceRef],
    call: Future[dict[ServiceRef, ServiceStatus | AdapterError]],
) -> None:
    try:
        described = _finished(call, "DescribeServices")
    except AdapterError as error:
        described = dict.fromkeys(refs.values(), error)
    for queue, ref in refs.items():
        status = described.get(ref)
        if isinstance(status, ServiceStatus):
            inputs.services[queue] = status
        else:
            inputs.services[queue] = None
            inputs.fail(queue, status or AdapterError("DescribeServices", "no answer"))
