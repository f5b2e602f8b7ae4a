"""SLA and cost metrics on a small dataset with duplicates and retries, checked by hand."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from glue_jobs.schemas import EVENT_FIELDS
from glue_jobs.transforms.cost import cost_metrics
from glue_jobs.transforms.events import dedupe_events, pair_attempts, split_events
from glue_jobs.transforms.sla import sla_metrics

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

T0 = int(datetime(2026, 11, 2, 10, 0, tzinfo=UTC).timestamp() * 1000)  # 10:00 UTC, epoch ms
HOUR_10 = datetime(2026, 11, 2, 10, 0)
HOUR_11 = datetime(2026, 11, 2, 11, 0)
EVENT_SCHEMA = EVENT_FIELDS


def event(kind, queue, job, seconds, attempt=1, duration_ms=None, event_id=None, pickup_ms=None):
    at = T0 + int(seconds * 1000)
    return (
        kind,
        queue,
        job,
        at,
        duration_ms,
        pickup_ms,
        attempt,
        event_id or f"{queue}-{job}-{attempt}-{kind}",
    )


# Queue q has a 10 s SLA; queue r uses the default 30 s.
EVENTS = [
    event("queued", "q", "a", 0),
    event("queued", "q", "a", 0),  # redelivered: same event_id
    event("queued", "q", "a", 0),
    event("started", "q", "a", 2),
    event("completed", "q", "a", 5, duration_ms=3000),
    event("queued", "q", "b", 10),
    event("started", "q", "b", 25),  # waited 15 s: late
    event("failed", "q", "b", 26, duration_ms=1000),
    event("queued", "q", "b", 30, attempt=2),  # the retry is its own attempt
    event("started", "q", "b", 34, attempt=2),
    event("completed", "q", "b", 40, attempt=2, duration_ms=6000),
    event("started", "q", "c", 60),  # no queued event: unknown pickup
    event("completed", "q", "c", 62, duration_ms=2000),
    event("queued", "q", "d", 100),
    event("started", "q", "d", 108),
    event("completed", "q", "d", 110, duration_ms=2000),
    event("queued", "q", "e", 3540),  # 10:59:00, picked up 11:00:10 after 70 s
    event("started", "q", "e", 3610),
    event("completed", "q", "e", 3615, duration_ms=5000),
    event("queued", "q", "f", 3700),  # 11:01:40, never started
    event("queued", "q", "g", 5400),
    event("started", "q", "g", 5401),
    event("completed", "q", "g", 5403, duration_ms=2000),  # the last event of q
    event("queued", "r", "x", 0),
    event("started", "r", "x", 31),
    event("started", "r", "x", 31),  # duplicate
    event("completed", "r", "x", 33, duration_ms=2000),
]


@pytest.fixture(scope="module")
def attempts(spark):
    events = spark.createDataFrame(EVENTS, EVENT_SCHEMA)
    valid, rejected = split_events(events)
    assert rejected.count() == 0
    return pair_attempts(dedupe_events(valid)).cache()


def rows_by_key(df):
    return {(row.queue, row.period_start): row.asDict() for row in df.collect()}


def test_pairing_keeps_retries_apart_and_drops_duplicates(attempts) -> None:
    got = {(r.queue, r.job_id, r.attempt): r for r in attempts.collect()}
    assert len(got) == 9
    assert got[("q", "b", 1)].pickup_seconds == 15.0
    assert got[("q", "b", 1)].outcome == "failed"
    assert got[("q", "b", 2)].pickup_seconds == 4.0
    assert got[("q", "c", 1)].pickup_seconds is None
    assert got[("q", "f", 1)].started_at_ms is None
    assert got[("r", "x", 1)].pickup_seconds == 31.0


def test_hourly_sla_metrics_match_hand_computation(attempts) -> None:
    got = rows_by_key(sla_metrics(attempts, "hour", {"q": 10.0}))
    ten = got[("q", HOUR_10)]
    # q 10:00: attempts a1 b1 b2 c1 d1 e1; pickups 2, 15, 4, 8, 70 (c unknown)
    assert ten["attempts"] == 6
    assert ten["jobs"] == 5
    assert ten["retries"] == 1
    assert ten["arrivals"] == 5
    assert ten["unknown_pickup"] == 1
    assert ten["picked_up"] == 5
    assert ten["within_sla"] == 3  # 2, 4, 8 <= 10
    assert ten["sla_share"] == pytest.approx(3 / 5)
    # sorted [2, 4, 8, 15, 70]: p50 at rank 2 = 8; p95 at rank 3.8 = 15 + 0.8 * 55 = 59
    assert ten["pickup_p50"] == pytest.approx(8.0)
    assert ten["pickup_p95"] == pytest.approx(59.0)
    assert ten["pickup_p99"] == pytest.approx(15 + 0.96 * 55)
    assert ten["pickup_max"] == 70.0
    assert (ten["completed"], ten["failures"]) == (5, 1)
    assert ten["mean_job_seconds"] == pytest.approx((3 + 1 + 6 + 2 + 2 + 5) / 6)
    assert ten["arrival_rate"] == pytest.approx(5 / 3600)
    # breach minutes: b1 late during 10:00; e late from 10:59:10 to 11:00:10
    assert ten["breach_minutes"] == 2
    eleven = got[("q", HOUR_11)]
    # q 11:00: f never started (waited 1703 s by the end of data), g picked up after 1 s
    assert (eleven["attempts"], eleven["not_started"], eleven["late_not_started"]) == (2, 1, 1)
    assert eleven["sla_share"] == pytest.approx(1 / 2)
    # 11:00 (e) and 11:01 .. 11:30 (f, until q's last event at 11:30:03)
    assert eleven["breach_minutes"] == 31
    r = got[("r", HOUR_10)]
    assert r["sla_seconds"] == 30.0
    assert (r["picked_up"], r["within_sla"], r["breach_minutes"]) == (1, 0, 1)
    assert r["sla_share"] == 0.0


def test_daily_sla_metrics_match_hand_computation(attempts) -> None:
    got = rows_by_key(sla_metrics(attempts, "day", {"q": 10.0}))
    day = got[("q", datetime(2026, 11, 2))]
    assert (day["attempts"], day["jobs"], day["picked_up"], day["within_sla"]) == (8, 7, 6, 4)
    assert day["sla_share"] == pytest.approx(4 / 7)
    # sorted [1, 2, 4, 8, 15, 70]: p50 at rank 2.5 = 6
    assert day["pickup_p50"] == pytest.approx(6.0)
    assert day["breach_minutes"] == 33
    assert day["arrival_rate"] == pytest.approx(7 / 86_400)


def test_worker_seconds_cap_gaps_and_utilization(spark, attempts) -> None:
    at0 = T0 / 1000
    decisions = spark.createDataFrame(
        [
            ("q", at0, 2, 2),
            ("q", at0 + 60, 3, 3),
            ("q", at0 + 120, 4, None),  # running unknown: current counts
            ("q", at0 + 600, 5, 5),  # 480 s gap, capped at 2 x median 60 s
        ],
        "queue string, at double, current long, running long",
    )
    got = rows_by_key(cost_metrics(decisions, attempts, "hour"))
    ten = got[("q", HOUR_10)]
    assert ten["ticks"] == 4
    assert ten["worker_seconds"] == pytest.approx(2 * 60 + 3 * 60 + 4 * 120 + 5 * 60)
    # busy: a 3 + b1 1 + b2 6 + c 2 + d 2 finished in 10:00 (e finished at 11:00:15)
    assert ten["busy_seconds"] == pytest.approx(14.0)
    assert ten["utilization"] == pytest.approx(14.0 / 1080)
    assert got[("q", HOUR_11)]["utilization"] is None


def test_invalid_events_are_rejected_with_a_reason(spark) -> None:
    rows = [
        event("queued", "q", "a", 0),
        event("done", "q", "a", 1),
        event("completed", "q", "a", 2, duration_ms=-5),
        ("queued", None, "z", T0, None, None, 1, "x1"),
        ("started", "q", "y", T0, None, None, None, None),
        event("started", "q", "p", 3, pickup_ms=-1),
    ]
    valid, rejected = split_events(spark.createDataFrame(rows, EVENT_SCHEMA))
    reasons = sorted(row.reason for row in rejected.collect())
    assert reasons == [
        "field 'duration_ms' is negative",
        "field 'pickup_ms' is negative",
        "field 'queue' is missing",
        "field 'type' is not one of queued|started|completed|failed",
    ]
    defaulted = valid.where("job_id = 'y'").first()
    assert defaulted.attempt == 1
    assert len(defaulted.event_id) == 64


def test_a_long_wait_counts_breach_minutes_in_every_hour_it_spans(spark) -> None:
    # GIVEN one job queued at 10:59:00 on a 30 s SLA and picked up at 12:00:30
    rows = [event("queued", "z", "long", 3540), event("started", "z", "long", 7230)]
    valid, _ = split_events(spark.createDataFrame(rows, EVENT_SCHEMA))
    got = rows_by_key(sla_metrics(pair_attempts(dedupe_events(valid)), "hour"))
    # THEN late from 10:59:30: one minute in 10:00, all 60 of 11:00, and 12:00 (no jobs there)
    assert got[("z", HOUR_10)]["breach_minutes"] == 1
    assert got[("z", HOUR_11)]["breach_minutes"] == 60
    noon = got[("z", datetime(2026, 11, 2, 12, 0))]
    assert (noon["attempts"], noon["breach_minutes"], noon["sla_seconds"]) == (0, 1, 30.0)
    assert noon["sla_share"] is None


def test_a_worker_measured_pickup_stands_in_for_a_missing_queued_event(spark) -> None:
    # GIVEN three starts on a 10 s SLA: one whose queued event is missing but whose worker
    # measured a 12 s pickup, one with neither, and one paired with its queued event (3 s)
    rows = [
        event("started", "s", "m", 50, pickup_ms=12_000),
        event("started", "s", "n", 60),
        event("queued", "s", "o", 70),
        event("started", "s", "o", 73, pickup_ms=2_500),
    ]
    valid, _ = split_events(spark.createDataFrame(rows, EVENT_SCHEMA))
    attempts = pair_attempts(dedupe_events(valid))
    # WHEN the attempts are paired and measured
    pickups = {row.job_id: row.pickup_seconds for row in attempts.collect()}
    got = rows_by_key(sla_metrics(attempts, "hour", {"s": 10.0}))[("s", HOUR_10)]
    # THEN the worker's pickup counts; the archive's own pair wins where both exist
    assert pickups == {"m": 12.0, "n": None, "o": 3.0}
    assert (got["attempts"], got["unknown_pickup"], got["picked_up"]) == (3, 1, 2)
    assert (got["within_sla"], got["pickup_max"]) == (1, 12.0)
    assert got["sla_share"] == pytest.approx(1 / 2)
