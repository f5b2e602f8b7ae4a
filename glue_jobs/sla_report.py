"""SLA report job: Glue job script, spark-submit script and an in-process `run()`.

Options (Glue DefaultArguments / command line): --input_uri (archive root holding events/ and
decisions/), --output_uri, the queue config (queues not in it get a 30 s SLA) as one of
--config_parameter (the stack's config store, an SSM parameter name: what the Glue job is
given), --config (a local JSON file) or --queues_config (the JSON text), --interval_seconds
(backlog interval, default 60).

Writes Parquet tables under <output_uri>/ (sla_hourly, sla_daily, cost_hourly, cost_daily,
backlog, rejected_events), the self-contained <output_uri>/report.html and, last, the
manifest of every file it has there (glue_jobs/layout.py).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, cast

import pandas as pd
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as sf

from glue_jobs.compact import (
    DEFAULT_LATE_DAYS,
    compact,
    list_changes,
    load_state,
    read_compacted,
    save_state,
)
from glue_jobs.io import (
    ArchiveError,
    join_uri,
    list_day_folders,
    read_days,
    read_decisions,
    relative_files,
    write_days,
    write_text,
)
from glue_jobs.layout import (
    CARRY,
    COMPACTED,
    MANIFEST_FILE,
    OUTPUTS,
    REJECTED,
    REPORT_FILE,
    is_output,
    manifest_json,
)
from glue_jobs.options import (
    CONFIG_OPTIONS,
    as_bool,
    as_int,
    queue_config_document,
    resolve_options,
)
from glue_jobs.report import detail_period, render_report
from glue_jobs.session import get_spark
from glue_jobs.state import RunState, day_of, day_start_ms, first_day_to_redo, shift_day
from glue_jobs.transforms.backlog import MICROJOBS_PER_JOB, interval_inputs, reconstruct_backlog
from glue_jobs.transforms.cost import cost_metrics
from glue_jobs.transforms.events import pair_attempts
from glue_jobs.transforms.periods import HOUR_MS, PERIOD_SECONDS
from glue_jobs.transforms.sla import DEFAULT_SLA_SECONDS, sla_metrics

DEFAULT_PAIRING_HOURS = 6
DEFAULT_REPORT_DAYS = 31
REQUIRED = ("input_uri", "output_uri")
OPTIONAL: dict[str, str | None] = {
    **dict.fromkeys(CONFIG_OPTIONS),
    "interval_seconds": "60",
    "pairing_hours": str(DEFAULT_PAIRING_HOURS),
    "late_days": str(DEFAULT_LATE_DAYS),
    "full_rebuild": "false",
    "report_days": str(DEFAULT_REPORT_DAYS),
}
CHART_POINTS = 2_000
"""The backlog chart keeps at most about this many points per queue (max per bucket)."""


def queue_parameters(
    queues_config_json: str | None, source: str = "--queues_config"
) -> tuple[dict[str, float], dict[str, int], dict[str, float]]:
    """({queue: sla_seconds}, {queue: worker_concurrency}, {queue: percentile}) from the
    project's JSON config (`source` names it in errors)."""
    if not queues_config_json:
        return {}, {}, {}
    from queue_autoscale.config import parse_json  # noqa: PLC0415 - pydantic only when needed

    queues = parse_json(queues_config_json, source)
    return (
        {queue.queue: queue.sla_seconds for queue in queues},
        {queue.queue: queue.worker_concurrency for queue in queues},
        {queue.queue: queue.percentile for queue in queues},
    )


Progress = Callable[[str], None]
"""Called with a short description as each step of `run` starts (the CLI's progress bar)."""
STEPS = (
    "reading the archive",
    "SLA tables",
    "backlog and cost tables",
    "collecting the report's data",
    "rendering the report",
)
"""The steps `run` reports to its `progress` callback, in order."""


def to_pandas(df: DataFrame) -> pd.DataFrame:
    """Collect a small DataFrame to pandas on the driver."""
    return cast(pd.DataFrame, df.toPandas())


