"""`simulate --jobs` and `simulate --archive`: recorded jobs replayed under every policy next to
"as run"; the demo's own archive reproduces the demo; a damaged archive is counted, not fatal."""

from __future__ import annotations

import gzip
import json
import math
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from queue_autoscale.cli import app
from queue_autoscale.core import DEFAULT_POLICY
from queue_autoscale.demo.agreement import TOLERANCE, simulate_archive
from queue_autoscale.sim.archive import Recorded, Tick, read_archive
from queue_autoscale.sim.as_run import (
    as_run_score,
    billed_worker_seconds,
    realized_lead,
    recorded_seconds,
    window_worker_seconds,
)
from queue_autoscale.sim.jobs import JobTrace, parse_time
from queue_autoscale.sim.replay import (
    ReplayInput,
    archive_input,
    queue_config,
    recorded_phase,
    recorded_start,
    run_replay,
)
from queue_autoscale.sim.runner import RunSpec
from queue_autoscale.sim.workload import FleetSpec, Floats

runner = CliRunner()
DEMO = Path(__file__).parent / "data" / "demo-archive"
"""A `queue-autoscale demo` run (120 s, balanced profile, 5 s ticks, 10 s provisioning; the
emulated ECS reporting pending and running as AWS does): its archive, its summary.json and its
queue config."""
START = 1_795_800_000  # 2026-11-27T17:20:00Z
SLA = 60.0


