"""The record path's calls per event at a low rate: producers' sends, record_events batches
(invocations and archive objects) and counter writes, and how late events reach the counters.

Each queue's producer is the real `EventRecorder` (its sending code, packing and SendMessageBatch
calls), flushed every `--flush` seconds as its background thread does; jobs arrive as a Poisson
process and each is three events (queued, started, completed) spread over the following
seconds. The events queue is a model of Lambda's SQS event source with a batching window:
windows of `--window` seconds run back to back (AWS: "the next batching window begins as soon as
the previous function invocation completes"), a window with any message is one batch of up to
`--batch-size` messages, and each batch goes through the real `ingest` on the real adapters over
a counting client. Counted: SendMessageBatch calls, batches, UpdateItem and PutObject calls, per
event; lateness = the batch's time minus the event's own time, seconds.

    nice -n 10 .venv/bin/python benchmarks/ingest_batching.py [--queues 20] [--hours 1]
"""

from __future__ import annotations

import argparse
import heapq
import json
import random
import sys
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "functions"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import header, write
from ingest_throughput import NOW, QUEUES, CountingClient, runtime

from queue_autoscale.client import EventRecorder
from queue_autoscale.ingest.batch import ingest
from queue_autoscale.ingest.lateness import (
    MEAN_LATENESS_SECONDS,
    PRODUCER_FLUSH_SECONDS,
    RECORD_BATCH_SECONDS,
)
from queue_autoscale.ingest.parse import Message
from queue_autoscale.operator.cost import (
    Usage,
    usage,
)
from queue_autoscale.operator.cost_command import template_shape
from queue_autoscale.operator.cost_inputs import (
    Workload,
)
from queue_autoscale.operator.prices import US_EAST_1

EVENTS_URL = "https://sqs.us-east-1.amazonaws.com/123456789012/events"
EVENTS_PER_JOB = 3
SIZES = (1, 10, 100, 1_000, 10_000)
RECORD_LINES = (
    ("Lambda", "record_events"),
    ("SQS", "events queue"),
    ("DynamoDB", "counter UpdateItem"),
    ("S3", "event-archive"),
)


class SimClock:
    """The simulation's epoch seconds, read by every recorder."""

    def __init__(self, start: float) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


class ProducerSqs:
    """The producers' SQS client: keeps every sent body with its send time, counts the calls."""

    def __init__(self, clock: SimClock) -> None:
        self.clock = clock
        self.sent: list[tuple[float, str]] = []
        self.calls = 0

    def send_message_batch(self, **kwargs: Any) -> dict[str, Any]:
        self.calls += 1
        for entry in kwargs["Entries"]:
            self.sent.append((self.clock.now, entry["MessageBody"]))
        return {"Successful": [{"Id": entry["Id"]} for entry in kwargs["Entries"]], "Failed": []}


@dataclass(frozen=True, slots=True)
class Shape:
    """One run: per-queue event rate (events/s), producer flush (s), window (s), batch size."""

    rate: float
    flush: float
    window: float
    batch_size: int


@dataclass(frozen=True, slots=True)
class Counts:
    events: int
    sends: int
    batches: int
    updates: int
    puts: int
    mean_late: float
    max_late: float


def _timeline(rng: random.Random, shape: Shape, seconds: float) -> list[tuple[float, str, int]]:
    """(time, event type, job) of every event of one queue: jobs arrive at rate/3 jobs/s; each
    starts 0..2 s after it is queued and completes 0..3 s after it starts."""
    events: list[tuple[float, str, int]] = []
    t, job = 0.0, 0
    while True:
        t += rng.expovariate(shape.rate / EVENTS_PER_JOB)
        if t >= seconds:
            break
        job += 1
        started = t + rng.uniform(0, 2)
        done = started + rng.uniform(0, 3)
        events += [(t, "queued", job), (started, "started", job), (done, "completed", job)]
    return sorted(events)


def _produce(shape: Shape, queues: int, seconds: float, seed: int) -> tuple[ProducerSqs, int]:
    """Every queue's events through its own recorder, flushed every `flush` s (each producer at
    its own phase); returns the producers' client (bodies with send times) and the event count."""
    rng = random.Random(seed)
    clock = SimClock(NOW - seconds - 60)
    sqs = ProducerSqs(clock)
    start = clock.now
    heap: list[tuple[float, int, str, int, int]] = []  # (time, order, kind, queue, job)
    order = 0
    for q in range(queues):
        for at, kind, job in _timeline(rng, shape, seconds):
            heap.append((start + at, order, kind, q, job))
            order += 1
        phase = rng.uniform(0, shape.flush)
        flushes = int((seconds + 10) / shape.flush) + 1
        for k in range(flushes):
            heap.append((start + phase + k * shape.flush, order, "flush", q, 0))
            order += 1
    heapq.heapify(heap)
    recorders = [
        EventRecorder(sqs, EVENTS_URL, flush_interval_seconds=1e9, clock=clock)
        for _ in range(queues)
    ]
    events = 0
    while heap:
        at, _, kind, q, job = heapq.heappop(heap)
        clock.now = at
        recorder, queue, at_ms = recorders[q], QUEUES[q % len(QUEUES)], int(at * 1000)
        if kind == "flush":
            recorder.flush()
        elif kind == "queued":
            recorder.queued(queue, f"{q}-{job}", at_ms=at_ms)
            events += 1
        elif kind == "started":
            recorder.started(queue, f"{q}-{job}", pickup_ms=500, at_ms=at_ms)
            events += 1
        else:
            recorder.completed(queue, f"{q}-{job}", 1500, at_ms=at_ms)
            events += 1
    return sqs, events


