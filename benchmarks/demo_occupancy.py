"""How long a demo worker is occupied per job beyond the job itself, from a run's own records.

    .venv/bin/python benchmarks/demo_occupancy.py OUT/run-1 OUT/run-2 ...

For each `queue-autoscale demo` output folder: from the archive's started/completed events, the
jobs running at once (0.1 s bins); from its decision log, the running tasks. Over the bins where
at least twice as many jobs waited (queued, not started) as tasks ran, every task should be
busy: occupancy = job-seconds / task-seconds there, and the gap per job = the idle task-seconds
over the jobs started there. "steady fleet" leaves out the 5 s after the running count rose
(a new worker process still starting), "after a start" is those 5 s alone.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

BINS_PER_SECOND = 10
AFTER_START_SECONDS = 5


def _read(folder: Path, kind: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for path in sorted((folder / "archive" / kind).rglob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as stream:
            rows += [json.loads(line) for line in stream]
    return rows


def occupancy(folder: Path) -> list[str]:
    """One line per phase: task-seconds, job-seconds, occupancy, jobs, gap per job."""
    seen: set[object] = set()
    times: dict[str, dict[tuple[object, object], float]] = {"queued": {}, "started": {}}
    times["completed"] = {}
    for event in _read(folder, "events"):
        if event["event_id"] in seen or event["type"] not in times:
            continue
        seen.add(event["event_id"])
        times[str(event["type"])][(event["job_id"], event["attempt"])] = float(event["at"]) / 1e3
    queued, started, done = times["queued"], times["started"], times["completed"]
    t0 = min(queued.values())
    size = int((max(done.values()) - t0 + 2) * BINS_PER_SECOND)

    def at(t: float) -> int:
        return min(size - 1, max(0, int((t - t0) * BINS_PER_SECOND)))

    busy, waiting, tasks = np.zeros(size), np.zeros(size), np.zeros(size)
    for key, start in started.items():
        if key in done:
            busy[at(start) : at(done[key])] += 1
    for key, arrived in queued.items():
        waiting[at(arrived) : at(started.get(key, t0 + size))] += 1
    ticks = sorted(_read(folder, "decisions"), key=lambda d: float(d["at"]))
    for tick, after in zip(ticks, [*ticks[1:], None], strict=True):
        end = float(after["at"]) if after else float(tick["at"]) + 5
        tasks[at(float(tick["at"])) : at(end)] = int(tick["running"])
    full = (waiting >= 2 * tasks) & (tasks > 0)
    rising = np.zeros(size, dtype=bool)
    for i in np.nonzero(np.diff(tasks) > 0)[0]:
        rising[i : i + AFTER_START_SECONDS * BINS_PER_SECOND] = True
    lines = []
    for name, mask in (("backlogged", full), ("steady fleet", full & ~rising),
                       ("after a start", full & rising)):  # fmt: skip
        task_s = tasks[mask].sum() / BINS_PER_SECOND
        job_s = np.minimum(busy, tasks)[mask].sum() / BINS_PER_SECOND
        jobs = sum(1 for s in started.values() if mask[at(s)])
        gap = (task_s - job_s) / jobs if jobs else 0.0
        share = job_s / task_s if task_s else 0.0
        lines.append(
            f"| {folder.name} | {name} | {task_s:.0f} | {job_s:.0f} | {share:.2f} | {jobs} "
            f"| {gap:.3f} |"
        )
    return lines


def main() -> None:
    """Print the table for the folders given."""
    print("| run | bins | task-s | job-s | occupancy | jobs | gap per job, s |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for folder in sys.argv[1:]:
        print("\n".join(occupancy(Path(folder))))


if __name__ == "__main__":
    main()
