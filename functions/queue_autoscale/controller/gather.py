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
from queue_autoscale.config import QueueConfig, SqsSource
from queue_autoscale.controller.runtime import EvaluateRuntime
from queue_autoscale.core import CounterRow, DepthReading, OldestAge, Readings
from queue_autoscale.core.snapshot import counter_lookback_seconds
from queue_autoscale.telemetry import logger, tracer

T = TypeVar("T")


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
    ages_call = pool.submit(runtime.oldest.oldest_ages, sqs_names, now)
    services_call = pool.submit(runtime.ecs.describe, list(refs.values()))
    documents_call = pool.submit(runtime.table.read_documents, names)
    per_queue = [pool.submit(_read_queue, runtime, config, now) for config in queues]
    calls: list[Future[Any]] = [ages_call, services_call, documents_call, *per_queue]
    wait(calls, timeout=max(0.0, reads_until - time.monotonic()))

    try:
        ages: dict[str, OldestAge | None] = _finished(ages_call, "GetMetricData")
        inputs.ages = dict(ages) if sqs_names else {}
    except AdapterError as error:
        inputs.ages = dict.fromkeys(sqs_names)
        for name in sqs_names:
            inputs.fail(name, error)
    for config, call in zip(queues, per_queue, strict=True):
        try:
            reads = _finished(call, f"read queue {config.queue}")
        except AdapterError as error:
            reads = _QueueReads(errors=[error])
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
