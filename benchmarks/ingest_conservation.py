"""Conservation under load: N events (1% malformed in 12 ways plus whole-body junk, 1%
duplicated) through the record_events handler in SQS batches of 10 messages x 1..100 events.

Checks: accepted + rejected = sent; every rejection is in the events DLQ with a reason of
its kind; the archive, de-duplicated by event_id, holds each valid event exactly once; the
counters' over-count equals the duplicates injected (counters are at-least-once).

Run: .venv/bin/python benchmarks/ingest_conservation.py [--events 1000000] [--mode inproc|server]

`inproc` (default) runs the handler with boto3 talking to moto in-process (`moto.mock_aws`,
no HTTP); `server` talks HTTP to a ThreadedMotoServer on 127.0.0.1 (as the tests do).
tests/reliability/test_conservation.py runs the same logic at 20,000 events in CI.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import random
import resource
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "functions"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import header, write

from queue_autoscale.adapters.aws import AwsClients, make_clients
from queue_autoscale.adapters.dynamodb import create_load_table
from queue_autoscale.adapters.s3 import decode_jsonl_gz
from queue_autoscale.demo import sqs_event
from queue_autoscale.events import default_event_id
from queue_autoscale.handlers import record_events
from queue_autoscale.settings import RecordSettings

NOW = 1_763_000_000.0
"""The handler's clock (2025-11-13T02:13:20Z); events fall in the `span` seconds before it."""
QUEUES = ("orders", "emails", "reports")
MESSAGES_PER_BATCH = 10
JUNK_EVERY_MESSAGES = 50
"""One body in this many is junk rejected whole (not JSON, [], > 100 events, > 256 KiB)."""
MALFORMED_SHARE = 0.01
DUPLICATE_SHARE = 0.01

MALFORMED_KINDS: tuple[tuple[str, str], ...] = (
    # (kind, a substring only that kind's rejection reason holds)
    ("missing field", "field 'at' is missing"),
    ("wrong type", "field 'at' = \"yesterday\""),
    ("negative duration", "field 'duration_ms' = -"),
    ("unknown queue", "field 'queue' = \"payments\""),
    ("future time", "s in the future"),
    ("not an object", "expected a JSON object"),
    ("extra field", "field 'colour' = \"red\""),
    ("bad type", "field 'type' = \"finished\""),
    ("duration on queued", "field 'duration_ms' is only for completed/failed"),
    ("pickup on completed", "field 'pickup_ms' is only for started"),
    ("attempt 0", "field 'attempt' = 0"),
    ("empty job id", "field 'job_id' = \"\""),
    ("body not JSON", "body is not JSON"),
    ("empty array", "an empty array holds no event"),
    ("array over 100", "events: more than 100"),
    ("body over 256 KiB", "byte limit"),
)
ITEM_KINDS = [kind for kind, _ in MALFORMED_KINDS[:12]]
BODY_KINDS = [kind for kind, _ in MALFORMED_KINDS[12:]]


def kind_of(reason: str) -> str:
    """The malformation kind a rejection reason names ('unexplained' when none)."""
    for kind, marker in MALFORMED_KINDS:
        if marker in reason:
            return kind
    return "unexplained"


@dataclass
class Plan:
    """What was sent: the units (events, or bodies rejected whole) and what they should become."""

    sent: int = 0
    """Units sent: each event in an array, plus each body that is rejected whole."""
    valid: int = 0
    """Valid events sent, duplicates included."""
    duplicates: int = 0
    malformed: Counter[str] = field(default_factory=Counter)
    unique_ids: set[str] = field(default_factory=set)
    messages: int = 0
    batches: int = 0


