"""What the `flash-crowd` rows ask of any controller that has not been told the crowd comes.

`flash-crowd` is 5 jobs/s with one unannounced 20x step (100 jobs/s for 5 minutes from 0:30).
Workers ordered for it land a lead after the first tick that can see it, so the jobs of the
crowd's first L + I seconds are picked up in time only by the workers standing at its onset.
For each validation row, SLA and target this finds N*: the fewest workers standing at the onset
with which any controller could meet the target, in a model that favours the controller
everywhere it can:

- every job before the onset is on time, and at the onset the queue is empty and the N
  workers are free;
- the tick at the onset sees none of the crowd (its jobs arrive within the onset's second, on
  the verdict's 10 s ticks from time 0), so the first order is placed at onset + I and lands
  at the earliest, onset + L + I (jitter 0), with as many workers as the queue needs: every job
  still waiting starts then;
- the N workers serve the crowd's jobs first come, first served until then.

It counts the late jobs of that window (start - arrival > S) on the verdict's own jobs (same
seed, arrival times and job times, `sim/tuning.Row`, `RunSpec(provision_jitter_seconds=10)`)
and compares N* with the least static fleet that meets the same SLA and target on an hour of
steady 5 jobs/s (`StaticPolicy` in the simulator): the fleet the rows' first 30 minutes ask
for with hindsight. A controller that reads only the traffic sees the same 30 minutes before a
crowd as on a steady 5 jobs/s hour, so to stand N* at the onset it stands N* on that hour too,
at N* / static times the hindsight static fleet's worker-seconds (the verdict allows 1.03).
The last column is N* for a controller that acts within the onset's own second (I -> 0):
what the 10 s interval alone costs.

    .venv/bin/python benchmarks/flash_crowd_bound.py [--seeds 1 2 3] [--out FILE]

Writes `results/flash_crowd_bound.md`.
"""

from __future__ import annotations

import argparse
import heapq
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "functions"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import header, write  # noqa: E402

from queue_autoscale.sim.engine import run_policy  # noqa: E402
from queue_autoscale.sim.peers.static import StaticPolicy  # noqa: E402
from queue_autoscale.sim.runner import RunSpec  # noqa: E402
from queue_autoscale.sim.scores import scores_at  # noqa: E402
from queue_autoscale.sim.tuning import Row  # noqa: E402
from queue_autoscale.sim.workload import build_workload  # noqa: E402

ONSET_SECONDS = 1800
"""The crowd's onset in the scenario (sim/arrivals.py `_flash_crowd`), s from the row's start."""
QUIET_RATE = 5.0
"""The rows' rate outside the crowd, jobs/s."""
SLAS = (10.0, 30.0, 60.0)
"""The SLAs below the reach L + I, where a crowd's first jobs are due before any order lands."""
TARGETS = (0.95, 0.99, 0.999)
MOST_STATIC = 40


def late_jobs(
    arrivals: Sequence[float],
    durations: Sequence[float],
    onset: float,
    land: float,
    standing: int,
    sla: float,
) -> int:
    """Jobs of the window (arriving in [onset, land), in order) that start more than `sla` s
    after arriving, with `standing` workers free at `onset` serving first come, first served
    and every job still waiting starting at `land` (s)."""
    free = [onset] * standing
    late = 0
    for arrived, duration in zip(arrivals, durations, strict=True):
        start = max(arrived, free[0]) if free else land
        if start < land:
            heapq.heapreplace(free, start + duration)
        else:
            start = land
        if start - arrived > sla:
            late += 1
    return late


def least_standing(
    arrivals: Sequence[float],
    durations: Sequence[float],
    onset: float,
    land: float,
    sla: float,
    budget: int,
) -> int:
    """N*: the fewest standing workers leaving at most `budget` of the window's jobs late."""
    standing = 0
    while late_jobs(arrivals, durations, onset, land, standing, sla) > budget:
        standing += 1
    return standing


def static_need(sla: float, target: float, seed: int) -> int | None:
    """The least static fleet meeting `target` at `sla` on an hour of steady `QUIET_RATE`
    (Poisson, seeded), with the verdict's set-up; None above `MOST_STATIC`."""
    counts = np.random.default_rng(seed).poisson(QUIET_RATE, 3600).astype(np.int64)
    spec = replace(
        RunSpec(provision_jitter_seconds=10.0), seed=seed, sla_seconds=sla, percentile=target
    )
    workload = build_workload("steady-5", counts, spec.fleet(), seed, spec.warmup_seconds)
    settings = spec.settings()
    for size in range(1, MOST_STATIC + 1):
        policy = StaticPolicy(settings, counts, size=size)
        score = scores_at(run_policy(workload, policy, spec.fleet(), size), (sla,))[sla]
        if score.sla_compliance >= target:
            return size
    return None


def rows_for(seed: int) -> list[str]:
    """The table's lines for one flash-crowd row."""
    row = Row("flash-crowd", seed)
    counts = row.counts(Path())  # a scenario row: no trace
    spec = replace(RunSpec(provision_jitter_seconds=10.0), seed=row.seed)
    workload = build_workload(row.label, counts, spec.fleet(), row.seed, spec.warmup_seconds)
    settings = spec.settings()
    lead, interval = spec.provision_delay_seconds, settings.evaluation_interval_seconds
    onset = float(workload.warmup_seconds + ONSET_SECONDS)
    arrivals = np.asarray(workload.arrivals)
    scored = int(np.count_nonzero(arrivals >= workload.warmup_seconds))
    window = (arrivals >= onset) & (arrivals < onset + lead + interval)
    times = arrivals[window].tolist()
    durations = np.asarray(workload.service)[window].tolist()
    lines = []
    for sla in SLAS:
        for target in TARGETS:
            budget = int((1.0 - target) * scored)
            ticking = least_standing(times, durations, onset, onset + lead + interval, sla, budget)
            instant = least_standing(times, durations, onset, onset + lead, sla, budget)
            need = static_need(sla, target, seed)
            ratio = f"{ticking / need:.1f}" if need else "n/a"
            lines.append(
                f"| {row.label} | {sla:g} | {target:.1%} | {budget:,} | {ticking} | {need} | "
                f"{ratio} | {instant} |"
            )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """Write the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--out", default="flash_crowd_bound.md")
    args = parser.parse_args(argv)
    lines = [
        header("The standing fleet a flash crowd asks of a controller that reacts"),
        "| row | SLA s | target | late jobs allowed | N* at the onset (10 s ticks) | "
        "static at 5 jobs/s | N* / static | N* acting at once |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for seed in args.seeds:
        lines += rows_for(seed)
    write(args.out, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
