"""What one evaluate tick and one record_events batch write, measured on the embedded emulator:
the inputs of `queue-autoscale cost` (`operator/cost_inputs.py`'s MEASURED) that are bytes and
calls.

The evaluate side runs the real runtime over `--queues` queues (controller_tick.py's world:
SQS queues, ECS services, counters, the config read through the store) at the template's log
level (POWERTOOLS_LOG_LEVEL INFO): a warm-up tick, then one measured tick. Counted: API calls by
operation, stdout bytes (EMF documents and log lines: what CloudWatch Logs ingests), the
decision-log object's bytes, PutEvents entries, and this process's peak memory. The record side
runs `record_events.ingest` + `publish` over batches of `--events` events at a few events per
message: archive bytes per event, UpdateItem calls, stdout bytes per batch.

    .venv/bin/python benchmarks/stack_cost.py [--queues 50] [--events 3 30 300]
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import io
import json
import logging
import math
import resource
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "functions"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import header, write
from controller_tick import (
    BUCKET,
    CONFIG_PARAMETER,
    REGION,
    TABLE,
    CallCounter,
    create_world,
    moto_server,
    publish_config,
)


def evaluate_side(url: str, queues: int, warm_ticks: int) -> dict[str, Any]:
    """One tick of `queues` queues after `warm_ticks` ticks 15 s apart: calls, stdout bytes,
    decision-log bytes, the STATE item's size."""
    from queue_autoscale.adapters.aws import make_clients
    from queue_autoscale.adapters.dynamodb import item_bytes
    from queue_autoscale.controller.tick import decision_events, run_tick
    from queue_autoscale.handlers import evaluate
    from queue_autoscale.settings import EvaluateSettings
    from queue_autoscale.telemetry import logger

    clients = make_clients(endpoint_url=url, region_name=REGION)
    now = time.time() - 15 * (warm_ticks + 1)
    clock = {"now": now}
    names = [f"cost-q{index:04d}" for index in range(queues)]
    publish_config(clients, names)
    environment = {
        "QUEUES_CONFIG_PARAMETER": CONFIG_PARAMETER,
        "LOAD_TABLE": TABLE,
        "ARCHIVE_BUCKET": BUCKET,
        "EVENT_BUS_NAME": "default",
        "EVALUATION_INTERVAL_SECONDS": "15",
    }
    runtime = evaluate.build_runtime(
        EvaluateSettings.from_environ(environment), clients, clock=lambda: clock["now"]
    )
    create_world(clients, names, now, counter_seconds=10)
    counter = CallCounter()
    for name in ("sqs", "cloudwatch", "ecs", "dynamodb", "s3", "events", "ssm"):
        counter.attach(getattr(clients, name))
    with contextlib.redirect_stdout(io.StringIO()):  # the STATE item's samples fill up
        for index in range(warm_ticks):
            clock["now"] = now + 15 * index
            run_tick(runtime, clock["now"], budget_seconds=300)
    now = clock["now"] + 15
    clock["now"] = now
    counter.reset()
    out = io.StringIO()
    handler = logging.StreamHandler(out)  # the Powertools logger's lines, as Lambda ships them
    handler.setFormatter(logger.registered_formatter)
    lines_of = logging.getLogger(logger.name)
    lines_of.addHandler(handler)
    try:
        with contextlib.redirect_stdout(out):
            outcomes = run_tick(runtime, now, budget_seconds=300)
    finally:
        lines_of.removeHandler(handler)
    calls, _, _ = counter.snapshot()
    state = clients.dynamodb.get_item(
        TableName=TABLE, Key={"pk": {"S": f"Q#{names[0]}"}, "sk": {"S": "STATE"}}
    )["Item"]
    listed = clients.s3.list_objects_v2(Bucket=BUCKET, Prefix="decisions/")["Contents"]
    newest = max(listed, key=lambda item: item["LastModified"])
    body = clients.s3.get_object(Bucket=BUCKET, Key=newest["Key"])["Body"].read()
    lines = out.getvalue().splitlines()
    emf = [line for line in lines if '"_aws"' in line]
    return {
        "queues": queues,
        "calls": {f"{service}.{operation}": n for (service, operation), n in calls.items()},
        "stdout_bytes": sum(len(line) + 1 for line in lines),
        "emf_bytes": sum(len(line) + 1 for line in emf),
        "emf_documents": len(emf),
        "log_lines": len(lines) - len(emf),
        "decision_object_bytes": int(newest["Size"]),
        "decision_lines_bytes": len(gzip.decompress(body)),
        "events": sum(len(decision_events(outcome)) for outcome in outcomes),
        "decided": sum(1 for outcome in outcomes if outcome.decision is not None),
        "state_item_bytes": item_bytes(state),
    }


