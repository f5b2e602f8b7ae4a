"""SLA metrics per queue per hour or day, from paired attempts (see `events.pair_attempts`).

Attempts are placed in the period of their earliest known time (normally enqueue time).
- `pickup_p50/p95/p99` are exact percentiles with linear interpolation, `pickup_max` the max,
  all in seconds over attempts whose pickup is known.
- `sla_share` = attempts picked up within the SLA / (attempts with a known pickup + attempts
  never started that had already waited longer than the SLA when the data ends). Attempts
  with unknown pickup (started without a queued event and without the worker's `pickup_ms`)
  are counted in `unknown_pickup` only. The data ends at the latest event time of the whole
  archive (every queue), and a never-started attempt is counted as waiting at most the
  pairing window after it was queued.
- `breach_minutes`: distinct minutes in which some attempt of the queue had waited longer than
  its SLA (from queued + SLA until started, or until its wait ends as above if it never
  started), counted in the period the minute falls in.
- `arrival_rate` = queued events in the period / period length (jobs/s).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as sf

from glue_jobs.transforms.periods import period_seconds, period_start

DEFAULT_SLA_SECONDS = 30.0
MINUTE_MS = 60_000


# The per-period counts, in the tables' column order (0 where a period has none).
COUNT_COLUMNS: tuple[str, ...] = (
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


def sla_column(sla_seconds: Mapping[str, float], default_sla_seconds: float) -> Column:
    """Each row's SLA in seconds: the queue's from `sla_seconds`, else the default."""
    default = sf.lit(float(default_sla_seconds))
    if not sla_seconds:
        return default
    pairs: list[Column] = []
    for queue, seconds in sorted(sla_seconds.items()):
        pairs += [sf.lit(queue), sf.lit(float(seconds))]
    return sf.coalesce(sf.try_element_at(sf.create_map(*pairs), sf.col("queue")), default)


def with_wait_end(
    attempts: DataFrame, data_end_ms: int | None = None, pairing_ms: int | None = None
) -> DataFrame:
    """Add `wait_end_ms`: when each attempt stopped waiting, epoch ms.

    That is its start; for an attempt never started, the end of the data (`data_end_ms`, by
    default the latest time among all `attempts`), but at most `pairing_ms` after it was
    queued: the incremental run reads an attempt's events only that far (DESIGN section 8).
    """
    if data_end_ms is None:
        latest = sf.greatest("queued_at_ms", "started_at_ms", "finished_at_ms")
        end_row = attempts.agg(sf.max(latest)).first()
        data_end_ms = int(end_row[0]) if end_row is not None and end_row[0] is not None else 0
    waited_until = sf.lit(int(data_end_ms))
    if pairing_ms is not None:
        waited_until = sf.least(waited_until, sf.col("queued_at_ms") + sf.lit(int(pairing_ms)))
    return attempts.withColumn("wait_end_ms", sf.coalesce(sf.col("started_at_ms"), waited_until))


def breach_minutes(attempts: DataFrame, period: str) -> DataFrame:
    """(queue, period_start, breach_minutes) from attempts with `sla_s` and `wait_end_ms`.

    Each late attempt is a closed interval of minutes; a queue's overlapping intervals are
    merged (a window ordered by start), and each merged interval is split over the periods
    it spans, so the work grows with the late attempts and the periods, not with the minutes
    waited (a never-started attempt can wait the whole pairing window)."""
    start = sf.col("queued_at_ms") + (sf.col("sla_s") * 1000).cast("long")
    end = sf.col("wait_end_ms")
    late = attempts.where(sf.col("queued_at_ms").isNotNull() & (end > start)).select(
        "queue",
        sf.floor(start / MINUTE_MS).alias("first"),
        sf.floor((end - 1) / MINUTE_MS).alias("last"),
    )
    ordered = Window.partitionBy("queue").orderBy("first", "last")
    reach = sf.max("last").over(ordered.rowsBetween(Window.unboundedPreceding, -1))
    opens = sf.when(reach.isNull() | (sf.col("first") > reach), 1).otherwise(0)
    island = sf.sum("opens").over(ordered.rowsBetween(Window.unboundedPreceding, 0))
    merged = (
        late.withColumn("opens", opens)
        .withColumn("island", island)
        .groupBy("queue", "island")
        .agg(sf.min("first").alias("first"), sf.max("last").alias("last"))
    )
    span = period_seconds(period) // 60  # minutes per period
    index = sf.explode(
        sf.sequence(sf.floor(sf.col("first") / span), sf.floor(sf.col("last") / span))
    )
    covered = sf.least(sf.col("last"), (sf.col("index") + 1) * span - 1) - sf.greatest(
        sf.col("first"), sf.col("index") * span
    )
    return (
        merged.select("queue", "first", "last", index.alias("index"))
        .groupBy("queue", sf.timestamp_seconds(sf.col("index") * (span * 60)).alias("period_start"))
        .agg(sf.sum(covered + 1).alias("breach_minutes"))
    )


PICKUP_PERCENTILES: dict[str, float] = {"pickup_p50": 0.5, "pickup_p95": 0.95, "pickup_p99": 0.99}
"""The pickup percentiles of the tables: column name -> fraction."""


def percentiles_from_counts(
    counts: DataFrame, keys: Sequence[str], value: str, weight: str, fractions: Mapping[str, float]
) -> DataFrame:
    """Exact percentiles with linear interpolation per group of `keys` (the rule of Spark's
    `percentile` and numpy's 'linear': position (n - 1) x fraction between the two nearest
    ranks), from a frequency table: one row per distinct non-null `value` of a group with
    its `weight` (a count > 0). Columns: `keys`, then one double per name in `fractions`.

    Only fixed-width aggregation and a running sum over each group's sorted distinct values:
    no per-group value map (`percentile` aggregates by object hash, and sorts every row once
    a partition holds more than a few groups)."""
    group = Window.partitionBy(*keys)
    upto = sf.sum(weight).over(group.orderBy(value).rowsBetween(Window.unboundedPreceding, 0))
    ranked = counts.select(
        *keys,
        value,
        (upto - sf.col(weight)).alias("_below"),
        upto.alias("_upto"),
        sf.sum(weight).over(group).alias("_total"),
    )

    def position(fraction: float) -> Column:
        return (sf.col("_total") - 1) * sf.lit(float(fraction))

    def at_rank(rank: Column) -> Column:  # the value holding 0-based rank `rank`
        return sf.max(sf.when((sf.col("_below") <= rank) & (rank < sf.col("_upto")), sf.col(value)))

    picks: list[Column] = [sf.max("_total").alias("_total")]
    for index, fraction in enumerate(fractions.values()):
        picks += [
            at_rank(sf.floor(position(fraction))).alias(f"_lo{index}"),
            at_rank(sf.ceil(position(fraction))).alias(f"_hi{index}"),
        ]
    picked = ranked.groupBy(*keys).agg(*picks)
    results: list[Column] = []
    for index, (name, fraction) in enumerate(fractions.items()):
        at = position(fraction)
        lower, higher = sf.floor(at), sf.ceil(at)
        low, high = sf.col(f"_lo{index}"), sf.col(f"_hi{index}")
        # the same double arithmetic as Spark's percentile, so the values are identical
        between = (higher - at) * low + (at - lower) * high
        results.append(
            sf.when((higher == lower) | (high == low), low).otherwise(between).alias(name)
        )
    return picked.select(*keys, *results)


def repeated_attempts(attempts: DataFrame, keys: Sequence[str]) -> DataFrame:
    """(`keys`, repeats): per group, attempts minus distinct job_ids, exactly (so jobs =
    attempts - repeats).

    A job never retried has a single attempt (attempt 1), so only the attempts of retried
    jobs can repeat a job. Their (queue, job_id) are broadcast, so the attempts are not
    shuffled by job: a distinct over every attempt was the second-largest cost of the tables.
    The broadcast holds one key per retried job of the run's window."""
    retried = attempts.where(sf.col("attempt") > 1).select("queue", "job_id").distinct()
    return (
        attempts.join(sf.broadcast(retried), ["queue", "job_id"], "left_semi")
        .groupBy(*keys)
        .agg((sf.count("*") - sf.count_distinct("job_id")).alias("repeats"))
    )