class Workload:
    """Deterministic message bodies in time order (a batch spans about one second)."""

    def __init__(
        self, events: int, seed: int = 11, rate_per_second: float = 1_000.0, collect: bool = False
    ) -> None:
        self.events = events
        self.collect = collect
        """Keep the event_id of every valid event in plan.unique_ids (costs memory)."""
        self.rng = random.Random(seed)
        self.start_ms = int(NOW * 1000) - int(events / rate_per_second * 1000) - 1_000
        self.step_ms = 1000.0 / rate_per_second
        self.plan = Plan()
        self._recent: list[dict[str, Any]] = []
        self._job = 0

    def _valid(self, at_ms: int) -> dict[str, Any]:
        self._job += 1
        queue = QUEUES[self._job % len(QUEUES)]
        kind = ("queued", "started", "completed", "failed")[self.rng.randrange(4)]
        event: dict[str, Any] = {"type": kind, "queue": queue, "job_id": f"j{self._job}"}
        event["at"] = at_ms
        if kind == "started":
            event["pickup_ms"] = self.rng.randrange(5_000)
        elif kind in ("completed", "failed"):
            event["duration_ms"] = self.rng.randrange(1, 3_000)
        return event

    def _malformed(self, kind: str, at_ms: int) -> Any:
        event = self._valid(at_ms)
        event.update(type="queued", queue="orders")
        event.pop("pickup_ms", None)
        event.pop("duration_ms", None)
        changes: dict[str, Any] = {
            "wrong type": {"at": "yesterday"},
            "negative duration": {"type": "completed", "duration_ms": -self.rng.randint(1, 99)},
            "unknown queue": {"queue": "payments"},
            "future time": {"at": int(NOW * 1000) + 3_600_000},
            "extra field": {"colour": "red"},
            "bad type": {"type": "finished"},
            "duration on queued": {"duration_ms": 5},
            "pickup on completed": {"type": "completed", "duration_ms": 5, "pickup_ms": 3},
            "attempt 0": {"attempt": 0},
            "empty job id": {"job_id": ""},
        }
        if kind == "missing field":
            del event["at"]
            return event
        if kind == "not an object":
            return self.rng.choice([42, "event", None, [1, 2], True])
        event.update(changes[kind])
        return event

    def _junk_body(self, kind: str) -> str:
        if kind == "body not JSON":
            return self.rng.choice(["not json {", '{"type": "queued",', "\x00\x01", ""])
        if kind == "empty array":
            return "[]"
        if kind == "array over 100":
            return json.dumps([self._valid(int(NOW * 1000))] * 101)
        return json.dumps({"type": "queued", "queue": "orders", "job_id": "x" * 270_000})

    def bodies(self) -> Iterator[str]:
        """Message bodies until `events` units are sent; updates `plan` as it goes."""
        plan, rng = self.plan, self.rng
        index = 0
        messages = 0
        while plan.sent < self.events:
            messages += 1
            if messages % JUNK_EVERY_MESSAGES == 7:  # a whole body of junk, now and then
                kind = BODY_KINDS[(messages // JUNK_EVERY_MESSAGES) % len(BODY_KINDS)]
                plan.sent += 1
                plan.malformed[kind] += 1
                yield self._junk_body(kind)
                continue
            size = min(rng.randint(1, 100), self.events - plan.sent)
            items: list[Any] = []
            for _ in range(size):
                at_ms = self.start_ms + int(index * self.step_ms)
                index += 1
                draw = rng.random()
                if draw < MALFORMED_SHARE:
                    kind = ITEM_KINDS[rng.randrange(len(ITEM_KINDS))]
                    items.append(self._malformed(kind, at_ms))
                    plan.malformed[kind] += 1
                elif draw < MALFORMED_SHARE + DUPLICATE_SHARE and self._recent:
                    items.append(dict(rng.choice(self._recent)))  # the same event, again
                    plan.duplicates += 1
                    plan.valid += 1
                else:
                    event = self._valid(at_ms)
                    items.append(event)
                    plan.valid += 1
                    if self.collect:
                        plan.unique_ids.add(
                            default_event_id(event["type"], event["queue"], event["job_id"], 1)
                        )
                    self._recent.append(event)
                    if len(self._recent) > 5_000:
                        self._recent = self._recent[-2_500:]
            plan.sent += len(items)
            yield json.dumps(items, separators=(",", ":"))


@dataclass
class Resources:
    """The load table, archive bucket and events DLQ on the endpoint."""

    table: str
    bucket: str
    dlq_url: str


def create_resources(clients: AwsClients, suffix: str) -> Resources:
    """Create the three resources as template.yaml shapes them (keys, on demand)."""
    table = f"load-{suffix}"
    create_load_table(clients.dynamodb, table)
    bucket = f"archive-{suffix}"
    clients.s3.create_bucket(Bucket=bucket)
    dlq = str(clients.sqs.create_queue(QueueName=f"events-dlq-{suffix}")["QueueUrl"])
    return Resources(table, bucket, dlq)


class _Context:
    function_name = "record-events"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:record-events"
    aws_request_id = "conservation"

    def get_remaining_time_in_millis(self) -> int:
        return 60_000


@dataclass
class Totals:
    """What the handler said and published."""

    failed_records: int = 0
    accepted_metric: float = 0.0
    rejected_metric: float = 0.0
    dimensions: set[str] = field(default_factory=set)


def drive(clients: AwsClients, resources: Resources, workload: Workload, seen: Observed) -> Totals:
    """Feed the workload to record_events.handler, MESSAGES_PER_BATCH messages an invocation
    (the DLQ is drained into `seen` after each)."""
    settings = RecordSettings.from_environ(
        {
            "QUEUES_CONFIG": json.dumps([{"queue": name} for name in QUEUES]),
            "LOAD_TABLE": resources.table,
            "ARCHIVE_BUCKET": resources.bucket,
            "EVENTS_DLQ_URL": resources.dlq_url,
        }
    )
    totals = Totals()

    def sink(queue: str, values: Any) -> None:
        totals.dimensions.add(queue)
        totals.accepted_metric += values.get("AcceptedEvents", 0.0)
        totals.rejected_metric += values.get("RejectedEvents", 0.0)

    runtime = record_events.build_runtime(settings, clients, clock=lambda: NOW)
    runtime.publish_metrics = sink
    record_events.set_runtime(runtime)
    level = record_events.logger.log_level
    record_events.logger.setLevel("ERROR")  # 10k rejection warnings would time the logger
    arn = "arn:aws:sqs:us-east-1:123456789012:events"
    context = _Context()
    batch: list[dict[str, Any]] = []
    try:
        for body in workload.bodies():
            workload.plan.messages += 1
            batch.append({"MessageId": f"m{workload.plan.messages}", "Body": body})
            if len(batch) == MESSAGES_PER_BATCH:
                totals.failed_records += _invoke(batch, arn, context)
                workload.plan.batches += 1
                batch = []
                drain_dead_letters(clients, resources, seen)
        if batch:
            totals.failed_records += _invoke(batch, arn, context)
            workload.plan.batches += 1
    finally:
        record_events.logger.setLevel(level)
        record_events.set_runtime(None)
    return totals


def _invoke(batch: list[dict[str, Any]], arn: str, context: Any) -> int:
    response = record_events.handler(sqs_event(batch, arn), context)
    return len(response["batchItemFailures"])


@dataclass
class Observed:
    """What the resources hold afterwards."""

    archived: int = 0
    archived_unique: set[str] = field(default_factory=set)
    dead_letters: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    without_reason: int = 0
    counted: int = 0
    """Sum of queued + started + completed + failed over every counter item."""


def drain_dead_letters(clients: AwsClients, resources: Resources, seen: Observed) -> None:
    """Receive and delete every DLQ message, classifying its reason.

    Drained after every invocation, as a consumer of the DLQ would: moto's SQS scans the
    whole queue on each call, so a DLQ left to grow makes the run quadratic.
    """
    while True:
        answer = clients.sqs.receive_message(
            QueueUrl=resources.dlq_url,
            MaxNumberOfMessages=10,
            MessageAttributeNames=["All"],
            VisibilityTimeout=3600,
            WaitTimeSeconds=0,
        )
        messages = answer.get("Messages", [])
        if not messages:
            return
        for message in messages:
            wrapper = json.loads(message["Body"])
            reason = str(wrapper.get("reason", ""))
            attribute = message.get("MessageAttributes", {}).get("reason", {})
            if not reason or not attribute.get("StringValue") or not wrapper.get("message_id"):
                seen.without_reason += 1
            seen.dead_letters += 1
            seen.kinds[kind_of(reason)] += 1
        clients.sqs.delete_message_batch(
            QueueUrl=resources.dlq_url,
            Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)
            ],
        )


