"""When the cells our policy misses lose their jobs: the late jobs of each missed cell in episodes.

For every cell of a set whose target `predictive` misses in the verdict's file
(`results/policy_frontier.md`, or `--verdict`), this runs the cell as the verdict runs it
(`sim.tuning.row_runs`: the same arrivals, job times and start-up jitter) and groups its late
jobs into episodes: late jobs whose arrivals lie more than a horizon H = L + I + S apart belong
to different episodes, as no order placed for one could still serve the other. It writes, per
cell, the late jobs against those the target allows, each episode's start (scored seconds) and
size, and whether the target would be met without the first episode.

Two more runs of each cell say what the first episode depends on, each with the scored jobs
unchanged:

- *ticks 5 s later*: the controller's ticks fall 5 s into each interval instead of on its
  start. The scenarios' steps fall on whole minutes, where a tick reads none of them yet.
- *warm-up from the trace* (NASA rows only): the 600 s warm-up replays the trace's own 600 s
  before the day, not Poisson arrivals at the first five minutes' rate.

Only the target is judged here; the verdict's other conditions are not.

    .venv/bin/python benchmarks/miss_episodes.py [--verdict FILE] [--limit N] [--out FILE]

Forked over the machine's cores (`sim.runner.parallel_map`).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "functions"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import RESULTS, header, write  # noqa: E402
from cell_jitter import find_row  # noqa: E402
from frontier_verdict import DEFAULT_TRACE, run_spec  # noqa: E402

from queue_autoscale.core.predictive_knobs import horizon_seconds  # noqa: E402
from queue_autoscale.sim.arrivals import arrival_times, read_trace, service_times  # noqa: E402
from queue_autoscale.sim.engine import run_policy  # noqa: E402
from queue_autoscale.sim.policies import initial_workers, make_policy  # noqa: E402
from queue_autoscale.sim.runner import RunSpec, parallel_map  # noqa: E402
from queue_autoscale.sim.tuning import (  # noqa: E402
    DAY_SECONDS,
    NASA_SCALE,
    Row,
    row_runs,
)
from queue_autoscale.sim.workload import Workload  # noqa: E402

POLICY = "predictive"
LATER_TICK_SECONDS = 5
"""The other tick phase: ticks this many seconds into each interval."""

Floats = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Cell:
    """One cell the verdict's file shows `predictive` missing."""

    row: str
    sla: float
    target: float
    passes: bool = False
    """The verdict passes it all the same: where the reaction bound misses too, within
    `sim.verdict.BOUND_POINTS` of it."""


@dataclass(frozen=True, slots=True)
class Episode:
    """Late jobs whose arrivals lie within a horizon of each other."""

    start: float
    """The first late job's arrival, scored seconds."""
    late: int


@dataclass(frozen=True, slots=True)
class Lateness:
    """One run of a cell: its late jobs and those the target allows."""

    late: int
    allowed: float
    """(1 - target) x the scored jobs."""
    episodes: tuple[Episode, ...]

    @property
    def meets(self) -> bool:
        """The target is met."""
        return self.late <= self.allowed

    @property
    def meets_without_first(self) -> bool:
        """The target would be met without the first episode's late jobs."""
        first = self.episodes[0].late if self.episodes else 0
        return self.late - first <= self.allowed


_SECTION = re.compile(r"^## (.+)$")
_SHARE = re.compile(r"^([0-9.]+)%")


def missed_cells(verdict: str) -> list[Cell]:
    """The cells of a verdict file (`frontier_verdict.py`'s) where `predictive`'s share within
    the SLA is below the target, in the file's order."""
    cells: list[Cell] = []
    row = None
    for line in verdict.splitlines():
        section = _SECTION.match(line)
        if section:
            row = section.group(1)
            continue
        columns = [c.strip() for c in line.split("|")]
        if row is None or len(columns) < 4 or not columns[2].endswith("%"):
            continue
        share = _SHARE.match(columns[3])
        try:
            sla, target = float(columns[1]), float(columns[2].rstrip("%")) / 100.0
        except ValueError:
            continue
        if share and float(share.group(1)) / 100.0 < target:
            cells.append(Cell(row, sla, round(target, 6), columns[3].endswith(": pass")))
    return cells


def episodes(arrivals: Floats, late: npt.NDArray[np.bool_], gap: float) -> tuple[Episode, ...]:
    """The late jobs (`late`, by job) grouped by their `arrivals` (scored s): a late job more
    than `gap` s after the last one starts a new episode."""
    times = np.sort(arrivals[late])
    if not times.size:
        return ()
    breaks = np.flatnonzero(np.diff(times) > gap) + 1
    starts = np.concatenate([[0], breaks])
    ends = np.concatenate([breaks, [times.size]])
    return tuple(Episode(float(times[s]), int(e - s)) for s, e in zip(starts, ends, strict=True))


def lateness(workload: Workload, starts: Floats, sla: float, target: float, gap: float) -> Lateness:
    """The scored jobs' lateness of one run (`starts`: each job's pickup, NaN if never)."""
    warm = workload.warmup_seconds
    arrivals = np.asarray(workload.arrivals)
    scored = arrivals >= warm
    waits = np.asarray(starts)[scored] - arrivals[scored]
    late = ~(waits <= sla)  # never picked up: late
    found = episodes(arrivals[scored] - warm, late, gap)
    return Lateness(int(late.sum()), (1.0 - target) * int(scored.sum()), found)


