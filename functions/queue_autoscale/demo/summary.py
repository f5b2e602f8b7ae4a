"""The demo's closing summary: what happened to every job, read from the queues, the workers'
own stats, the load table and the downloaded archive; plus the Spark SLA report."""

from __future__ import annotations

import gzip
import itertools
import json
import shutil
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from queue_autoscale.adapters.dynamodb import LoadTable
from queue_autoscale.adapters.sqs import SqsQueues
from queue_autoscale.demo.agreement import TOLERANCE, Agreement
from queue_autoscale.demo.fleet import FleetTotals
from queue_autoscale.demo.live import TickRow
from queue_autoscale.demo.scaling import judge


@dataclass
class DemoSummary:
    """What happened, for the closing table, summary.json and the tests."""

    jobs_produced: int = 0
    jobs_completed: int = 0
    """Distinct jobs completed (from the archived events)."""
    duplicate_completions: int = 0
    """Jobs completed a second time: SQS delivers at least once (not a loss)."""
    jobs_failed: int = 0
    jobs_left_visible: int = 0
    """Messages still waiting on the work queue whose job never completed."""
    jobs_left_in_flight: int = 0
    completed_jobs_left_on_queue: int = 0
    """Visible messages of jobs that had already completed: a worker's delete came after the
    visibility timeout and SQS delivered the job again (at-least-once; not a loss)."""
    jobs_dead_lettered: int = 0
    """Messages on the work queue's DLQ whose job never completed."""
    completed_jobs_dead_lettered: int = 0
    """DLQ messages of jobs that had completed (their repeated late deliveries ran out of
    receives): not a loss."""
    jobs_interrupted: int = 0
    """Jobs a worker stopped by scale-in could not finish (must be 0)."""
    messages_returned_on_drain: int = 0
    """Prefetched messages stopped workers made visible again at once."""
    workers_started: int = 0
    workers_stopped_by_scale_in: int = 0
    workers_unclean_exits: int = 0
    picked_up_within_sla: float = 0.0
    """Share of started jobs whose pickup time was within the SLA (0..1)."""
    pickup_p95_seconds: float = 0.0
    pickup_max_seconds: float = 0.0
    worker_seconds: float = 0.0
    """Billed worker-seconds, as the simulator counts them: each task from its order
    (provisioning included) to its process's exit (drain included); demo/fleet.py says what
    this leaves out of Fargate's bill."""
    busy_seconds: float = 0.0
    """Job-seconds worked: the archived completed and failed events' durations."""
    utilization: float = 0.0
    """busy_seconds / (worker_seconds x concurrency), 0..1."""
    flaps: int = 0
    """Scale-outs within the lead plus the stabilization window of a scale-in."""
    flaps_quiet: int = 0
    """Those in the quiet phases (steady arrivals)."""
    flap_window_seconds: float = 0.0
    wrong_way_scale_downs: int = 0
    """desiredCount lowered while the visible backlog was above the previous tick's and tasks
    ordered earlier had not started (must be 0)."""
    agreement: Agreement | None = None
    """The simulator fed this run's jobs, beside the run (demo/agreement.py); None if not run."""
    agreement_note: str = ""
    sla_seconds: float = 0.0
    events_accepted: int = 0
    events_rejected: int = 0
    events_dead_lettered: int = 0
    counters_queued: int = 0
    """Sum of the DynamoDB `queued` counters (at-least-once: may exceed jobs_produced)."""
    counters_completed: int = 0
    ticks: int = 0
    """Evaluate ticks that decided: the clock's and the jump ticks."""
    jump_ticks: int = 0
    """Of those, the ticks the record path asked for on the tick queue."""
    jump_ticks_undecided: int = 0
    """Jump-tick messages evaluate consumed without deciding: a clock tick had run since the
    line was drawn, or the line had expired."""
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
    def messages_lost(self) -> int:
        """Produced jobs neither completed, dead-lettered nor still on the queue (must be 0)."""
        left = self.jobs_left_visible + self.jobs_left_in_flight
        return self.jobs_produced - self.jobs_completed - self.jobs_dead_lettered - left

    @property
    def accounted(self) -> bool:
        """Every produced job is completed, dead-lettered or still on the queue, none
        interrupted by scale-in."""
        return self.messages_lost == 0 and self.jobs_interrupted == 0

    @property
    def passed(self) -> bool:
        """Every "must be 0" line is 0: accounted, and no wrong-way scale-down."""
        return self.accounted and self.wrong_way_scale_downs == 0

    def to_json(self) -> str:
        """summary.json's text."""
        data = {
            **asdict(self),
            "messages_lost": self.messages_lost,
            "accounted": self.accounted,
            "passed": self.passed,
            "agreement_within": None if self.agreement is None else self.agreement.within(),
        }
        return json.dumps(data, indent=2)


