"""Daily incremental runs give, table by table and row by row, what a full rebuild gives."""

from __future__ import annotations

import gzip
import json
import random
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from glue_jobs import sla_report
from glue_jobs.state import RunState

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

DAY0 = datetime(2026, 11, 2, tzinfo=UTC).timestamp()  # epoch seconds, Monday 00:00 UTC
DAYS = 3
CONFIG = json.dumps({"queues": [{"queue": "emails", "sla_seconds": 20}, {"queue": "reports"}]})
TABLES = (
    "sla_hourly",
    "sla_daily",
    "cost_hourly",
    "cost_daily",
    "backlog",
    "backlog_carry",
    "rejected_events",
)


def raw_day(epoch_s: float) -> str:
    return datetime.fromtimestamp(epoch_s, UTC).strftime("%Y-%m-%d")


def build_archive(root: Path) -> dict[str, dict[Path, list[str]]]:
    """Three days of two queues as the archive holds them: each event in the raw folder of
    the moment it was archived (up to 90 s after it happened, so events cross midnight),
    1 in 20 batches redelivered, jobs waiting across midnight, a job never started, a bad
    line, and one decision tick a minute. Returns {raw day: {path: lines}}."""
    generator = random.Random(7)
    files: dict[str, dict[Path, list[str]]] = {}

    def archive(kind: str, archived_at: float, name: str, line: str) -> None:
        day = raw_day(archived_at)
        folder = root / kind / f"dt={day}"
        if kind == "events":
            folder = folder / f"hour={datetime.fromtimestamp(archived_at, UTC):%H}"
        files.setdefault(day, {}).setdefault(folder / name, []).append(line)

    for queue, per_day in (("emails", 90), ("reports", 40)):
        for index in range(per_day * DAYS):
            queued = DAY0 + generator.uniform(0, DAYS * 86_400 - 3_600)
            if index % 25 == 0:  # late enough to cross midnight now and then
                queued = DAY0 + 86_400 * generator.randint(1, DAYS - 1) - generator.uniform(1, 60)
            wait = generator.choice([0.5, 2.0, 4.0, 35.0, 400.0])
            started, duration = queued + wait, generator.uniform(0.5, 30.0)
            kinds = [("queued", queued)]
            if index != 7:  # job 7 is never started
                kinds += [("started", started), ("completed", started + duration)]
            for kind, at in kinds:
                body = {
                    "type": kind,
                    "queue": queue,
                    "job_id": f"{queue}-{index}",
                    "at": int(at * 1000),
                    "duration_ms": int(duration * 1000) if kind == "completed" else None,
                    "attempt": 1,
                    "event_id": f"{queue}-{index}-{kind}",
                }
                archived = at + generator.uniform(0.1, 90.0)
                name = f"b{int(archived) // 1800}.jsonl.gz"
                archive("events", archived, name, json.dumps(body))
                if index % 20 == 0:
                    archive("events", archived + 5, "redelivered.jsonl.gz", json.dumps(body))
    archive("events", DAY0 + 100, "bad.jsonl.gz", "{not json")
    for queue, workers in (("emails", 3), ("reports", 1)):
        for tick in range(0, DAYS * 1440, 1):
            at = DAY0 + 60 * tick + 5
            running = workers + (tick // 120) % 2
            line = json.dumps(
                {
                    "queue": queue,
                    "at": at,
                    "current": running,
                    "target": running,
                    "action": "hold",
                    "running": running,
                    "arrival_rate": 0.01,
                    "load_ratio": 0.3,
                }
            )
            archive("decisions", at, f"{queue}.jsonl.gz", line)
    return files


def write(files: dict[Path, list[str]]) -> None:
    for path, lines in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(path, "at", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")


def table_rows(spark, out: Path, name: str) -> list[tuple]:
    frame = spark.read.parquet(str(out / name))
    columns = sorted(frame.columns)
    return sorted(tuple(repr(value) for value in row) for row in frame.select(*columns).collect())


def run(archive: Path, out: Path, **options) -> None:
    sla_report.run(str(archive), str(out), CONFIG, 60, **options)


@pytest.fixture(scope="module")
def days(spark, tmp_path_factory) -> tuple[Path, Path, Path]:
    """(archive, out of day-by-day runs, out of one full rebuild) after three daily runs."""
    base = tmp_path_factory.mktemp("incremental")
    archive, daily, full = base / "archive", base / "daily", base / "full"
    by_day = build_archive(archive)
    for day in sorted(by_day):
        write(by_day[day])
        run(archive, daily)
    run(archive, full, full_rebuild=True)
    return archive, daily, full


@pytest.mark.parametrize("table", TABLES)
def test_daily_runs_equal_a_full_rebuild_row_for_row(spark, days, table) -> None:
    _, daily, full = days
    got, want = table_rows(spark, daily, table), table_rows(spark, full, table)
    assert len(want) > 0
    assert got == want


def test_the_state_records_what_was_read(spark, days) -> None:
    _, daily, _ = days
    state = RunState.model_validate_json((daily / "_state.json").read_text(encoding="utf-8"))
    assert sorted(state.raw_events) == ["2026-11-02", "2026-11-03", "2026-11-04"]
    assert sum(found.rejected_lines for found in state.raw_events.values()) == 1
    assert sum(state.event_days.values()) == len(
        spark.read.parquet(str(daily / "compacted_events")).collect()
    )


def test_a_run_with_nothing_new_changes_nothing(spark, days) -> None:
    archive, daily, _ = days
    before = {name: table_rows(spark, daily, name) for name in TABLES}
    run(archive, daily)
    assert {name: table_rows(spark, daily, name) for name in TABLES} == before


def test_a_late_object_in_an_open_day_is_read_and_matches_a_rebuild(spark, days, tmp_path):
    archive, daily, _ = days
    # GIVEN a copy of the archive and its outputs, and a late object for the day before last
    copy, out = tmp_path / "archive", tmp_path / "daily"
    shutil.copytree(archive, copy)
    shutil.copytree(daily, out)
    at = DAY0 + 86_400 + 43_200  # noon of the second day
    late = [
        json.dumps(
            {
                "type": kind,
                "queue": "emails",
                "job_id": "late-1",
                "at": int(ms),
                "duration_ms": 1000 if kind == "completed" else None,
                "attempt": 1,
                "event_id": f"late-1-{kind}",
            }
        )
        for kind, ms in (
            ("queued", at * 1000),
            ("started", at * 1000 + 50_000),
            ("completed", at * 1000 + 51_000),
        )
    ]
    write({copy / "events" / "dt=2026-11-03" / "hour=23" / "late.jsonl.gz": late})
    # WHEN the next run sees it
    run(copy, out)
    run(copy, tmp_path / "full", full_rebuild=True)
    # THEN the late job is in the second day's table, and every table equals a rebuild
    for table in TABLES:
        assert table_rows(spark, out, table) == table_rows(spark, tmp_path / "full", table)
    daily_rows = spark.read.parquet(str(out / "sla_daily")).where("queue = 'emails'").collect()
    before = spark.read.parquet(str(daily / "sla_daily")).where("queue = 'emails'").collect()
    day = datetime(2026, 11, 3)
    late_jobs = {row.period_start: row.jobs for row in daily_rows}[day]
    assert late_jobs == {row.period_start: row.jobs for row in before}[day] + 1
