"""The SLA tables' parts that replace Spark's object-hash aggregates: exact percentiles from a
frequency table, and breach minutes from merged intervals; each against a plain oracle."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as sf

from glue_jobs.transforms.sla import MINUTE_MS, breach_minutes, percentiles_from_counts

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

FRACTIONS = {"p0": 0.0, "p10": 0.1, "p50": 0.5, "p95": 0.95, "p99": 0.99, "p100": 1.0}
# Quarter seconds from 0 to 5: small enough that groups hold ties.
VALUES = st.integers(min_value=0, max_value=20).map(lambda quarters: quarters / 4)
GROUPS = st.dictionaries(
    st.sampled_from("abcde"), st.lists(VALUES, min_size=1, max_size=40), min_size=1
)
SLOW = settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def frequency_rows(groups: dict[str, list[float]]) -> list[tuple[str, float, int]]:
    return [(g, v, n) for g, values in groups.items() for v, n in Counter(values).items()]


@SLOW
@given(groups=GROUPS)
def test_percentiles_from_counts_equal_numpy_linear_and_spark_percentile(
    spark: SparkSession, groups: dict[str, list[float]]
) -> None:
    # GIVEN groups of values with ties, as a frequency table (value, count)
    counts = spark.createDataFrame(frequency_rows(groups), "g string, v double, n long")
    # WHEN the percentiles are read from the cumulative counts
    got = {
        row.g: row for row in percentiles_from_counts(counts, ["g"], "v", "n", FRACTIONS).collect()
    }
    # THEN they are numpy's linear percentiles of the raw values ...
    assert set(got) == set(groups)
    for group, values in groups.items():
        for name, fraction in FRACTIONS.items():
            expected = float(np.percentile(values, fraction * 100, method="linear"))
            assert got[group][name] == pytest.approx(expected, rel=1e-12, abs=1e-12), (group, name)
    # ... and bit for bit what Spark's own `percentile` gives (the tables' earlier definition)
    reference = counts.groupBy("g").agg(
        *[
            sf_percentile(fraction).alias(name)
            for name, fraction in FRACTIONS.items()  # one call each: no array indexing
        ]
    )
    for row in reference.collect():
        assert [got[row.g][name] for name in FRACTIONS] == [row[name] for name in FRACTIONS]


def sf_percentile(fraction: float) -> Column:
    """Spark's own exact percentile of `v` weighted by `n`."""
    return sf.expr(f"percentile(v, {fraction!r}, n)")


T0 = int(datetime(2026, 11, 2, 22, 0, tzinfo=UTC).timestamp() * 1000)  # 22:00 UTC
WAITS = st.lists(
    st.tuples(
        st.sampled_from(["q", "r"]),
        st.integers(min_value=0, max_value=3 * 3_600_000),  # queued, ms after T0
        st.sampled_from([10.0, 30.0]),  # SLA, s
        st.integers(min_value=0, max_value=2 * 3_600_000),  # wait, ms
    ),
    min_size=1,
    max_size=25,
)


@SLOW
@given(waits=WAITS)
def test_breach_minutes_equal_the_distinct_late_minutes_per_hour_and_day(
    spark: SparkSession, waits: list[tuple[str, int, float, int]]
) -> None:
    # GIVEN attempts that waited, some past their SLA, overlapping across hours and midnight
    rows = [(queue, T0 + at, sla, T0 + at + wait) for queue, at, sla, wait in waits]
    attempts = spark.createDataFrame(
        rows, "queue string, queued_at_ms long, sla_s double, wait_end_ms long"
    )
    for period, length_ms in (("hour", 3_600_000), ("day", 86_400_000)):
        # WHEN the breach minutes are counted per period
        got = {
            (row.queue, int(row.period_start.replace(tzinfo=UTC).timestamp() * 1000)): (
                row.breach_minutes
            )
            for row in breach_minutes(attempts, period).collect()
        }
        # THEN each is the count of distinct minutes in which some attempt was late
        late: set[tuple[str, int]] = set()
        for queue, queued, sla, end in rows:
            start = queued + int(sla * 1000)
            if end > start:
                late |= {(queue, m) for m in range(start // MINUTE_MS, (end - 1) // MINUTE_MS + 1)}
        expected = Counter((q, m * MINUTE_MS // length_ms * length_ms) for q, m in late)
        assert got == dict(expected), period
