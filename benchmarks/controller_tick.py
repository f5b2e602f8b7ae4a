"""One evaluate shard's tick against the embedded AWS emulator, with the fleet's config read
through the store: shard count, API calls, controller CPU, a projection at AWS latencies.

For each size (configured queues) the script puts the whole fleet's config document in S3,
names it by an SSM parameter (`s3://` pointer, as the stack's store does for large
documents) and builds the evaluate runtime over it, so every tick reads the config through
Powertools Parameters. The dispatcher's own `controller.shards.plan_for` picks the shard count
N for the interval, memory and cap given. The emulator (a moto ThreadedMotoServer on
127.0.0.1, started and stopped here, in a child process so it does not share this process's
GIL) then gets shard 0's queues only: SQS queues, one ECS service each (one cluster), the load
table with `--counter-seconds` counter items per queue, the archive bucket. Shard 0 ticks
once to warm up (queue URLs resolved, STATE items created) and `--repeat` more times. API
calls are counted with a botocore `before-call` hook on every client and `before-send` (one
per HTTP attempt, so retries would show). moto serves every call in Python, so wall time
measures the emulator; the call counts and this process's CPU time (botocore, parsing, the
core, EMF) carry over to AWS, and the tick time on AWS is projected from them at per-call
latencies listed (and sourced) in LATENCY. The other N - 1 shards run the same code over
their own queues and are projected from shard 0. The cold import of the handler modules is
timed in fresh subprocesses.

    .venv/bin/python benchmarks/controller_tick.py [--sizes 1000 10000] [--repeat 2]
        [--interval 15] [--memory-mb 1769] [--max-shards 32]
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
TABLE = "bench-load"
BUCKET = "bench-archive"
CONFIG_PARAMETER = "/bench/queues"
CONFIG_KEY = "config/queues.json"
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


def create_world(
    clients: Any, names: list[str], now: float, counter_seconds: int
) -> tuple[str, str]:
    """Queues, services and counters for `names` (the measured shard's queues), the table
    and the bucket; returns (table, bucket)."""
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
    from queue_autoscale.adapters.dynamodb import counter_pk, create_load_table, second_sk

    create_load_table(clients.dynamodb, TABLE)
    second = int(now)
    items = [
        {
            "pk": {"S": counter_pk(name)},
            "sk": {"S": second_sk(second - 1 - k)},
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
        clients.dynamodb.batch_write_item(RequestItems={TABLE: requests})
    return TABLE, BUCKET


def publish_config(clients: Any, names: list[str]) -> int:
    """The whole fleet's config document in S3, named by the SSM parameter (the store the
    stack creates for documents over SSM's size limit); returns the document's bytes."""
    document = json.dumps(
        [{"queue": name, "cluster": CLUSTER, "max_workers": 20} for name in names]
    )
    clients.s3.create_bucket(Bucket=BUCKET)
    clients.s3.put_object(Bucket=BUCKET, Key=CONFIG_KEY, Body=document.encode("utf-8"))
    # Overwrite: botocore retries a put whose answer timed out, and the retry must not fail on
    # the parameter the first attempt wrote
    clients.ssm.put_parameter(
        Name=CONFIG_PARAMETER, Value=f"s3://{BUCKET}/{CONFIG_KEY}", Type="String", Overwrite=True
    )
    return len(document)


def goals(queues: int, calls: Counter[tuple[str, str]], events: int) -> list[str]:
    """Each batching goal against the counted calls of one shard's tick (`queues` queues)."""

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


def run_size(url: str, queues: int, args: argparse.Namespace) -> tuple[dict[str, Any], list[str]]:
    """Publish the config of `queues` queues, let the dispatcher's plan pick N, build shard 0's
    world, run its ticks; return the row and the goal lines."""
    from botocore.config import Config

    from queue_autoscale.adapters.aws import LAMBDA_CONFIG, make_clients
    from queue_autoscale.controller import shards
    from queue_autoscale.controller.tick import decision_events, run_tick
    from queue_autoscale.core.shard import Shard, partition
    from queue_autoscale.handlers import evaluate
    from queue_autoscale.settings import EvaluateSettings

    reset(url)
    # LAMBDA_CONFIG's 5 s read timeout, except that moto answering 500-query GetMetricData
    # or a 1,000-queue burst takes longer than real AWS: a timeout there would measure moto.
    config = LAMBDA_CONFIG.merge(Config(read_timeout=READ_TIMEOUT_SECONDS))
    clients = make_clients(endpoint_url=url, region_name=REGION, config=config)
    now = time.time()
    names = [f"bench-q{index:05d}" for index in range(queues)]
    document_bytes = publish_config(clients, names)
    environment = {
        "QUEUES_CONFIG_PARAMETER": CONFIG_PARAMETER,
        "CONFIG_MAX_AGE_SECONDS": str(min(5, args.interval)),
        "LOAD_TABLE": TABLE,
        "ARCHIVE_BUCKET": BUCKET,
        "EVENT_BUS_NAME": "default",
        "EVALUATION_INTERVAL_SECONDS": str(args.interval),
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(args.memory_mb),
        "MAX_EVALUATE_SHARDS": str(args.max_shards),
    }
    settings = EvaluateSettings.from_environ(environment)
    clock = {"now": now}
    runtime = evaluate.build_runtime(settings, clients, clock=lambda: clock["now"])
    counter = CallCounter()
    for name in ("sqs", "cloudwatch", "ecs", "dynamodb", "s3", "events", "ssm"):
        counter.attach(getattr(clients, name))
    # The dispatcher's own work: read the store, plan N (what the scheduled invocation does).
    cpu = time.process_time()
    plan = shards.plan_for(runtime)
    plan_cpu = time.process_time() - cpu
    plan_calls, _, _ = counter.snapshot()
    shard = Shard(0, plan.count)
    cpu = time.process_time()
    mine = [config.queue for config in runtime.queues(now) if shard.owns(config.queue)]
    owns_cpu = time.process_time() - cpu
    sizes = [len(part) for part in partition(names, plan.count)]
    started = time.perf_counter()
    create_world(clients, mine, now, args.counter_seconds)
    setup_seconds = time.perf_counter() - started

    def tick(at: float) -> tuple[float, float, list[Any]]:
        """(wall s, this process's CPU s, outcomes): the CPU is the controller's own cost."""
        clock["now"] = at
        with contextlib.redirect_stdout(io.StringIO()):  # EMF documents, one per queue
            begin, cpu = time.perf_counter(), time.process_time()
            outcomes = run_tick(runtime, at, budget_seconds=READ_TIMEOUT_SECONDS, shard=shard)
            return time.perf_counter() - begin, time.process_time() - cpu, outcomes

    counter.reset()
    first_seconds, _, _ = tick(now)
    first_calls, _, _ = counter.snapshot()
    times: list[float] = []
    cpu_times: list[float] = []
    calls: Counter[tuple[str, str]] = Counter()
    attempts = 0
    latency: dict[tuple[str, str], float] = {}
    outcomes: list[Any] = []
    for index in range(args.repeat):
        counter.reset()
        seconds, cpu, outcomes = tick(now + args.interval * (index + 1))
        times.append(seconds)
        cpu_times.append(cpu)
        calls, attempts, latency = counter.snapshot()
    errors = sum(len(outcome.errors) for outcome in outcomes)
    decided = sum(1 for outcome in outcomes if outcome.decision is not None)
    events = sum(len(decision_events(outcome)) for outcome in outcomes)
    row = {
        "queues": queues,
        "document_bytes": document_bytes,
        "plan": plan,
        "plan_cpu_s": plan_cpu,
        "plan_calls": sum(plan_calls.values()),
        "owns_cpu_s": owns_cpu,
        "shard_queues": len(mine),
        "shard_sizes": (min(sizes), max(sizes)),
        "setup_s": setup_seconds,
        "first_s": first_seconds,
        "first_calls": sum(first_calls.values()),
        "first_extra": {
            f"{s}.{o}": n for (s, o), n in sorted(first_calls.items()) if (s, o) not in calls
        },
        "best_s": min(times),
        "median_s": statistics.median(times),
        "cpu_s": min(cpu_times),
        "calls": calls,
        "latency": latency,
        "attempts": attempts,
        "decided": decided,
        "errors": errors,
        "events": events,
    }
    return row, goals(len(mine), calls, events)


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


# Per-call latency on AWS, seconds, with where the number comes from. AWS publishes a figure
# for DynamoDB and S3 only; the others are assumptions, stated as such in the results.
LATENCY: dict[str, tuple[float, str]] = {
    "dynamodb": (
        0.010,
        'published: "single-digit millisecond performance at any scale" '
        "(https://aws.amazon.com/dynamodb/); the top of that range",
    ),
    "s3": (
        0.100,
        'published: small requests (< 512 KB) have median latencies "in the tens of '
        'milliseconds" (Best Practices Design Patterns: Optimizing Amazon S3 Performance, '
        "Timeouts and Retries for Latency-Sensitive Applications); 100 ms taken",
    ),
    "sqs": (0.020, "assumed: AWS publishes no per-call figure for GetQueueAttributes"),
    "ecs": (0.050, "assumed: no published figure for DescribeServices / UpdateService"),
    "cloudwatch": (0.200, "assumed: no published figure for GetMetricData (500 queries)"),
    "eventbridge": (0.050, "assumed: no published figure for PutEvents"),
    "ssm": (0.050, "assumed: no published figure for GetParameter"),
    "lambda": (0.050, "assumed: no published figure for an asynchronous Invoke (202)"),
}
SEQUENTIAL = {("s3", "PutObject"), ("ssm", "GetParameter"), ("s3", "GetObject")}
"""Calls a tick makes on its own thread: the config read before the gather and the decision
log after the decision events. The rest (reads, STATE writes, UpdateService, PutEvents in
calls of 10) run on thread pools of max_concurrency."""


def project(row: dict[str, Any], args: argparse.Namespace, factor: float = 1.0) -> dict[str, float]:
    """One shard's tick on AWS, seconds: CPU on the function's vCPUs, the pool's calls spread
    over its threads, the sequential calls one after another, the dispatcher's fan-out."""
    from queue_autoscale.controller.runtime import EvaluateRuntime
    from queue_autoscale.core.shard import vcpus_for_memory

    threads = EvaluateRuntime.__dataclass_fields__["max_concurrency"].default
    assert isinstance(threads, int)
    pooled = sequential = 0.0
    longest = 0.0
    for (service, operation), count in row["calls"].items():
        seconds = LATENCY[service][0] * factor
        if (service, operation) in SEQUENTIAL:
            sequential += count * seconds
        else:
            pooled += count * seconds
            longest = max(longest, seconds)
    cpu = row["cpu_s"] / vcpus_for_memory(args.memory_mb)
    fan_out = (
        (row["plan"].count - 1)
        / min(16, max(1, row["plan"].count - 1))
        * (LATENCY["lambda"][0] * factor)
        if row["plan"].count > 1
        else 0.0
    )
    concurrent = max(pooled / threads, longest)
    return {
        "cpu": cpu,
        "concurrent": concurrent,
        "sequential": sequential,
        "fan_out": fan_out,
        "total": cpu + concurrent + sequential + fan_out,
        "threads": float(threads),
    }


def plan_table(args: argparse.Namespace, sizes: list[int]) -> list[str]:
    """The shard count the dispatcher derives, by memory and interval (pure: core.shard)."""
    from queue_autoscale.controller.tick import DECIDE_SHARE
    from queue_autoscale.core.shard import plan_shards, vcpus_for_memory

    lines = [
        "| memory MB | interval s | queues per shard | "
        + " | ".join(f"shards for {size:,} (fits?)" for size in sizes)
        + " |",
        "|---:|---:|---:|" + "---|" * len(sizes),
    ]
    for memory in (256, 1769):
        for interval in sorted({args.interval, 15, 60}):
            cells = []
            capacity = 0
            for size in sizes:
                plan = plan_shards(
                    size,
                    budget_seconds=DECIDE_SHARE * interval,
                    max_shards=args.max_shards,
                    vcpus=vcpus_for_memory(memory),
                )
                capacity = plan.capacity
                verdict = "yes" if plan.fits else f"no: needs {plan.needed}"
                cells.append(f"{plan.count} ({verdict})")
            lines.append(f"| {memory} | {interval} | {capacity} | " + " | ".join(cells) + " |")
    return lines


def template_parameters() -> dict[str, int]:
    """The template's defaults of the parameters that size the shards."""
    from queue_autoscale.demo.template import load_template

    parameters = load_template()["Parameters"]
    names = ("EvaluateMemorySize", "EvaluationIntervalSeconds", "MaxEvaluateShards")
    return {name: int(parameters[name]["Default"]) for name in names}


def quiet_environment() -> None:
    """Dummy credentials, tracing off, Powertools logs at WARNING (set before handler imports)."""
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    os.environ.setdefault("AWS_DEFAULT_REGION", REGION)
    os.environ["POWERTOOLS_TRACE_DISABLED"] = "true"
    # One INFO line per queue per tick would flood the terminal; EMF output is captured.
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")


def main() -> None:
    from queue_autoscale.core.shard import LAMBDA_FULL_VCPU_MB

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000])
    parser.add_argument("--repeat", type=int, default=2, help="steady ticks per size")
    parser.add_argument("--counter-seconds", type=int, default=10, help="counter items per queue")
    parameters = template_parameters()
    parser.add_argument(
        "--interval",
        type=int,
        default=parameters["EvaluationIntervalSeconds"],
        help="EVALUATION_INTERVAL_SECONDS (default: the template's)",
    )
    parser.add_argument(
        "--memory-mb",
        type=int,
        default=LAMBDA_FULL_VCPU_MB,
        help="the function's memory (default: one full vCPU, the setting docs/sharding.md "
        "advises above about 1,000 queues)",
    )
    parser.add_argument(
        "--max-shards",
        type=int,
        default=parameters["MaxEvaluateShards"],
        help="MAX_EVALUATE_SHARDS (default: the template's)",
    )
    parser.add_argument("--import-runs", type=int, default=5)
    parser.add_argument("--out", default="controller_tick.md", help="file name under results/")
    args = parser.parse_args()
    quiet_environment()
    from queue_autoscale.controller.tick import DECIDE_SHARE

    rows = []
    goal_lines: dict[int, list[str]] = {}
    with moto_server() as url:
        for size in args.sizes:
            print(f"{size} queues ...", flush=True)
            row, lines = run_size(url, size, args)
            rows.append(row)
            goal_lines[size] = lines
            print(
                f"  {row['plan'].count} shards, shard 0 {row['shard_queues']} queues, "
                f"tick {row['best_s']:.1f} s on moto, CPU {row['cpu_s']:.2f} s",
                flush=True,
            )
    imports = import_times(args.import_runs)
    load = os.getloadavg()

    services = sorted({key for row in rows for key in row["calls"]})
    budget = DECIDE_SHARE * args.interval
    out = [
        header(
            "evaluate tick, sharded, with the queue config read through the store (moto on "
            "127.0.0.1)",
            ("boto3", "botocore", "moto", "aws-lambda-powertools", "pydantic"),
        ),
        f"- load average while it ran (1, 5, 15 min): {load[0]:.1f}, {load[1]:.1f}, "
        f"{load[2]:.1f} on 2 cores shared with other developers: CPU times are inflated",
        "",
        "What was measured. For each size the whole fleet's config (one JSON document of every "
        "queue) is put in S3 and named by an SSM parameter (`s3://` pointer), and the evaluate "
        "runtime reads it through the config store (Powertools Parameters, "
        f"CONFIG_MAX_AGE_SECONDS {min(5, args.interval)}). The dispatcher's own code "
        "(`controller.shards.plan_for`) picks the shard count N at "
        f"EVALUATION_INTERVAL_SECONDS {args.interval}, {args.memory_mb} MB and "
        f"MAX_EVALUATE_SHARDS {args.max_shards}. The emulator then holds only shard 0's "
        "queues (SQS queue, ECS service, "
        f"{args.counter_seconds} s of counter items each, every tenth with 10 waiting jobs): "
        "shard 0's ticks (`run_tick(shard=Shard(0, N))`) are measured, a warm-up tick first "
        f"(queue URLs, STATE items), then {args.repeat} steady ticks (calls from the last, "
        "times best and median). The other N - 1 shards are the same code over their own "
        "queues, so they are projected from shard 0, not run.",
        "",
        "## Shard count, calls and CPU",
        "",
        "| configured queues | config bytes | shards N (fits?) | shard 0 queues (all shards "
        "min..max) | calls per shard-0 tick | calls per tick, all shards (projected) | "
        "controller CPU per queue ms | shard filter over all queues ms | read + parse + plan "
        "ms (once per new document) | steady tick on moto s (median) | decisions | errors |",
        "|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        plan = row["plan"]
        total = sum(row["calls"].values())
        fleet = total * row["queues"] / max(1, row["shard_queues"])
        fits = "yes" if plan.fits else f"no: needs {plan.needed}"
        lo, hi = row["shard_sizes"]
        out.append(
            f"| {row['queues']:,} | {row['document_bytes']:,} | {plan.count} ({fits}) | "
            f"{row['shard_queues']} ({lo}..{hi}) | {total} | {fleet:,.0f} | "
            f"{row['cpu_s'] / row['shard_queues'] * 1000:.1f} | {row['owns_cpu_s'] * 1000:.0f} | "
            f"{row['plan_cpu_s'] * 1000:.0f} | "
            f"{row['best_s']:.1f} ({row['median_s']:.1f}) | {row['decided']} | {row['errors']} |"
        )
    out += [
        "",
        "## API calls per shard-0 steady tick (mean latency on moto, under the tick's concurrency)",
        "",
        "| service.operation | " + " | ".join(f"{row['queues']:,} q" for row in rows) + " |",
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
    out += ["", "Calls only in the warm-up tick:", ""]
    for row in rows:
        extra = ", ".join(f"{k} {v}" for k, v in row["first_extra"].items()) or "none"
        out.append(f"- {row['queues']:,} queues: {extra}")
    out += [
        "",
        "## Projected tick time on AWS",
        "",
        "Per-call latencies used (seconds):",
        "",
    ]
    out += [
        f"- {service}: {seconds:.3f}: {source}" for service, (seconds, source) in LATENCY.items()
    ]
    out += [
        "",
        "A shard's tick = its controller CPU (measured here, this machine's core taken as one "
        f"Lambda vCPU, scaled to {args.memory_mb} MB) + the pool's calls (gather reads, STATE "
        "PutItem, UpdateService, PutEvents) spread over the tick's threads (at least the "
        "slowest one) + the calls made one after another (config read, decision-log PutObject) "
        "+ the dispatcher's fan-out. The sum ignores that CPU and waiting overlap, so it is an "
        "upper estimate. The interval's decision budget is "
        f"{DECIDE_SHARE:.0%} of {args.interval} s = {budget:.0f} s.",
        "",
        "| configured queues | shards | CPU s | pooled calls s | sequential calls s | fan-out s "
        "| projected shard tick s | at 2x latencies s | within the interval? |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    verdicts = []
    for row in rows:
        p1, p2 = project(row, args), project(row, args, 2.0)
        ok = row["plan"].fits and p1["total"] <= args.interval
        verdicts.append((row["queues"], ok, p1["total"], p2["total"]))
        out.append(
            f"| {row['queues']:,} | {row['plan'].count} | {p1['cpu']:.2f} | "
            f"{p1['concurrent']:.2f} | {p1['sequential']:.2f} | {p1['fan_out']:.2f} | "
            f"{p1['total']:.2f} | {p2['total']:.2f} | {'yes' if ok else 'NO'} |"
        )
    out += ["", "## Verdict", ""]
    for queues, ok, seconds, doubled in verdicts:
        out.append(
            f"- {queues:,} queues ticked within the {args.interval} s interval: "
            f"{'**met**' if ok else '**not met**'} (projected shard tick {seconds:.1f} s, "
            f"{doubled:.1f} s at twice the latencies; decision budget {budget:.0f} s)"
        )
    from queue_autoscale.core.shard import plan_shards, vcpus_for_memory

    defaults = template_parameters()
    memory_mb = defaults["EvaluateMemorySize"]
    interval = defaults["EvaluationIntervalSeconds"]
    cap = defaults["MaxEvaluateShards"]
    for size in args.sizes:
        default = plan_shards(
            size,
            budget_seconds=DECIDE_SHARE * interval,
            max_shards=cap,
            vcpus=vcpus_for_memory(memory_mb),
        )
        out.append(
            f"- {size:,} queues with the template's defaults (EvaluateMemorySize {memory_mb}, "
            f"EvaluationIntervalSeconds {interval}, MaxEvaluateShards {cap}): the plan picks "
            f"{default.count} shards of "
            f"{default.capacity} queues; "
            + (
                "fits"
                if default.fits
                else f"**not met** (needs {default.needed}): set EvaluateMemorySize 1769, or a "
                "longer interval, or a higher MaxEvaluateShards"
            )
        )
    out += [
        "",
        "## Shard count the dispatcher derives (`core.shard.plan_shards`, default tick cost)",
        "",
        *plan_table(args, sorted({*args.sizes, 1000, 10_000})),
        "",
        "## Goals (shard 0, last steady tick)",
        "",
    ]
    for size, lines in goal_lines.items():
        out.append(f"- {size:,} configured queues:")
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