def observe(clients: AwsClients, resources: Resources, seen: Observed) -> Observed:
    """Read the archive, drain what is left in the DLQ and scan the counters."""
    paginator = clients.s3.get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=resources.bucket, Prefix="events/"):
        for item in page.get("Contents", []):
            body = clients.s3.get_object(Bucket=resources.bucket, Key=item["Key"])["Body"].read()
            for record in decode_jsonl_gz(body):
                seen.archived += 1
                seen.archived_unique.add(record["event_id"])
    drain_dead_letters(clients, resources, seen)
    paginator = clients.dynamodb.get_paginator("scan")
    for page in paginator.paginate(TableName=resources.table):
        for item in page.get("Items", []):
            seen.counted += sum(
                int(item[name]["N"])
                for name in ("queued", "started", "completed", "failed")
                if name in item
            )
    return seen


@dataclass
class Run:
    """One conservation run: the plan, what the handler said, what the resources hold."""

    plan: Plan
    totals: Totals
    seen: Observed
    seconds: float
    """Wall time of driving the handler (and draining the DLQ as it goes), s."""
    check_seconds: float


def run(clients: AwsClients, events: int, suffix: str, seed: int = 11) -> Run:
    """Create resources, drive `events` units through the handler, read everything back."""
    resources = create_resources(clients, suffix)
    workload = Workload(events, seed)
    seen = Observed()
    started = time.perf_counter()
    totals = drive(clients, resources, workload, seen)
    driven = time.perf_counter()
    observe(clients, resources, seen)
    return Run(workload.plan, totals, seen, driven - started, time.perf_counter() - driven)


