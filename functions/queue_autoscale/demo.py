"""`queue-autoscale demo`: the whole system end to end on the embedded AWS emulator.

It starts moto's server on 127.0.0.1, creates template.yaml's stack (infra/emulator.py),
then for `--duration` seconds drives real jobs through a real SQS work queue: a producer
at a quiet rate, a spike of `--spike-factor` times that rate, quiet again. A simulated
worker fleet follows the ECS service's desiredCount after a provisioning delay; each
worker receives and deletes real messages and emits started/completed events through
`queue_autoscale.client`. The record_events handler is invoked in-process with
SQS-shaped events read from the events queue (as the event source mapping would), and
the evaluate handler runs one tick every `--interval` seconds. It ends with a summary,
the S3 archive downloaded to `--output`, and the Spark SLA report built from it.

Every loop is bounded by the duration plus a bounded drain; Ctrl-C stops it cleanly and
the emulator is always stopped.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import math
import os
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from queue_autoscale.config import Profile, QueueConfig, parse_queue

LOG = logging.getLogger("queue_autoscale.demo")
POLL_SECONDS = 0.25
"""Main-loop granularity."""


@dataclass(frozen=True)
class DemoOptions:
    """What one demo run does (times in seconds, rates in jobs/s)."""

    duration_seconds: float = 120.0
    profile: Profile = Profile.BALANCED
    dry_run: bool = False
    output: Path = Path("demo-output")
    interval_seconds: float = 5.0
    """Seconds between evaluate ticks (the deployed default is 15)."""
    provisioning_seconds: float = 10.0
    """A new worker takes jobs this long after desiredCount rose (ECS takes ~60 s)."""
    quiet_rate: float = 2.0
    spike_factor: float = 5.0
    mean_job_seconds: float = 0.5
    drain_seconds: float = 20.0
    """After the producer stops, wait at most this long for the queue to empty."""
    report: bool = True
    """Build the Spark SLA report from the downloaded archive at the end."""
    endpoint_url: str | None = None
    """Use this endpoint instead of starting the embedded one."""
    seed: int = 7
    max_threads: int = 60
    """Worker threads are capped here (a bursty profile may ask for 100 workers)."""
    live: bool = True
    """Show the live table (off in tests)."""

    def rate_at(self, elapsed: float) -> float:
        """Producer rate at `elapsed` seconds: quiet, spike (middle third), quiet."""
        return self.quiet_rate * (self.spike_factor if self.phase_at(elapsed) == "spike" else 1.0)

    def phase_at(self, elapsed: float) -> str:
        """'quiet', 'spike' or 'quiet again' by thirds of the duration."""
        third = self.duration_seconds / 3.0
        if elapsed < third:
            return "quiet"
        return "spike" if elapsed < 2 * third else "quiet again"


@dataclass
class TickRow:
    """One evaluate tick as the live table shows it."""

    elapsed: float
    phase: str
    rate: float
    visible: int | None
    in_flight: int | None
    oldest_age: float | None
    workers: int
    desired: int | None
    target: int | None
    load_ratio: float | None
    urgency: str
    action: str
    reason: str
    errors: list[str] = field(default_factory=list)


@dataclass
class DemoSummary:
    """What happened, for the closing table, summary.json and the tests."""

    jobs_produced: int = 0
    jobs_completed: int = 0
    jobs_failed: int = 0
    jobs_left_visible: int = 0
    jobs_left_in_flight: int = 0
    picked_up_within_sla: float = 0.0
    """Share of started jobs whose pickup time was within the SLA (0..1)."""
    pickup_p95_seconds: float = 0.0
    pickup_max_seconds: float = 0.0
    worker_seconds: float = 0.0
    sla_seconds: float = 0.0
    events_sent: int = 0
    events_accepted: int = 0
    events_rejected: int = 0
    events_dead_lettered: int = 0
    counters_queued: int = 0
    """Sum of the DynamoDB `queued` counters (at-least-once: may exceed jobs_produced)."""
    counters_completed: int = 0
    ticks: int = 0
    controller_errors: int = 0
    desired_start: int = 0
    desired_max_quiet: int = 0
    desired_max_spike: int = 0
    desired_end: int = 0
    scaling_actions: int = 0
    archive_objects: int = 0
    output: str = ""
    report: str | None = None
    report_note: str = ""
    interrupted: bool = False
    """Ctrl-C ended the run early."""

    @property
    def accounted(self) -> bool:
        """Every produced job is completed, failed, or still on the queue."""
        left = self.jobs_left_visible + self.jobs_left_in_flight
        return self.jobs_produced == self.jobs_completed + self.jobs_failed + left


class DemoError(RuntimeError):
    """The demo could not run; the message says why."""


# ------------------------------------------------------------------ the demo's queue


def demo_queue(options: DemoOptions, suffix: str = "") -> QueueConfig:
    """The one queue the demo drives: the chosen profile with times scaled to the demo."""
    return parse_queue(
        {
            "queue": f"demo-jobs{suffix}",
            "dlq": f"demo-jobs{suffix}-dlq",
            "cluster": f"demo{suffix}",
            "service": f"demo-workers{suffix}",
            "profile": options.profile.value,
            "provisioning_lead_seconds": options.provisioning_seconds,
            "expected_job_seconds": options.mean_job_seconds,
            # A two-minute demo cannot wait out five-minute windows: scale them with it.
            "stabilization_window_seconds": max(10.0, options.duration_seconds / 6.0),
            "scale_down_cooldown_seconds": max(5.0, options.duration_seconds / 12.0),
            "dry_run": options.dry_run,
        }
    )


# ------------------------------------------------------------------ fleet, producer, pumps


class Fleet:
    """Simulated ECS tasks: a worker thread per running task, following desiredCount late.

    A rise of desiredCount starts workers `provisioning_seconds` later; a fall retires
    workers at once (each finishes its current job). Worker-seconds count from a worker's
    start to its stop.
    """

    def __init__(
        self,
        sqs: Any,
        queue_url: str,
        queue: str,
        recorder: Any,
        options: DemoOptions,
        stop: threading.Event,
    ) -> None:
        self._sqs = sqs
        self._url = queue_url
        self._queue = queue
        self._recorder = recorder
        self._options = options
        self._stop = stop
        self._lock = threading.Lock()
        self._workers: list[tuple[threading.Thread, threading.Event, float]] = []
        self._pending: list[tuple[float, int]] = []
        self._target = 0
        self.worker_seconds = 0.0
        self.completed = 0
        self.failed = 0
        self.pickups: list[float] = []

    @property
    def size(self) -> int:
        """Workers running now."""
        with self._lock:
            return len(self._workers)

    def follow(self, desired: int, now: float) -> None:
        """Note the service's desiredCount; up after the provisioning delay, down at once."""
        desired = min(max(desired, 0), self._options.max_threads)
        if desired == self._target:
            return
        if desired < self._target:
            # Tasks still provisioning are cancelled first; running ones stop at once.
            self._pending = [(at, min(count, desired)) for at, count in self._pending]
            if self.size > desired:
                self._resize(desired, now)
        else:
            self._pending.append((now + self._options.provisioning_seconds, desired))
        self._target = desired

    def tick(self, now: float) -> None:
        """Start the workers whose provisioning delay has passed."""
        ready = [count for at, count in self._pending if at <= now]
        self._pending = [(at, count) for at, count in self._pending if at > now]
        if ready:
            self._resize(max(ready), now)

    def start_now(self, count: int, now: float) -> None:
        """Workers already running when the demo starts (the service's initial tasks)."""
        self._target = count
        self._resize(count, now)

    def _resize(self, count: int, now: float) -> None:
        with self._lock:
            while len(self._workers) < count:
                retire = threading.Event()
                thread = threading.Thread(
                    target=self._work, args=(retire,), name="demo-worker", daemon=True
                )
                self._workers.append((thread, retire, now))
                thread.start()
            while len(self._workers) > count:
                _, retire, started = self._workers.pop()
                retire.set()
                self.worker_seconds += max(0.0, now - started)

    def stop_all(self, now: float) -> None:
        """Retire every worker and wait (bounded) for their current jobs."""
        with self._lock:
            workers = list(self._workers)
        self._resize(0, now)
        for thread, _, _ in workers:
            thread.join(timeout=self._options.mean_job_seconds * 10 + 3)

    def _work(self, retire: threading.Event) -> None:
        while not (retire.is_set() or self._stop.is_set()):
            try:
                answer = self._sqs.receive_message(
                    QueueUrl=self._url,
                    MaxNumberOfMessages=1,
                    WaitTimeSeconds=1,
                    AttributeNames=["All"],
                )
            except Exception as error:  # the emulator stopping ends the worker
                LOG.debug("receive failed: %s", error)
                if self._stop.wait(0.5):
                    return
                continue
            for message in answer.get("Messages", []):
                self._run_job(message)

    def _run_job(self, message: Mapping[str, Any]) -> None:
        seconds = float(json.loads(message["Body"]).get("work_seconds", 0.1))
        try:
            with self._recorder.job(message, queue=self._queue) as run:
                if run.pickup_ms is not None:
                    with self._lock:
                        self.pickups.append(run.pickup_ms / 1000.0)
                time.sleep(seconds)
        except Exception:
            with self._lock:
                self.failed += 1
            return
        self._sqs.delete_message(QueueUrl=self._url, ReceiptHandle=message["ReceiptHandle"])
        with self._lock:
            self.completed += 1


