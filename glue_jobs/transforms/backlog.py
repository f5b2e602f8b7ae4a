"""Backlog reconstruction from arrivals and capacity per interval (seed 004), without a loop.

The Lindley recursion B_t = max(0, B_{t-1} + D_t), B_0 = 0, has the closed form
B_t = S_t - min(0, min_{k<=t} S_k) where S_t is the running sum of D. Both the running sum and
the running minimum are window aggregates, so Spark computes every queue's backlog in one pass
with no sequential loop. Gaps in the stamps are handled by D_t = arrivals_t - capacity_t *
elapsed_intervals_t: an interval with no row still served `capacity` jobs.

The sums are exact: each interval's D is rounded once to whole micro-jobs (MICROJOBS_PER_JOB)
and summed as longs. Integer addition is associative, so a run that continues from a carried
backlog gives, bit for bit, what one reconstruction through all the days gives (floating-point
sums of fractional capacity differ in their last bits with the order of the additions).
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as sf
from pyspark.sql import types as st

from glue_jobs.transforms.cost import decision_ticks
from glue_jobs.transforms.periods import PERIOD_SECONDS

MICROJOBS_PER_JOB = 1_000_000
"""The backlog's fixed-point resolution: it is summed and carried in micro-jobs (1e-6 job)."""

REQUIRED_COLUMNS: dict[str, tuple[type[st.DataType], ...]] = {
    "queue": (st.StringType,),
    "stamp": (st.TimestampType, st.TimestampNTZType),
    "arrivals": (st.LongType, st.IntegerType),
    "capacity": (st.DoubleType, st.FloatType, st.LongType, st.IntegerType),
}


def check_columns(df: DataFrame, required: dict[str, tuple[type[st.DataType], ...]]) -> None:
    """Raise ValueError naming a missing column or one of the wrong type."""
    fields = {field.name: field.dataType for field in df.schema.fields}
    for name, allowed in required.items():
        if name not in fields:
            raise ValueError(f"column {name!r} is missing (have: {sorted(fields)})")
        if not isinstance(fields[name], allowed):
            wanted = " or ".join(kind.__name__ for kind in allowed)
            kind = fields[name].simpleString()
            raise ValueError(f"column {name!r} has type {kind}, not {wanted}")


def reconstruct_backlog(
    df: DataFrame, interval_seconds: float, initial: DataFrame | None = None
) -> DataFrame:
    """Add `backlog` (double, jobs waiting at the end of each interval) and `backlog_microjobs`
    (long, the same in micro-jobs: the exact value; `backlog` is it / 1e6) to `df`.

    Input: one row per (queue, stamp): `stamp` is the end of an interval, `arrivals` the jobs
    that arrived in it, `capacity` the jobs one interval can serve. Rows of a queue are taken in
    stamp order; the time since the previous stamp, in intervals, multiplies the capacity, and
    the first row of a queue counts as one interval after an empty backlog. Null arrivals or
    capacity count as 0. Returns the input columns plus `backlog` and `backlog_microjobs`.

    Resolution: the jobs each interval serves (capacity x elapsed intervals) are rounded once
    to whole micro-jobs (half up); everything after is long arithmetic, so the result does not
    depend on how the rows are split into runs. Its distance from real-number arithmetic is
    at most 0.5e-6 jobs per interval summed (max(0, .) never enlarges it). Range: a queue's
    running sum of arrivals minus capacity over one reconstruction must stay within
    +-9.2e12 jobs (2^63 micro-jobs); `backlog` is micro-jobs / 1e6 correctly rounded while
    below 9.0e9 jobs (2^53 micro-jobs).

    `initial` (queue, stamp, backlog_microjobs), at most one row per queue and earlier than its
    rows in `df`, continues an earlier reconstruction: the queue starts from that backlog at
    that stamp (an incremental run carries the last backlog of the day before the days it
    rebuilds).
    """
    if interval_seconds <= 0:
        raise ValueError(f"interval_seconds must be > 0, got {interval_seconds!r}")
    check_columns(df, REQUIRED_COLUMNS)
    df = df.withColumn("_seed", sf.lit(None).cast("long"))
    if initial is not None:
        # A seed row is an interval that brought exactly its backlog to an empty queue.
        seeds = initial.select(
            "queue",
            sf.col("stamp").cast(df.schema["stamp"].dataType).alias("stamp"),
            sf.col("backlog_microjobs").cast("long").alias("_seed"),
        )
        df = df.unionByName(seeds, allowMissingColumns=True)
    ordered = Window.partitionBy("queue").orderBy("stamp")
    running = ordered.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    # unix_micros, not a cast: ANSI mode (Spark 4's default) rejects timestamp -> number casts.
    seconds = sf.unix_micros(sf.col("stamp").cast("timestamp")) / sf.lit(1_000_000.0)
    elapsed = sf.coalesce(
        (seconds - sf.lag(seconds).over(ordered)) / sf.lit(float(interval_seconds)), sf.lit(1.0)
    )
    micro = sf.lit(MICROJOBS_PER_JOB)
    served = sf.round(
        sf.coalesce(sf.col("capacity").cast("double"), sf.lit(0.0))
        * sf.col("_elapsed")
        * sf.lit(float(MICROJOBS_PER_JOB))
    ).cast("long")
    drift = sf.coalesce(
        sf.col("_seed"),
        sf.coalesce(sf.col("arrivals").cast("long"), sf.lit(0).cast("long")) * micro - served,
    )
    with_sum = (
        df.withColumn("_elapsed", elapsed)
        .withColumn("_drift", drift)
        .withColumn("_sum", sf.sum("_drift").over(running))
    )
    exact = sf.col("_sum") - sf.least(sf.lit(0).cast("long"), sf.min("_sum").over(running))
    with_backlog = (
        with_sum.withColumn("_exact", exact)
        .withColumn("backlog", sf.col("_exact").cast("double") / sf.lit(float(MICROJOBS_PER_JOB)))
        .withColumn("backlog_microjobs", sf.col("_exact"))
    )
    return with_backlog.where(sf.col("_seed").isNull()).drop(
        "_elapsed", "_drift", "_sum", "_exact", "_seed"
    )


