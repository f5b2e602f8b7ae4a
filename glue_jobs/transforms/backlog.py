"""Backlog reconstruction from arrivals and capacity per interval (seed 004), without a loop.

The Lindley recursion B_t = max(0, B_{t-1} + D_t), B_0 = 0, has the closed form
B_t = S_t - min(0, min_{k<=t} S_k) where S_t is the running sum of D. Both the running sum and
the running minimum are window aggregates, so Spark computes every queue's backlog in one pass
with no sequential loop. Gaps in the stamps are handled by D_t = arrivals_t - capacity_t *
elapsed_intervals_t: an interval with no row still served `capacity` jobs.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

REQUIRED_COLUMNS: dict[str, tuple[type[T.DataType], ...]] = {
    "queue": (T.StringType,),
    "stamp": (T.TimestampType, T.TimestampNTZType),
    "arrivals": (T.LongType, T.IntegerType),
    "capacity": (T.DoubleType, T.FloatType, T.LongType, T.IntegerType),
}


def check_columns(df: DataFrame, required: dict[str, tuple[type[T.DataType], ...]]) -> None:
    """Raise ValueError naming a missing column or one of the wrong type."""
    fields = {field.name: field.dataType for field in df.schema.fields}
    for name, allowed in required.items():
        if name not in fields:
            raise ValueError(f"column {name!r} is missing (have: {sorted(fields)})")
        if not isinstance(fields[name], allowed):
            wanted = " or ".join(kind.__name__ for kind in allowed)
            raise ValueError(f"column {name!r} has type {fields[name].simpleString()}, not {wanted}")


def reconstruct_backlog(df: DataFrame, interval_seconds: float) -> DataFrame:
    """Add `backlog` (double, jobs waiting at the end of each interval) to `df`.

    Input: one row per (queue, stamp): `stamp` is the end of an interval, `arrivals` the jobs
    that arrived in it, `capacity` the jobs one interval can serve. Rows of a queue are taken in
    stamp order; the time since the previous stamp, in intervals, multiplies the capacity, and
    the first row of a queue counts as one interval after an empty backlog. Null arrivals or
    capacity count as 0. Returns the input columns plus `backlog`.
    """
    if interval_seconds <= 0:
        raise ValueError(f"interval_seconds must be > 0, got {interval_seconds!r}")
    check_columns(df, REQUIRED_COLUMNS)
    ordered = Window.partitionBy("queue").orderBy("stamp")
    running = ordered.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    seconds = F.col("stamp").cast("timestamp").cast("double")
    elapsed = F.coalesce(
        (seconds - F.lag(seconds).over(ordered)) / F.lit(float(interval_seconds)), F.lit(1.0)
    )
    drift = F.coalesce(F.col("arrivals").cast("double"), F.lit(0.0)) - F.coalesce(
        F.col("capacity").cast("double"), F.lit(0.0)
    ) * F.col("_elapsed")
    with_sum = (
        df.withColumn("_elapsed", elapsed)
        .withColumn("_drift", drift)
        .withColumn("_sum", F.sum("_drift").over(running))
    )
    with_backlog = with_sum.withColumn(
        "backlog", F.col("_sum") - F.least(F.lit(0.0), F.min("_sum").over(running))
    )
    return with_backlog.drop("_elapsed", "_drift", "_sum")

