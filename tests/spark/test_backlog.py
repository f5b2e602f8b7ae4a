"""reconstruct_backlog: seed 004's table as a vector, gaps, equality with a sequential loop, and
a run continued from the carried backlog equal, bit for bit, to one run through the days."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as sf

from glue_jobs.sla_report import backlog_carry
from glue_jobs.transforms.backlog import MICROJOBS_PER_JOB, reconstruct_backlog

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


DAY = datetime(2026, 11, 2, tzinfo=UTC)
CARRY_SCHEMA = SCHEMA + ", workers double, dt string"
# Capacities whose float sums depend on the order of the additions.
FRACTIONS = [0.1, 1 / 3, 2 / 3, 1e-3, 0.7, 1.1, 2.3, 1 / 7, 3.001, 2 / 9]


def fractional_days(generator: random.Random, days: int) -> list[tuple]:
    """Rows of two queues over `days` days of 1-minute intervals (some skipped): 'busy' has a
    little less capacity than arrivals (its backlog grows through the days), 'even' empties now
    and then."""
    rows = []
    for queue, extra in (("busy", 0.0), ("even", 0.9)):
        for minute in range(1, days * 1440 + 1):
            if generator.random() < 0.05:
                continue  # a gap: the next row serves several intervals
            stamp = DAY + timedelta(minutes=minute)
            capacity = generator.choice(FRACTIONS) + extra
            dt = (stamp - timedelta(minutes=1)).strftime("%Y-%m-%d")
            rows.append((queue, stamp, generator.randrange(4), capacity, 1.0, dt))
    return rows


def one_run_and_carried(spark, rows: list[tuple], split: datetime) -> tuple[dict, dict, dict]:
    """({(queue, stamp): row} of the rows from `split` on by one reconstruction over all rows,
    the same by a reconstruction of the rows before `split` whose `backlog_carry` (one day:
    one row per queue) seeds a second one over the rest, and {queue: carried backlog})."""
    df = spark.createDataFrame(rows, CARRY_SCHEMA)
    carry = backlog_carry(reconstruct_backlog(df.where(df.stamp < split), 60))
    continued = reconstruct_backlog(df.where(df.stamp >= split), 60, initial=carry)
    whole = reconstruct_backlog(df, 60).where(sf.col("stamp") >= sf.lit(split))

    def keyed(frame) -> dict:
        return {(row.queue, row.stamp): row.asDict() for row in frame.collect()}

    return keyed(whole), keyed(continued), {row.queue: row.backlog for row in carry.collect()}


def test_a_run_from_the_carried_backlog_equals_one_run_bit_for_bit(spark) -> None:
    # GIVEN two days of fractional capacities (0.1, 1/3, 1e-3, ...) whose float running sums
    # differ with the order of the additions, split at midnight
    rows = fractional_days(random.Random(18), days=2)
    # WHEN day 2 continues from day 1's backlog_carry, and one reconstruction runs through both
    whole, continued, carried = one_run_and_carried(spark, rows, DAY + timedelta(days=1))
    # THEN the carried backlog was fractional and large (the case that used to differ), and
    # every row of day 2 is equal, exactly (no tolerance), in every column
    assert carried["busy"] > 100 and carried["busy"] != int(carried["busy"])
    assert len(whole) > 2_500
    assert continued == whole


FIXED_POINT_ROWS = st.lists(
    st.tuples(st.integers(0, 5), st.sampled_from(FRACTIONS), st.integers(1, 3)),
    min_size=2,
    max_size=80,
)


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=FIXED_POINT_ROWS, cut=st.floats(0.05, 0.95))
def test_any_split_gives_the_one_run_backlog(spark, steps, cut) -> None:
    # GIVEN any arrivals, fractional capacities and gaps (in intervals), cut anywhere
    rows, stamp = [], DAY
    for arrivals, capacity, gap in steps:
        stamp += timedelta(minutes=gap)
        rows.append(("q", stamp, arrivals, capacity, 1.0, stamp.strftime("%Y-%m-%d")))
    split = rows[max(1, int(len(rows) * cut))][1]
    # WHEN continued from the carry THEN equal to one run, exactly
    whole, continued, _ = one_run_and_carried(spark, rows, split)
    assert continued == whole


def served_microjobs(capacity: float, elapsed: float) -> int:
    """Jobs an interval served, in micro-jobs, rounded half up (Spark's `round` of a double)."""
    exact = Decimal(repr(capacity * elapsed * MICROJOBS_PER_JOB))
    return int(exact.quantize(Decimal(1), rounding=ROUND_HALF_UP))


def test_fractional_capacity_follows_the_micro_job_loop(spark) -> None:
    # GIVEN a day of fractional capacities with gaps
    rows = fractional_days(random.Random(4), days=1)
    by_queue: dict[str, list[tuple]] = {}
    for row in sorted(rows, key=lambda row: (row[0], row[1])):
        by_queue.setdefault(row[0], []).append(row)
    # a sequential Lindley loop in whole micro-jobs, and the same in floats
    expected, real = {}, {}
    for queue, series in by_queue.items():
        backlog, floating, previous = 0, 0.0, None
        for _, stamp, arrivals, capacity, _, _ in series:
            elapsed = 1.0 if previous is None else (stamp - previous).total_seconds() / 60
            served = served_microjobs(capacity, elapsed)
            backlog = max(0, backlog + arrivals * MICROJOBS_PER_JOB - served)
            floating = max(0.0, floating + arrivals - capacity * elapsed)
            expected[(queue, stamp)] = backlog
            real[(queue, stamp)] = floating
            previous = stamp
    # WHEN reconstructed
    got = {
        (row.queue, row.stamp.replace(tzinfo=UTC)): (row.backlog_microjobs, row.backlog)
        for row in reconstruct_backlog(spark.createDataFrame(rows, CARRY_SCHEMA), 60).collect()
    }
    # THEN the micro-jobs are the loop's exactly, `backlog` is them / 1e6, and both stay within
    # the rounding's bound (0.5e-6 jobs an interval) of float arithmetic
    assert {key: micro for key, (micro, _) in got.items()} == expected
    assert all(value == micro / MICROJOBS_PER_JOB for micro, value in got.values())
    assert max(expected.values()) > 100 * MICROJOBS_PER_JOB
    assert max(abs(got[key][1] - real[key]) for key in got) <= 1440 * 0.5e-6