def produce(
    sqs: Any,
    queue_url: str,
    queue: str,
    recorder: Any,
    options: DemoOptions,
    started: float,
    stop: threading.Event,
    produced: list[int],
) -> None:
    """Send Poisson arrivals at the phase's rate until the duration ends (or stop)."""
    from queue_autoscale.client import send_job  # noqa: PLC0415 - boto3 only when running

    rng = random.Random(options.seed)
    next_at = started
    while not stop.is_set():
        elapsed = next_at - started
        if elapsed >= options.duration_seconds:
            return
        rate = options.rate_at(elapsed)
        next_at += rng.expovariate(rate)
        wait = next_at - time.time()
        if wait > 0 and stop.wait(wait):
            return
        work = min(rng.expovariate(1.0 / options.mean_job_seconds), options.mean_job_seconds * 5)
        body = json.dumps({"work_seconds": round(max(0.02, work), 3)})
        try:
            send_job(sqs, queue_url, body, recorder, queue)
        except Exception as error:  # a refused send is not a job; count only what was sent
            LOG.warning("job not sent: %s", error)
            continue
        produced[0] += 1


@dataclass
class PumpStats:
    """What the record_events invocations did."""

    invocations: int = 0
    records: int = 0
    failed_records: int = 0
    accepted: int = 0
    rejected: int = 0