@pytest.fixture(autouse=True)
def _serial(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUEUE_AUTOSCALE_SIM_PROCESSES", "1")


def _simulate(args: Sequence[str], out: Path) -> list[dict[str, Any]]:
    result = runner.invoke(app, ["simulate", *args, "--json", str(out)])
    assert result.exit_code == 0, result.output
    rows: list[dict[str, Any]] = json.loads(out.read_text())
    for row in rows:
        row.pop("wall_seconds")
        row.pop("workload")
    return rows


def heavy_tailed_jobs(count: int = 3000, seed: int = 7) -> tuple[Floats, Floats]:
    """(arrival epoch s, duration s): Poisson arrivals at 1.5 jobs/s; durations lognormal with a
    median of 23 s and a tail past 500 s (a GPU queue's), whole milliseconds as events carry."""
    rng = np.random.default_rng(seed)
    arrivals = START + np.cumsum(rng.exponential(1 / 1.5, count))
    durations = np.minimum(np.exp(rng.normal(np.log(23.0), 1.1, count)), 3000.0)
    return np.round(arrivals, 3), np.round(durations, 3)


def _line(kind: str, job: str, at_s: float, **extra: Any) -> str:
    record = {"type": kind, "queue": "gpu", "job_id": job, "at": round(at_s * 1000), **extra}
    return json.dumps(record)


def write_archive(folder: Path, arrivals: Floats, durations: Floats) -> dict[str, int]:
    """The archive a stack would have written for these jobs (each picked up 2 s after it was
    queued), one file per hour folder; returns the number of lines per day."""
    lines: dict[str, list[str]] = {}
    for index, (arrival, duration) in enumerate(zip(arrivals, durations, strict=True)):
        job, started = f"job-{index}", arrival + 2.0
        for kind, at, extra in (
            ("queued", arrival, {}),
            ("started", started, {}),
            ("completed", started + duration, {"duration_ms": round(duration * 1000)}),
        ):
            moment = datetime.fromtimestamp(at, UTC)
            key = f"dt={moment:%Y-%m-%d}/hour={moment:%H}"
            lines.setdefault(key, []).append(_line(kind, job, at, **extra))
    for key, rows in lines.items():
        path = folder / "events" / key / "batch.jsonl.gz"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(gzip.compress(("\n".join(rows) + "\n").encode()))
    days: dict[str, int] = {}
    for key, rows in lines.items():
        days[key.split("/")[0]] = days.get(key.split("/")[0], 0) + len(rows)
    return days


def test_the_demo_archive_replays_to_one_agreement_measure(tmp_path: Path) -> None:
    # GIVEN the demo's archive and summary, replayed with the demo queue's settings
    summary = json.loads((DEMO / "summary.json").read_text())
    png = tmp_path / "replay.png"
    rows = _simulate(
        ["--archive", str(DEMO), "--queue", "demo-jobs", "--config", str(DEMO / "queues.json"),
         "--policy", DEFAULT_POLICY, "--plot", str(png)],
        tmp_path / "s.json",
    )  # fmt: skip
    ours, as_run = rows
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # THEN "as run" is what the demo measured, from the same started events
    assert as_run["policy"] == "as run" and as_run["jobs"] == summary["jobs_produced"] == 579
    # within one job: the demo and the archive time a pickup from different clocks, and a job
    # picked up within milliseconds of the SLA can fall either side of it
    jobs = summary["jobs_produced"]
    assert as_run["sla_compliance"] == pytest.approx(summary["picked_up_within_sla"], abs=1 / jobs)
    assert as_run["max_pickup_seconds"] == pytest.approx(summary["pickup_max_seconds"], abs=0.05)
    # AND "as run" bills as the demo's fleet billed (order to exit) within the demo's own
    # run-to-run spread
    spread = TOLERANCE.worker_seconds_share
    assert as_run["worker_seconds"] == pytest.approx(summary["worker_seconds"], rel=spread)
    assert ours["busy_seconds"] == pytest.approx(as_run["busy_seconds"], abs=2.0)
    # AND the demo summary's simulator line is this replay's fidelity, not a second measure
    found = simulate_archive(DEMO, queue_config(DEMO / "queues.json", "demo-jobs"))
    assert found.worker_seconds == ours["worker_seconds"]
    assert found.as_run_worker_seconds == as_run["worker_seconds"]
    assert found.worker_seconds_share == pytest.approx(
        ours["worker_seconds"] / as_run["worker_seconds"] - 1
    )
    assert found.compliance_points == pytest.approx(
        100 * (ours["sla_compliance"] - as_run["sla_compliance"])
    )
    assert 0.0 < found.ticks_within_one <= 1.0


def test_a_heavy_tailed_trace_gives_the_same_result_as_its_archive(tmp_path: Path) -> None:
    # GIVEN heavy-tailed jobs as a CSV (ISO 8601 times), as Parquet (epoch s), and as an archive
    arrivals, durations = heavy_tailed_jobs()
    assert np.median(durations) < 30 and durations.max() > 500
    iso = [datetime.fromtimestamp(a, UTC).isoformat(timespec="milliseconds") for a in arrivals]
    csv = tmp_path / "jobs.csv"
    csv.write_text(
        "queued_at,seconds\n" + "".join(f"{t},{d}\n" for t, d in zip(iso, durations, strict=True))
    )
    parquet = tmp_path / "jobs.parquet"
    pq.write_table(pa.table({"t": arrivals, "d": durations}), parquet)
    write_archive(tmp_path / "archive", arrivals, durations)
    common = ["--policy", f"{DEFAULT_POLICY},keda", "--sla", str(SLA), "--max-workers", "400"]
    # WHEN each is replayed
    by_csv = _simulate(["--jobs", str(csv), "--arrival-column", "queued_at",
                        "--duration-column", "seconds", *common], tmp_path / "a.json")  # fmt: skip
    by_parquet = _simulate(["--jobs", str(parquet), "--arrival-column", "t",
                            "--duration-column", "d", *common], tmp_path / "b.json")  # fmt: skip
    by_archive = _simulate(["--archive", str(tmp_path / "archive"), "--queue", "gpu",
                            *common], tmp_path / "c.json")  # fmt: skip
    # THEN every simulated row is the same, and the archive adds what really happened
    assert by_csv == by_parquet == by_archive[:2]
    assert by_csv[0]["jobs"] == 3000 and by_csv[0]["busy_seconds"] > 0
    as_run = by_archive[2]
    assert as_run["policy"] == "as run" and as_run["p50_pickup_seconds"] == pytest.approx(2.0)


def test_a_damaged_archive_is_counted_and_skipped(tmp_path: Path) -> None:
    # GIVEN an archive over three days, damaged: the middle day gone, a file that is not gzip,
    # lines that are not events, and a redelivered batch
    _, durations = heavy_tailed_jobs(count=600)
    spread = START + np.arange(600) * 300.0  # one job every 5 minutes: ~2 days
    archive = tmp_path / "archive"
    days = write_archive(archive, spread, np.minimum(durations, 200.0))
    assert len(days) == 3
    middle = sorted(days)[1]
    for path in sorted((archive / "events" / middle).rglob("*.gz")):
        path.unlink()
    (archive / "events" / middle).rename(tmp_path / "gone")
    first_day = archive / "events" / sorted(days)[0]
    hour = sorted(first_day.iterdir())[0]
    (hour / "truncated.jsonl.gz").write_bytes(b"\x1f\x8b\x08 not gzip at all")
    (hour / "redelivered.jsonl.gz").write_bytes((hour / "batch.jsonl.gz").read_bytes())
    (hour / "notes.txt").write_text('{"queue": "gpu"} a stray file')
    bad = [
        '{"queue": "gpu", not json',
        '["gpu", 2]',
        "{not json and not of the queue: passed over unread",
        _line("completed", "job-x", START + 10, duration_ms=-5),
        _line("queued", "job-y", START + 10, duration_ms=5),
        json.dumps({"type": "queued", "queue": "other-queue", "job_id": "z", "at": 1}),
    ]
    (hour / "bad.jsonl.gz").write_bytes(gzip.compress("\n".join(bad).encode()))
    decisions = archive / "decisions" / sorted(days)[0] / "ticks.jsonl.gz"
    decisions.parent.mkdir(parents=True)
    good = {"queue": "gpu", "at": START + 60.0, "running": 3, "target": 4}
    torn = ['{"queue": "gpu", "at": 17', json.dumps({**good, "target": None}), json.dumps(good)]
    decisions.write_bytes(gzip.compress("\n".join(torn).encode()))
    # WHEN it is read as a replay reads it
    recorded = read_archive(archive, "gpu", None, None)
    # THEN nothing crashes, every job of the two days left is there, and each damage is named
    kept = [d for d in sorted(days) if d != middle]
    jobs_left = sum(days[d] for d in kept) // 3
    assert recorded.trace.arrivals.size == pytest.approx(jobs_left, abs=2)
    skipped = recorded.skipped
    assert skipped["line is not JSON"] == 1
    assert skipped["line is not a JSON object"] == 1
    assert sum(v for k, v in skipped.items() if k.startswith("not an event")) == 2
    assert skipped[f"no events folder for day {middle.removeprefix('dt=')}"] == 1
    assert skipped["file not readable to its end (damaged or truncated gzip)"] == 1
    redelivered = len(gzip.decompress((hour / "batch.jsonl.gz").read_bytes()).splitlines())
    assert skipped["duplicate event (redelivered)"] == redelivered
    assert skipped["file not of the archive (not .jsonl.gz or .jsonl)"] == 1
    assert skipped["decision log: line is not JSON"] == 1
    assert skipped["decision log: no whole running/current and target"] == 1
    assert [(t.workers, t.target) for t in recorded.ticks] == [(3, 4)]
    # AND the CLI says so and still replays
    result = runner.invoke(app, ["simulate", "--archive", str(archive), "--queue", "gpu",
                                 "--policy", "keda", "--sla", str(SLA)])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert f"skipped {redelivered:,}: duplicate event (redelivered)" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["--archive", "/nowhere", "--queue", "q"],
                     "--archive /nowhere: no such folder", id="no-archive"),
        pytest.param(["--archive", str(DEMO)], "--archive needs --queue", id="no-queue"),
        pytest.param(["--jobs", "/nowhere.csv"],
                     "--jobs /nowhere.csv: no such file", id="no-jobs-file"),
        pytest.param(["--archive", str(DEMO), "--queue", "demo-jobs", "--from", "yesterday"],
                     "--from 'yesterday': not epoch seconds or an ISO 8601 time", id="bad-from"),
        pytest.param(["--archive", str(DEMO), "--queue", "demo-jobs", "--scenario", "steady"],
                     "drop --scenario and --trace", id="two-sources"),
        pytest.param(["--archive", str(DEMO), "--queue", "demo-jobs", "--config",
                      str(DEMO / "queues.json"), "--parameter", "/stack/queues"],
                     "give --config FILE or --parameter NAME, not both", id="two-configs"),
        pytest.param(["--archive", str(DEMO), "--queue", "nope"],
                     f"--archive {DEMO}: queue 'nope': no job queued", id="unknown-queue"),
        pytest.param(["--archive", str(DEMO), "--queue", "demo-jobs", "--from", "2020-01-01",
                      "--to", "2020-01-02"],
                     "no job queued in the window --from 2020-01-01 --to 2020-01-02",
                     id="empty-window"),
        pytest.param(["--archive", str(DEMO), "--queue", "other", "--config",
                      str(DEMO / "queues.json")],
                     "no queue 'other' in it (queues: demo-jobs)", id="queue-not-in-config"),
    ],
)  # fmt: skip
def test_a_bad_replay_request_is_one_line(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["simulate", *args])
    assert result.exit_code == 2
    assert message in result.output