def _batches(sent: list[tuple[float, str]], shape: Shape) -> list[tuple[float, list[str]]]:
    """The event source's batches: back-to-back windows; a window with messages is one batch of
    up to batch_size of them (the rest wait for the next window), invoked at the window's end."""
    batches: list[tuple[float, list[str]]] = []
    pending: list[str] = []
    index = 0
    window_end = sent[0][0] + shape.window if sent else 0.0
    while index < len(sent) or pending:
        while index < len(sent) and sent[index][0] < window_end:
            pending.append(sent[index][1])
            index += 1
        if pending:
            batches.append((window_end, pending[: shape.batch_size]))
            pending = pending[shape.batch_size :]
        window_end += shape.window
    return batches


def measure(shape: Shape, queues: int, seconds: float, seed: int) -> Counts:
    """Run the producers, the event source model and the real ingest; count per event."""
    sqs, events = _produce(shape, queues, seconds, seed)
    client = CountingClient()
    record = runtime(client)
    late: list[float] = []
    batches = _batches(sqs.sent, shape)
    for number, (at, bodies) in enumerate(batches):
        messages = [Message(f"b{number}-{i}", body) for i, body in enumerate(bodies)]
        result = ingest(messages, record, at)
        assert not result.failed and not result.rejected, result.failed
        for body in bodies:
            late += [at - event["at"] / 1000 for event in json.loads(body)]
    calls: Counter[str] = client.calls
    return Counts(
        events=events,
        sends=sqs.calls,
        batches=len(batches),
        updates=calls["UpdateItem"],
        puts=calls["PutObject"],
        mean_late=sum(late) / len(late),
        max_late=max(late),
    )


def record_path_usd(lines: list[Usage]) -> float:
    """The record path's line items of one month (USD)."""
    return sum(
        line.usd
        for line in lines
        if any(line.service == svc and line.item.startswith(item) for svc, item in RECORD_LINES)
    )


def split_lines() -> list[str]:
    """The bill's record path per queue-month for each split of the waits between the producers'
    flush and the window, at each size: an event waits half of each on average, so the two may
    sum to twice the mean-lateness bound less the batch's own time."""
    budget = int(2 * (MEAN_LATENESS_SECONDS - RECORD_BATCH_SECONDS))
    base = template_shape()
    table: dict[int, list[float]] = {}
    for flush in range(1, budget):
        shape = replace(base, producer_flush_seconds=flush, record_window_seconds=budget - flush)
        table[flush] = [
            record_path_usd(usage(Workload(queues=q), shape, US_EAST_1)) / q for q in SIZES
        ]
    cheapest = [min(row[i] for row in table.values()) for i in range(len(SIZES))]
    names = ", ".join(item for _, item in RECORD_LINES)
    lines = [
        "",
        f"## Splitting the waits of a {MEAN_LATENESS_SECONDS:g} s mean lateness: the bill's "
        "record path",
        "",
        f"USD per queue-month of the record path's line items ({names}) from "
        "`operator.cost` at 0.3 events/s per queue, for each split of "
        f"{budget} s between the producers' flush and the batching window (an event waits "
        f"half of each on average; the batch's own {RECORD_BATCH_SECONDS:g} s set aside); "
        "*worst* is the split's largest ratio to the "
        "cheapest split at the same size. The least worst is the default "
        f"(`PRODUCER_FLUSH_SECONDS` = {PRODUCER_FLUSH_SECONDS:g} s).",
        "",
        "| flush s | window s | " + " | ".join(f"{q:,} queues" for q in SIZES) + " | worst |",
        "|---:|---:|" + "---:|" * (len(SIZES) + 1),
    ]
    for flush, row in table.items():
        worst = max(usd / low for usd, low in zip(row, cheapest, strict=True))
        cells = " | ".join(f"{usd:.3f}" for usd in row)
        lines.append(f"| {flush} | {budget - flush} | {cells} | +{worst - 1:.0%} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queues", type=int, default=20)
    parser.add_argument("--hours", type=float, default=1.0)
    parser.add_argument("--rate", type=float, default=0.3, help="events/s per queue")
    parser.add_argument("--shapes", default="1:1:100,1:2:100,2:1:100,1:3:100,3:1:100")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default="ingest_batching.md")
    args = parser.parse_args()
    seconds = args.hours * 3600
    lines = [
        header("The record path's calls per event at a low rate"),
        "",
        f"{args.queues} queues at {args.rate} events/s each (a job's queued, started and "
        f"completed), {args.hours:g} h, seed {args.seed}. Producers: the real EventRecorder, "
        "flushed every *flush* s. Event source: back-to-back batching windows of *window* s, "
        "up to *batch size* messages a batch (a model of Lambda's SQS poller: one poller, no "
        "concurrency). Each batch through the real `ingest` over a counting client. Lateness: "
        "the batch's time minus the event's time.",
        "",
        "| flush s | window s | batch size | events | SendMessageBatch per event | batches "
        "(invocations, archive PUTs) per event | UpdateItem per event | mean late s | max late s |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for text in args.shapes.split(","):
        flush, window, size = text.split(":")
        shape = Shape(args.rate, float(flush), float(window), int(size))
        c = measure(shape, args.queues, seconds, args.seed)
        lines.append(
            f"| {shape.flush:g} | {shape.window:g} | {shape.batch_size} | {c.events:,} | "
            f"{c.sends / c.events:.3f} | {c.batches / c.events:.3f} | {c.updates / c.events:.3f} "
            f"| {c.mean_late:.1f} | {c.max_late:.1f} |"
        )
        print(lines[-1], flush=True)
    lines += split_lines()
    write(args.out, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
