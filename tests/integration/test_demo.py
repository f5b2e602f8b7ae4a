"""The demo end to end, compressed (quiet, spike, quiet in about 24 s of real time), its worker
fleet of real processes, and its 80-column output."""

from __future__ import annotations

import gzip
import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from queue_autoscale.config import Profile
from queue_autoscale.demo.fleet import FleetTotals, WorkerFleet, WorkerLaunch
from queue_autoscale.demo.live import TickRow, compact_table, full_table, tick_line
from queue_autoscale.demo.options import DemoOptions
from queue_autoscale.demo.run import run_demo
from queue_autoscale.demo.scaling import flaps
from queue_autoscale.demo.summary import (
    NO_MESSAGES,
    ArchiveFacts,
    DemoSummary,
    LeftOnQueue,
    download_archive,
    left_on_queue,
    queue_counts,
    read_archive,
    summarize,
    summary_table,
)
from tests.integration.conftest import REGION, Kit

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("moto")]


def test_demo_scales_with_real_workers_and_loses_no_job_on_scale_in(
    endpoint: Any, tmp_path: Path
) -> None:
    # the demo drives one endpoint for everything, ECS and DynamoDB included
    endpoint.require("ecs", "dynamodb")
    # GIVEN a compressed run: 3 jobs/s, 18 jobs/s in the middle third, fast provisioning
    options = DemoOptions(
        duration_seconds=24.0,
        profile=Profile.BALANCED,
        output=tmp_path / "out",
        interval_seconds=2.0,
        provisioning_seconds=2.0,
        quiet_rate=3.0,
        spike_factor=6.0,
        drain_seconds=15.0,
        report=False,
        endpoint_url=endpoint.url,
        live=False,
    )
    log = tmp_path / "console.txt"
    with log.open("w") as stream:
        console = Console(file=stream, width=80)
        # WHEN the demo runs against the test endpoint
        summary = run_demo(options, console)
    # THEN jobs flowed through worker processes, and every one is accounted for
    assert summary.jobs_produced > 40
    assert summary.jobs_completed > 0
    assert summary.workers_started > 1 and summary.workers_unclean_exits == 0
    assert summary.jobs_interrupted == 0
    assert summary.messages_lost == 0, summary
    assert summary.accounted, summary
    # every event the producer and workers sent was recorded, none rejected
    assert summary.events_accepted >= summary.jobs_produced + 2 * summary.jobs_completed
    assert summary.events_rejected == 0
    assert summary.counters_queued >= summary.jobs_produced  # at-least-once counters
    assert 0.0 < summary.picked_up_within_sla <= 1.0
    # the controller raised desiredCount while the spike was on
    assert summary.desired_max_spike > summary.desired_start, summary
    assert summary.controller_errors == 0
    # the balanced profile's 30 s SLA is above its lead plus interval (2 s + 5 s): a clock tick
    # leaves no jump line, so the record path asks for no jump tick
    assert (summary.jump_ticks, summary.jump_ticks_undecided) == (0, 0)
    # the step: the controller never cancelled an order that had not landed while the backlog
    # grew, and the steady phase before the step never flapped (no scale-out within the demo's
    # flap window of a scale-in)
    assert summary.wrong_way_scale_downs == 0, summary
    assert summary.passed
    rows = [json.loads(line) for line in (tmp_path / "out" / "ticks.jsonl").open()]
    found = flaps([TickRow(**row) for row in rows], summary.flap_window_seconds)
    assert [at for at, phase in found if phase == "quiet"] == [], found
    # while the step's backlog drains, the plan sits at the edge of n and n + 1 workers, and
    # its job time is a median of means over the few dozen jobs done so far: the jobs the drain
    # serves can run longer than that (0.85 s each against an estimate of 0.39 s in one traced
    # run), and the plan may cancel the order n + 1 and place it again. One re-order is common,
    # two were seen once in a CI run beside the 3.13 suite (timing moves which jobs have ended
    # by each tick); more is churn, and a failure prints every tick to show why
    assert len(found) <= 2 and summary.flaps == len(found), _trace(rows)
    assert 0.0 < summary.utilization <= 1.0
    # the archive, the full ticks table and the summary are on disk
    out = tmp_path / "out"
    assert summary.archive_objects > 0
    assert list((out / "archive" / "events").rglob("*.jsonl.gz"))
    assert list((out / "archive" / "decisions").rglob("*.jsonl.gz"))
    assert "reason" in (out / "ticks.txt").read_text()
    written = json.loads((out / "summary.json").read_text())
    assert written["jobs_produced"] == summary.jobs_produced
    assert written["accounted"] is True and written["messages_lost"] == 0
    # a non-TTY log: one line per tick, nothing wider than 80 columns
    text = log.read_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert sum(1 for line in text.splitlines() if "depth" in line) == summary.ticks