def unique_valid_ids(events: int, seed: int = 11) -> set[str]:
    """The event_ids of the valid events a workload sends (regenerated, so the run's peak
    memory does not include them)."""
    workload = Workload(events, seed, collect=True)
    for _ in workload.bodies():
        pass
    return workload.plan.unique_ids


def problems(result: Run, expected_ids: set[str]) -> list[str]:
    """Every way the run broke conservation (empty when it held)."""
    plan, seen, totals = result.plan, result.seen, result.totals
    rejected = sum(plan.malformed.values())
    found: list[str] = []
    checks = [
        ("records reported failed", totals.failed_records, 0),
        ("accepted + rejected", seen.archived + seen.dead_letters, plan.sent),
        ("accepted (archive lines)", seen.archived, plan.valid),
        ("rejected (DLQ messages)", seen.dead_letters, rejected),
        ("DLQ messages without a reason", seen.without_reason, 0),
        ("unique archived events", len(seen.archived_unique), plan.valid - plan.duplicates),
        ("counter over-count", seen.counted - len(seen.archived_unique), plan.duplicates),
        ("AcceptedEvents metric", int(totals.accepted_metric), plan.valid),
        ("RejectedEvents metric", int(totals.rejected_metric), rejected),
    ]
    for name, got, want in checks:
        if got != want:
            found.append(f"{name}: {got} != {want}")
    if seen.archived_unique != expected_ids:
        found.append("archived event_ids differ from the valid events sent")
    if dict(seen.kinds) != dict(plan.malformed):
        found.append(f"rejection kinds {dict(seen.kinds)} != sent {dict(plan.malformed)}")
    outside = totals.dimensions - set(QUEUES) - {"unknown"}
    if outside:
        found.append(f"metric dimensions outside the allowlist: {sorted(outside)}")
    return found