def sla_metrics(
    attempts: DataFrame,
    period: str,
    sla_seconds: Mapping[str, float] | None = None,
    default_sla_seconds: float = DEFAULT_SLA_SECONDS,
    data_end_ms: int | None = None,
    pairing_ms: int | None = None,
) -> DataFrame:
    """SLA metrics per (queue, period_start) for period 'minute', 'hour' or 'day' (see module
    doc); `data_end_ms` and `pairing_ms` as in `with_wait_end`."""
    length = period_seconds(period)
    prepared = with_wait_end(attempts, data_end_ms, pairing_ms).withColumn(
        "sla_s", sla_column(sla_seconds or {}, default_sla_seconds)
    )
    pickup = sf.col("pickup_seconds")
    not_started = sf.col("queued_at_ms").isNotNull() & sf.col("started_at_ms").isNull()
    late_not_started = not_started & (
        (sf.col("wait_end_ms") - sf.col("queued_at_ms")) > sf.col("sla_s") * 1000
    )
    prepared = prepared.withColumn(
        "period_start", period_start(sf.col("first_at_ms") / 1000, period)
    )
    keys = ["queue", "period_start"]
    metrics = prepared.groupBy(*keys).agg(
        sf.count("*").alias("attempts"),
        sf.count(sf.when(sf.col("attempt") > 1, True)).alias("retries"),
        sf.count("queued_at_ms").alias("arrivals"),
        sf.count(sf.when(sf.col("started_at_ms").isNotNull() & pickup.isNull(), 1)).alias(
            "unknown_pickup"
        ),
        sf.count(sf.when(not_started, 1)).alias("not_started"),
        sf.count(sf.when(late_not_started, 1)).alias("late_not_started"),
        sf.count(pickup).alias("picked_up"),
        sf.count(sf.when(pickup <= sf.col("sla_s"), 1)).alias("within_sla"),
        sf.max(pickup).alias("pickup_max"),
        sf.count(sf.when(sf.col("outcome") == "completed", 1)).alias("completed"),
        sf.count(sf.when(sf.col("outcome") == "failed", 1)).alias("failures"),
        (sf.avg("duration_ms") / 1000.0).alias("mean_job_seconds"),
    )
    # Partitioned by group first: the counting and the running sum then share one exchange.
    pickups = (
        prepared.where(pickup.isNotNull())
        .repartition(*keys)
        .groupBy(*keys, "pickup_seconds")
        .agg(sf.count("*").alias("_n"))
    )
    percentiles = percentiles_from_counts(pickups, keys, "pickup_seconds", "_n", PICKUP_PERCENTILES)
    repeats = repeated_attempts(prepared, keys)
    denominator = sf.col("picked_up") + sf.col("late_not_started")
    breaches = breach_minutes(prepared, period)
    return (
        metrics.join(repeats, keys, "left")
        .withColumn("jobs", sf.col("attempts") - sf.coalesce(sf.col("repeats"), sf.lit(0)))
        .join(percentiles, keys, "left")
        .join(breaches, keys, "full_outer")
        .select(
            "queue",
            sf.lit(period).alias("period"),
            "period_start",
            # from the queue, so a period holding only breach minutes still shows its SLA
            sla_column(sla_seconds or {}, default_sla_seconds).alias("sla_seconds"),
            *[
                sf.coalesce(sf.col(name), sf.lit(0)).cast("long").alias(name)
                for name in COUNT_COLUMNS
            ],
            *PICKUP_PERCENTILES,
            "pickup_max",
            sf.when(denominator > 0, sf.col("within_sla") / denominator).alias("sla_share"),
            "mean_job_seconds",
            (sf.coalesce(sf.col("arrivals"), sf.lit(0)) / sf.lit(float(length))).alias(
                "arrival_rate"
            ),
        )
    )
