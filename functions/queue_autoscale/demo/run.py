"""One demo run: stack up, traffic through real workers, ticks, drain, summary, report."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.live import Live

from queue_autoscale.client import EventRecorder
from queue_autoscale.config import QueueConfig
from queue_autoscale.core import urgency_for
from queue_autoscale.demo.agreement import simulate_archive
from queue_autoscale.demo.driver import (
    EVENTS_FLUSH_SECONDS,
    POLL_SECONDS,
    Produced,
    PumpStats,
    produce,
    pump_loop,
    pump_once,
    pump_pass,
)
from queue_autoscale.demo.ecs_tasks import EmulatedService
from queue_autoscale.demo.fleet import FleetTotals, WorkerFleet, WorkerLaunch
from queue_autoscale.demo.live import TickRow, compact_table, tick_line, write_ticks
from queue_autoscale.demo.options import DemoOptions
from queue_autoscale.demo.stack import (
    DemoStack,
    Handlers,
    demo_stack,
    first_decision,
    in_process_handlers,
    logs_to_file,
)
from queue_autoscale.demo.summary import (
    NO_MESSAGES,
    DemoSummary,
    build_report,
    counter_rows,
    download_archive,
    left_on_queue,
    queue_counts,
    read_archive,
    summarize,
    summary_table,
)


@dataclass
class RunState:
    """What the loop accumulates (passed explicitly, no closures)."""

    produced: Produced = field(default_factory=Produced)
    pump: PumpStats = field(default_factory=PumpStats)
    """The events queue's record_events invocations."""
    tick_pump: PumpStats = field(default_factory=PumpStats)
    """The tick queue's evaluate invocations (one per jump tick asked for)."""
    rows: list[TickRow] = field(default_factory=list)
    totals: FleetTotals = field(default_factory=FleetTotals)
    """The worker processes' stats, added up when the fleet has stopped."""
    interrupted: bool = False


def run_demo(options: DemoOptions, console: Console | None = None) -> DemoSummary:
    """Run the demo end to end; returns the summary (also written to <output>/summary.json)."""
    console = console or Console()
    options.output.mkdir(parents=True, exist_ok=True)
    with (
        logs_to_file(options.output / "demo.log"),
        demo_stack(options, lambda message: console.print(f"  [dim]{message}[/]")) as demo,
    ):
        with in_process_handlers(demo) as handlers:
            state = drive(demo, handlers, options, console)
        summary = close(demo, handlers, options, state, console)
    console.print(summary_table(summary))
    console.print(f"archive, ticks and summary written to [bold]{options.output}/[/]")
    if summary.report:
        console.print(f"SLA report: [bold]{summary.report}[/]")
    elif summary.report_note:
        console.print(f"SLA report: {summary.report_note}")
    return summary


def desired_count(demo: DemoStack) -> int | None:
    """The ECS service's desiredCount (None when DescribeServices fails)."""
    try:
        service = demo.clients.ecs.describe_services(
            cluster=demo.work.cluster, services=[demo.work.service]
        )["services"][0]
        return int(service["desiredCount"])
    except Exception:
        return None


def _drained(
    demo: DemoStack, options: DemoOptions, producer: threading.Thread, elapsed: float
) -> bool:
    """True once traffic is over and the work queue is empty (nothing visible or in flight)."""
    if elapsed < options.duration_seconds or producer.is_alive():
        return False
    visible, in_flight = queue_counts(demo.clients.sqs, demo.work.url)
    return visible + in_flight == 0


def follow(demo: DemoStack, fleet: WorkerFleet, ecs: EmulatedService, now: float) -> None:
    """The worker processes follow the service's desiredCount (unchanged when unreadable), and
    DescribeServices reports their running and pending counts (on the embedded emulator)."""
    wanted = desired_count(demo)
    if wanted is not None:
        fleet.follow(wanted, now)
    fleet.tick(now)
    ecs.publish(fleet.counts())


def start_fleet(
    demo: DemoStack, options: DemoOptions, console: Console
) -> tuple[WorkerFleet, EmulatedService, float]:
    """The service's tasks already running started as processes, their counts published on
    the embedded emulator (said when the endpoint's are its own); (fleet, service, epoch s)."""
    fleet = WorkerFleet(
        WorkerLaunch(
            demo.worker_environment(options),
            options.output / "workers.log",
            options.worker_drain_seconds,
        ),
        options.provisioning_seconds,
        options.max_workers,
    )
    ecs = EmulatedService(demo.work.cluster, demo.work.service, demo.stack.region)
    if not ecs.embedded:
        console.print(
            "  [yellow]the endpoint's ECS is not in this process: its runningCount and "
            "pendingCount are its own, not the worker processes' (see docs/emulator.md)[/]"
        )
    started = time.time()
    fleet.start_now(desired_count(demo) or 0, started)
    ecs.publish(fleet.counts())
    return fleet, ecs, started


