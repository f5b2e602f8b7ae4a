"""One evaluate tick against the embedded AWS emulator: API calls by service, wall time, import.

For each size (configured queues) the script creates the queues, one ECS service per queue
(all in one cluster), the load table with `--counter-seconds` counter items per queue, the
archive bucket and the event bus on a moto ThreadedMotoServer bound to 127.0.0.1 (started
and stopped here, in a child process so it does not share this process's GIL), then runs
`run_tick` once to warm up (queue URLs resolved, STATE items created) and
`--repeat` more times. API calls are counted with a botocore `before-call` hook on every
client (one count per API call, keyed by service and operation) and `before-send` (one per
HTTP attempt, so retries would show). Wall time is best-of-N over the steady ticks: moto
serves every call in Python, so the wall time measures the emulator as much as the
controller; the call counts and this process's CPU time (the controller's own work:
botocore, parsing, the core, EMF) are what carry over to AWS. The clients use the
handlers' LAMBDA_CONFIG except for a longer read timeout (moto is slower than AWS at the
large sizes). The cold import of the handler modules is timed in fresh subprocesses.

    .venv/bin/python benchmarks/controller_tick.py [--sizes 1 10 100 1000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import math
import multiprocessing
import os
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "functions"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import header, write

ROOT = Path(__file__).resolve().parents[1]
REGION = "us-east-1"
CLUSTER = "bench-workers"
READ_TIMEOUT_SECONDS = 300
HANDLERS = ("queue_autoscale.handlers.evaluate", "queue_autoscale.handlers.record_events")


class CallCounter:
    """Counts API calls and HTTP attempts per (service, operation), across threads."""

    def __init__(self) -> None:
        self.calls: Counter[tuple[str, str]] = Counter()
        self.attempts: Counter[str] = Counter()
        self.seconds: defaultdict[tuple[str, str], float] = defaultdict(float)
        """Summed call latency (threads overlap, so this can exceed the wall time)."""
        self._lock = threading.Lock()
        self._started = threading.local()

    def attach(self, client: Any) -> None:
        """Register the hooks on one boto3 client."""
        service = client.meta.service_model.service_id.hyphenize()
        client.meta.events.register("before-call", self._on_call)
        client.meta.events.register("after-call", self._on_done)
        client.meta.events.register(
            "before-send", lambda request, **_: self._on_send(service, request)
        )

    def _on_call(self, model: Any, **_: Any) -> None:
        key = (model.service_model.service_id.hyphenize(), model.name)
        with self._lock:
            self.calls[key] += 1
        self._started.at = time.perf_counter()

    def _on_done(self, model: Any, **_: Any) -> None:
        elapsed = time.perf_counter() - getattr(self._started, "at", time.perf_counter())
        key = (model.service_model.service_id.hyphenize(), model.name)
        with self._lock:
            self.seconds[key] += elapsed

    def _on_send(self, service: str, request: Any) -> None:
        del request  # every HTTP attempt counts, whatever it carries
        with self._lock:
            self.attempts[service] += 1

    def reset(self) -> None:
        """Forget everything counted so far."""
        with self._lock:
            self.calls.clear()
            self.attempts.clear()
            self.seconds.clear()

    def snapshot(self) -> tuple[Counter[tuple[str, str]], int, dict[tuple[str, str], float]]:
        """(calls by service and operation, total HTTP attempts, summed seconds per operation)."""
        with self._lock:
            return Counter(self.calls), sum(self.attempts.values()), dict(self.seconds)


def _serve(answer: Any, stop: Any) -> None:
    """Child process: run a ThreadedMotoServer on 127.0.0.1 until `stop` is set."""
    from moto.server import ThreadedMotoServer

    # A spawned child has no logging setup: werkzeug would print (and pay for) a line per call.
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    answer.send(server.get_host_and_port())
    stop.wait()
    server.stop()


@contextlib.contextmanager
def moto_server() -> Iterator[str]:
    """A ThreadedMotoServer on 127.0.0.1 and a free port, in a child process, stopped on exit.

    In its own process the emulator does not share the benchmark's GIL: the client and
    the emulator each get one of the two cores.
    """
    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    stop = context.Event()
    process = context.Process(target=_serve, args=(sender, stop), daemon=True)
    process.start()
    try:
        if not receiver.poll(60):
            raise RuntimeError("the moto server did not start within 60 s")
        host, port = receiver.recv()
        yield f"http://{host}:{port}"
    finally:
        stop.set()
        process.join(timeout=30)
        if process.is_alive():
            process.terminate()
            process.join()


def reset(url: str) -> None:
    """Empty the emulator between sizes."""
    import urllib.request

    request = urllib.request.Request(f"{url}/moto-api/reset", method="POST")
    with urllib.request.urlopen(request, timeout=30) as answer:  # loopback only
        answer.read()


def create_world(clients: Any, queues: int, now: float, counter_seconds: int) -> dict[str, str]:
    """Queues, services, table (with counters), bucket; returns the evaluate environment."""
    names = [f"bench-q{index:04d}" for index in range(queues)]
    for name in names:
        clients.sqs.create_queue(QueueName=name)
    # A few jobs waiting in every tenth queue, so some decisions scale.
    for name in names[::10]:
        url = clients.sqs.get_queue_url(QueueName=name)["QueueUrl"]
        clients.sqs.send_message_batch(
            QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": f"job {i}"} for i in range(10)]
        )
    clients.ecs.create_cluster(clusterName=CLUSTER)
    clients.ecs.register_task_definition(
        family="bench-worker",
        containerDefinitions=[{"name": "worker", "image": "worker:latest", "memory": 512}],
    )
    for name in names:
        clients.ecs.create_service(
            cluster=CLUSTER, serviceName=name, taskDefinition="bench-worker", desiredCount=1
        )
    from queue_autoscale.adapters.dynamodb import create_load_table

    table = "bench-load"
    create_load_table(clients.dynamodb, table)
    second = int(now)
    items = [
        {
            "pk": {"S": f"Q#{name}"},
            "sk": {"S": f"S#{second - 1 - k}"},
            "queued": {"N": "2"},
            "started": {"N": "2"},
            "completed": {"N": "2"},
            "busy_ms": {"N": "1500"},
            "pickup_ms": {"N": "400"},
            "expires_at": {"N": str(second + 86_400)},
        }
        for name in names
        for k in range(counter_seconds)
    ]
    for first in range(0, len(items), 25):
        requests = [{"PutRequest": {"Item": item}} for item in items[first : first + 25]]
        clients.dynamodb.batch_write_item(RequestItems={table: requests})
    bucket = "bench-archive"
    clients.s3.create_bucket(Bucket=bucket)
    config = [{"queue": name, "cluster": CLUSTER, "max_workers": 20} for name in names]
    return {
        "QUEUES_CONFIG": json.dumps(config),
        "LOAD_TABLE": table,
        "ARCHIVE_BUCKET": bucket,
        "EVENT_BUS_NAME": "default",
        "EVALUATION_INTERVAL_SECONDS": "30",
    }


def goals(queues: int, calls: Counter[tuple[str, str]], events: int) -> list[str]:
    """Each goal of the issue against the counted calls of one tick."""

    def count(service: str, operation: str) -> int:
        return calls.get((service, operation), 0)

    def verdict(actual: int, allowed: int) -> str:
        return "met" if actual <= allowed else "NOT met"

    sqs = count("sqs", "GetQueueAttributes")
    ecs = count("ecs", "DescribeServices")
    cw = count("cloudwatch", "GetMetricData")
    ddb_batch = count("dynamodb", "BatchGetItem")
    ddb_query = count("dynamodb", "Query")
    put_events = count("eventbridge", "PutEvents")
    return [
        f"SQS GetQueueAttributes {sqs} (goal {queues}, one per queue): {verdict(sqs, queues)}",
        f"ECS DescribeServices {ecs} (goal {math.ceil(queues / 10)}, one per 10 services): "
        f"{verdict(ecs, math.ceil(queues / 10))}",
        f"CloudWatch GetMetricData {cw} (goal {math.ceil(queues / 500)}, one per 500 metrics): "
        f"{verdict(cw, math.ceil(queues / 500))}",
        f"DynamoDB BatchGetItem {ddb_batch} for STATE+MODEL (goal {math.ceil(2 * queues / 100)}, "
        f"100 keys a call): {verdict(ddb_batch, math.ceil(2 * queues / 100))}; counters Query "
        f"{ddb_query} (one per queue: a Query reads one partition and cannot be batched)",
        f"EventBridge PutEvents {put_events} for {events} events (goal {math.ceil(events / 10)}, "
        f"10 a call): {verdict(put_events, math.ceil(events / 10))}",
    ]


def run_size(
    url: str, queues: int, repeat: int, counter_seconds: int
) -> tuple[dict[str, Any], list[str]]:
    """Set up one size, run the ticks, return the row and the goal lines."""
    from botocore.config import Config

    from queue_autoscale.adapters.aws import LAMBDA_CONFIG, make_clients
    from queue_autoscale.controller.tick import decision_events, run_tick
    from queue_autoscale.handlers import evaluate
    from queue_autoscale.settings import EvaluateSettings

    reset(url)
    # LAMBDA_CONFIG's 5 s read timeout, except that moto answering 500-query GetMetricData
    # or a 1,000-queue burst takes longer than real AWS: a timeout there would measure moto.
    config = LAMBDA_CONFIG.merge(Config(read_timeout=READ_TIMEOUT_SECONDS))
    clients = make_clients(endpoint_url=url, region_name=REGION, config=config)
    now = time.time()
    started = time.perf_counter()
    environment = create_world(clients, queues, now, counter_seconds)
    setup_seconds = time.perf_counter() - started
    counter = CallCounter()
    for name in ("sqs", "cloudwatch", "ecs", "dynamodb", "s3", "events"):
        counter.attach(getattr(clients, name))
    settings = EvaluateSettings.from_environ(environment)
    runtime = evaluate.build_runtime(settings, clients, clock=lambda: now)

    def tick(at: float) -> tuple[float, float, list[Any]]:
        """(wall s, this process's CPU s, outcomes): the CPU is the controller's own cost."""
        with contextlib.redirect_stdout(io.StringIO()):  # EMF documents, one per queue
            begin, cpu = time.perf_counter(), time.process_time()
            outcomes = run_tick(runtime, at)
            return time.perf_counter() - begin, time.process_time() - cpu, outcomes

    first_seconds, _, _ = tick(now)
    first_calls, _, _ = counter.snapshot()
    times: list[float] = []
    cpu_times: list[float] = []
    calls: Counter[tuple[str, str]] = Counter()
    attempts = 0
    latency: dict[tuple[str, str], float] = {}
    outcomes: list[Any] = []
    for index in range(repeat):
        counter.reset()
        seconds, cpu, outcomes = tick(now + 30 * (index + 1))
        times.append(seconds)
        cpu_times.append(cpu)
        calls, attempts, latency = counter.snapshot()
    errors = sum(len(outcome.errors) for outcome in outcomes)
    decided = sum(1 for outcome in outcomes if outcome.decision is not None)
    events = sum(len(decision_events(outcome)) for outcome in outcomes)
    best = min(times)
    row = {
        "queues": queues,
        "setup_s": setup_seconds,
        "first_s": first_seconds,
        "first_calls": sum(first_calls.values()),
        "first_extra": {
            f"{s}.{o}": n for (s, o), n in sorted(first_calls.items()) if (s, o) not in calls
        },
        "best_s": best,
        "median_s": statistics.median(times),
        "per_queue_ms": best / queues * 1000,
        "cpu_s": min(cpu_times),
        "calls": calls,
        "latency": latency,
        "attempts": attempts,
        "decided": decided,
        "errors": errors,
        "events": events,
    }
    return row, goals(queues, calls, events)


def import_times(runs: int) -> list[tuple[str, float, float, list[tuple[int, str]]]]:
    """(module, best s, median s, packages by summed self import time in µs), fresh interpreters."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "functions")}
    results = []
    for module in HANDLERS:
        code = (
            f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
        )
        samples = []
        for _ in range(runs):
            answer = subprocess.run(
                [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
            )
            samples.append(float(answer.stdout.strip().splitlines()[-1]))
        profile = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", f"import {module}"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        by_package: Counter[str] = Counter()
        for line in profile.stderr.splitlines():
            if not line.startswith("import time:") or "cumulative" in line:
                continue
            fields = line.split("|")
            # Self time summed by top-level package: each module's own cost, counted once.
            by_package[fields[2].strip().split(".")[0]] += int(fields[0].split(":")[1])
        top = [(micros, name) for name, micros in by_package.items()]
        top.sort(reverse=True)
        results.append((module, min(samples), statistics.median(samples), top[:6]))
    return results


def call_cell(row: dict[str, Any], key: tuple[str, str]) -> str:
    """'count (mean ms)' of one operation in one size's last steady tick."""
    count = row["calls"].get(key, 0)
    if not count:
        return "0"
    return f"{count} ({row['latency'].get(key, 0.0) / count * 1000:.0f} ms)"


SEQUENTIAL = (
    ("dynamodb", "PutItem"),
    ("ecs", "UpdateService"),
    ("eventbridge", "PutEvents"),
    ("s3", "PutObject"),
)
"""Calls run_tick makes one after another on its own thread, after the concurrent gather."""


def notes(rows: list[dict[str, Any]]) -> list[str]:
    """Findings computed from the rows: Query growth on moto, the sequential write phase."""
    lines = []
    query = [
        (row["queues"], row["latency"].get(("dynamodb", "Query"), 0.0) / row["calls"][key])
        for row in rows
        if (key := ("dynamodb", "Query")) in row["calls"]
    ]
    if len(query) > 1:
        growth = ", ".join(f"{queues} q {seconds * 1000:.0f} ms" for queues, seconds in query)
        lines.append(
            f"- Mean counters Query latency: {growth}. moto's Query scans every item of the "
            "table for the partition key (moto/dynamodb/models/table.py, `query`), so on the "
            "emulator a tick grows with queues x table size; DynamoDB reads only the partition."
        )
    for row in rows:
        serial = sum(row["latency"].get(key, 0.0) for key in SEQUENTIAL)
        count = sum(row["calls"].get(key, 0) for key in SEQUENTIAL)
        lines.append(
            f"- {row['queues']} queues: the write phase (STATE PutItem per queue, UpdateService, "
            f"PutEvents, the decision-log PutObject) is {count} calls made one after another: "
            f"{serial:.2f} s of this tick's {row['best_s']:.2f} s."
        )
    cpu = ", ".join(
        f"{row['queues']} q {row['cpu_s'] / row['queues'] * 1000:.1f} ms" for row in rows
    )
    lines.append(
        f"- Controller CPU per queue (botocore request building and parsing, the core, EMF): "
        f"{cpu}. On AWS the calls cost network latency instead of moto's CPU; the gather runs "
        "them on the thread pool, while the STATE writes (one conditional PutItem per queue: "
        "BatchWriteItem takes no condition, and TransactWriteItems fails every item when one "
        "controller race is lost) run one after another."
    )
    return lines


def quiet_environment() -> None:
    """Dummy credentials, tracing off, Powertools logs at WARNING (set before handler imports)."""
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    os.environ.setdefault("AWS_DEFAULT_REGION", REGION)
    os.environ["POWERTOOLS_TRACE_DISABLED"] = "true"
    # One INFO line per queue per tick would flood the terminal; EMF output is captured.
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 10, 100, 1000])
    parser.add_argument("--repeat", type=int, default=3, help="steady ticks per size")
    parser.add_argument("--counter-seconds", type=int, default=10, help="counter items per queue")
    parser.add_argument("--import-runs", type=int, default=5)
    parser.add_argument("--out", default="controller_tick.md", help="file name under results/")
    args = parser.parse_args()
    quiet_environment()

    rows = []
    goal_lines: dict[int, list[str]] = {}
    with moto_server() as url:
        for size in args.sizes:
            print(f"{size} queues ...", flush=True)
            row, lines = run_size(url, size, args.repeat, args.counter_seconds)
            rows.append(row)
            goal_lines[size] = lines
    imports = import_times(args.import_runs)

    services = sorted({key for row in rows for key in row["calls"]})
    out = [
        header(
            "evaluate tick against the embedded emulator (moto on 127.0.0.1)",
            ("boto3", "botocore", "moto", "aws-lambda-powertools", "pydantic"),
        ),
        f"One ECS cluster; every queue has a service, {args.counter_seconds} s of counter "
        "items, every tenth queue 10 waiting jobs. A warm-up tick first (it resolves queue "
        f"URLs and creates STATE items), then {args.repeat} steady ticks: calls are from the "
        "last steady tick, times best (and median) of the steady ticks. Clients: the handlers' "
        f"LAMBDA_CONFIG with a {READ_TIMEOUT_SECONDS} s read timeout. The wall time is "
        "mostly moto's: it serves every call in Python on this 2-core machine.",
        "",
        "## API calls per steady tick (mean latency per call under the tick's concurrency)",
        "",
        "| service.operation | " + " | ".join(f"{row['queues']} q" for row in rows) + " |",
        "|---|" + "---:|" * len(rows),
    ]
    for service, operation in services:
        cells = " | ".join(call_cell(row, (service, operation)) for row in rows)
        out.append(f"| {service}.{operation} | {cells} |")
    out.append(
        "| **all calls** | " + " | ".join(str(sum(r["calls"].values())) for r in rows) + " |"
    )
    out.append(
        "| HTTP attempts (retries would show here) | "
        + " | ".join(str(r["attempts"]) for r in rows)
        + " |"
    )
    out += [
        "",
        "## Wall time",
        "",
        "| queues | setup s | warm-up tick s (calls) | steady tick best s | median s "
        "| ms per queue | controller CPU s (ms per queue) | decisions | errors | decision events |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        out.append(
            f"| {row['queues']} | {row['setup_s']:.1f} | {row['first_s']:.2f} "
            f"({row['first_calls']}) | {row['best_s']:.3f} | {row['median_s']:.3f} "
            f"| {row['per_queue_ms']:.1f} | {row['cpu_s']:.3f} "
            f"({row['cpu_s'] / row['queues'] * 1000:.1f}) | {row['decided']} | {row['errors']} "
            f"| {row['events']} |"
        )
    out += ["", "Calls only in the warm-up tick:", ""]
    for row in rows:
        extra = ", ".join(f"{k} {v}" for k, v in row["first_extra"].items()) or "none"
        out.append(f"- {row['queues']} queues: {extra}")
    out += ["", "## Where the time goes", "", *notes(rows)]
    out += ["", "## Goals (last steady tick)", ""]
    for size, lines in goal_lines.items():
        out.append(f"- {size} queues:")
        out += [f"  - {line}" for line in lines]
    out += [
        "",
        f"## Cold import (fresh interpreter, best and median of {args.import_runs})",
        "",
        "| module | best ms | median ms | heaviest packages (self time summed, ms) |",
        "|---|---:|---:|---|",
    ]
    for module, best, median, top in imports:
        heavy = ", ".join(f"{name} {micros / 1000:.0f}" for micros, name in top)
        out.append(f"| {module} | {best * 1000:.0f} | {median * 1000:.0f} | {heavy} |")
    write(args.out, "\n".join(out))


if __name__ == "__main__":
    main()
