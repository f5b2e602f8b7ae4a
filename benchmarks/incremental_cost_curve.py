"""The cost curve of the daily SLA run: does a day cost the same on a 30-day archive as on a
1-day archive?

Writes a raw archive as record_events does (gzipped JSON lines under
`events/dt=YYYY-MM-DD/hour=HH/`, each event in the folder of the moment it was archived, up
to a minute after it happened, so some cross midnight; 1% delivered twice) plus one
decision tick a minute per queue, one simulated day at a time, and times `sla_report.run`
(local[2]):

- day 1 on an empty output (the first run), day 2 on a 1-day archive;
- days 3..N in one catch-up run (untimed: it only builds the history);
- day N+1 on an N-day archive;
- a full rebuild of all N+1 days into a second output.

Every table of the incremental output is then compared, row for row, with the rebuild.

    .venv/bin/python benchmarks/incremental_cost_curve.py [--days 30] [--jobs-per-day 1000000]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "functions"))
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import header, write  # noqa: E402
from sla_report_vs_duckdb import QUEUES, SLA_SECONDS, START_MS, events_table  # noqa: E402

DAY_MS = 86_400_000
TABLES = (
    "sla_hourly",
    "sla_daily",
    "cost_hourly",
    "cost_daily",
    "backlog",
    "backlog_carry",
    "rejected_events",
    "compacted_events",
)
CONFIG = json.dumps({"queues": [{"queue": q, "sla_seconds": s} for q, s in SLA_SECONDS.items()]})


def write_day(archive: Path, day: int, jobs: int) -> int:
    """Archive day `day` (0-based): its events (raw JSON lines, gzipped, by archive time)
    and its decision ticks; return the events written."""
    import duckdb

    start = START_MS + day * DAY_MS
    table = events_table(jobs, seed=100 + day, start_ms=start, days=1, first_job=day * jobs)
    rng = np.random.default_rng(day)
    delay = rng.integers(100, 60_000, table.num_rows)
    table = table.append_column("archived", pa.array(table["at"].to_numpy() + delay))
    ticks = pa.table(
        {
            "queue": np.repeat([f"q{index}" for index in range(QUEUES)], 1440),
            "at": np.tile((start + 5_000 + np.arange(1440) * 60_000) / 1000.0, QUEUES),
            "running": np.tile(2 + (np.arange(1440) // 120) % 3, QUEUES),
        }
    )
    connection = duckdb.connect()
    connection.execute("SET TimeZone = 'UTC'")
    connection.register("day_events", table)
    connection.register("day_ticks", ticks)
    # One JSON line per event, joined per archive folder, gzipped at level 1 in threads:
    # what record_events writes, at a fraction of DuckDB's per-folder gzip COPY.
    folders = connection.execute(
        """
        SELECT strftime(make_timestamp(archived * 1000), '%Y-%m-%d') AS dt,
               strftime(make_timestamp(archived * 1000), '%H') AS hour,
               string_agg(to_json({'type': type, 'queue': queue, 'job_id': job_id, 'at': "at",
                                   'duration_ms': duration_ms, 'attempt': attempt,
                                   'event_id': event_id}), chr(10)) || chr(10) AS lines
        FROM day_events GROUP BY ALL
        """
    ).fetchall()

    def write_folder(folder: tuple[str, str, str]) -> None:
        dt, hour, lines = folder
        path = archive / "events" / f"dt={dt}" / f"hour={hour}" / f"day{day}.jsonl.gz"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(gzip.compress(lines.encode(), compresslevel=1))

    with ThreadPoolExecutor(2) as pool:
        list(pool.map(write_folder, folders))
    connection.execute(
        """
        CREATE TEMP TABLE ticks AS
        SELECT queue, "at", running AS current, running AS target, 'hold' AS action,
               running, 0.5 AS arrival_rate, 0.5 AS load_ratio,
               strftime(make_timestamp(("at" * 1000000)::BIGINT), '%Y-%m-%d') AS dt
        FROM day_ticks
        """
    )
    # DuckDB's JSON COPY has no PARTITION_BY: one COPY per decisions folder (a day's ticks).
    for (dt,) in connection.execute("SELECT DISTINCT dt FROM ticks").fetchall():
        folder = archive / "decisions" / f"dt={dt}"
        folder.mkdir(parents=True, exist_ok=True)
        connection.execute(
            f"""COPY (SELECT * EXCLUDE (dt) FROM ticks WHERE dt = '{dt}')
            TO '{folder / f"day{day}.jsonl.gz"}' (FORMAT JSON, COMPRESSION GZIP)"""
        )
    connection.close()
    return table.num_rows


PHASES = {
    "reading the archive": "list + compact",
    "SLA tables": "tables",
    "backlog and cost tables": "tables",
    "collecting the report's data": "report",
    "rendering the report": "report",
}


def timed_run(spark, archive: Path, out: Path, **options) -> tuple[float, dict[str, float]]:
    """Seconds of one `sla_report.run`, and per phase (list + compact, tables, report) from
    the steps it reports as it goes."""
    from glue_jobs import sla_report

    phases: dict[str, float] = {}
    marks: list[tuple[str, float]] = []

    def progress(step: str) -> None:
        marks.append((PHASES[step], time.perf_counter()))

    started = time.perf_counter()
    sla_report.run(str(archive), str(out), CONFIG, 60, spark, progress, **options)
    ended = time.perf_counter()
    for (phase, at), (_, until) in zip(marks, [*marks[1:], ("", ended)], strict=True):
        phases[phase] = phases.get(phase, 0.0) + until - at
    print(f"  {ended - started:.1f} s: {phases}", flush=True)
    return ended - started, phases


def same_rows(spark, left: Path, right: Path, table: str) -> tuple[bool, int]:
    """(equal, rows): the two tables hold the same rows (every column, any order)."""
    if not any((left / table).glob("dt=*")) and not any((right / table).glob("dt=*")):
        return True, 0  # neither run wrote a row
    from pyspark.sql import functions as sf

    a = spark.read.parquet(str(left / table))
    b = spark.read.parquet(str(right / table)).select(*a.columns)
    rows = a.count()
    # Equal multisets of rows: every distinct row occurs as often on both sides. One
    # aggregation over both tables (two exceptAll would shuffle both tables twice).
    both = a.withColumn("_side", sf.lit(1)).unionByName(b.withColumn("_side", sf.lit(-1)))
    differ = both.groupBy(*a.columns).agg(sf.sum("_side").alias("_n")).where("_n != 0")
    return rows == b.count() and differ.isEmpty(), rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=30, help="days of history before the last")
    parser.add_argument("--jobs-per-day", type=int, default=1_000_000)
    parser.add_argument("--out", default="incremental_cost_curve.md")
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.days < 2:
        parser.error("--days must be >= 2")

    import pyspark

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from glue_jobs.session import local_spark

    load_before = " ".join(f"{value:.1f}" for value in os.getloadavg())
    spark = local_spark("incremental-benchmark", driver_memory="6g", shuffle_partitions=8)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="incremental-bench-"))
    archive, daily, full = workdir / "archive", workdir / "daily", workdir / "full"
    times: dict[str, float] = {}
    phases: dict[str, dict[str, float]] = {}
    events = 0
    try:
        events += write_day(archive, 0, args.jobs_per_day)
        name = "day 1 (first run, empty output)"
        times[name], phases[name] = timed_run(spark, archive, daily)
        events += write_day(archive, 1, args.jobs_per_day)
        name = "day 2 on a 1-day archive"
        times[name], phases[name] = timed_run(spark, archive, daily)
        print(times, flush=True)
        for day in range(2, args.days):
            events += write_day(archive, day, args.jobs_per_day)
        catch_up, _ = timed_run(spark, archive, daily)
        print(f"catch-up run over days 3..{args.days}: {catch_up:.1f} s", flush=True)
        events += write_day(archive, args.days, args.jobs_per_day)
        name = f"day {args.days + 1} on a {args.days}-day archive"
        times[name], phases[name] = timed_run(spark, archive, daily)
        name = f"full rebuild of {args.days + 1} days"
        times[name], phases[name] = timed_run(spark, archive, full, full_rebuild=True)
        print(times, flush=True)
        checks = {table: same_rows(spark, daily, full, table) for table in TABLES}
    finally:
        spark.stop()
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)

    first, second, last, rebuild = times.values()
    ratio = last / second
    lines = [
        header("Incremental daily SLA run: the cost curve over the archive's age", ("pyspark",)),
        f"- also: pyspark {pyspark.__version__} local[2] (driver 6 GiB, 8 shuffle partitions)",
        f"- load average before / after the run: {load_before} / "
        + " ".join(f"{value:.1f}" for value in os.getloadavg())
        + " (1/5/15-minute; the machine is shared with other developers' work)",
        "",
        f"{args.days + 1} simulated days of {args.jobs_per_day:,} jobs a day over {QUEUES} "
        f"queues ({events:,} archived events in all, as gzipped JSON lines by archive time, "
        "1% delivered twice, some crossing midnight) and a decision tick a minute per queue. "
        "Each timed run is a whole `sla_report.run`: list and compact what is new, rebuild "
        "the changed days of every table, save the state, render the report (last 31 days). "
        f"Days 3..{args.days} were added in one untimed catch-up run ({catch_up:.1f} s).",
        "",
        "| run | seconds | / day 2 | list + compact, s | tables, s | report, s |",
        "|---|---:|---:|---:|---:|---:|",
        *[
            f"| {name} | {seconds:.1f} | {seconds / second:.2f}x | "
            + " | ".join(
                f"{phases[name].get(phase, 0.0):.1f}"
                for phase in ("list + compact", "tables", "report")
            )
            + " |"
            for name, seconds in times.items()
        ],
        "",
        "Phases from the steps `sla_report.run` reports: *list + compact* lists the raw "
        "folders and compacts the new ones; *tables* rebuilds the changed days of every table; "
        "*report* reads the last 31 days of the tables and renders `report.html` (a window "
        "that grows with the archive up to 31 days, by design).",
        "",
        f"Goal: day {args.days + 1} on a {args.days}-day archive within 1.2x of the same run on "
        f"a 1-day archive: {ratio:.2f}x, {'met' if ratio <= 1.2 else 'not met'}. "
        f"(Against the very first run, which compacts and builds one day only: "
        f"{last / first:.2f}x.) The full rebuild takes {rebuild / last:.1f}x the daily run.",
        "",
        "Every table of the day-by-day output against the full rebuild, row for row:",
        "",
        "| table | rows | equal |",
        "|---|---:|---|",
        *[
            f"| {name} | {rows:,} | {'yes' if ok else 'NO'} |"
            for name, (ok, rows) in checks.items()
        ],
    ]
    write(args.out, "\n".join(lines))
    return 0 if all(ok for ok, _ in checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