def test_scale_in_sigterms_busy_workers_and_their_jobs_finish(
    endpoint: Any, kit: Kit, tmp_path: Path
) -> None:
    # GIVEN three worker processes busy with 2 s jobs
    work = kit.queue("work")
    environment = {
        "AWS_ENDPOINT_URL": endpoint.url,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "WORKER_QUEUE_URL": work,
        "WORKER_JOB": "queue_autoscale.worker.jobs:sleep_job",
        "WORKER_WAIT_SECONDS": "1",
        "WORKER_PREFETCH": "1",
    }
    fleet = WorkerFleet(WorkerLaunch(environment, tmp_path / "w.log", 10.0), 5.0, 10)
    fleet.start_now(3, now=0.0)
    for _ in range(6):
        kit.clients.sqs.send_message(QueueUrl=work, MessageBody='{"work_seconds": 2.0}')
    # real processes: the loop ends when they hold the jobs; the bound is for a loaded machine
    # (at load 9 three workers took over 20 s to import boto3 and poll)
    deadline = time.monotonic() + 90
    while queue_counts(kit.clients.sqs, work) != (0, 6) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert queue_counts(kit.clients.sqs, work) == (
        0,
        6,
    )  # each holds one running and one prefetched
    time.sleep(0.3)
    try:
        # WHEN desiredCount falls to 1: two are stopped at once, a rise waits for provisioning
        fleet.follow(1, now=1.0)
        assert (fleet.running, fleet.stopping) == (1, 2)
        fleet.follow(4, now=2.0)
        fleet.tick(now=6.9)
        assert fleet.running == 1
        fleet.follow(2, now=7.0)  # orders still provisioning are cancelled first
        deadline = time.monotonic() + 60
        while fleet.stopping and time.monotonic() < deadline:
            fleet.tick(now=7.0)
            time.sleep(0.1)
        # THEN the stopped two finished their jobs, returned their prefetched, exited 0
        assert fleet.stopping == 0
        assert fleet.totals.stopped_by_scale_in == 2
        assert fleet.totals.completed == 2 and fleet.totals.returned_on_drain == 2
        assert fleet.totals.interrupted == 0 and fleet.totals.unclean_exits == 0
    finally:
        fleet.stop_all(time.monotonic)
    assert fleet.running == 0 and fleet.totals.unclean_exits == 0
    assert fleet.totals.interrupted == 0


@pytest.mark.parametrize(
    ("phase_at", "expected"),
    [
        pytest.param(0.0, "quiet", id="start"),
        pytest.param(39.9, "quiet", id="end-of-first-third"),
        pytest.param(40.0, "spike", id="spike"),
        pytest.param(80.0, "quiet again", id="last-third"),
    ],
)
def test_phases_by_thirds(phase_at: float, expected: str) -> None:
    options = DemoOptions(duration_seconds=120.0, quiet_rate=2.0, spike_factor=5.0)
    assert options.phase_at(phase_at) == expected
    assert options.rate_at(phase_at) == (10.0 if expected == "spike" else 2.0)


def _row(**changes: Any) -> TickRow:
    values: dict[str, Any] = {
        "elapsed": 142.0,
        "phase": "quiet again",
        "rate": 10.0,
        "visible": 1057,
        "in_flight": 33,
        "oldest_age": 112.5,
        "workers": 12,
        "stopping": 3,
        "pending": 2,
        "desired": 15,
        "target": 15,
        "load_ratio": 0.73,
        "urgency": "ELEVATED",
        "action": "scale_up",
        "reason": "scale up 12 -> 15: drain won",
    }
    return TickRow(**{**values, **changes})