def interval_inputs(
    attempts: DataFrame,
    decisions: DataFrame | None,
    interval_seconds: float,
    concurrency: Mapping[str, int] | None = None,
    default_tick_seconds: float = 60.0,
    initial: DataFrame | None = None,
) -> DataFrame:
    """Per (queue, interval end `stamp`): arrivals, completions, workers and capacity.

    Arrivals count queued events in the interval; workers is the mean fleet the decision log
    shows in it, carried forward over intervals without a tick (from `initial`'s `workers`,
    (queue, stamp, workers), before the first tick); capacity (jobs per interval) =
    workers * concurrency * interval / the queue's mean job seconds that UTC day (of the
    attempts finished that day). Where that cannot be computed (no decision yet, or no
    finished job to time), the completions observed in the interval stand in: a fleet served
    at least what it finished. Only intervals with an arrival, a completion or a tick get a
    row; `reconstruct_backlog` charges the gaps.
    """
    if interval_seconds <= 0:
        raise ValueError(f"interval_seconds must be > 0, got {interval_seconds!r}")
    width = sf.lit(float(interval_seconds))

    def interval_end(epoch_seconds: Column) -> Column:
        return (sf.floor(epoch_seconds / width) + 1) * width

    arrivals = (
        attempts.where(sf.col("queued_at_ms").isNotNull())
        .groupBy("queue", interval_end(sf.col("queued_at_ms") / 1000).alias("stamp_s"))
        .agg(sf.count("*").alias("arrivals"))
    )
    completions = (
        attempts.where(sf.col("finished_at_ms").isNotNull())
        .groupBy("queue", interval_end(sf.col("finished_at_ms") / 1000).alias("stamp_s"))
        .agg(sf.count("*").alias("completions"))
    )
    joined = arrivals.join(completions, ["queue", "stamp_s"], "full_outer")
    if decisions is not None:
        workers = (
            decision_ticks(decisions, default_tick_seconds)
            .groupBy("queue", interval_end(sf.col("at")).alias("stamp_s"))
            .agg(sf.avg("workers").alias("tick_workers"))
        )
        joined = joined.join(workers, ["queue", "stamp_s"], "full_outer")
    else:
        joined = joined.withColumn("tick_workers", sf.lit(None).cast("double"))
    day = sf.lit(float(PERIOD_SECONDS["day"]))
    mean_job = (
        attempts.where(sf.col("finished_at_ms").isNotNull())
        .groupBy("queue", sf.floor(sf.col("finished_at_ms") / 1000 / day).alias("_day"))
        .agg((sf.avg("duration_ms") / 1000.0).alias("mean_job_s"))
    )
    if initial is not None:
        seeds = initial.select(
            "queue",
            sf.unix_seconds(sf.col("stamp").cast("timestamp")).cast("double").alias("stamp_s"),
            sf.col("workers").cast("double").alias("tick_workers"),
            sf.lit(True).alias("_seed"),
        )
        joined = joined.unionByName(seeds, allowMissingColumns=True)
    carried = (
        Window.partitionBy("queue")
        .orderBy("stamp_s")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    per_worker = concurrency_column(concurrency or {}) * width / sf.col("mean_job_s")
    interval_day = sf.floor((sf.col("stamp_s") - width) / day)
    if "_seed" not in joined.columns:
        joined = joined.withColumn("_seed", sf.lit(None).cast("boolean"))
    return (
        joined.withColumn("_day", interval_day)
        .join(sf.broadcast(mean_job), ["queue", "_day"], "left")
        .withColumn("workers", sf.last("tick_workers", ignorenulls=True).over(carried))
        .where(sf.col("_seed").isNull())
        .select(
            "queue",
            sf.timestamp_seconds(sf.col("stamp_s")).alias("stamp"),
            sf.coalesce(sf.col("arrivals"), sf.lit(0)).cast("long").alias("arrivals"),
            sf.coalesce(sf.col("completions"), sf.lit(0)).cast("long").alias("completions"),
            "workers",
            sf.coalesce(
                sf.col("workers") * per_worker,
                sf.col("completions").cast("double"),
                sf.lit(0.0),
            ).alias("capacity"),
        )
    )


def concurrency_column(concurrency: Mapping[str, int]) -> Column:
    """Each row's per-worker concurrency k (jobs at once): the queue's, else 1."""
    if not concurrency:
        return sf.lit(1.0)
    pairs: list[Column] = []
    for queue, jobs in sorted(concurrency.items()):
        pairs += [sf.lit(queue), sf.lit(float(jobs))]
    return sf.coalesce(sf.try_element_at(sf.create_map(*pairs), sf.col("queue")), sf.lit(1.0))