def test_the_window_keeps_the_jobs_queued_in_it(tmp_path: Path) -> None:
    arrivals, durations = heavy_tailed_jobs(count=400)
    write_archive(tmp_path / "a", arrivals, durations)
    lo, hi = float(arrivals[100]), float(arrivals[300])
    recorded = read_archive(tmp_path / "a", "gpu", lo, hi)
    assert recorded.trace.arrivals.size == 200
    assert parse_time("2026-11-27T17:20:00Z", "--from") == START
    assert parse_time(str(START), "--from") == START


def test_the_replay_starts_from_the_fleet_the_decision_log_shows(tmp_path: Path) -> None:
    # GIVEN an archive whose controller ran 7 workers when the first job was queued
    arrivals, durations = heavy_tailed_jobs(count=200)
    write_archive(tmp_path, arrivals, durations)
    ticks = [
        {"queue": "gpu", "at": float(arrivals[0]) - 5 + 15 * i, "running": 7, "current": 7,
         "target": 7} for i in range(20)
    ]  # fmt: skip
    day = datetime.fromtimestamp(arrivals[0], UTC)
    path = tmp_path / f"decisions/dt={day:%Y-%m-%d}/t.jsonl.gz"
    path.parent.mkdir(parents=True)
    path.write_bytes(gzip.compress("\n".join(json.dumps(t) for t in ticks).encode()))
    recorded = read_archive(tmp_path, "gpu", None, None)
    # THEN the replay starts the policies at 7 (ours keeps them through its first tick)
    assert recorded_start(recorded) == 7
    spec = RunSpec(sla_seconds=SLA)
    replay = run_replay(ReplayInput(recorded.trace, spec, None, recorded), [DEFAULT_POLICY])
    assert replay.comparison.results[0].series.billed[0] == 7
    assert replay.as_run is not None and replay.as_run.peak_workers == 7
    assert replay.as_run_fleet is not None and replay.as_run_fleet[10] == 7