def chart_backlog(backlog: DataFrame, interval_seconds: int) -> pd.DataFrame:
    """Backlog and workers per queue, bucketed (max backlog, mean workers) to ~CHART_POINTS."""
    span = backlog.groupBy("queue").agg(
        (sf.unix_seconds(sf.max("stamp")) - sf.unix_seconds(sf.min("stamp"))).alias("span")
    )
    longest = span.agg(sf.max("span")).first()
    longest_s = int(longest[0] or 0) if longest is not None else 0
    bucket = max(interval_seconds, -(-longest_s // CHART_POINTS))
    seconds = sf.unix_seconds(sf.col("stamp"))
    bucketed = (
        backlog.withColumn("bucket", seconds - sf.pmod(seconds, sf.lit(bucket)))
        .groupBy("queue", "bucket")
        .agg(sf.max("backlog").alias("backlog"), sf.avg("workers").alias("workers"))
        .select("queue", sf.timestamp_seconds("bucket").alias("stamp"), "backlog", "workers")
    )
    return to_pandas(bucketed)


@dataclass(frozen=True)
class Settings:
    """What the tables depend on besides the archive; a change forces a full rebuild."""

    interval_seconds: int = 60
    pairing_hours: int = DEFAULT_PAIRING_HOURS
    sla_seconds: Mapping[str, float] = field(default_factory=dict)
    concurrency: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.interval_seconds <= 0 or PERIOD_SECONDS["day"] % self.interval_seconds:
            raise ValueError(
                f"interval_seconds must be > 0 and divide a day (86,400 s), "
                f"got {self.interval_seconds!r}"
            )
        if not 1 <= self.pairing_hours <= 24:
            raise ValueError(f"pairing_hours must be 1..24, got {self.pairing_hours!r}")

    @property
    def pairing_ms(self) -> int:
        """The pairing window in milliseconds."""
        return self.pairing_hours * HOUR_MS

    def fingerprint(self) -> dict[str, str]:
        """The settings as the state file records them."""
        return {
            "interval_seconds": str(self.interval_seconds),
            "pairing_hours": str(self.pairing_hours),
            "sla_seconds": json.dumps(dict(sorted(self.sla_seconds.items()))),
            "concurrency": json.dumps(dict(sorted(self.concurrency.items()))),
            # outputs of a job that carried the backlog as a double have no such key: rebuilt
            "backlog_microjobs_per_job": str(MICROJOBS_PER_JOB),
        }


def with_day(df: DataFrame, stamp: str) -> DataFrame:
    """Add `dt` ('YYYY-MM-DD', UTC) of the timestamp column `stamp`."""
    return df.withColumn("dt", sf.date_format(sf.col(stamp), "yyyy-MM-dd"))


def carried_backlog(spark: SparkSession, output_uri: str, first_day: str) -> DataFrame | None:
    """Per queue, the last backlog row (queue, stamp, backlog_microjobs, workers) of the week
    before `first_day`, from the `backlog_carry` table; None when there is none."""
    uri = join_uri(output_uri, CARRY)
    week = {shift_day(first_day, -days) for days in range(1, 8)}
    days = [folder.removeprefix("dt=") for folder in list_day_folders(spark, uri)]
    carry = read_days(spark, uri, [day for day in days if day in week])
    if carry is None:
        return None
    latest = Window.partitionBy("queue").orderBy(sf.desc("stamp"))
    return (
        carry.withColumn("_rank", sf.row_number().over(latest))
        .where(sf.col("_rank") == 1)
        .select("queue", "stamp", "backlog_microjobs", "workers")
    )


def backlog_carry(backlog: DataFrame) -> DataFrame:
    """The `backlog_carry` rows: per queue and `dt`, the backlog table's last row (the exact
    `backlog_microjobs` is what the next run starts from; `backlog` is for reading)."""
    last = Window.partitionBy("queue", "dt").orderBy(sf.desc("stamp"))
    return (
        backlog.withColumn("_rank", sf.row_number().over(last))
        .where(sf.col("_rank") == 1)
        .select("queue", "stamp", "backlog", "backlog_microjobs", "workers", "dt")
    )


def write_backlog_carry(
    spark: SparkSession, output_uri: str, first_day: str, replace_all: bool
) -> None:
    """Write `backlog_carry` for the days from `first_day` on, from the backlog table just
    written (reading it back is cheaper than reconstructing the backlog a second time)."""
    uri = join_uri(output_uri, "backlog")
    days = [folder.removeprefix("dt=") for folder in list_day_folders(spark, uri)]
    backlog = read_days(spark, uri, [day for day in days if day >= first_day])
    if backlog is not None:
        write_days(backlog_carry(backlog), join_uri(output_uri, CARRY), replace_all)


def build_tables(
    spark: SparkSession,
    input_uri: str,
    output_uri: str,
    settings: Settings,
    first_day: str,
    event_days: Sequence[str],
    data_end_ms: int | None,
    replace_all: bool,
) -> tuple[dict[str, DataFrame], DataFrame]:
    """Every output table's rows for the days from `first_day` on (each with its `dt`), and
    the persisted attempts they are built from (unpersist it once the tables are written).

    Reads the compacted events from `pairing` x 2 before `first_day` (so every attempt begun
    from `pairing` before it is whole), keeps the attempts begun from there, and keeps only
    output rows of `first_day` and later. With `replace_all`, it reads everything."""
    start_ms = day_start_ms(first_day)
    pairing = settings.pairing_ms
    read_from = None if replace_all else start_ms - 2 * pairing
    days = [day for day in event_days if replace_all or day >= day_of(start_ms - 2 * pairing)]
    events = read_compacted(spark, output_uri, days, read_from)
    if events is None:
        raise ArchiveError(f"no compacted events under {join_uri(output_uri, COMPACTED)}")
    attempts = pair_attempts(events)
    if not replace_all:
        attempts = attempts.where(sf.col("first_at_ms") >= start_ms - pairing)
    attempts = attempts.persist(StorageLevel.MEMORY_AND_DISK)
    decisions_root = join_uri(input_uri, "decisions")
    decision_days = [
        folder.removeprefix("dt=") for folder in list_day_folders(spark, decisions_root)
    ]
    decisions = read_decisions(
        spark, input_uri, [day for day in decision_days if replace_all or day >= first_day]
    )
    seed = None if replace_all else carried_backlog(spark, output_uri, first_day)
    first = sf.timestamp_seconds(sf.lit(start_ms // 1000))

    def from_first(df: DataFrame, stamp: str = "period_start") -> DataFrame:
        return with_day(df.where(sf.col(stamp) >= first), stamp)

    sla = dict(settings.sla_seconds)
    tables: dict[str, DataFrame] = {
        f"sla_{name}": from_first(
            sla_metrics(attempts, period, sla, DEFAULT_SLA_SECONDS, data_end_ms or 0, pairing)
        )
        for name, period in (("hourly", "hour"), ("daily", "day"))
    }
    inputs = interval_inputs(
        attempts,
        decisions,
        settings.interval_seconds,
        settings.concurrency,
        initial=seed,
    ).where(sf.col("stamp") > first)
    backlog = reconstruct_backlog(inputs, settings.interval_seconds, initial=seed)
    # a row belongs to the day its interval starts in
    interval_start = sf.timestamp_seconds(
        sf.unix_seconds(sf.col("stamp")) - sf.lit(settings.interval_seconds)
    )
    backlog = backlog.withColumn("dt", sf.date_format(interval_start, "yyyy-MM-dd"))
    tables["backlog"] = backlog
    if decisions is not None:
        for name, period in (("hourly", "hour"), ("daily", "day")):
            tables[f"cost_{name}"] = from_first(cost_metrics(decisions, attempts, period))
    return tables, attempts


def run(  # noqa: PLR0913 - the Glue job's arguments, one each
    input_uri: str,
    output_uri: str,
    queues_config_json: str | None = None,
    interval_seconds: int = 60,
    spark: SparkSession | None = None,
    progress: Progress | None = None,
    *,
    config_source: str = "--queues_config",
    pairing_hours: int = DEFAULT_PAIRING_HOURS,
    late_days: int = DEFAULT_LATE_DAYS,
    full_rebuild: bool = False,
    report_days: int = DEFAULT_REPORT_DAYS,
) -> str:
    """Compact what is new in the archive at `input_uri`, rebuild the output days it
    changes, record the state, and render the report over the last `report_days` days;
    return the report's URI (<output_uri>/report.html). See docs/spark.md. `progress` is
    told each of STEPS as it starts."""
    step = progress or (lambda _name: None)
    sla_seconds, concurrency, percentiles = queue_parameters(queues_config_json, config_source)
    settings = Settings(interval_seconds, pairing_hours, sla_seconds, concurrency)
    if report_days < 1:
        raise ValueError(f"report_days must be >= 1, got {report_days!r}")
    spark = spark or get_spark("queue-autoscale-sla-report")
    previous = load_state(spark, output_uri, full_rebuild)
    if previous is not None and previous.settings != settings.fingerprint():
        print("settings differ from the last run's: rebuilding every table")
        previous = None
    decisions_root = join_uri(input_uri, "decisions")
    known_decisions = {} if previous is None else dict(previous.raw_decisions)
    step(STEPS[0])
    decision_changes = list_changes(spark, decisions_root, known_decisions, late_days)
    compaction = compact(spark, input_uri, output_uri, previous, late_days)
    if compaction.data_end_ms is None:
        raise ArchiveError(f"cannot read events under {join_uri(input_uri, 'events')}: none")
    replace_all = previous is None
    if replace_all:
        first_day = min(compaction.event_days, default=None)
    else:
        first_day = first_day_to_redo(
            compaction.touched_hours,
            sorted(decision_changes),
            previous.data_end_ms if previous is not None else None,
            settings.pairing_ms,
        )
    if first_day is not None:
        tables, attempts = build_tables(
            spark,
            input_uri,
            output_uri,
            settings,
            first_day,
            sorted(compaction.event_days),
            compaction.data_end_ms,
            replace_all,
        )
        step(STEPS[1])
        try:
            for name, table in tables.items():
                if name == "backlog":
                    step(STEPS[2])
                write_days(table, join_uri(output_uri, name), replace_all)
            write_backlog_carry(spark, output_uri, first_day, replace_all)
        finally:
            # a long-lived session (the demo, a benchmark's run after run) keeps no old cache
            attempts.unpersist()
        how = "every table replaced" if replace_all else "incremental"
        print(f"rebuilt the days from {first_day} on ({how})")
    state = RunState(
        settings=settings.fingerprint(),
        raw_events=compaction.raw_events,
        raw_decisions={**known_decisions, **decision_changes},
        event_days=compaction.event_days,
        data_end_ms=compaction.data_end_ms,
    )
    save_state(spark, output_uri, state)
    step(STEPS[3])
    report = render(spark, input_uri, output_uri, settings, state, report_days, percentiles, step)
    write_manifest(spark, output_uri)
    return report


def render(
    spark: SparkSession,
    input_uri: str,
    output_uri: str,
    settings: Settings,
    state: RunState,
    report_days: int,
    percentiles: Mapping[str, float] | None = None,
    step: Progress | None = None,
) -> str:
    """Read the last `report_days` days of the tables and write report.html; return its URI.
    A report of a few hours charts by the minute, from the compacted events of those days."""
    last_day = day_of(state.data_end_ms or 0)
    wanted = {shift_day(last_day, -back) for back in range(report_days)}

    def load(name: str) -> DataFrame | None:
        uri = join_uri(output_uri, name)
        days = [folder.removeprefix("dt=") for folder in list_day_folders(spark, uri)]
        return read_days(spark, uri, [day for day in days if day in wanted])

    def frame(name: str, *order: str) -> pd.DataFrame | None:
        table = load(name)
        return None if table is None else to_pandas(table.drop("dt").orderBy(*order))

    empty = pd.DataFrame(columns=["queue", "period_start", "sla_share"])
    daily = frame("sla_daily", "queue", "period_start")
    hourly = frame("sla_hourly", "queue", "period_start")
    backlog = load("backlog")
    rejected = load(REJECTED)
    rejected_counts = (
        pd.DataFrame(columns=["reason", "count"])
        if rejected is None
        else to_pandas(rejected.groupBy("reason").count().orderBy(sf.desc("count")))
    )
    daily = empty if daily is None else daily
    hourly = empty if hourly is None else hourly
    detail = hourly
    if len(hourly) and detail_period(hourly) == "minute":  # a short run: charts by the minute
        events = read_compacted(spark, output_uri, sorted(set(state.event_days) & wanted))
        if events is not None:
            minute = sla_metrics(
                pair_attempts(events),
                "minute",
                dict(settings.sla_seconds),
                DEFAULT_SLA_SECONDS,
                state.data_end_ms,
                settings.pairing_ms,
            )
            detail = to_pandas(minute.orderBy("queue", "period_start"))
    accepted = sum(found.valid_lines for found in state.raw_events.values())
    kept = sum(state.event_days.values())
    summary = {
        "archive": input_uri,
        "generated at (UTC)": datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S"),
        "days shown": f"{min(wanted)} to {last_day}",
        "events accepted": accepted,
        "duplicates dropped (same event_id)": accepted - kept,
        "lines rejected": sum(found.rejected_lines for found in state.raw_events.values()),
        "queues": ", ".join(sorted(daily["queue"].unique())) if len(daily) else "-",
        "backlog interval, s": settings.interval_seconds,
        "default SLA, s (queues not in the config)": DEFAULT_SLA_SECONDS,
    }
    backlog_points = (
        pd.DataFrame(columns=["queue", "stamp", "backlog", "workers"])
        if backlog is None
        else chart_backlog(backlog, settings.interval_seconds)
    )
    cost_daily = frame("cost_daily", "queue", "period_start")
    (step or (lambda _name: None))(STEPS[4])
    html = render_report(
        "Queue SLA report",
        summary,
        daily,
        hourly,
        backlog_points,
        cost_daily,
        rejected_counts,
        percentiles,
        detail,
    )
    return write_text(spark, join_uri(output_uri, REPORT_FILE), html)


def write_manifest(spark: SparkSession, output_uri: str) -> str:
    """List every file the job has under `output_uri` (the layout's OUTPUTS, nothing else
    there) into <output_uri>/_manifest.json; return its URI."""
    files = [
        "/".join(part for part in (name, relative) if part)
        for name in OUTPUTS
        for relative in relative_files(spark, join_uri(output_uri, name))
    ]
    text = manifest_json([path for path in files if is_output(path)])
    return write_text(spark, join_uri(output_uri, MANIFEST_FILE), text)


def main(argv: Sequence[str] | None = None) -> str:
    """Entry point for Glue and spark-submit: parse options, run, print the report URI."""
    options = resolve_options(list(sys.argv if argv is None else argv), REQUIRED, OPTIONAL)
    report = run(**run_arguments(options))
    print(f"report: {report}")
    return report


def run_arguments(options: Mapping[str, str | None]) -> dict[str, Any]:
    """`run`'s keyword arguments from the job's resolved options (the queue config read from
    whichever of CONFIG_OPTIONS is given)."""
    document, source = queue_config_document(options) or (None, "")
    return {
        "input_uri": str(options["input_uri"]),
        "output_uri": str(options["output_uri"]),
        "queues_config_json": document,
        "config_source": source,
        "interval_seconds": as_int(options, "interval_seconds", 60),
        "pairing_hours": as_int(options, "pairing_hours", DEFAULT_PAIRING_HOURS),
        "late_days": as_int(options, "late_days", DEFAULT_LATE_DAYS),
        "full_rebuild": as_bool(options, "full_rebuild"),
        "report_days": as_int(options, "report_days", DEFAULT_REPORT_DAYS),
    }


if __name__ == "__main__":
    main()