def queue_counts(sqs: Any, url: str) -> tuple[int, int]:
    """(visible, in flight) on a queue."""
    depth = SqsQueues(sqs).depth(url)
    return depth.visible, depth.in_flight


@dataclass(frozen=True)
class LeftOnQueue:
    """What the work queue still holds once the fleet has stopped."""

    visible_job_ids: frozenset[str]
    """MessageIds (the events' job_id) of the messages that were visible."""
    in_flight: int
    """Messages received by someone and not deleted (their ids cannot be read)."""


NO_MESSAGES = LeftOnQueue(frozenset(), 0)
"""An empty queue (or none configured)."""


def left_on_queue(
    sqs: Any,
    url: str,
    hide_seconds: int = 120,
    settle_seconds: float | None = None,
    poll_seconds: float = 0.5,
) -> LeftOnQueue:
    """Receive every visible message once (hidden `hide_seconds` so each is read once) to learn
    its job id; the demo is over, so nobody else needs them.

    Messages still in flight (a stopped worker's receive whose delete never came) become visible
    again when their visibility timeout ends: wait for that up to `settle_seconds` (default: the
    queue's VisibilityTimeout plus 5 s), polling every `poll_seconds`, so they are read by id
    too. Bounded by the depth read first (plus slack for SQS's approximate counts).
    """
    if settle_seconds is None:
        attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["VisibilityTimeout"])
        settle_seconds = float(attributes["Attributes"]["VisibilityTimeout"]) + 5.0
    deadline = time.monotonic() + settle_seconds
    visible, in_flight = queue_counts(sqs, url)
    while in_flight and time.monotonic() < deadline:
        time.sleep(poll_seconds)
        visible, in_flight = queue_counts(sqs, url)
    ids: set[str] = set()
    empty_reads = 0
    for _ in range(visible // 10 + 5):
        response = sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=hide_seconds, WaitTimeSeconds=0
        )
        messages = response.get("Messages", [])
        ids.update(str(message["MessageId"]) for message in messages)
        empty_reads = 0 if messages else empty_reads + 1
        if empty_reads >= 2 and len(ids) >= visible:
            break
    return LeftOnQueue(frozenset(ids), in_flight)


def download_archive(s3: Any, bucket: str, folder: Path) -> int:
    """Copy every archive object (events/, decisions/) to `folder`, emptied first; returns the
    count. A previous run's objects left in it would be read as this run's: a second `make demo`
    in the same clone counted 1,158 completions of 579 jobs and reported -579 messages lost."""
    if folder.exists():
        shutil.rmtree(folder)
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


@dataclass
class ArchiveFacts:
    """What the archived job events say (de-duplicated by event_id)."""

    pickups: list[float]
    """Pickup seconds of every `started` event, sorted."""
    completed_jobs: int
    """Distinct job_ids with a `completed` event."""
    completed_ids: frozenset[str]
    """Those job_ids."""
    completions: int
    """`completed` events: above completed_jobs when SQS delivered a job twice."""
    busy_seconds: float = 0.0
    """Summed duration of the completed and failed events, seconds."""