def test_tick_lines_and_the_compact_table_fit_80_columns_the_full_table_has_the_reason() -> None:
    row = _row()
    line = tick_line(row)
    assert len(line) <= 80
    for value in ("142s", "1057", "112.5", "12(-3)", "15", "scale_up"):
        assert value in line
    narrow = Console(record=True, width=80)
    narrow.print(compact_table([row], "header line"))
    text = narrow.export_text()
    assert "header line" in text and "1057" in text and "12 (-3)" in text
    assert max(len(x) for x in text.splitlines()) <= 80
    wide = Console(record=True, width=240)
    wide.print(full_table([row]))
    assert "scale up 12 -> 15: drain won" in wide.export_text()
    # a jump tick shows "jump" where a clock tick shows its phase, in the line and the tables
    jump = _row(jump=True, phase="spike")
    assert tick_line(jump).startswith(" 142s jump ") and len(tick_line(jump)) <= 80
    assert tick_line(_row(phase="spike")).startswith(" 142s spike ")
    narrow = Console(record=True, width=80)
    narrow.print(compact_table([_row(phase="spike"), jump], "header line"))
    cells = [line.split()[:2] for line in narrow.export_text().splitlines()[-2:]]
    assert cells == [["142", "spike"], ["142", "jump"]]


def test_summary_accounts_for_every_job_and_flags_loss_or_interruption() -> None:
    summary = DemoSummary(
        jobs_produced=10,
        jobs_completed=6,
        jobs_dead_lettered=1,
        jobs_left_visible=2,
        jobs_left_in_flight=1,
        messages_returned_on_drain=4,
    )
    assert summary.messages_lost == 0 and summary.accounted
    console = Console(record=True, width=80)
    console.print(summary_table(summary))
    text = console.export_text()
    assert "6 / 0 / 1 / 3" in text
    assert max(len(x) for x in text.splitlines()) <= 80
    assert DemoSummary(jobs_produced=10, jobs_completed=7).messages_lost == 3
    assert not DemoSummary(jobs_produced=10, jobs_completed=7).accounted
    assert not DemoSummary(jobs_produced=1, jobs_completed=1, jobs_interrupted=1).accounted


def test_the_summary_counts_the_jump_ticks_beside_the_clock_ticks() -> None:
    # GIVEN three clock ticks and one jump tick that decided, of two jump-tick messages
    rows = [_row(elapsed=at) for at in (5.0, 10.0, 15.0)] + [_row(elapsed=12.0, jump=True)]
    # WHEN the run is summed up
    summary = summarize(
        produced=0,
        totals=FleetTotals(),
        left=NO_MESSAGES,
        dead_letters=NO_MESSAGES,
        events_dead_lettered=0,
        counters=[],
        archive=ArchiveFacts([], 0, frozenset(), 0),
        rows=rows,
        ingest_counts={"AcceptedEvents": 0.0, "RejectedEvents": 0.0},
        sla_seconds=10.0,
        jump_messages=2,
    )
    # THEN four ticks decided, one of them a jump tick; the other message decided nothing
    assert (summary.ticks, summary.jump_ticks, summary.jump_ticks_undecided) == (4, 1, 1)
    assert json.loads(summary.to_json())["jump_ticks"] == 1
    console = Console(record=True, width=80)
    console.print(summary_table(summary))
    text = console.export_text()
    assert re.search(r"clock / jump \(controller errors\) +│ +3 / 1 \(0\)", text), text
    assert re.search(r"jump ticks left to the clock tick +│ +1 ", text), text


def queues_summary(
    produced: int, completed: frozenset[str], left: LeftOnQueue, dead: LeftOnQueue
) -> DemoSummary:
    """The summary of a run that only produced, completed (once each) and left messages."""
    return summarize(
        produced=produced,
        totals=FleetTotals(completed=len(completed)),
        left=left,
        dead_letters=dead,
        events_dead_lettered=0,
        counters=[],
        archive=ArchiveFacts([], len(completed), completed, len(completed)),
        rows=[],
        ingest_counts={"AcceptedEvents": 0.0, "RejectedEvents": 0.0},
        sla_seconds=30.0,
    )


def test_a_completed_job_sqs_delivered_again_is_neither_left_nor_lost(
    endpoint: Any, kit: Kit
) -> None:
    # GIVEN 13 jobs produced and still visible on the work queue, 3 of which a worker had
    # completed (archived) before its delete came too late, so SQS delivered them again
    work = kit.queue("work")
    ids = [
        kit.clients.sqs.send_message(QueueUrl=work, MessageBody="{}")["MessageId"]
        for _ in range(13)
    ]
    completed = frozenset(ids[:3])
    # WHEN the demo reads what is left by job id and sums up
    left = left_on_queue(kit.clients.sqs, work)
    summary = queues_summary(13, completed, left, NO_MESSAGES)
    # THEN every id was read once, the 3 completed ones are not counted as left, nothing lost
    assert left.visible_job_ids == frozenset(ids)
    assert summary.jobs_left_visible == 10
    assert summary.completed_jobs_left_on_queue == 3
    assert summary.messages_lost == 0 and summary.accounted