def sqs_event(
    messages: Sequence[Mapping[str, Any]], queue_arn: str, region: str = "us-east-1"
) -> dict[str, Any]:
    """A Lambda SQS event from ReceiveMessage results (what the demo and the tests feed
    record_events.handler, as Lambda's SQS event source mapping would)."""
    records = []
    for message in messages:
        attributes = dict(message.get("Attributes", {}))
        body = str(message["Body"])
        records.append(
            {
                "messageId": message["MessageId"],
                "receiptHandle": message.get("ReceiptHandle", "handle"),
                "body": body,
                "attributes": {
                    "ApproximateReceiveCount": attributes.get("ApproximateReceiveCount", "1"),
                    "SentTimestamp": attributes.get("SentTimestamp", str(int(time.time() * 1000))),
                    "SenderId": attributes.get("SenderId", "AIDAEXAMPLE"),
                    "ApproximateFirstReceiveTimestamp": attributes.get(
                        "ApproximateFirstReceiveTimestamp", str(int(time.time() * 1000))
                    ),
                },
                "messageAttributes": {},
                "md5OfBody": message.get("MD5OfBody")
                or hashlib.md5(
                    body.encode("utf-8", errors="surrogatepass"), usedforsecurity=False
                ).hexdigest(),
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": region,
            }
        )
    return {"Records": records}


def pump_events_once(
    sqs: Any,
    events_url: str,
    events_arn: str,
    invoke: Callable[[dict[str, Any]], dict[str, Any]],
    stats: PumpStats,
    max_batches: int = 50,
) -> int:
    """Poll the events queue as Lambda's SQS mapping would: receive, invoke, delete successes.

    Returns the records handled; bounded by `max_batches` batches of 10.
    """
    handled = 0
    for _ in range(max_batches):
        answer = sqs.receive_message(
            QueueUrl=events_url,
            MaxNumberOfMessages=10,
            WaitTimeSeconds=0,
            VisibilityTimeout=10,
            AttributeNames=["All"],
        )
        messages = answer.get("Messages", [])
        if not messages:
            break
        response = invoke(sqs_event(messages, events_arn))
        stats.invocations += 1
        stats.records += len(messages)
        failed = {item["itemIdentifier"] for item in response.get("batchItemFailures", [])}
        stats.failed_records += len(failed)
        done = [m for m in messages if m["MessageId"] not in failed]
        if done:
            sqs.delete_message_batch(
                QueueUrl=events_url,
                Entries=[
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done)
                ],
            )
        handled += len(messages)
    return handled


# ------------------------------------------------------------------ rendering


def _fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _count(value: int | None) -> str:
    return "-" if value is None else str(value)