def _pump_rest(pump: Callable[[], int], rounds: int = 20) -> None:
    """Record the events flushed last: pump until a round finds none (at most `rounds`)."""
    for _ in range(rounds):
        if not pump():
            return


def drive(demo: DemoStack, handlers: Handlers, options: DemoOptions, console: Console) -> RunState:
    """Traffic for the duration, then drain; the fleet is always stopped on the way out."""
    state = RunState()
    sqs = demo.clients.sqs
    stop = threading.Event()
    recorder = EventRecorder(
        sqs, demo.events.url, flush_interval_seconds=EVENTS_FLUSH_SECONDS, background=True
    )

    def pump() -> int:
        return pump_once(sqs, demo.events, handlers.record, state.pump)

    fleet, ecs, started = start_fleet(demo, options, console)
    producer = threading.Thread(
        target=produce,
        args=(sqs, demo.work.url, demo.work.name, recorder, options, started, stop, state.produced),
        name="demo-producer",
        daemon=True,
    )
    pumper = threading.Thread(target=pump_loop, args=(pump, stop), name="demo-pump", daemon=True)
    producer.start()
    pumper.start()
    live = announce(options, console)
    parts = Parts(demo, handlers, options, fleet, started)
    next_tick = started + 1.0
    deadline = started + options.duration_seconds + options.drain_seconds
    try:
        if live is not None:
            live.start()
        while True:
            now = time.time()
            elapsed = now - started
            if now >= deadline or _drained(demo, options, producer, elapsed):
                break
            follow(demo, fleet, ecs, now)
            clock = now >= next_tick
            if clock:
                next_tick += options.interval_seconds
            for row in ticks_now(parts, state, clock):
                follow(demo, fleet, ecs, time.time())  # moto set running = desired on update
                state.rows.append(row)
                if live is None:
                    console.print(tick_line(row), markup=False, highlight=False)
            if live is not None:
                live.update(compact_table(state.rows, header(options, state, fleet, elapsed)))
            time.sleep(POLL_SECONDS)
    except KeyboardInterrupt:
        state.interrupted = True
        console.print("[yellow]interrupted: stopping the producer, workers and emulator[/]")
    finally:
        stop.set()
        if live is not None:
            live.stop()
        producer.join(timeout=5)
        console.print(f"stopping {fleet.running} worker processes (SIGTERM, drain) ...")
        fleet.stop_all(time.time)
        recorder.close()
        pumper.join(timeout=5)
        _pump_rest(pump)
    state.totals = fleet.totals
    return state


def announce(options: DemoOptions, console: Console) -> Live | None:
    """Say what the run drives; the live table when it shows one (on a terminal)."""
    console.print(
        f"driving jobs for {options.duration_seconds:.0f} s: {options.quiet_rate:g} jobs/s, "
        f"{options.quiet_rate * options.spike_factor:g} in the middle third; "
        f"mean job {options.mean_job_seconds:g} s; a worker process starts "
        f"{options.provisioning_seconds:g} s after desiredCount rises, scale-in sends SIGTERM"
    )
    if not (options.live and console.is_terminal):
        return None
    return Live(compact_table([], ""), console=console, refresh_per_second=4)


@dataclass(frozen=True)
class Parts:
    """What an evaluate tick's row reads: the stack, the handlers, the run's options, the worker
    fleet, and when the traffic started (epoch s)."""

    demo: DemoStack
    handlers: Handlers
    options: DemoOptions
    fleet: WorkerFleet
    started: float


def ticks_now(parts: Parts, state: RunState, clock: bool) -> list[TickRow]:
    """The clock tick when `clock`, then the jump ticks on the tick queue; here in the main
    loop, not in a thread of their own, so evaluate runs one invocation at a time."""
    rows = []
    if clock:
        elapsed = time.time() - parts.started
        rows.append(row_after(parts, elapsed, parts.handlers.evaluate_once()))
    return rows + jump_ticks(parts, state)


def jump_ticks(parts: Parts, state: RunState) -> list[TickRow]:
    """Deliver what the tick queue holds to evaluate as its event source would (one invocation
    a message, deleted unless the invocation raised); a row for each jump tick that decided.

    The record path's jump ticks are all it holds: a clock tick's `once` queues no later
    ticks. A jump tick that decided nothing (a clock tick ran since its line was drawn, or the
    line expired) is counted in `state.tick_pump` alone.
    """
    source = parts.demo.ticks
    if source is None:
        return []
    rows: list[TickRow] = []

    def invoke(event: dict[str, Any]) -> dict[str, Any]:
        answer = parts.handlers.evaluate(event)
        decision = first_decision(answer)
        if decision:
            elapsed = time.time() - parts.started
            rows.append(row_after(parts, elapsed, decision, jump=True))
        return answer

    pump_pass(
        lambda: pump_once(parts.demo.clients.sqs, source, invoke, state.tick_pump), "evaluate"
    )
    return rows