@contextlib.contextmanager
def embedded_clients(mode: str) -> Iterator[AwsClients]:
    """Clients on moto: in-process (`mock_aws`) or over HTTP to a loopback ThreadedMotoServer."""
    for name, value in (
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_DEFAULT_REGION", "us-east-1"),
        ("POWERTOOLS_TRACE_DISABLED", "true"),
    ):
        os.environ.setdefault(name, value)
    if mode == "inproc":
        from moto import mock_aws

        with mock_aws():
            yield make_clients(region_name="us-east-1")
        return
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield make_clients(endpoint_url=f"http://{host}:{port}", region_name="us-east-1")
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--mode", choices=("inproc", "server"), default="inproc")
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    import logging

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    gc.collect()
    with embedded_clients(args.mode) as clients:
        result = run(clients, args.events, "bench", args.seed)
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    expected = unique_valid_ids(args.events, args.seed)
    found = problems(result, expected)
    plan, seen = result.plan, result.seen
    rejected = sum(plan.malformed.values())
    over_count = seen.counted - len(seen.archived_unique)
    rate = plan.sent / result.seconds
    lines = [
        header(
            f"Ingest conservation: {plan.sent:,} events through record_events",
            ("boto3", "botocore", "moto", "aws-lambda-powertools", "pydantic"),
        ),
        f"Mode: `{args.mode}` ("
        + (
            "boto3 -> moto in-process via `moto.mock_aws`, no HTTP"
            if args.mode == "inproc"
            else "boto3 -> HTTP -> ThreadedMotoServer on 127.0.0.1"
        )
        + "). Handler: `record_events.handler` with canonical SQS events, "
        f"{MESSAGES_PER_BATCH} messages per invocation, 1..100 events per message.",
        "",
        "| quantity | value |",
        "|---|---|",
        f"| units sent (events + bodies rejected whole) | {plan.sent:,} |",
        f"| messages / invocations | {plan.messages:,} / {plan.batches:,} |",
        f"| valid events sent (duplicates included) | {plan.valid:,} |",
        f"| duplicates injected | {plan.duplicates:,} |",
        f"| malformed units sent | {rejected:,} |",
        f"| accepted (archive lines) | {seen.archived:,} |",
        f"| rejected (DLQ messages, each with its reason) | {seen.dead_letters:,} |",
        f"| accepted + rejected - sent | {seen.archived + seen.dead_letters - plan.sent} |",
        f"| unique events in the archive (by event_id) | {len(seen.archived_unique):,} |",
        f"| counter total - unique events (over-count) | {over_count:,} |",
        f"| records reported failed | {result.totals.failed_records} |",
        f"| handler time (with DLQ draining) | {result.seconds:.1f} s ({rate:,.0f} events/s) |",
        f"| read-back time (archive, DLQ, counters) | {result.check_seconds:.1f} s |",
        f"| peak RSS of the process | {peak_mib:,.0f} MiB |",
        "",
        "| rejection kind | sent | in DLQ |",
        "|---|---|---|",
        *(
            f"| {kind} | {plan.malformed.get(kind, 0):,} | {seen.kinds.get(kind, 0):,} |"
            for kind, _ in MALFORMED_KINDS
        ),
        "",
        "Conservation: "
        + ("**held** (every check passed)." if not found else "**broken**: " + "; ".join(found)),
        "",
        "Counters are at-least-once by design: the over-count equals the duplicates sent (the "
        "same event twice is counted twice live); the archive is exact after de-duplication "
        "by event_id, which is what the Spark SLA report does.",
    ]
    write("ingest_conservation.md", "\n".join(lines))
    if found:
        sys.exit(1)


if __name__ == "__main__":
    main()