def test_a_job_trace_with_an_empty_duration_names_its_row(tmp_path: Path) -> None:
    # GIVEN a CSV whose second data row has no duration
    trace = tmp_path / "jobs.csv"
    trace.write_text("arrival,duration\n1767225600,2.5\n1767225601,\n1767225602,1\n")
    result = runner.invoke(app, ["simulate", "--jobs", str(trace), "--policy", DEFAULT_POLICY])
    # THEN the error names that row and field, not a setting derived from it
    assert result.exit_code == 2
    assert "job 1: duration = nan s: must be a finite number >= 0" in result.output


def test_a_message_handed_back_and_delivered_again_is_replayed_once(tmp_path: Path) -> None:
    # GIVEN a job queued at 0 s, prefetched by a worker that stopped and handed it back, then
    # delivered again as attempt 2 (no queued event of its own; its worker measured 10 s pickup)
    records = [
        _line("queued", "r", START),
        _line("started", "r", START + 10, attempt=2, pickup_ms=10_000),
        _line("completed", "r", START + 13, attempt=2, duration_ms=3_000),
    ]
    path = tmp_path / "events/dt=2026-11-27/hour=17/b.jsonl.gz"
    path.parent.mkdir(parents=True)
    path.write_bytes(gzip.compress("\n".join(records).encode()))
    recorded = read_archive(tmp_path, "gpu", None, None)
    # THEN it is one job, arriving when it was first queued, picked up 10 s later, run for 3 s
    assert recorded.trace.arrivals.tolist() == [START]
    assert recorded.trace.durations.tolist() == [3.0] and recorded.pickups.tolist() == [10.0]
    assert recorded.skipped == {
        "attempt never started, superseded by a later attempt (redelivered)": 1
    }