def test_a_stopped_workers_receive_and_a_completed_jobs_dead_letter_are_read_by_job_id(
    endpoint: Any, kit: Kit
) -> None:
    # GIVEN 4 jobs on the work queue, 2 of them received by a worker that stopped without
    # deleting (in flight for 2 s), one of which it had completed; and 2 jobs on the DLQ, one
    # of which had completed before its late deliveries ran out of receives
    work, dlq = kit.queue("work"), kit.queue("work-dlq")
    sqs = kit.clients.sqs
    work_ids = [sqs.send_message(QueueUrl=work, MessageBody="{}")["MessageId"] for _ in range(4)]
    dead_ids = [sqs.send_message(QueueUrl=dlq, MessageBody="{}")["MessageId"] for _ in range(2)]
    taken: list[str] = []
    deadline = time.monotonic() + 10.0
    while len(taken) < 2 and time.monotonic() < deadline:
        answer = sqs.receive_message(
            QueueUrl=work, MaxNumberOfMessages=2 - len(taken), VisibilityTimeout=2
        )
        taken += [m["MessageId"] for m in answer.get("Messages", [])]
    assert len(taken) == 2
    completed = frozenset({taken[0], dead_ids[0]})
    # WHEN the demo reads both queues by job id and sums up
    left = left_on_queue(sqs, work, settle_seconds=15.0)
    dead = left_on_queue(sqs, dlq, settle_seconds=15.0)
    summary = queues_summary(6, completed, left, dead)
    # THEN the in-flight pair came back and was read by id; the completed ones are not counted
    # as left or dead-lettered, and nothing is lost (counting the in-flight pair as left as
    # well as completed is the -1 the demo test once showed)
    assert left.in_flight == 0 and left.visible_job_ids == frozenset(work_ids)
    assert summary.jobs_left_visible == 3 and summary.completed_jobs_left_on_queue == 1
    assert summary.jobs_dead_lettered == 1 and summary.completed_jobs_dead_lettered == 1
    assert summary.messages_lost == 0 and summary.accounted


def test_the_archive_download_replaces_a_previous_runs_objects(
    endpoint: Any, kit: Kit, tmp_path: Path
) -> None:
    # GIVEN a demo output folder still holding a previous run's archived events (a second
    # `make demo` in the same clone) and this run's bucket with one completed job
    folder = tmp_path / "archive"
    stale = folder / "events" / "old.jsonl.gz"
    stale.parent.mkdir(parents=True)
    with gzip.open(stale, "wt", encoding="utf-8") as stream:
        stream.write(json.dumps({"event_id": "e0", "job_id": "old", "type": "completed"}) + "\n")
    bucket = kit.bucket()
    fresh = json.dumps({"event_id": "e1", "job_id": "new", "type": "completed"}) + "\n"
    kit.clients.s3.put_object(
        Bucket=bucket, Key="events/new.jsonl.gz", Body=gzip.compress(fresh.encode())
    )
    # WHEN the demo downloads the archive and reads it
    count = download_archive(kit.clients.s3, bucket, folder)
    facts = read_archive(folder / "events")
    # THEN only this run's object is there and read: one job completed, not two
    assert count == 1
    assert not stale.exists()
    assert facts.completed_ids == frozenset({"new"}) and facts.completions == 1


def _trace(rows: list[dict[str, Any]]) -> str:
    """The ticks as lines a failure can be read from: time s, phase, waiting, in flight,
    running, pending, desired, the start of the decision's reason and its service rate."""
    lines = []
    for row in rows:
        reason = str(row["reason"])
        rate = re.search(r"[\d.]+ jobs/s per worker", reason)
        lines.append(
            f"{row['elapsed']:5.1f} {row['phase']:<11} waiting {row['visible']} in flight "
            f"{row['in_flight']} running {row['workers']} pending {row['pending']} -> "
            f"{row['desired']}: {reason[:80]}; {rate.group(0) if rate else ''}"
        )
    return "\n".join(lines)
