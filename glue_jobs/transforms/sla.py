"""SLA metrics per queue per hour or day, from paired attempts (see `events.pair_attempts`).

Attempts are placed in the period of their earliest known time (normally enqueue time).
- `pickup_p50/p95/p99` are exact percentiles with linear interpolation, `pickup_max` the max,
  all in seconds over attempts whose pickup is known.
- `sla_share` = attempts picked up within the SLA / (attempts with a known pickup + attempts
  never started that had already waited longer than the SLA when the data ends). Attempts
  with unknown pickup (started without a queued event and without the worker's `pickup_ms`)
  are counted in `unknown_pickup` only.
- `breach_minutes`: distinct minutes in which some attempt of the queue had waited longer than
  its SLA (from queued + SLA until started, or until the data ends if it never started),
  counted in the period the minute falls in.
- `arrival_rate` = queued events in the period / period length (jobs/s).
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as sf

from glue_jobs.transforms.periods import period_seconds, period_start

DEFAULT_SLA_SECONDS = 30.0
MINUTE_MS = 60_000


def sla_column(sla_seconds: Mapping[str, float], default_sla_seconds: float) -> Column:
    """Each row's SLA in seconds: the queue's from `sla_seconds`, else the default."""
    default = sf.lit(float(default_sla_seconds))
    if not sla_seconds:
        return default
    pairs: list[Column] = []
    for queue, seconds in sorted(sla_seconds.items()):
        pairs += [sf.lit(queue), sf.lit(float(seconds))]
    return sf.coalesce(sf.try_element_at(sf.create_map(*pairs), sf.col("queue")), default)


def with_data_end(attempts: DataFrame) -> DataFrame:
    """Add `data_end_ms`: the latest time seen in the queue's attempts (epoch ms)."""
    latest = sf.greatest("queued_at_ms", "started_at_ms", "finished_at_ms")
    ends = attempts.groupBy("queue").agg(sf.max(latest).alias("data_end_ms"))
    return attempts.join(sf.broadcast(ends), "queue")


def breach_minutes(attempts: DataFrame, period: str) -> DataFrame:
    """(queue, period_start, breach_minutes) from attempts with `sla_s` and `data_end_ms`."""
    start = sf.col("queued_at_ms") + (sf.col("sla_s") * 1000).cast("long")
    end = sf.coalesce(sf.col("started_at_ms"), sf.col("data_end_ms"))
    late = attempts.where(sf.col("queued_at_ms").isNotNull() & (end > start)).select(
        "queue",
        sf.explode(sf.sequence(sf.floor(start / MINUTE_MS), sf.floor((end - 1) / MINUTE_MS))).alias(
            "minute"
        ),
    )
    return (
        late.distinct()
        .withColumn("period_start", period_start(sf.col("minute") * 60, period))
        .groupBy("queue", "period_start")
        .agg(sf.count("*").alias("breach_minutes"))
    )


def sla_metrics(
    attempts: DataFrame,
    period: str,
    sla_seconds: Mapping[str, float] | None = None,
    default_sla_seconds: float = DEFAULT_SLA_SECONDS,
) -> DataFrame:
    """SLA metrics per (queue, period_start) for period 'hour' or 'day' (see module doc)."""
    length = period_seconds(period)
    prepared = with_data_end(attempts).withColumn(
        "sla_s", sla_column(sla_seconds or {}, default_sla_seconds)
    )
    pickup = sf.col("pickup_seconds")
    not_started = sf.col("queued_at_ms").isNotNull() & sf.col("started_at_ms").isNull()
    late_not_started = not_started & (
        (sf.col("data_end_ms") - sf.col("queued_at_ms")) > sf.col("sla_s") * 1000
    )
    percentiles = sf.expr("percentile(pickup_seconds, array(0.5, 0.95, 0.99))")
    metrics = (
        prepared.withColumn("period_start", period_start(sf.col("first_at_ms") / 1000, period))
        .groupBy("queue", "period_start")
        .agg(
            sf.count("*").alias("attempts"),
            sf.countDistinct("job_id").alias("jobs"),
            sf.count(sf.when(sf.col("attempt") > 1, True)).alias("retries"),
            sf.count("queued_at_ms").alias("arrivals"),
            sf.count(sf.when(sf.col("started_at_ms").isNotNull() & pickup.isNull(), 1)).alias(
                "unknown_pickup"
            ),
            sf.count(sf.when(not_started, 1)).alias("not_started"),
            sf.count(sf.when(late_not_started, 1)).alias("late_not_started"),
            sf.count(pickup).alias("picked_up"),
            sf.count(sf.when(pickup <= sf.col("sla_s"), 1)).alias("within_sla"),
            percentiles.alias("_pct"),
            sf.max(pickup).alias("pickup_max"),
            sf.count(sf.when(sf.col("outcome") == "completed", 1)).alias("completed"),
            sf.count(sf.when(sf.col("outcome") == "failed", 1)).alias("failures"),
            (sf.avg("duration_ms") / 1000.0).alias("mean_job_seconds"),
        )
    )
    denominator = sf.col("picked_up") + sf.col("late_not_started")
    breaches = breach_minutes(prepared, period)
    return metrics.join(breaches, ["queue", "period_start"], "full_outer").select(
        "queue",
        sf.lit(period).alias("period"),
        "period_start",
        # from the queue, so a period holding only breach minutes still shows its SLA
        sla_column(sla_seconds or {}, default_sla_seconds).alias("sla_seconds"),
        *[
            sf.coalesce(sf.col(name), sf.lit(0)).cast("long").alias(name)
            for name in (
                "attempts",
                "jobs",
                "retries",
                "arrivals",
                "unknown_pickup",
                "not_started",
                "late_not_started",
                "picked_up",
                "within_sla",
                "completed",
                "failures",
                "breach_minutes",
            )
        ],
        sf.col("_pct")[0].alias("pickup_p50"),
        sf.col("_pct")[1].alias("pickup_p95"),
        sf.col("_pct")[2].alias("pickup_p99"),
        "pickup_max",
        sf.when(denominator > 0, sf.col("within_sla") / denominator).alias("sla_share"),
        "mean_job_seconds",
        (sf.coalesce(sf.col("arrivals"), sf.lit(0)) / sf.lit(float(length))).alias("arrival_rate"),
    )
