"""A week of 1M jobs a day replayed from a raw archive under the default policy and KEDA
(goal: minutes).

Writes a synthetic archive (queued, started and completed events per job, each with its
event_id as the ingest function archives it, one gzip file per hour, diurnal arrivals,
lognormal job times), then times the two stages of `simulate --archive`:
reading the archive (JSON lines -> events.Event -> de-duplication -> attempts) and the
simulation of each policy. Peak memory is the process's maximum resident set.

Run: nice -n 10 .venv/bin/python benchmarks/replay_week.py [--days 7] [--jobs-per-day 1000000]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "functions"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import RESULTS, header, write

from queue_autoscale.core import DEFAULT_POLICY
from queue_autoscale.sim.archive import read_archive
from queue_autoscale.sim.as_run import median_tick_gap
from queue_autoscale.sim.replay import ReplayInput, replay_spec, run_replay
from queue_autoscale.sim.runner import RunSpec

START = 1_767_225_600  # 2026-01-01T00:00:00Z
QUEUE = "bench"


def jobs(days: int, per_day: int, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """(arrival epoch s, duration s): a diurnal Poisson process (peak 3x trough), lognormal jobs
    with a 0.5 s median."""
    rng = np.random.default_rng(seed)
    seconds = np.arange(days * 86_400)
    shape = 1.0 + 0.5 * np.sin(2 * np.pi * (seconds % 86_400) / 86_400 - np.pi / 2)
    rate = shape * per_day / 86_400 / shape[:86_400].mean()
    counts = rng.poisson(rate)
    arrivals = np.repeat(seconds, counts) + rng.random(int(counts.sum()))
    durations = np.exp(rng.normal(np.log(0.5), 0.8, arrivals.size))
    return START + arrivals, np.round(durations, 3)


def write_archive(folder: Path, arrivals: np.ndarray, durations: np.ndarray) -> int:
    """One events file per hour (each event in the hour its `at` falls in); returns events."""
    hours = ((arrivals - START) // 3600).astype(np.int64)
    edges = np.searchsorted(hours, np.arange(hours.max() + 2))
    dump = json.dumps
    count = 0
    for hour in range(edges.size - 1):
        lo, hi = edges[hour], edges[hour + 1]
        moment = datetime.fromtimestamp(START + hour * 3600, UTC)
        path = folder / f"events/dt={moment:%Y-%m-%d}/hour={moment:%H}/batch.jsonl.gz"
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = []
        for index in range(lo, hi):
            at = float(arrivals[index])
            job = f"j{index}"
            start = at + 0.5
            event = {"queue": QUEUE, "job_id": job, "attempt": 1}
            lines.append(dump({"type": "queued", **event, "at": int(at * 1000),
                               "event_id": f"q{index}"}))  # fmt: skip
            lines.append(dump({"type": "started", **event, "at": int(start * 1000),
                               "event_id": f"s{index}"}))  # fmt: skip
            lines.append(dump({"type": "completed", **event,
                               "at": int((start + durations[index]) * 1000),
                               "duration_ms": int(durations[index] * 1000),
                               "event_id": f"c{index}"}))  # fmt: skip
        count += len(lines)
        with gzip.open(path, "wt", compresslevel=1) as handle:
            handle.write("\n".join(lines) + "\n")
    return count


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--jobs-per-day", type=int, default=1_000_000)
    parser.add_argument("--out", type=Path, default=RESULTS / "replay_week.md")
    args = parser.parse_args()
    os.environ["QUEUE_AUTOSCALE_SIM_PROCESSES"] = "1"  # one core: each stage timed alone
    arrivals, durations = jobs(args.days, args.jobs_per_day)
    with tempfile.TemporaryDirectory(prefix="replay-week-") as scratch:
        folder = Path(scratch)
        began = time.perf_counter()
        events = write_archive(folder, arrivals, durations)
        written = time.perf_counter() - began
        size = sum(p.stat().st_size for p in folder.rglob("*.gz"))
        began, cpu = time.perf_counter(), time.process_time()
        recorded = read_archive(folder, QUEUE, None, None)
        read, read_cpu = time.perf_counter() - began, time.process_time() - cpu
    spec = RunSpec(sla_seconds=30.0, percentile=0.95, max_workers=1000)
    spec, _ = replay_spec(spec, recorded.trace, None, median_tick_gap(recorded.ticks))
    began, cpu = time.perf_counter(), time.process_time()
    run = run_replay(ReplayInput(recorded.trace, spec, None, recorded), [DEFAULT_POLICY, "keda"])
    simulated, simulated_cpu = time.perf_counter() - began, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rows = [
        f"| write the archive (not part of a replay) | {written:,.0f} s | |",
        f"| read the archive: {events:,} events, {size / 2**20:,.0f} MiB gzip -> "
        f"{recorded.trace.arrivals.size:,} attempts | {read:,.0f} s | {read_cpu:,.0f} s |",
    ]
    for result in run.comparison.results:
        rows.append(f"| simulate {result.policy} ({result.end_seconds:,} s simulated) | "
                    f"{result.wall_seconds:,.0f} s | |")  # fmt: skip
    rows.append(
        f"| both policies, with the workload built and scored | {simulated:,.0f} s | "
        f"{simulated_cpu:,.0f} s |"
    )
    total, total_cpu = read + simulated, read_cpu + simulated_cpu
    rows.append(
        f"| `simulate --archive` end to end (read + both policies) | {total:,.0f} s | "
        f"{total_cpu:,.0f} s |"
    )
    load = os.getloadavg()[0]
    lines = [
        header(f"Replay: {args.days} days of {args.jobs_per_day:,} jobs a day", ("numpy",)),
        "| stage | wall time | CPU time |",
        "|---|---:|---:|",
        *rows,
        "",
        f"Peak resident memory of the whole run (archive writing included): {peak:,.0f} MiB. "
        f"Load average at the end: {load:.1f} on {os.cpu_count()} cores (a shared machine: "
        "wall time above CPU time is waiting for a core).",
        "",
    ]
    write(str(args.out), "\n".join(lines))


if __name__ == "__main__":
    main()