ORDER_AT_5 = [Tick(1000.0, 1, 1), Tick(1005.0, 1, 3), Tick(1010.0, 1, 3), Tick(1020.0, 3, 3)]
"""A log that orders 1 -> 3 workers at t=5 s (epoch 1000 is t=0) and keeps them."""


def _ordered(jobs: list[tuple[float, float, float]]) -> Recorded:
    """`jobs` as (arrival, pickup, duration) from t=0, recorded under `ORDER_AT_5`."""
    table = np.array(jobs)
    trace = JobTrace("q", table[:, 0] + 1000.0, table[:, 2])
    return Recorded(trace, table[:, 1], ticks=ORDER_AT_5, end_epoch=1030.0)


def test_the_world_lead_is_the_orders_first_extra_job_as_recorded() -> None:
    # GIVEN one worker busy with 1 s jobs back to back from t=0, 20 jobs queued at t=0, and an
    # order 1 -> 3 at t=5 whose two tasks run their first jobs at t=17 (12 s after the order)
    one = [(0.0, float(i), 1.0) for i in range(17)]  # (arrival, pickup, duration)
    new = [(0.0, 17.0, 1.0), (0.0, 17.0, 1.0), (0.0, 18.0, 1.0)]
    recorded = _ordered(one + new)
    trace, ticks = recorded.trace, ORDER_AT_5
    # THEN the realized lead is 12 s, the order to the first job beyond one worker's
    assert realized_lead(recorded) == pytest.approx(12.0)
    # AND an order given with nothing waiting beyond the fleet is not a sample
    idle = Recorded(JobTrace("q", np.array([1000.0]), np.array([1.0])), np.array([0.0]),
                    ticks=ticks, end_epoch=1030.0)  # fmt: skip
    assert realized_lead(idle) is None
    # AND an order taken back (3 -> 1 at t=8) before its tasks ran a job is not a sample
    taken_back = [ticks[0], ticks[1], Tick(1008.0, 1, 1), Tick(1020.0, 1, 1)]
    assert realized_lead(Recorded(trace, recorded.pickups, ticks=taken_back)) is None


def test_jobs_back_to_back_on_one_worker_within_a_millisecond_are_not_two_at_once() -> None:
    # GIVEN the same worker, order and landing as above, but each recorded start and duration
    # cut to the millisecond: every job's end lies 1 ms past the next one's start
    one = [(0.0, i * 1.001, 1.002) for i in range(17)]  # (arrival, pickup, duration)
    new = [(0.0, 17.017, 1.0), (0.0, 17.017, 1.0), (0.0, 18.0, 1.0)]
    recorded = _ordered(one + new)
    # THEN the lead is still the order to the new tasks' first jobs, 12.017 s, not the order to
    # the worker's next job (1.01 s), which read as a second job running at once
    assert realized_lead(recorded) == pytest.approx(12.017)


