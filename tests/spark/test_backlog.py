"""reconstruct_backlog: seed 004's table as a vector, gaps, and equality with a sequential loop."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from glue_jobs.transforms.backlog import reconstruct_backlog

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

FIVE_MINUTES = 300
# Seed 004: tasks added per 5-minute interval from 2000-01-01 00:05, capacity 100 per interval.
SEED_ARRIVALS = [15, 46, 57, 19, 132, 14, 19, 137, 14, 146]
SEED_ARRIVALS += [83, 72, 43, 75, 74, 62, 134, 87, 59, 103]
SEED_BACKLOG = [0, 0, 0, 0, 32, 0, 0, 37, 0, 46, 29, 1, 0, 0, 0, 0, 34, 21, 0, 3]
START = datetime(2000, 1, 1, 0, 5, tzinfo=UTC)
SCHEMA = "queue string, stamp timestamp, arrivals long, capacity double"


def lindley(rows: list[tuple[float, float, float]], interval_seconds: float) -> list[float]:
    """Plain sequential Lindley loop over (stamp seconds, arrivals, capacity) in stamp order."""
    backlog, previous, out = 0.0, None, []
    for stamp, arrivals, capacity in rows:
        elapsed = 1.0 if previous is None else (stamp - previous) / interval_seconds
        backlog = max(0.0, backlog + arrivals - capacity * elapsed)
        out.append(backlog)
        previous = stamp
    return out


def seed_rows(skip: set[int] = frozenset()) -> list[tuple[str, datetime, int, float]]:
    return [
        ("seed", START + timedelta(seconds=FIVE_MINUTES * i), arrivals, 100.0)
        for i, arrivals in enumerate(SEED_ARRIVALS)
        if i not in skip
    ]


def backlog_by_stamp(spark, rows, interval_seconds=FIVE_MINUTES) -> dict[datetime, float]:
    df = spark.createDataFrame(rows, SCHEMA)
    result = reconstruct_backlog(df, interval_seconds).collect()
    return {row.stamp.replace(tzinfo=UTC): row.backlog for row in result}


def test_seed_table_gives_the_seed_backlog_column(spark) -> None:
    # GIVEN seed 004's 20 rows WHEN reconstructed THEN the seed's backlog column comes back
    got = backlog_by_stamp(spark, seed_rows())
    assert [got[START + timedelta(seconds=FIVE_MINUTES * i)] for i in range(20)] == SEED_BACKLOG


def test_a_missing_row_still_serves_its_interval(spark) -> None:
    # GIVEN the 00:55 row deleted (index 10) WHEN reconstructed
    got = backlog_by_stamp(spark, seed_rows(skip={10}))
    # THEN 01:00 had two intervals (200 jobs) against 46 + 72: backlog 0, as the seed's final
    # function gives; the rows before are unchanged and the rows after follow from 0.
    one_am = datetime(2000, 1, 1, 1, 0, tzinfo=UTC)
    assert got[one_am] == 0.0
    assert got[datetime(2000, 1, 1, 0, 50, tzinfo=UTC)] == 46.0
    assert got[datetime(2000, 1, 1, 1, 25, tzinfo=UTC)] == 34.0
    assert got[datetime(2000, 1, 1, 1, 40, tzinfo=UTC)] == 3.0
    assert len(got) == 19


def test_first_row_of_each_queue_starts_from_empty(spark) -> None:
    # GIVEN two queues whose first rows are far apart WHEN reconstructed
    rows = [
        ("a", START, 150, 100.0),
        ("b", START + timedelta(days=3), 250, 100.0),
        ("b", START + timedelta(days=3, seconds=FIVE_MINUTES), 0, 100.0),
    ]
    got = reconstruct_backlog(
        spark.createDataFrame(rows, SCHEMA),
        FIVE_MINUTES,
    ).orderBy("queue", "stamp")
    # THEN each first row counts one interval of capacity, and queues do not mix
    assert [row.backlog for row in got.collect()] == [50.0, 150.0, 50.0]


def test_equals_a_sequential_loop_on_random_gapped_data(spark) -> None:
    # GIVEN several queues of random arrivals and capacities with random gaps (seeded)
    generator = random.Random(20_000_101)
    interval = 60
    rows, expected = [], {}
    for queue in ("q0", "q1", "q2", "q3"):
        stamp = 1_700_000_000 + generator.randrange(0, 10) * interval
        series = []
        for _ in range(generator.randrange(50, 400)):
            stamp += interval * generator.choice([1, 1, 1, 1, 2, 3, 7])
            arrivals = generator.choice([0, generator.randrange(50), generator.randrange(400)])
            capacity = float(generator.randrange(0, 120))
            series.append((float(stamp), float(arrivals), capacity))
            rows.append((queue, datetime.fromtimestamp(stamp, UTC), arrivals, capacity))
        for (stamp_s, _, _), value in zip(series, lindley(series, interval), strict=True):
            expected[(queue, stamp_s)] = value
    generator.shuffle(rows)
    df = spark.createDataFrame(rows, SCHEMA)
    # WHEN reconstructed with window functions
    got = {
        (row.queue, row.stamp.timestamp()): row.backlog
        for row in reconstruct_backlog(df, interval).collect()
    }
    # THEN every value equals the loop's (integers in doubles: exact), and something queued up
    assert got == expected
    assert max(expected.values()) > 100


def test_missing_column_is_named(spark) -> None:
    df = spark.createDataFrame([("a", START, 1)], "queue string, stamp timestamp, arrivals long")
    with pytest.raises(ValueError, match="'capacity' is missing"):
        reconstruct_backlog(df, 60)
    with pytest.raises(ValueError, match="interval_seconds must be > 0"):
        reconstruct_backlog(df, 0)