def render(rows: list[TickRow], header: str, limit: int = 14) -> Group:
    """The live table: the latest ticks, newest last."""
    table = Table(title="queue-autoscale demo: evaluate ticks", expand=True)
    for name, justify in [
        ("t s", "right"),
        ("phase", "left"),
        ("jobs/s", "right"),
        ("depth", "right"),
        ("in flight", "right"),
        ("oldest s", "right"),
        ("workers", "right"),
        ("desired", "right"),
        ("target", "right"),
        ("load ρ", "right"),
        ("urgency", "left"),
        ("action", "left"),
    ]:
        table.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    table.add_column("reason", ratio=1, overflow="ellipsis", no_wrap=True)
    colours = {"NORMAL": "green", "ELEVATED": "yellow", "WARNING": "dark_orange"}
    for row in rows[-limit:]:
        urgency = Text(row.urgency, style=colours.get(row.urgency, "red"))
        table.add_row(
            f"{row.elapsed:.0f}",
            row.phase,
            f"{row.rate:.1f}",
            _count(row.visible),
            _count(row.in_flight),
            _fmt(row.oldest_age),
            str(row.workers),
            _count(row.desired),
            _count(row.target),
            _fmt(row.load_ratio, 2),
            urgency,
            row.action,
            ("; ".join(row.errors) + " ") if row.errors else row.reason,
        )
    return Group(Text(header), table)


def summary_table(summary: DemoSummary) -> Table:
    """The closing summary."""
    table = Table(title="demo summary", show_header=False)
    table.add_column("what")
    table.add_column("value", justify="right")
    left = summary.jobs_left_visible + summary.jobs_left_in_flight
    rows = [
        ("jobs produced", summary.jobs_produced),
        (
            "jobs completed / failed / left on the queue",
            f"{summary.jobs_completed} / {summary.jobs_failed} / {left}",
        ),
        ("every job accounted for", "yes" if summary.accounted else "NO"),
        (
            f"picked up within the SLA ({summary.sla_seconds:.0f} s)",
            f"{summary.picked_up_within_sla:.1%}",
        ),
        (
            "pickup p95 / max, s",
            f"{summary.pickup_p95_seconds:.1f} / {summary.pickup_max_seconds:.1f}",
        ),
        ("worker-seconds", f"{summary.worker_seconds:.0f}"),
        (
            "desiredCount start / max quiet / max spike / end",
            f"{summary.desired_start} / {summary.desired_max_quiet} / "
            f"{summary.desired_max_spike} / {summary.desired_end}",
        ),
        ("scaling actions", summary.scaling_actions),
        (
            "events sent / accepted / rejected",
            f"{summary.events_sent} / {summary.events_accepted} / {summary.events_rejected}",
        ),
        (
            "DynamoDB counters queued / completed",
            f"{summary.counters_queued} / {summary.counters_completed}",
        ),
        ("evaluate ticks (controller errors)", f"{summary.ticks} ({summary.controller_errors})"),
        ("archive objects downloaded", summary.archive_objects),
    ]
    for what, value in rows:
        table.add_row(what, str(value))
    return table


# ------------------------------------------------------------------ the run


@dataclass
class FakeContext:
    """The LambdaContext attributes the handlers and Powertools read."""

    function_name: str
    invoked_function_arn: str
    memory_limit_in_mb: int = 512
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    timeout_seconds: float = 70.0

    def get_remaining_time_in_millis(self) -> int:
        """Milliseconds left (a fresh invocation each time)."""
        return int(self.timeout_seconds * 1000)


@contextmanager
def _logs_to_file(path: Path) -> Iterator[None]:
    """Handler and library logs go to `path`, not over the live table (warnings and up)."""
    from queue_autoscale.handlers import evaluate, record_events  # noqa: PLC0415

    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as stream:
        file_handler = logging.StreamHandler(stream)
        file_handler.setFormatter(
            logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s")
        )
        # Powertools loggers keep their JSON handler; only its stream and level change.
        saved: list[tuple[Any, Any, Any, Any]] = []
        for logger in (evaluate.logger, record_events.logger):
            handler: Any = logger.registered_handler
            saved.append((logger, logger.log_level, handler, handler.setStream(stream)))
            logger.setLevel("WARNING")
        root = logging.getLogger()
        root.addHandler(file_handler)
        try:
            yield
        finally:
            root.removeHandler(file_handler)
            for logger, level, handler, previous in saved:
                handler.setStream(previous)
                logger.setLevel(level)


