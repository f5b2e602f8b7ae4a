"""The replay reads the archive by the report's rules: `simulate --archive` (no Spark) and the
Spark job pair the same attempts from the same lines, and bill the same worker-seconds.

The replay (`queue_autoscale.sim.archive`) cannot import glue_jobs (Spark), nor glue_jobs the
Lambda code, so the rules live twice; this test is what keeps them one definition."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from glue_jobs.compact import compact
from glue_jobs.io import read_decisions, read_events
from glue_jobs.transforms.cost import worker_seconds
from glue_jobs.transforms.events import dedupe_events, pair_attempts, split_events
from queue_autoscale.adapters.firehose import pack_records
from queue_autoscale.adapters.s3 import encode_lines
from queue_autoscale.sim.archive import read_archive
from queue_autoscale.sim.as_run import as_run_score

T0 = 1_795_800_000_000  # 2026-11-27T17:20:00Z, ms


def ev(kind: str, job: str, at_s: float, attempt: int = 1, **extra: Any) -> dict[str, Any]:
    return {"type": kind, "queue": "q", "job_id": job, "attempt": attempt,
            "at": T0 + round(at_s * 1000), **extra}  # fmt: skip


def lines() -> list[dict[str, Any]]:
    out = []
    for i in range(20):  # plain jobs
        q = 3.0 * i
        out += [ev("queued", f"j{i}", q), ev("started", f"j{i}", q + 1.5),
                ev("completed", f"j{i}", q + 4, duration_ms=2500 + 10 * i)]  # fmt: skip
    out += [  # failed wins over completed; of two completed, the later; the earliest queued
        ev("queued", "fc", 1), ev("started", "fc", 2),
        ev("completed", "fc", 4, duration_ms=2000), ev("failed", "fc", 3, duration_ms=1000),
        ev("queued", "cc", 5), ev("queued", "cc", 6), ev("started", "cc", 9),
        ev("completed", "cc", 10, duration_ms=1000), ev("completed", "cc", 12, duration_ms=3000),
        # a retry: attempt 2 queued again, at its own time
        ev("queued", "r", 7), ev("started", "r", 8), ev("failed", "r", 9, duration_ms=900),
        ev("queued", "r", 20, attempt=2), ev("started", "r", 26, attempt=2),
        ev("completed", "r", 30, attempt=2, duration_ms=4000),
        ev("queued", "late", 440), ev("started", "late", 441),
        ev("completed", "late", 445, duration_ms=4000),
    ]  # fmt: skip
    return out


def write(folder: Path, records: list[dict[str, Any]], name: str) -> None:
    path = folder / "events/dt=2026-11-27/hour=17" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress("\n".join(json.dumps(r) for r in records).encode()))


@pytest.mark.spark
def test_the_replay_and_the_report_pair_the_same_attempts(spark: Any, tmp_path: Path) -> None:
    # GIVEN an archive with redelivered batches, competing finishing events and a retry
    records = lines()
    write(tmp_path, records, "a.jsonl.gz")
    write(tmp_path, records[:30], "a-redelivered.jsonl.gz")
    # WHEN the report's transforms and the replay read it
    valid, _ = split_events(read_events(spark, str(tmp_path)))
    rows = pair_attempts(dedupe_events(valid)).collect()
    report = sorted(
        (r["queued_at_ms"] / 1000.0, r["duration_ms"] / 1000.0, r["pickup_seconds"]) for r in rows
    )
    recorded = read_archive(tmp_path, "q", None, None)
    replay = sorted(
        zip(recorded.trace.arrivals.tolist(), recorded.trace.durations.tolist(),
            recorded.pickups.tolist(), strict=True)
    )  # fmt: skip
    # THEN they are the same attempts, arrivals, durations and pickups
    assert len(replay) == len(report) == 25
    # pytest 9's approx compares flat sequences only: row by row, field by field
    assert [v for row in replay for v in row] == pytest.approx([v for row in report for v in row])
    assert recorded.skipped["duplicate event (redelivered)"] == 30


@pytest.mark.spark
def test_the_as_run_row_bills_the_reports_ticks_from_the_order(spark: Any, tmp_path: Path) -> None:
    # GIVEN a decision log with an irregular gap (a controller outage) and a change of fleet
    write(tmp_path, lines(), "a.jsonl.gz")
    gaps = [0, 15, 30, 45, 60, 400, 415, 430]
    ticks = [{"queue": "q", "at": T0 / 1000 + g, "running": 2 + (g > 100), "current": 3,
              "target": 3} for g in gaps]  # fmt: skip
    path = tmp_path / "decisions/dt=2026-11-27/t.jsonl.gz"
    path.parent.mkdir(parents=True)
    path.write_bytes(gzip.compress("\n".join(json.dumps(t) for t in ticks).encode()))
    decisions = read_decisions(spark, str(tmp_path))
    assert decisions is not None
    # WHEN both bill it
    billed = worker_seconds(decisions, "day").collect()
    recorded = read_archive(tmp_path, "q", None, None)  # its window holds every tick
    # THEN they cut the ticks alike (15 s ticks, the 340 s gap capped at 30 s); the report bills
    # each tick's running tasks, "as run" the desired count (a task from its order, as the
    # simulator bills), here 3 throughout
    (day,) = billed
    assert day["worker_seconds"] == 2 * (15 * 4 + 30) + 3 * (15 * 2 + 15)
    assert day["worker_seconds"] / day["mean_workers"] == 15 * 7 + 30
    assert as_run_score(recorded, 30.0).worker_seconds == pytest.approx(3 * (15 * 7 + 30))


@pytest.mark.spark
def test_the_compacted_archive_replays_as_the_raw_one(spark: Any, tmp_path: Path) -> None:
    # GIVEN the raw archive (with a redelivered batch) and the report's compaction of it
    records = lines()
    raw = tmp_path / "raw"
    write(raw, records, "a.jsonl.gz")
    write(raw, records[:30], "a-redelivered.jsonl.gz")
    compact(spark, str(raw), str(tmp_path / "out"), None)
    assert any((tmp_path / "out" / "compacted_events").rglob("*.parquet"))
    # WHEN the replay reads each
    from_raw = read_archive(raw, "q", None, None)
    from_parquet = read_archive(tmp_path / "out", "q", None, None)

    # THEN it finds the same attempts (compaction already dropped the duplicates)
    def rows(recorded: Any) -> list[tuple[float, float, float]]:
        return sorted(zip(recorded.trace.arrivals.tolist(), recorded.trace.durations.tolist(),
                          recorded.pickups.tolist(), strict=True))  # fmt: skip

    assert len(rows(from_parquet)) == 25
    assert rows(from_parquet) == rows(from_raw)
    assert from_parquet.skipped == {} and from_raw.skipped["duplicate event (redelivered)"] == 30


@pytest.mark.spark
def test_firehose_objects_read_as_one_object_per_batch(spark: Any, tmp_path: Path) -> None:
    # GIVEN the same events archived two ways: one object per batch (the bucket writer) and
    # as the events delivery stream files them on AWS: the batches' records (each whole JSON
    # lines) concatenated into one gzipped object per buffer, named by Firehose
    records = lines()
    batches = [records[:20], records[20:45], records[45:]]
    per_batch, streamed = tmp_path / "per-batch", tmp_path / "streamed"
    for number, batch in enumerate(batches):
        write(per_batch, batch, f"b{number}.jsonl.gz")
    concatenated = b"".join(
        record for batch in batches for record in pack_records(encode_lines(batch), 500)
    )
    path = streamed / "events/dt=2026-11-27/hour=17"
    path.mkdir(parents=True)
    name = "qa-events-1-2026-11-27-17-25-00-0f6bb2a4-7e43-4f4e-a5a4-2d5f5b0e9d11.jsonl.gz"
    (path / name).write_bytes(gzip.compress(concatenated))

    # WHEN the report's reader and the replay read both
    def attempts(folder: Path) -> list[Any]:
        valid, rejected = split_events(read_events(spark, str(folder)))
        assert rejected.count() == 0
        return sorted(tuple(r) for r in pair_attempts(dedupe_events(valid)).collect())

    # THEN the stream's object gives the same attempts, to both readers
    assert attempts(streamed) == attempts(per_batch)
    assert len(attempts(streamed)) == 25
    replayed = read_archive(streamed, "q", None, None)
    assert (
        replayed.trace.arrivals.tolist()
        == read_archive(per_batch, "q", None, None).trace.arrivals.tolist()
    )
    assert replayed.skipped == {}
