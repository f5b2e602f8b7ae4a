"""record_events' worst-case batch on the emulator: 100 messages x 100 events, every event in
its own second (10,000 distinct counter keys of one queue), through `ingest.batch.ingest` with
the real adapters over HTTP to a loopback moto server; one write at a time and 10 at a time.
Prints the wall time, the per-write latency and the projection to AWS (docs in the table).

Run: `.venv/bin/python benchmarks/ingest_worst_batch.py` (options `--messages`, `--events`).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "functions"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import header, write
from ingest_conservation import embedded_clients

from queue_autoscale.adapters.aws import AwsClients
from queue_autoscale.adapters.dynamodb import LoadTable, create_load_table
from queue_autoscale.ingest.batch import DEADLINE_MARGIN_SECONDS, ingest
from queue_autoscale.ingest.parse import Message
from queue_autoscale.ingest.runtime import COUNTER_WRITE_CONCURRENCY, build_runtime
from queue_autoscale.settings import RecordSettings

NOW = 1_763_000_000.0
LAMBDA_TIMEOUT_SECONDS = 30.0
"""template.yaml's RecordEventsFunction Timeout."""
AWS_UPDATE_ITEM_MS = (5.0, 20.0)
"""Assumed in-region UpdateItem latency, typical and slow (DynamoDB's "single-digit
milliseconds"; not measured here)."""
PARTITION_WRITES_PER_SECOND = 1_000
"""DynamoDB's per-partition limit of 1,000 write units a second: every counter key of one
queue shares the partition key C#<queue>, and so do all concurrent batches of that queue."""


def batch(messages: int, events: int) -> list[Message]:
    """`messages` bodies of `events` queued events each, every event in its own second."""
    out = []
    for m in range(messages):
        body = [
            {
                "type": "queued",
                "queue": "orders",
                "job_id": f"j{m}-{e}",
                "at": int(NOW * 1000) - (m * events + e + 1) * 1000,
            }
            for e in range(events)
        ]
        out.append(Message(f"m-{m:04d}", json.dumps(body)))
    return out


def run_once(clients: AwsClients, messages: list[Message], concurrency: int, tag: str) -> float:
    """Seconds to ingest the batch into fresh resources with `concurrency` writes at once."""
    table = create_load_table_named(clients, f"load-{tag}")
    clients.s3.create_bucket(Bucket=f"archive-{tag}")
    dlq = clients.sqs.create_queue(QueueName=f"dlq-{tag}")["QueueUrl"]
    settings = RecordSettings.from_environ(
        {
            "QUEUES_CONFIG": json.dumps([{"queue": "orders"}]),
            "LOAD_TABLE": table,
            "ARCHIVE_BUCKET": f"archive-{tag}",
            "EVENTS_DLQ_URL": dlq,
        }
    )
    runtime = build_runtime(settings, clients, clock=lambda: NOW)
    runtime.max_concurrency = concurrency
    started = time.perf_counter()
    result = ingest(messages, runtime, NOW)
    seconds = time.perf_counter() - started
    assert not result.failed, result.failed
    assert result.counter_writes == sum(len(json.loads(m.body)) for m in messages)
    return seconds


def redelivered(clients: AwsClients, messages: list[Message], budget: float) -> list[float]:
    """Deliveries until nothing is reported failed, each with `budget` seconds of writes (the
    deadline a Lambda context of LAMBDA_TIMEOUT_SECONDS gives), 10 writes at once; returns each
    delivery's wall time and checks every event was counted exactly once."""
    table = create_load_table_named(clients, "load-budget")
    clients.s3.create_bucket(Bucket="archive-budget")
    dlq = clients.sqs.create_queue(QueueName="dlq-budget")["QueueUrl"]
    settings = RecordSettings.from_environ(
        {
            "QUEUES_CONFIG": json.dumps([{"queue": "orders"}]),
            "LOAD_TABLE": table,
            "ARCHIVE_BUCKET": "archive-budget",
            "EVENTS_DLQ_URL": dlq,
        }
    )
    runtime = build_runtime(settings, clients, clock=time.time)
    walls: list[float] = []
    batch = messages
    while batch and len(walls) < 20:
        started = time.time()
        result = ingest(batch, runtime, NOW, deadline=started + budget)
        walls.append(time.time() - started)
        batch = [m for m in batch if m.message_id in result.failed]
    rows = LoadTable(clients.dynamodb, table).counter_rows("orders", 0, int(NOW))
    expected = sum(len(json.loads(m.body)) for m in messages)
    assert sum(r.queued for r in rows) == expected, (sum(r.queued for r in rows), expected)
    return walls


