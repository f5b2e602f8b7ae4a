"""Cost from the decision log: worker-seconds per queue and period, and utilization.

Worker-seconds integrate each tick's workers (`running`, else `current`) until the next tick
of the same queue; a gap longer than twice the queue's median tick gap that UTC day is capped
at that, so a controller outage does not bill the last fleet for hours. The last tick of a
queue counts one median gap (or `default_tick_seconds` when the day has a single tick). The
median is the day's, so a day's cost depends on that day and the next tick only. A tick's
worker-seconds go to the period its time falls in.
Utilization = busy seconds (durations of completed and failed attempts, in the period they
finished) / worker-seconds.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as sf

from glue_jobs.transforms.periods import PERIOD_SECONDS, period_start


def decision_ticks(decisions: DataFrame, default_tick_seconds: float = 60.0) -> DataFrame:
    """Per tick: queue, at (epoch s), workers, seconds (the capped time this tick covers)."""
    ordered = Window.partitionBy("queue").orderBy("at")
    gaps = (
        decisions.where(sf.col("queue").isNotNull() & sf.col("at").isNotNull())
        .select(
            "queue",
            "at",
            sf.coalesce(sf.col("running"), sf.col("current")).cast("double").alias("workers"),
        )
        .withColumn("gap", sf.lead("at").over(ordered) - sf.col("at"))
    )
    gaps = gaps.withColumn("_day", sf.floor(sf.col("at") / sf.lit(PERIOD_SECONDS["day"])))
    medians = gaps.groupBy("queue", "_day").agg(sf.expr("percentile(gap, 0.5)").alias("median_gap"))
    typical = sf.coalesce(sf.col("median_gap"), sf.lit(float(default_tick_seconds)))
    return (
        gaps.join(sf.broadcast(medians), ["queue", "_day"])
        .withColumn("seconds", sf.least(sf.coalesce(sf.col("gap"), typical), typical * 2))
        .select("queue", "at", sf.coalesce("workers", sf.lit(0.0)).alias("workers"), "seconds")
    )


def worker_seconds(
    decisions: DataFrame, period: str, default_tick_seconds: float = 60.0
) -> DataFrame:
    """(queue, period_start, ticks, worker_seconds, mean_workers) from the decision log."""
    ticks = decision_ticks(decisions, default_tick_seconds)
    return (
        ticks.withColumn("period_start", period_start(sf.col("at"), period))
        .groupBy("queue", "period_start")
        .agg(
            sf.count("*").alias("ticks"),
            sf.sum(sf.col("workers") * sf.col("seconds")).alias("worker_seconds"),
            (sf.sum(sf.col("workers") * sf.col("seconds")) / sf.sum("seconds")).alias(
                "mean_workers"
            ),
        )
    )


def busy_seconds(attempts: DataFrame, period: str) -> DataFrame:
    """(queue, period_start, busy_seconds): durations of finished attempts by finish period."""
    return (
        attempts.where(sf.col("finished_at_ms").isNotNull())
        .withColumn("period_start", period_start(sf.col("finished_at_ms") / 1000, period))
        .groupBy("queue", "period_start")
        .agg((sf.sum(sf.coalesce("duration_ms", sf.lit(0))) / 1000.0).alias("busy_seconds"))
    )


def cost_metrics(
    decisions: DataFrame, attempts: DataFrame, period: str, default_tick_seconds: float = 60.0
) -> DataFrame:
    """(queue, period, period_start, ticks, worker_seconds, mean_workers, busy_seconds,
    utilization); utilization is null where no worker-seconds were logged."""
    joined = worker_seconds(decisions, period, default_tick_seconds).join(
        busy_seconds(attempts, period), ["queue", "period_start"], "full_outer"
    )
    work = sf.coalesce(sf.col("worker_seconds"), sf.lit(0.0))
    busy = sf.coalesce(sf.col("busy_seconds"), sf.lit(0.0))
    return joined.select(
        "queue",
        sf.lit(period).alias("period"),
        "period_start",
        sf.coalesce(sf.col("ticks"), sf.lit(0)).alias("ticks"),
        work.alias("worker_seconds"),
        "mean_workers",
        busy.alias("busy_seconds"),
        sf.when(work > 0, busy / work).alias("utilization"),
    )