def _set_lambda_environment() -> dict[str, str | None]:
    """Dummy credentials and no tracing for the in-process handlers; returns what it replaced."""
    wanted = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_NAMESPACE": "QueueAutoscale",
    }
    previous = {key: os.environ.get(key) for key in wanted}
    os.environ.update(wanted)
    return previous


def _restore_environment(previous: Mapping[str, str | None]) -> None:
    for key, value in previous.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def run_demo(options: DemoOptions, console: Console | None = None) -> DemoSummary:
    """Run the demo end to end; returns the summary (also written to <output>/summary.json)."""
    from infra.emulator import embedded_endpoint  # noqa: PLC0415 - dev-only (moto)

    console = console or Console()
    previous = _set_lambda_environment()
    try:
        with (
            # Its own server unless --endpoint-url: a stray $AWS_ENDPOINT_URL must not
            # send the demo's traffic elsewhere.
            embedded_endpoint(options.endpoint_url, from_environment=False) as url,
            _logs_to_file(options.output / "demo.log"),
        ):
            if options.endpoint_url is None:
                console.print(f"[bold]embedded AWS emulator[/] (moto) on {url}")
            return _run_on(url, options, console)
    finally:
        _restore_environment(previous)


def _run_on(url: str, options: DemoOptions, console: Console) -> DemoSummary:
    import boto3  # noqa: PLC0415
    from botocore.config import Config  # noqa: PLC0415

    from infra.emulator import bootstrap  # noqa: PLC0415
    from queue_autoscale.adapters.aws import LAMBDA_CONFIG, make_clients  # noqa: PLC0415
    from queue_autoscale.client import EventRecorder  # noqa: PLC0415
    from queue_autoscale.core import urgency_for  # noqa: PLC0415
    from queue_autoscale.handlers import evaluate, record_events  # noqa: PLC0415
    from queue_autoscale.settings import EvaluateSettings, RecordSettings  # noqa: PLC0415

    suffix = "" if options.endpoint_url is None else f"-{uuid.uuid4().hex[:6]}"
    queue = demo_queue(options, suffix)
    interval = max(5, min(60, math.ceil(options.interval_seconds)))
    stack = bootstrap(
        url,
        [queue],
        stack_name=f"queue-autoscale{suffix}",
        evaluation_interval_seconds=interval,
        dry_run=options.dry_run,
        log=lambda message: console.print(f"  [dim]{message}[/]"),
    )
    work = stack.work_queues[0]
    session = boto3.session.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name=stack.region
    )
    clients = make_clients(
        session=session, endpoint_url=url, region_name=stack.region, config=LAMBDA_CONFIG
    )
    pool = Config(
        max_pool_connections=options.max_threads + 10,
        retries={"mode": "standard", "max_attempts": 3},
    )
    sqs = session.client("sqs", endpoint_url=url, config=pool)
    ecs = session.client("ecs", endpoint_url=url, config=pool)

    environment = {
        "QUEUES_CONFIG": stack.parameters["QueuesConfig"],
        "LOAD_TABLE": stack.load_table,
        "ARCHIVE_BUCKET": stack.archive_bucket,
        "EVENTS_DLQ_URL": stack.events_dlq_url,
        "EVENT_BUS_NAME": stack.event_bus,
        "EVALUATION_INTERVAL_SECONDS": str(interval),
        "DRY_RUN": "true" if options.dry_run else "false",
    }
    metrics: dict[str, dict[str, float]] = {}
    ingest_counts = {"AcceptedEvents": 0.0, "RejectedEvents": 0.0}

    def capture_queue_metrics(name: str, values: Mapping[str, float]) -> None:
        metrics[name] = dict(values)

    def capture_ingest_metrics(_name: str, values: Mapping[str, float]) -> None:
        for key in ingest_counts:
            ingest_counts[key] += values.get(key, 0.0)

    record_runtime = record_events.build_runtime(RecordSettings.from_environ(environment), clients)
    record_runtime.publish_metrics = capture_ingest_metrics
    evaluate_runtime = evaluate.build_runtime(EvaluateSettings.from_environ(environment), clients)
    evaluate_runtime.publish_metrics = capture_queue_metrics
    record_events.set_runtime(record_runtime)
    evaluate.set_runtime(evaluate_runtime)
    record_context = FakeContext(
        stack.record_function,
        f"arn:aws:lambda:{stack.region}:123456789012:function:{stack.record_function}",
        timeout_seconds=30,
    )
    evaluate_context = FakeContext(
        stack.evaluate_function,
        f"arn:aws:lambda:{stack.region}:123456789012:function:{stack.evaluate_function}",
    )
    events_arn = sqs.get_queue_attributes(
        QueueUrl=stack.events_queue_url, AttributeNames=["QueueArn"]
    )["Attributes"]["QueueArn"]

    stop = threading.Event()
    recorder = EventRecorder(
        sqs, stack.events_queue_url, flush_interval_seconds=0.5, background=True
    )
    fleet = Fleet(sqs, work.url, work.name, recorder, options, stop)
    pump = PumpStats()
    produced = [0]
    rows: list[TickRow] = []
    desired_seen: list[tuple[str, int]] = []

    def desired_count() -> int | None:
        try:
            service = ecs.describe_services(cluster=work.cluster, services=[work.service])[
                "services"
            ][0]
            return int(service["desiredCount"])
        except Exception as error:
            LOG.warning("DescribeServices failed: %s", error)
            return None

    def invoke_record(event: dict[str, Any]) -> dict[str, Any]:
        return record_events.handler(event, record_context)  # type: ignore[arg-type]

    def pump_loop() -> None:
        while not stop.is_set():
            try:
                pump_events_once(sqs, stack.events_queue_url, events_arn, invoke_record, pump)
            except Exception as error:  # keep pumping; the next pass retries
                LOG.warning("record_events pass failed: %s", error)
            stop.wait(0.5)

    def tick(elapsed: float) -> None:
        answer = evaluate.handler(
            {"source": "scheduler", "once": True},
            evaluate_context,
        )
        decision = answer["decisions"][0] if answer.get("decisions") else {}
        values = metrics.get(work.name, {})
        try:
            attributes = sqs.get_queue_attributes(
                QueueUrl=work.url,
                AttributeNames=[
                    "ApproximateNumberOfMessages",
                    "ApproximateNumberOfMessagesNotVisible",
                ],
            )["Attributes"]
            visible: int | None = int(attributes["ApproximateNumberOfMessages"])
            in_flight: int | None = int(attributes["ApproximateNumberOfMessagesNotVisible"])
        except Exception:
            visible = in_flight = None
        age = values.get("OldestJobAgeSeconds")
        desired = desired_count()
        phase = options.phase_at(elapsed) if elapsed < options.duration_seconds else "drain"
        if desired is not None:
            desired_seen.append((phase, desired))
        rows.append(
            TickRow(
                elapsed=elapsed,
                phase=phase,
                rate=options.rate_at(elapsed) if phase != "drain" else 0.0,
                visible=visible,
                in_flight=in_flight,
                oldest_age=age,
                workers=fleet.size,
                desired=desired,
                target=decision.get("target"),
                load_ratio=values.get("LoadRatio"),
                urgency=urgency_for(age, queue.sla_seconds).value if age is not None else "-",
                action=str(decision.get("action") or "-")
                + (" (dry run)" if decision.get("dry_run") else ""),
                reason=str(decision.get("reason") or ""),
                errors=list(decision.get("errors") or []),
            )
        )

    def header(elapsed: float) -> str:
        return (
            f"{elapsed:5.0f}/{options.duration_seconds:.0f} s  profile {queue.profile.value} "
            f"(SLA {queue.sla_seconds:.0f} s, p{queue.percentile * 100:.0f}, "
            f"{queue.min_workers}..{queue.max_workers} workers)"
            f"  jobs sent {produced[0]}, done {fleet.completed}"
            f"  event messages recorded {pump.records}"
            f"  workers {fleet.size}"
        )

    started = time.time()
    initial = desired_count() or 0
    fleet.start_now(initial, started)
    producer = threading.Thread(
        target=produce,
        args=(sqs, work.url, work.name, recorder, options, started, stop, produced),
        name="demo-producer",
        daemon=True,
    )
    pumper = threading.Thread(target=pump_loop, name="demo-record-events", daemon=True)
    producer.start()
    pumper.start()
    console.print(
        f"[bold]driving jobs[/] for {options.duration_seconds:.0f} s: "
        f"{options.quiet_rate:g} jobs/s, {options.quiet_rate * options.spike_factor:g} jobs/s "
        f"in the middle third, mean job {options.mean_job_seconds:g} s; "
        f"workers start {options.provisioning_seconds:g} s after desiredCount rises"
    )
    next_tick = started + 1.0
    deadline = started + options.duration_seconds + options.drain_seconds
    interrupted = False
    live = (
        Live(render(rows, header(0.0)), console=console, refresh_per_second=4, transient=False)
        if options.live
        else None
    )
    try:
        if live is not None:
            live.start()
        while True:
            now = time.time()
            elapsed = now - started
            if now >= deadline:
                break
            draining = elapsed >= options.duration_seconds
            if draining and not producer.is_alive() and not _work_left(sqs, work.url):
                break
            wanted = desired_count()
            if wanted is not None:
                fleet.follow(wanted, now)
            fleet.tick(now)
            if now >= next_tick:
                tick(elapsed)
                next_tick += options.interval_seconds
            if live is not None:
                live.update(render(rows, header(elapsed)))
            time.sleep(POLL_SECONDS)
    except KeyboardInterrupt:
        interrupted = True
        console.print("[yellow]interrupted: stopping the producer, fleet and emulator[/]")
    finally:
        stop.set()
        if live is not None:
            live.stop()
        producer.join(timeout=5)
        fleet.stop_all(time.time())
        recorder.close()
        pumper.join(timeout=5)
        try:
            # the events the recorder flushed last still need recording
            for _ in range(20):
                if not pump_events_once(
                    sqs, stack.events_queue_url, events_arn, invoke_record, pump
                ):
                    break
        finally:
            record_events.set_runtime(None)
            evaluate.set_runtime(None)

    summary = _summarize(
        options,
        queue,
        stack,
        sqs,
        clients,
        fleet,
        recorder,
        pump,
        produced[0],
        rows,
        desired_seen,
        ingest_counts,
    )
    summary.output = str(options.output)
    summary.interrupted = interrupted
    summary.archive_objects = download_archive(
        clients.s3, stack.archive_bucket, options.output / "archive"
    )
    options.output.mkdir(parents=True, exist_ok=True)
    (options.output / "ticks.jsonl").write_text(
        "".join(json.dumps(asdict(r)) + "\n" for r in rows), encoding="utf-8"
    )
    if options.report and not interrupted:
        summary.report, summary.report_note = build_report(
            options.output, stack.parameters["QueuesConfig"], console
        )
    elif not options.report:
        summary.report_note = "skipped (--no-report)"
    else:
        summary.report_note = "skipped (interrupted)"
    (options.output / "summary.json").write_text(
        json.dumps({**asdict(summary), "accounted": summary.accounted}, indent=2), encoding="utf-8"
    )
    console.print(summary_table(summary))
    console.print(f"archive and summary written to [bold]{options.output}/[/]")
    if summary.report:
        console.print(f"SLA report: [bold]{summary.report}[/]")
    elif summary.report_note:
        console.print(f"SLA report: {summary.report_note}")
    return summary


