"""Events: validate, de-duplicate by event_id, and pair each job attempt's events.

An *attempt* is (queue, job_id, attempt): a retried job keeps its attempts apart. Pickup time
is started.at - queued.at of the same attempt; when the queued event is not in the archive, the
pickup the worker measured (the started event's `pickup_ms`) stands in. A started event with
neither still counts as an attempt, with unknown pickup (`pickup_seconds` null); it is counted
in `unknown_pickup` and left out of the percentiles and of the SLA share.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as sf

from glue_jobs.schemas import CORRUPT_COLUMN, EVENT_FIELDS, EVENT_TYPES, RAW_DAY_COLUMN
from glue_jobs.transforms.periods import DAY_MS

FAILED_BIT = 1 << 62
"""Added to a failed event's `at` (epoch ms, far below 2**62) in the finishing-event key."""

EVENT_COLUMNS = tuple(EVENT_FIELDS.fieldNames())


def split_events(raw: DataFrame, keep: Sequence[str] = ()) -> tuple[DataFrame, DataFrame]:
    """Split archived rows into (valid events, rejected rows with a `reason`).

    Valid events get `attempt` 1 when it is absent and an `event_id` built from
    (type, queue, job_id, attempt) when it is absent (DESIGN.md's default key).
    Rejected rows keep their raw line (or fields) and name the field at fault. Columns in
    `keep` pass through to both. With `raw_dt` (the day the archive wrote the line), an event
    dated after the end of the next day is rejected: it cannot have happened yet.
    """
    has_corrupt = CORRUPT_COLUMN in raw.columns
    checks: list[tuple[Column, str]] = []
    if has_corrupt:
        checks.append((sf.col(CORRUPT_COLUMN).isNotNull(), "not a JSON object of the event schema"))
    checks += [
        (sf.col("type").isNull(), "field 'type' is missing"),
        (~sf.col("type").isin(*EVENT_TYPES), "field 'type' is not one of " + "|".join(EVENT_TYPES)),
        (sf.col("queue").isNull() | (sf.col("queue") == ""), "field 'queue' is missing"),
        (sf.col("job_id").isNull() | (sf.col("job_id") == ""), "field 'job_id' is missing"),
        (sf.col("at").isNull(), "field 'at' is missing"),
        (sf.col("at") <= 0, "field 'at' is not a positive epoch-ms"),
        (sf.col("duration_ms") < 0, "field 'duration_ms' is negative"),
        (sf.col("pickup_ms") < 0, "field 'pickup_ms' is negative"),
        (sf.col("attempt") < 1, "field 'attempt' is below 1"),
    ]
    if RAW_DAY_COLUMN in raw.columns:
        written = sf.unix_millis(sf.to_timestamp(sf.col(RAW_DAY_COLUMN), "yyyy-MM-dd"))
        checks.append(
            (
                sf.col("at") >= written + sf.lit(2 * DAY_MS),
                "field 'at' is after the day following the day it was archived",
            )
        )
    reason: Column = sf.lit(None).cast("string")
    for condition, text in reversed(checks):
        reason = sf.when(condition, sf.lit(text)).otherwise(reason)
    tagged = raw.withColumn("reason", reason)
    attempt = sf.coalesce(sf.col("attempt"), sf.lit(1).cast("long"))
    default_id = sf.sha2(
        sf.concat_ws(
            "|", sf.col("type"), sf.col("queue"), sf.col("job_id"), attempt.cast("string")
        ),
        256,
    )
    valid = (
        tagged.where(sf.col("reason").isNull())
        .withColumn("attempt", attempt)
        .withColumn("event_id", sf.coalesce(sf.col("event_id"), default_id))
        .select(*EVENT_COLUMNS, *keep)
    )
    raw_text = (
        sf.coalesce(sf.col(CORRUPT_COLUMN), sf.to_json(sf.struct(*EVENT_COLUMNS)))
        if has_corrupt
        else sf.to_json(sf.struct(*EVENT_COLUMNS))
    )
    rejected = tagged.where(sf.col("reason").isNotNull()).select(
        sf.col("queue"), sf.col("reason"), raw_text.alias("raw"), *keep
    )
    return valid, rejected


def dedupe_events(events: DataFrame) -> DataFrame:
    """Drop redelivered events: the archive is at-least-once, and a redelivery repeats the
    event whole (same event_id, same fields), so equal rows are kept once.

    A plain distinct is a hash aggregation; `dropDuplicates(["event_id"])` keeps the first
    of every other column, string buffers that make Spark sort every event instead
    (benchmarks/results/sla_report_vs_duckdb.md). Two different events that share an
    event_id are both kept."""
    return events.distinct()


def pair_attempts(events: DataFrame) -> DataFrame:
    """One row per (queue, job_id, attempt) from de-duplicated events.

    Columns: queue, job_id, attempt, queued_at_ms, started_at_ms (the earliest of each type),
    finished_at_ms, outcome ('completed' | 'failed' | null) and duration_ms of the finishing
    event (a failed event wins over a completed one, then the later one; two of one kind at
    the same millisecond keep either's duration), pickup_seconds
    (started - queued; the started event's pickup_ms when the queued event is missing; else
    null; negative clock skew is clamped to 0) and
    first_at_ms (the attempt's earliest known time, which places it in a period).
    """

    def first_at(kind: str) -> Column:
        return sf.min(sf.when(sf.col("type") == kind, sf.col("at")))

    # One long orders the finishing events: failed above completed, then the later one. Only
    # fixed-width aggregate buffers (longs) keep this a hash aggregation; a struct or string
    # buffer makes Spark sort every event instead (benchmarks/sla_report_vs_duckdb.py).
    failed = sf.col("type") == "failed"
    finish_key = sf.when(
        sf.col("type").isin("completed", "failed"),
        sf.when(failed, sf.lit(FAILED_BIT)).otherwise(sf.lit(0)) + sf.col("at"),
    )
    grouped = events.groupBy("queue", "job_id", "attempt").agg(
        first_at("queued").alias("queued_at_ms"),
        first_at("started").alias("started_at_ms"),
        sf.min(sf.when(sf.col("type") == "started", sf.col("pickup_ms"))).alias("_pickup_ms"),
        sf.max(finish_key).alias("_finish"),
        sf.max_by(sf.col("duration_ms"), finish_key).alias("duration_ms"),
    )
    finished_at = sf.col("_finish").bitwiseAND(sf.lit(FAILED_BIT - 1))
    outcome = sf.when(sf.col("_finish") >= FAILED_BIT, sf.lit("failed")).when(
        sf.col("_finish").isNotNull(), sf.lit("completed")
    )
    # greatest() skips nulls, so guard it: an unknown side leaves the pickup to the worker's.
    known = sf.col("started_at_ms").isNotNull() & sf.col("queued_at_ms").isNotNull()
    pickup = sf.when(
        known,
        sf.greatest(
            sf.lit(0.0), (sf.col("started_at_ms") - sf.col("queued_at_ms")).cast("double") / 1000.0
        ),
    ).otherwise(sf.col("_pickup_ms").cast("double") / 1000.0)
    return grouped.select(
        "queue",
        "job_id",
        "attempt",
        "queued_at_ms",
        "started_at_ms",
        finished_at.alias("finished_at_ms"),
        outcome.alias("outcome"),
        "duration_ms",
        pickup.alias("pickup_seconds"),
        sf.coalesce("queued_at_ms", "started_at_ms", finished_at).alias("first_at_ms"),
    )