def row_after(
    parts: Parts, elapsed: float, decision: Mapping[str, Any], *, jump: bool = False
) -> TickRow:
    """What the queue and fleet look like after an evaluate tick that made `decision`,
    `elapsed` seconds into the run."""
    demo, options, fleet = parts.demo, parts.options, parts.fleet
    values = parts.handlers.queue_metrics.get(demo.work.name, {})
    try:
        visible: int | None
        in_flight: int | None
        visible, in_flight = queue_counts(demo.clients.sqs, demo.work.url)
    except Exception:
        visible = in_flight = None
    age = values.get("OldestJobAgeSeconds")
    phase = options.phase_at(elapsed) if elapsed < options.duration_seconds else "drain"
    return TickRow(
        elapsed=elapsed,
        phase=phase,
        rate=options.rate_at(elapsed) if phase != "drain" else 0.0,
        visible=visible,
        in_flight=in_flight,
        oldest_age=age,
        workers=fleet.running,
        stopping=fleet.stopping,
        pending=fleet.pending,
        desired=desired_count(demo),
        target=decision.get("target"),
        load_ratio=values.get("LoadRatio"),
        urgency=urgency_for(age, demo.queue.sla_seconds).value if age is not None else "-",
        action=str(decision.get("action") or "-") + (" (dry)" if decision.get("dry_run") else ""),
        reason=str(decision.get("reason") or ""),
        errors=list(decision.get("errors") or []),
        jump=jump,
    )


def header(options: DemoOptions, state: RunState, fleet: WorkerFleet, elapsed: float) -> str:
    """The live table's first line."""
    return (
        f"{elapsed:4.0f}/{options.duration_seconds:.0f} s  {options.profile.value}  "
        f"sent {state.produced.jobs}  done {fleet.totals.completed}  "
        f"workers {fleet.running}"
    )


def flap_window_seconds(queue: QueueConfig, options: DemoOptions) -> float:
    """A scale-out this soon after a scale-in is a flap, seconds: the provisioning lead plus a
    sixth of the demo (the bench's lead + 5 minutes, scaled to a demo of minutes; at least
    10 s): 10 s + 20 s in the two-minute demo."""
    return queue.provisioning_lead_seconds + max(10.0, options.duration_seconds / 6.0)


def close(
    demo: DemoStack,
    handlers: Handlers,
    options: DemoOptions,
    state: RunState,
    console: Console,
) -> DemoSummary:
    """Read every count, download the archive, write ticks and summary, build the report."""
    sqs = demo.clients.sqs
    archive = options.output / "archive"
    objects = download_archive(demo.clients.s3, demo.stack.archive_bucket, archive)
    dead = left_on_queue(sqs, demo.work.dlq_url) if demo.work.dlq_url else NO_MESSAGES
    summary = summarize(
        produced=state.produced.jobs,
        totals=state.totals,
        left=left_on_queue(sqs, demo.work.url),
        dead_letters=dead,
        events_dead_lettered=queue_counts(sqs, demo.stack.events_dlq_url)[0],
        counters=counter_rows(
            demo.clients.dynamodb, demo.stack.load_table, demo.work.name, int(time.time()) + 3600
        ),
        archive=read_archive(archive / "events"),
        rows=state.rows,
        ingest_counts=handlers.ingest_counts,
        sla_seconds=demo.queue.sla_seconds,
        flap_window_seconds=flap_window_seconds(demo.queue, options),
        concurrency=demo.queue.effective_concurrency,
        jump_messages=state.tick_pump.invocations,
    )
    summary.archive_objects = objects
    try:
        summary.agreement = simulate_archive(archive, demo.queue)
    except Exception as error:  # the run's own results stand without the comparison
        summary.agreement_note = f"not run: {type(error).__name__}: {error}"
    summary.output = str(options.output)
    summary.interrupted = state.interrupted
    write_ticks(state.rows, options.output)
    if options.report and not state.interrupted:
        summary.report, summary.report_note = build_report(
            options.output, demo.stack.parameters["QueuesConfig"], console
        )
    else:
        summary.report_note = "skipped (--no-report)" if not options.report else "skipped"
    (options.output / "summary.json").write_text(summary.to_json(), encoding="utf-8")
    return summary