def _record_runtime(url: str, dlq_name: str) -> tuple[Any, Any]:
    """(clients, record_events' runtime) on the endpoint, with the template's settings and a
    fresh events DLQ named `dlq_name`."""
    from queue_autoscale.adapters.aws import make_clients
    from queue_autoscale.ingest.runtime import build_runtime
    from queue_autoscale.settings import RecordSettings

    clients = make_clients(endpoint_url=url, region_name=REGION)
    dlq = clients.sqs.create_queue(QueueName=dlq_name)["QueueUrl"]
    settings = RecordSettings.from_environ(
        {
            "QUEUES_CONFIG_PARAMETER": CONFIG_PARAMETER,
            "LOAD_TABLE": TABLE,
            "ARCHIVE_BUCKET": BUCKET,
            "EVENTS_DLQ_URL": dlq,
        }
    )
    runtime = build_runtime(settings, clients)
    return clients, runtime


def record_side(url: str, queues: int, events: int) -> dict[str, Any]:
    """One batch of `events` events over `queues` queues (3 events a job, 10 a message)."""
    from queue_autoscale.ingest.batch import ingest, publish
    from queue_autoscale.ingest.parse import Message

    clients, runtime = _record_runtime(url, "cost-events-dlq")
    # a whole second, so each job's three events (0.4 s to 0.1 s before it) share one second
    # and a queue's counter key: a batch of wall-clock stamps straddled a second boundary on
    # about a third of the runs and wrote twice the keys
    now = float(math.floor(time.time()))
    at = int(now * 1000) - 100
    bodies: list[dict[str, Any]] = []
    for index in range(events // 3):
        queue, job = f"cost-q{index % queues:04d}", f"job-{index}"
        bodies += [
            {"type": "queued", "queue": queue, "job_id": job, "at": at - 300},
            {"type": "started", "queue": queue, "job_id": job, "at": at - 200},
            {"type": "completed", "queue": queue, "job_id": job, "at": at, "duration_ms": 200},
        ]
    messages = [
        Message(f"m{first}", json.dumps(bodies[first : first + 10]))
        for first in range(0, len(bodies), 10)
    ]
    counter = CallCounter()
    for name in ("dynamodb", "s3", "sqs"):
        counter.attach(getattr(clients, name))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result = ingest(messages, runtime, now)
        publish(runtime, result)
    calls, _, _ = counter.snapshot()
    key = result.archive_key or ""
    body = clients.s3.get_object(Bucket=BUCKET, Key=key)["Body"].read() if key else b""
    return {
        "events": len(bodies),
        "accepted": result.accepted,
        "archive_bytes": len(body),
        "lines_bytes": len(gzip.decompress(body)) if body else 0,
        "calls": {f"{service}.{operation}": n for (service, operation), n in calls.items()},
        "stdout_bytes": len(out.getvalue()),
    }


def record_cpu_per_key(url: str, keys: int) -> tuple[int, float]:
    """(counter writes, this process's CPU seconds) of one batch whose `keys` events of one
    queue each fall in their own second: the record function's CPU per distinct counter key
    (botocore signing and parsing; the emulator runs in its own process)."""
    from queue_autoscale.ingest.batch import ingest
    from queue_autoscale.ingest.parse import Message

    _, runtime = _record_runtime(url, "cost-worst-dlq")
    now = time.time()
    events = [
        {
            "type": "queued",
            "queue": "cost-q0000",
            "job_id": f"w{i}",
            "at": int((now - 3600 + i) * 1000),
        }
        for i in range(keys)
    ]
    messages = [
        Message(f"w{first}", json.dumps(events[first : first + 100]))
        for first in range(0, keys, 100)
    ]
    with contextlib.redirect_stdout(io.StringIO()):
        cpu = time.process_time()
        result = ingest(messages, runtime, now)
        return result.counter_writes, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queues", type=int, default=50)
    parser.add_argument("--warm-ticks", type=int, default=40, help="ticks before the measured one")
    parser.add_argument("--events", type=int, nargs="+", default=[3, 30, 300, 3000])
    parser.add_argument("--worst-keys", type=int, default=2000, help="distinct counter keys")
    parser.add_argument("--out", default="stack_cost_inputs.md")
    args = parser.parse_args()
    from controller_tick import quiet_environment

    quiet_environment()
    import os

    os.environ["POWERTOOLS_LOG_LEVEL"] = "INFO"  # the template's level: its log lines are billed
    with moto_server() as url:
        tick = evaluate_side(url, args.queues, args.warm_ticks)
        batches = [record_side(url, args.queues, count) for count in args.events]
        writes, worst_cpu = record_cpu_per_key(url, args.worst_keys)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    q = tick["queues"]
    out = [
        header(
            "inputs of `queue-autoscale cost`: what a tick and a batch write (moto on 127.0.0.1)",
            ("boto3", "moto", "aws-lambda-powertools"),
        ),
        "## One steady evaluate tick",
        "",
        f"{q} queues, after {args.warm_ticks} ticks 15 s apart (the STATE item's samples "
        f"fill up); {tick['decided']} decisions, {tick['events']} decision events.",
        "",
        "| measure | per tick | per queue |",
        "|---|---:|---:|",
    ]
    for name, count in sorted(tick["calls"].items()):
        out.append(f"| {name} calls | {count} | {count / q:.3f} |")
    for name in ("stdout_bytes", "emf_bytes", "emf_documents", "log_lines"):
        out.append(f"| {name.replace('_', ' ')} | {tick[name]:,} | {tick[name] / q:,.1f} |")
    out += [
        f"| decision-log object bytes (gzip) | {tick['decision_object_bytes']:,} | "
        f"{tick['decision_object_bytes'] / q:,.1f} |",
        f"| decision-log JSON-lines bytes (what Firehose ingests) | "
        f"{tick['decision_lines_bytes']:,} | {tick['decision_lines_bytes'] / q:,.1f} |",
        f"| PutEvents entries | {tick['events']} | {tick['events'] / q:.2f} |",
        f"| STATE item bytes (DynamoDB's sizing rules) | | {tick['state_item_bytes']:,} |",
        "",
        f"Peak memory of this process (client, handlers, no moto server): {peak_mb:.0f} MB.",
        "",
        "## One record_events batch (10 events a message)",
        "",
        "| events | archive bytes (gzip) | bytes per event | JSON-lines bytes per event "
        "(what Firehose ingests) | calls | stdout bytes |",
        "|---:|---:|---:|---:|---|---:|",
    ]
    for batch in batches:
        calls = ", ".join(f"{k} {v}" for k, v in sorted(batch["calls"].items()))
        out.append(
            f"| {batch['events']} | {batch['archive_bytes']:,} | "
            f"{batch['archive_bytes'] / max(1, batch['events']):.1f} | "
            f"{batch['lines_bytes'] / max(1, batch['events']):.1f} | {calls} | "
            f"{batch['stdout_bytes']:,} |"
        )
    out += [
        "",
        f"One batch of {args.worst_keys:,} events of one queue, each in its own second: "
        f"{writes:,} counter writes in {worst_cpu:.2f} s of this process's CPU, "
        f"{worst_cpu / max(1, writes) * 1000:.2f} ms a distinct counter key (on this shared "
        "machine's core; Lambda gives memory / 1,769 MB of a vCPU).",
    ]
    write(args.out, "\n".join(out))


if __name__ == "__main__":
    main()