def create_load_table_named(clients: AwsClients, name: str) -> str:
    create_load_table(clients.dynamodb, name)
    return name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100)
    parser.add_argument("--events", type=int, default=100)
    args = parser.parse_args()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    logging.getLogger("queue-autoscale").setLevel(logging.ERROR)
    messages = batch(args.messages, args.events)
    keys = args.messages * args.events
    with embedded_clients("server") as clients:
        serial = run_once(clients, messages, 1, "serial")
        parallel = run_once(clients, messages, COUNTER_WRITE_CONCURRENCY, "parallel")
        budget = LAMBDA_TIMEOUT_SECONDS - DEADLINE_MARGIN_SECONDS
        walls = redelivered(clients, messages, budget)
    per_write_ms = serial / keys * 1000
    rows = []
    for latency in AWS_UPDATE_ITEM_MS:
        by_latency = keys * latency / 1000 / COUNTER_WRITE_CONCURRENCY
        by_partition = keys / PARTITION_WRITES_PER_SECOND
        projected = max(by_latency, by_partition)
        rows.append(
            f"| {latency:g} ms | {by_latency:.1f} s | {by_partition:.1f} s | {projected:.1f} s "
            f"| {'fits' if projected <= budget else 'does not fit'} "
            f"({budget:.0f} s) |"
        )
    lines = [
        header(
            f"record_events worst-case batch: {keys:,} distinct counter keys",
            ("boto3", "botocore", "moto", "aws-lambda-powertools"),
        ),
        f"{args.messages} messages x {args.events} events of one queue, each event in its own "
        "second; `ingest.batch.ingest` with the real adapters over HTTP to a ThreadedMotoServer "
        "on 127.0.0.1 (validation, archive PutObject and the counter writes included).",
        "",
        "| writes at once | wall time | per counter key |",
        "|---|---|---|",
        f"| 1 | {serial:.1f} s | {per_write_ms:.2f} ms |",
        f"| {COUNTER_WRITE_CONCURRENCY} | {parallel:.1f} s | {parallel / keys * 1000:.2f} ms |",
        "",
        f"With the deadline a {LAMBDA_TIMEOUT_SECONDS:g} s invocation gives ({budget:g} s of "
        f"writes, {COUNTER_WRITE_CONCURRENCY} at once), redelivering what each delivery reports "
        f"failed: {len(walls)} deliveries of "
        + ", ".join(f"{w:.1f} s" for w in walls)
        + f"; every one of the {keys:,} events counted exactly once (counter sum checked).",
        "",
        "Projection to AWS, one batch alone: max(keys x UpdateItem latency / "
        f"{COUNTER_WRITE_CONCURRENCY}, keys / {PARTITION_WRITES_PER_SECOND:,} writes/s per "
        "partition key). The latencies are assumptions, not measurements.",
        "",
        "| UpdateItem latency | by latency | by the partition limit | projected | within "
        "the 30 s timeout less the 7 s margin |",
        "|---|---|---|---|---|",
        *rows,
        "",
        "All counter keys of one queue share pk `C#<queue>`, and all batches of that queue "
        "running at once share its 1,000 writes/s: two such batches at once need "
        f"{2 * keys / PARTITION_WRITES_PER_SECOND:.0f} s of that queue's write capacity. What "
        "does not start before the deadline is reported failed and redelivered, never counted "
        "twice (each counter item keeps its messages' tokens). Only adaptive capacity splitting "
        "the partition by sort-key range raises the limit. On the emulator (moto, CPU-bound "
        "Python on a shared 2-core machine) the batch takes longer than the 23 s budget: there "
        "the handler would report the unwritten part failed and finish it on redelivery. "
        "Producers that batch events of the same second together keep the keys per batch far "
        "below 10,000 (the throughput benchmark's batches have ~1 key per 10 events).",
    ]
    write("ingest_worst_batch.md", "\n".join(lines))


if __name__ == "__main__":
    main()