def _work_left(sqs: Any, url: str) -> bool:
    attributes = sqs.get_queue_attributes(
        QueueUrl=url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return (
        int(attributes["ApproximateNumberOfMessages"])
        + int(attributes["ApproximateNumberOfMessagesNotVisible"])
        > 0
    )


def _summarize(
    options: DemoOptions,
    queue: QueueConfig,
    stack: Any,
    sqs: Any,
    clients: Any,
    fleet: Fleet,
    recorder: Any,
    pump: PumpStats,
    produced: int,
    rows: list[TickRow],
    desired_seen: list[tuple[str, int]],
    ingest_counts: Mapping[str, float],
) -> DemoSummary:
    from queue_autoscale.adapters.dynamodb import LoadTable  # noqa: PLC0415

    work = stack.work_queues[0]
    attributes = sqs.get_queue_attributes(
        QueueUrl=work.url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    dead = sqs.get_queue_attributes(
        QueueUrl=stack.events_dlq_url, AttributeNames=["ApproximateNumberOfMessages"]
    )["Attributes"]
    now = int(time.time())
    counters = LoadTable(clients.dynamodb, stack.load_table).counter_rows(work.name, 0, now + 3600)
    pickups = sorted(fleet.pickups)
    desired_values = [d for _, d in desired_seen]
    changes = sum(1 for a, b in itertools.pairwise(desired_values) if a != b)
    return DemoSummary(
        jobs_produced=produced,
        jobs_completed=fleet.completed,
        jobs_failed=fleet.failed,
        jobs_left_visible=int(attributes["ApproximateNumberOfMessages"]),
        jobs_left_in_flight=int(attributes["ApproximateNumberOfMessagesNotVisible"]),
        picked_up_within_sla=(sum(1 for p in pickups if p <= queue.sla_seconds) / len(pickups))
        if pickups
        else 0.0,
        pickup_p95_seconds=pickups[min(len(pickups) - 1, int(0.95 * len(pickups)))]
        if pickups
        else 0.0,
        pickup_max_seconds=pickups[-1] if pickups else 0.0,
        worker_seconds=fleet.worker_seconds,
        sla_seconds=queue.sla_seconds,
        events_sent=recorder.stats.sent,
        events_accepted=int(ingest_counts["AcceptedEvents"]),
        events_rejected=int(ingest_counts["RejectedEvents"]),
        events_dead_lettered=int(dead["ApproximateNumberOfMessages"]),
        counters_queued=sum(row.queued for row in counters),
        counters_completed=sum(row.completed for row in counters),
        ticks=len(rows),
        controller_errors=sum(len(r.errors) for r in rows),
        desired_start=desired_values[0] if desired_values else 0,
        desired_max_quiet=max((d for p, d in desired_seen if p == "quiet"), default=0),
        desired_max_spike=max((d for p, d in desired_seen if p == "spike"), default=0),
        desired_end=desired_values[-1] if desired_values else 0,
        scaling_actions=changes,
    )


def download_archive(s3: Any, bucket: str, folder: Path) -> int:
    """Copy every archive object (events/, decisions/) to `folder`; returns the count."""
    count = 0
    paginator = s3.get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=bucket):
        for item in page.get("Contents", []):
            key = item["Key"]
            target = folder / key
            target.parent.mkdir(parents=True, exist_ok=True)
            s3.download_file(bucket, key, str(target))
            count += 1
    return count


def build_report(output: Path, queues_config_json: str, console: Console) -> tuple[str | None, str]:
    """Run the Spark SLA report on the downloaded archive: (HTML path or None, note)."""
    try:
        from glue_jobs.session import local_spark  # noqa: PLC0415
        from glue_jobs.sla_report import run as sla_report  # noqa: PLC0415
    except ImportError as error:
        return None, f"not built: the Spark job is not importable ({error})"
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    console.print("building the Spark SLA report from the archive (local Spark) ...")
    spark = local_spark("queue-autoscale-demo-report")
    try:
        uri = sla_report(
            str((output / "archive").resolve()),
            str((output / "report").resolve()),
            queues_config_json,
            interval_seconds=10,
            spark=spark,
        )
    except Exception as error:  # the demo's own results stand without the report
        return None, f"not built: {type(error).__name__}: {error}"
    finally:
        spark.stop()
    return uri, ""


def register(app: typer.Typer) -> None:
    """Add the `demo` command."""

    @app.command()
    def demo(
        duration: Annotated[
            float,
            typer.Option(min=10, max=3600, help="Seconds of traffic (quiet, 5x spike, quiet)."),
        ] = 120.0,
        profile: Annotated[
            Profile, typer.Option(help="The demo queue's profile.")
        ] = Profile.BALANCED,
        dry_run: Annotated[
            bool, typer.Option("--dry-run", help="Decide and publish, never resize the service.")
        ] = False,
        output: Annotated[
            Path, typer.Option(help="Folder for the downloaded archive, summary and report.")
        ] = Path("demo-output"),
        interval: Annotated[
            float, typer.Option(min=1, max=60, help="Seconds between evaluate ticks.")
        ] = 5.0,
        provisioning: Annotated[
            float, typer.Option(min=0, max=120, help="Seconds before a new worker takes jobs.")
        ] = 10.0,
        quiet_rate: Annotated[
            float, typer.Option(min=0.1, max=50, help="Quiet arrival rate, jobs/s.")
        ] = 2.0,
        spike_factor: Annotated[
            float, typer.Option(min=1, max=20, help="Spike rate / quiet rate.")
        ] = 5.0,
        report: Annotated[bool, typer.Option(help="Build the Spark SLA report at the end.")] = True,
        endpoint_url: Annotated[
            str | None,
            typer.Option(
                help="Use this AWS endpoint (e.g. LocalStack) instead of the embedded one."
            ),
        ] = None,
    ) -> None:
        """Run the autoscaler end to end on the embedded AWS emulator (about two minutes)."""
        options = DemoOptions(
            duration_seconds=duration,
            profile=profile,
            dry_run=dry_run,
            output=output,
            interval_seconds=interval,
            provisioning_seconds=provisioning,
            quiet_rate=quiet_rate,
            spike_factor=spike_factor,
            report=report,
            endpoint_url=endpoint_url,
        )
        try:
            summary = run_demo(options)
        except KeyboardInterrupt:
            # Ctrl-C outside the traffic loop (setup, final pump, report): the emulator is
            # already stopped by the context manager on the way out.
            Console().print("[yellow]interrupted[/]")
            raise typer.Exit(code=130) from None
        if summary.interrupted:
            raise typer.Exit(code=130)
        if not summary.accounted:
            raise typer.Exit(code=1)