def test_as_run_bills_the_replays_own_seconds_beside_the_simulated_rows() -> None:
    # GIVEN a log whose first decision, 2 s after the first arrival's second, found 1 worker
    # running and kept it, and which ordered 3 at 12 s and kept them at 17 s
    # (two jobs, the last queued at 15.2 s and started at 19.4 s)
    trace = JobTrace("q", np.array([1000.5, 1015.2]), np.array([1.0, 1.0]))
    ticks = [Tick(1002.0, 1, 1), Tick(1007.0, 1, 1), Tick(1012.0, 1, 3), Tick(1017.0, 3, 3)]
    recorded = Recorded(trace, np.array([0.0, 4.2]), ticks=ticks, end_epoch=1030.0)
    # THEN the report's bill counts the last decision one more gap: 5 + 5 + 15 + 15 = 40
    assert as_run_score(recorded, 30.0).worker_seconds == pytest.approx(40.0)
    assert billed_worker_seconds(ticks) == pytest.approx(40.0)
    # AND a replay spans the run as the simulator spans one, to the second its last job
    # started (20 s; the last arrival's second ends at 16 s), and bills the fleet in those
    # seconds: 1 worker until 12 s (the first 2 s the one the first decision found), then 3
    assert recorded_seconds(recorded, 1000) == 20
    assert window_worker_seconds(recorded, 1000, 20) == pytest.approx(12 * 1 + 8 * 3)
    windowed = as_run_score(recorded, 30.0, window=(1000, 20))
    assert windowed.worker_seconds == pytest.approx(36.0)


def test_the_replay_ticks_at_the_recorded_controllers_phase(tmp_path: Path) -> None:
    # GIVEN an archive whose first job is queued at 0.2 s past a second and whose controller
    # ticks every 15 s from 12 s after that second
    arrivals, durations = heavy_tailed_jobs(count=200)
    write_archive(tmp_path, arrivals, durations)
    second = math.floor(arrivals[0])
    ticks = [
        {"queue": "gpu", "at": second + 12.0 + 15 * i, "running": 7, "current": 7, "target": 7}
        for i in range(20)
    ]
    day = datetime.fromtimestamp(arrivals[0], UTC)
    path = tmp_path / f"decisions/dt={day:%Y-%m-%d}/t.jsonl.gz"
    path.parent.mkdir(parents=True)
    path.write_bytes(gzip.compress("\n".join(json.dumps(t) for t in ticks).encode()))
    recorded = read_archive(tmp_path, "gpu", None, None)
    # WHEN it is replayed
    replay = run_replay(
        archive_input(tmp_path, "gpu", (None, None), RunSpec(sla_seconds=SLA), None),
        [DEFAULT_POLICY],
        record_decisions=True,
    )
    # THEN the simulated controller ticks when the recorded one did: 12 s, 27 s, ... after the
    # first arrival's second, the replay's time 0, not at 0 s, 15 s, ... (at a step, a tick 12 s
    # early has seen none of what the recorded one read)
    assert recorded_phase(recorded, 15) == 12
    base = FleetSpec().base_epoch
    (decisions,) = replay.comparison.decisions.values()
    assert [d.at - base for d in decisions[:3]] == [12.0, 27.0, 42.0]


def test_the_demo_archive_replay_is_within_the_demos_own_spread(tmp_path: Path) -> None:
    # GIVEN the demo's archive replayed with the demo's settings, the world's lead as recorded
    found = simulate_archive(DEMO, queue_config(DEMO / "queues.json", "demo-jobs"))
    # THEN it agrees with the run within the demo's measured ten-run spread
    # (results/demo_agreement_predictive.md: 0.2 points, 17 %, 96 %), under the policy the
    # decision log names
    assert read_archive(DEMO, "demo-jobs", None, None).policy == DEFAULT_POLICY
    assert found.within(TOLERANCE), found
    # AND closer than that: the replay ticks at the run's phase and lands its tasks after the
    # recorded lead, so it orders the run's own fleet at the spike (341 worker-s as run)
    assert found.ticks_within_one == 1.0
    assert abs(found.worker_seconds_share) < 0.02 and found.compliance_points == 0.0