def read_archive(folder: Path) -> ArchiveFacts:
    """The job events under `folder` (the archive's events/)."""
    events: dict[str, dict[str, Any]] = {}
    for path in sorted(folder.rglob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as stream:
            for line in stream:
                event = json.loads(line)
                events[str(event.get("event_id"))] = event
    pickups = sorted(
        float(e["pickup_ms"]) / 1000.0
        for e in events.values()
        if e.get("type") == "started" and e.get("pickup_ms") is not None
    )
    completed = [str(e.get("job_id")) for e in events.values() if e.get("type") == "completed"]
    busy_ms = sum(
        int(e.get("duration_ms") or 0)
        for e in events.values()
        if e.get("type") in ("completed", "failed")
    )
    return ArchiveFacts(
        pickups, len(set(completed)), frozenset(completed), len(completed), busy_ms / 1000.0
    )


def summarize(  # noqa: PLR0913 - keyword-only, one per measured total
    *,
    produced: int,
    totals: FleetTotals,
    left: LeftOnQueue,
    dead_letters: LeftOnQueue,
    events_dead_lettered: int,
    counters: Sequence[Any],
    archive: ArchiveFacts,
    rows: Sequence[TickRow],
    ingest_counts: dict[str, float],
    sla_seconds: float,
    flap_window_seconds: float = 30.0,
    concurrency: int = 1,
    jump_messages: int = 0,
) -> DemoSummary:
    """The summary from what the run measured (all passed in); a flap is a scale-out within
    `flap_window_seconds` of a scale-in; `jump_messages` is the evaluate invocations the tick
    queue's messages made."""
    moves = judge(rows, flap_window_seconds)
    capacity = totals.worker_seconds * concurrency
    desired_seen = [(row.phase, row.desired) for row in rows if row.desired is not None]
    values = [d for _, d in desired_seen]
    pickups = archive.pickups
    within = sum(1 for p in pickups if p <= sla_seconds)
    jumps = sum(1 for row in rows if row.jump)
    return DemoSummary(
        jobs_produced=produced,
        jobs_completed=archive.completed_jobs,
        duplicate_completions=max(0, totals.completed - archive.completed_jobs),
        jobs_failed=totals.failed,
        jobs_left_visible=len(left.visible_job_ids - archive.completed_ids),
        jobs_left_in_flight=left.in_flight,
        completed_jobs_left_on_queue=len(left.visible_job_ids & archive.completed_ids),
        jobs_dead_lettered=len(dead_letters.visible_job_ids - archive.completed_ids)
        + dead_letters.in_flight,
        completed_jobs_dead_lettered=len(dead_letters.visible_job_ids & archive.completed_ids),
        jobs_interrupted=totals.interrupted,
        messages_returned_on_drain=totals.returned_on_drain,
        workers_started=totals.started_processes,
        workers_stopped_by_scale_in=totals.stopped_by_scale_in,
        workers_unclean_exits=totals.unclean_exits,
        picked_up_within_sla=within / len(pickups) if pickups else 0.0,
        pickup_p95_seconds=pickups[min(len(pickups) - 1, int(0.95 * len(pickups)))]
        if pickups
        else 0.0,
        pickup_max_seconds=pickups[-1] if pickups else 0.0,
        worker_seconds=totals.worker_seconds,
        busy_seconds=archive.busy_seconds,
        utilization=archive.busy_seconds / capacity if capacity > 0 else 0.0,
        flaps=len(moves.flaps),
        flaps_quiet=moves.quiet_flaps,
        flap_window_seconds=flap_window_seconds,
        wrong_way_scale_downs=len(moves.wrong_way_scale_downs),
        sla_seconds=sla_seconds,
        events_accepted=int(ingest_counts["AcceptedEvents"]),
        events_rejected=int(ingest_counts["RejectedEvents"]),
        events_dead_lettered=events_dead_lettered,
        counters_queued=sum(row.queued for row in counters),
        counters_completed=sum(row.completed for row in counters),
        ticks=len(rows),
        jump_ticks=jumps,
        jump_ticks_undecided=jump_messages - jumps,
        controller_errors=sum(len(r.errors) for r in rows),
        desired_start=values[0] if values else 0,
        desired_max_quiet=max((d for p, d in desired_seen if p == "quiet"), default=0),
        desired_max_spike=max((d for p, d in desired_seen if p == "spike"), default=0),
        desired_end=values[-1] if values else 0,
        scaling_actions=sum(1 for a, b in itertools.pairwise(values) if a != b),
    )


def counter_rows(dynamodb: Any, table: str, queue: str, until: int) -> list[Any]:
    """The load table's counter rows for `queue` up to `until` (epoch s)."""
    return list(LoadTable(dynamodb, table).counter_rows(queue, 0, until))


def summary_table(summary: DemoSummary) -> Table:
    """The closing summary (fits 80 columns)."""
    table = Table(title="demo summary", show_header=False)
    table.add_column("what", max_width=52)
    table.add_column("value", justify="right")
    left = summary.jobs_left_visible + summary.jobs_left_in_flight
    rows = [
        ("jobs produced", summary.jobs_produced),
        (
            "completed / failed / dead-lettered / left",
            f"{summary.jobs_completed} / {summary.jobs_failed} / "
            f"{summary.jobs_dead_lettered} / {left}",
        ),
        ("jobs completed twice (at-least-once delivery)", summary.duplicate_completions),
        ("jobs interrupted by scale-in (must be 0)", summary.jobs_interrupted),
        ("messages returned on drain", summary.messages_returned_on_drain),
        ("messages lost (must be 0)", summary.messages_lost),
        (
            "worker processes started / stopped by scale-in",
            f"{summary.workers_started} / {summary.workers_stopped_by_scale_in}",
        ),
        (
            f"picked up within the SLA ({summary.sla_seconds:.0f} s)",
            f"{summary.picked_up_within_sla:.1%}",
        ),
        (
            "pickup p95 / max, s",
            f"{summary.pickup_p95_seconds:.1f} / {summary.pickup_max_seconds:.1f}",
        ),
        ("worker-seconds billed, order to exit", f"{summary.worker_seconds:.0f}"),
        ("utilization, job-seconds / worker-seconds", f"{summary.utilization:.0%}"),
        (
            "desiredCount start / quiet / spike / end",
            f"{summary.desired_start} / {summary.desired_max_quiet} / "
            f"{summary.desired_max_spike} / {summary.desired_end}",
        ),
        ("scaling actions", summary.scaling_actions),
        (
            f"flaps in {summary.flap_window_seconds:.0f} s, all / quiet phases",
            f"{summary.flaps} / {summary.flaps_quiet}",
        ),
        ("wrong-way scale-downs (must be 0)", summary.wrong_way_scale_downs),
        (
            "events accepted / rejected",
            f"{summary.events_accepted} / {summary.events_rejected}",
        ),
        (
            "DynamoDB counters queued / completed",
            f"{summary.counters_queued} / {summary.counters_completed}",
        ),
        (
            "evaluate ticks: clock / jump (controller errors)",
            f"{summary.ticks - summary.jump_ticks} / {summary.jump_ticks} "
            f"({summary.controller_errors})",
        ),
        ("jump ticks left to the clock tick", summary.jump_ticks_undecided),
        ("archive objects downloaded", summary.archive_objects),
    ]
    rows += _agreement_rows(summary)
    for what, value in rows:
        table.add_row(what, str(value))
    return table


def _agreement_rows(summary: DemoSummary) -> list[tuple[str, object]]:
    """The simulator on the same jobs, and whether it is within the demo's own spread."""
    found = summary.agreement
    if found is None:
        return [("simulator on these jobs", summary.agreement_note or "not run")]
    tol = TOLERANCE
    return [
        (
            "simulator on these jobs: within SLA / worker-s",
            f"{found.compliance:.1%} / {found.worker_seconds:.0f}",
        ),
        (
            "  minus as run (order to stop): points / worker-s",
            f"{found.compliance_points:+.1f} / {found.worker_seconds_share:+.0%} "
            f"of {found.as_run_worker_seconds:.0f}",
        ),
        ("  ticks whose targets agree within +-1", f"{found.ticks_within_one:.0%}"),
        (
            f"  within the demo's spread ({tol.compliance_points:g} points, "
            f"{tol.worker_seconds_share:.0%}, {tol.ticks_within_one:.0%})",
            "yes" if found.within() else "no",
        ),
    ]


def build_report(output: Path, queues_config_json: str, console: Console) -> tuple[str | None, str]:
    """Run the Spark SLA report on the downloaded archive: (HTML path or None, note)."""
    try:
        from glue_jobs.session import local_spark  # noqa: PLC0415 - Spark only when asked
        from glue_jobs.sla_report import run as sla_report  # noqa: PLC0415
    except ImportError as error:
        return None, f"not built: the Spark job is not importable ({error})"
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
