"""SLA report job: Glue job script, spark-submit script and an in-process `run()`.

Options (Glue DefaultArguments / command line): --input_uri (archive root holding events/ and
decisions/), --output_uri, --queues_config (the project's JSON queue config text; queues not
in it get a 30 s SLA), --interval_seconds (backlog interval, default 60).

Writes Parquet tables under <output_uri>/ (sla_hourly, sla_daily, cost_hourly, cost_daily,
backlog, rejected_events) and the self-contained <output_uri>/report.html.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import cast

import pandas as pd
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as sf

from glue_jobs.io import join_uri, read_decisions, read_events, write_table, write_text
from glue_jobs.options import as_int, resolve_options
from glue_jobs.report import detail_period, render_report
from glue_jobs.session import get_spark
from glue_jobs.transforms.backlog import interval_inputs, reconstruct_backlog
from glue_jobs.transforms.cost import cost_metrics
from glue_jobs.transforms.events import dedupe_events, pair_attempts, split_events
from glue_jobs.transforms.sla import DEFAULT_SLA_SECONDS, sla_metrics

REQUIRED = ("input_uri", "output_uri")
OPTIONAL: dict[str, str | None] = {"queues_config": None, "interval_seconds": "60"}
CHART_POINTS = 2_000
"""The backlog chart keeps at most about this many points per queue (max per bucket)."""


def queue_parameters(
    queues_config_json: str | None,
) -> tuple[dict[str, float], dict[str, int], dict[str, float]]:
    """({queue: sla_seconds}, {queue: worker_concurrency}, {queue: percentile}) from the
    project's JSON config."""
    if not queues_config_json:
        return {}, {}, {}
    from queue_autoscale.config import parse_json  # noqa: PLC0415 - pydantic only when needed

    queues = parse_json(queues_config_json, "--queues_config")
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


def run(
    input_uri: str,
    output_uri: str,
    queues_config_json: str | None = None,
    interval_seconds: int = 60,
    spark: SparkSession | None = None,
    progress: Progress | None = None,
) -> str:
    """Build every table and the HTML report from the archive at `input_uri`; return the
    report's URI (<output_uri>/report.html). `progress` is told each of STEPS as it starts."""
    if interval_seconds <= 0:
        raise ValueError(f"interval_seconds must be > 0, got {interval_seconds!r}")
    step = progress or (lambda _name: None)
    spark = spark or get_spark("queue-autoscale-sla-report")
    sla_seconds, concurrency, percentiles = queue_parameters(queues_config_json)

    step(STEPS[0])
    valid, rejected = split_events(read_events(spark, input_uri))
    valid = valid.persist(StorageLevel.MEMORY_AND_DISK)
    events = dedupe_events(valid)
    attempts = pair_attempts(events).persist(StorageLevel.MEMORY_AND_DISK)
    decisions = read_decisions(spark, input_uri)

    step(STEPS[1])
    tables: dict[str, DataFrame] = {
        "sla_hourly": sla_metrics(attempts, "hour", sla_seconds, DEFAULT_SLA_SECONDS),
        "sla_daily": sla_metrics(attempts, "day", sla_seconds, DEFAULT_SLA_SECONDS),
        "backlog": reconstruct_backlog(
            interval_inputs(attempts, decisions, interval_seconds, concurrency), interval_seconds
        ),
        "rejected_events": rejected,
    }
    if decisions is not None:
        tables["cost_hourly"] = cost_metrics(decisions, attempts, "hour")
        tables["cost_daily"] = cost_metrics(decisions, attempts, "day")
    for name, table in tables.items():
        if name == "backlog":
            step(STEPS[2])
        write_table(table, join_uri(output_uri, name))

    def load(name: str) -> DataFrame:
        return spark.read.parquet(join_uri(output_uri, name))

    step(STEPS[3])
    daily = to_pandas(load("sla_daily").orderBy("queue", "period_start"))
    hourly = to_pandas(load("sla_hourly").orderBy("queue", "period_start"))
    detail = hourly
    if detail_period(hourly) == "minute":  # a short run: its charts read by the minute
        detail = to_pandas(
            sla_metrics(attempts, "minute", sla_seconds, DEFAULT_SLA_SECONDS).orderBy(
                "queue", "period_start"
            )
        )
    cost_daily = (
        to_pandas(load("cost_daily").orderBy("queue", "period_start"))
        if decisions is not None
        else None
    )
    rejected_counts = to_pandas(
        load("rejected_events").groupBy("reason").count().orderBy(sf.desc("count"))
    )
    read, kept = valid.count(), events.count()
    valid.unpersist()
    attempts.unpersist()
    summary = {
        "archive": input_uri,
        "generated at (UTC)": datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S"),
        "events accepted": read,
        "duplicates dropped (same event_id)": read - kept,
        "lines rejected": int(rejected_counts["count"].sum()) if len(rejected_counts) else 0,
        "queues": ", ".join(sorted(daily["queue"].unique())) if len(daily) else "-",
        "backlog interval, s": interval_seconds,
        "default SLA, s (queues not in the config)": DEFAULT_SLA_SECONDS,
    }
    backlog_points = chart_backlog(load("backlog"), interval_seconds)
    step(STEPS[4])
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
    return write_text(spark, join_uri(output_uri, "report.html"), html)


def main(argv: Sequence[str] | None = None) -> str:
    """Entry point for Glue and spark-submit: parse options, run, print the report URI."""
    options = resolve_options(list(sys.argv if argv is None else argv), REQUIRED, OPTIONAL)
    report = run(
        input_uri=str(options["input_uri"]),
        output_uri=str(options["output_uri"]),
        queues_config_json=options.get("queues_config"),
        interval_seconds=as_int(options, "interval_seconds", 60),
    )
    print(f"report: {report}")
    return report


if __name__ == "__main__":
    main()
