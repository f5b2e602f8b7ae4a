"""The record path's rates for the bill: producers' sends, the events queue's batches and the
counter writes, per second for the whole stack (pure arithmetic, no prices).

Each queue's producer flushes its buffer every `flush_seconds` (EventRecorder); a flush with
events is one SendMessageBatch of up to 10 messages of up to 100 events. The event source's
batching windows run back to back (AWS: "the next batching window begins as soon as the previous
function invocation completes"); a window closes after `window_seconds` or at `batch_messages`
messages, and a window with any message is one record_events batch: one invocation, one archive
object. A batch writes one counter item per (queue, second) it holds. Events arrive as a
Poisson process; benchmarks/results/ingest_batching.md runs the real recorder and ingest through
the same model and counts fewer sends and writes than these formulas (a job's three events
arrive within seconds of each other), so the bill is an upper bound on that count.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

EVENTS_PER_MESSAGE = 100
"""EventRecorder's largest message (client.MAX_EVENTS_PER_MESSAGE)."""
MESSAGES_PER_CALL = 10
"""SendMessageBatch, ReceiveMessage and DeleteMessageBatch carry at most 10 messages."""


@dataclass(frozen=True, slots=True)
class IngestRates:
    """Per second, the whole stack."""

    sends: float
    """Producers' SendMessageBatch calls."""
    messages: float
    """Messages into the events queue."""
    batches: float
    """record_events invocations (and archive objects)."""
    receives: float
    """The event source's ReceiveMessage calls that return messages (its empty polls aside)."""
    deletes: float
    """DeleteMessageBatch calls."""
    writes: float
    """Counter UpdateItem calls."""
    queue_batches: float
    """(queue, batch) pairs: one AcceptedEvents EMF document each."""


def _per_window(rate: float, window: float) -> float:
    """Windows with at least one arrival per second, for back-to-back windows of `window` s
    and Poisson arrivals at `rate`/s (no window: every arrival)."""
    if window <= 0:
        return rate
    return -math.expm1(-rate * window) / window


def ingest_rates(
    queues: int,
    events_per_second: float,
    *,
    flush_seconds: float,
    window_seconds: float,
    batch_messages: int,
) -> IngestRates:
    """The record path's calls per second for `queues` queues of `events_per_second` each."""
    if events_per_second <= 0:
        return IngestRates(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    flushes = _per_window(events_per_second, flush_seconds)  # per queue
    messages_per_queue = max(flushes, events_per_second / EVENTS_PER_MESSAGE)
    messages = queues * messages_per_queue
    window = min(window_seconds, batch_messages / messages)
    batches = _per_window(messages, window)
    by_call = max(batches, messages / MESSAGES_PER_CALL)
    return IngestRates(
        sends=queues * max(flushes, messages_per_queue / MESSAGES_PER_CALL),
        messages=messages,
        batches=batches,
        receives=by_call,
        deletes=by_call,
        writes=queues * -math.expm1(-events_per_second),
        queue_batches=queues * _per_window(messages_per_queue, window),
    )