def trace_warmup(workload: Workload, row: Row, trace: Path, spec: RunSpec) -> Workload:
    """`workload` with its warm-up replaced by the trace's own seconds before the day (drawn
    into jobs with their own seed); the scored jobs are the same."""
    if row.day is None:
        raise ValueError(f"{row.label} is no trace row: it has no day before it to warm up on")
    warm = workload.warmup_seconds
    start = row.day * DAY_SECONDS - warm
    counts = read_trace(trace, scale=NASA_SCALE, start=start, length=warm).astype(np.int64)
    fleet = spec.fleet()
    rng = np.random.default_rng(row.seed + 1)
    head = arrival_times(counts, rng)
    jobs = service_times(
        head.size, fleet.service_mean_seconds, fleet.service_cv, rng, fleet.service_distribution
    )
    scored = np.asarray(workload.arrivals) >= warm
    return Workload(
        workload.name,
        np.concatenate([counts, np.asarray(workload.counts)[warm:]]),
        warm,
        np.concatenate([head, np.asarray(workload.arrivals)[scored]]),
        np.concatenate([jobs, np.asarray(workload.service)[scored]]),
    )


@dataclass(frozen=True, slots=True)
class Finding:
    """One missed cell under the verdict's run and the two others."""

    cell: Cell
    verdict: Lateness
    later_tick: Lateness
    trace_warmup: Lateness | None
    """None: not a trace row."""


def examine(cell: Cell, trace: Path = DEFAULT_TRACE) -> Finding:
    """The cell's three runs (the verdict's, ticks later, the trace's warm-up)."""
    row = find_row(cell.row)
    runs = row_runs(row, trace, run_spec(), (cell.sla,))
    spec = replace(runs.spec, sla_seconds=cell.sla, percentile=cell.target)
    settings = spec.settings()
    gap = horizon_seconds(settings)  # H = L + I + S
    warm_rate = float(runs.counts[:300].mean())

    def run(workload: Workload, ran: RunSpec) -> Lateness:
        policy = make_policy(POLICY, settings, runs.counts)
        start = initial_workers(policy, settings, warm_rate)
        result = run_policy(workload, policy, ran.fleet(), start)
        return lateness(workload, result.starts, cell.sla, cell.target, gap)

    later = replace(spec, first_tick_seconds=LATER_TICK_SECONDS)
    warmed = None
    if row.day is not None:
        warmed = run(trace_warmup(runs.workload, row, trace, spec), spec)
    return Finding(cell, run(runs.workload, spec), run(runs.workload, later), warmed)


def _episodes(found: Lateness, shown: int = 3) -> str:
    text = ", ".join(f"{e.start:,.0f} s: {e.late:,}" for e in found.episodes[:shown])
    more = len(found.episodes) - shown
    return text + (f" (+{more} more)" if more > 0 else "")


def _met(found: Lateness | None) -> str:
    if found is None:
        return "-"
    return f"{'met' if found.meets else 'not met'} ({found.late:,} late)"


def summary(findings: Sequence[Finding]) -> str:
    """What the findings add up to, for the cells the verdict fails."""
    failed = [f for f in findings if not f.cell.passes]
    cut = sum(f.verdict.meets_without_first for f in failed)
    ticked = sum(f.later_tick.meets for f in failed)
    traced = [f.trace_warmup for f in failed if f.trace_warmup is not None]
    warmed = sum(t.meets for t in traced)
    return (
        f"`{POLICY}` misses the target in **{len(findings)}** cells; the verdict fails "
        f"**{len(failed)}** of them (the others pass within the reaction bound's points). Of "
        f"those {len(failed)}, **{cut}** would meet the target without their first episode of "
        f"late jobs; with the ticks {LATER_TICK_SECONDS} s later in each interval {ticked} meet "
        f"it; with the trace's own warm-up, {warmed} of the {len(traced)} NASA cells."
    )


def table(findings: Sequence[Finding]) -> str:
    """The findings' table and what they add up to."""
    lines = [
        summary(findings),
        "",
        "| row | SLA s | target | verdict | late / allowed | episodes (scored start: late "
        "jobs) | without the first | ticks 5 s later | warm-up from the trace |",
        "|---|---:|---:|---|---:|---|---|---|---|",
    ]
    for f in findings:
        c, v = f.cell, f.verdict
        lines.append(
            f"| {c.row} | {c.sla:g} | {c.target:.1%} | {'pass' if c.passes else 'not met'} | "
            f"{v.late:,} / {v.allowed:,.0f} | {_episodes(v)} | "
            f"{'met' if v.meets_without_first else 'not met'} | {_met(f.later_tick)} | "
            f"{_met(f.trace_warmup)} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Examine every missed cell of the verdict's file and write the table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--verdict", type=Path, default=RESULTS / "policy_frontier.md")
    parser.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    parser.add_argument("--out", default="miss_episodes.md")
    parser.add_argument("--limit", type=int, default=0, help="only the first N missed cells")
    args = parser.parse_args(argv)
    cells = missed_cells(args.verdict.read_text(encoding="utf-8"))
    if not cells:
        parser.error(f"{args.verdict} shows no cell {POLICY} misses")
    if args.limit > 0:
        cells = cells[: args.limit]
    findings = parallel_map(lambda c: examine(c, args.trace), cells)
    text = header("When the missed cells lose their jobs") + "\n"
    write(args.out, text + table(findings) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
