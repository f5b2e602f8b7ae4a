"""Is one verdict cell decided by the workers' start-up jitter? The cell under other jitter draws.

The verdict (`benchmarks/frontier_verdict.py`) runs each cell once: a new worker takes jobs
60 s + uniform 0..10 s after it is ordered, the uniform draws seeded by the row's seed. This
runs one cell of a set exactly as the verdict runs our policy there (`sim.tuning.row_runs`:
the same arrivals and job times), under the verdict's own jitter draws and under N - 1 others
(seeds 10,001 ...), and writes each run's share within the SLA, worker-seconds and flaps,
and on how many draws the target is met. A cell that fails on every draw fails for a cause in
the traffic and the controller; one that passes on some draws and fails on others is decided
at the jitter's resolution. Only the target is judged here: the peers' worker-seconds are
those of their own tuned runs (the verdict file), not re-tuned per draw.

    .venv/bin/python benchmarks/cell_jitter.py --row "nasa day 37" --sla 60 --target 0.999
    .venv/bin/python benchmarks/cell_jitter.py --row "bursty seed 1" --sla 60 --target 0.99 \
        --seeds 8 --out cell_jitter_bursty.md

Forked over the machine's cores (`sim.runner.parallel_map`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "functions"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import add_policy_option, header, write  # noqa: E402
from frontier_verdict import DEFAULT_TRACE, run_spec  # noqa: E402

from queue_autoscale.sim.runner import parallel_map  # noqa: E402
from queue_autoscale.sim.scores import Score  # noqa: E402
from queue_autoscale.sim.tuning import Row, our_key, row_runs, set_rows  # noqa: E402

OTHER_SEEDS = 10_000
"""The other draws are seeded OTHER_SEEDS + 1, + 2, ...: none is a row's own seed."""


@dataclass(frozen=True, slots=True)
class Draw:
    """One run of the cell under one seed of the jitter."""

    seed: int
    score: Score


def find_row(label: str) -> Row:
    """The row of the tuning or validation set labelled `label` (e.g. 'nasa day 37')."""
    rows = {r.label: r for name in ("tuning", "validation") for r in set_rows(name)}
    if label not in rows:
        raise SystemExit(f"no row {label!r}: the sets' rows are {', '.join(sorted(rows))}")
    return rows[label]


def draws(row: Row, trace: Path, policy: str, sla: float, target: float, count: int) -> list[Draw]:
    """The cell's runs under the verdict's jitter seed (the row's) and `count` - 1 others."""
    verdict = row_runs(row, trace, run_spec(), (sla,))
    key = our_key(policy, sla, target)
    seeds = [row.seed] + [OTHER_SEEDS + k for k in range(1, count)]

    def run(seed: int) -> Draw:
        # RunSpec.seed seeds only the jitter here: the arrivals and job times stay the row's
        runs = replace(verdict, spec=replace(verdict.spec, seed=seed), scores={})
        runs.ensure([key])
        return Draw(seed, runs.score(key, sla))

    return parallel_map(run, seeds)


def table(label: str, policy: str, sla: float, target: float, made: Sequence[Draw]) -> str:
    """The draws' lines and what they add up to."""
    met = sum(d.score.sla_compliance >= target for d in made)
    within = [d.score.sla_compliance for d in made]
    cost = [d.score.worker_seconds for d in made]
    spread = (max(cost) - min(cost)) / min(cost) if min(cost) > 0 else 0.0
    lines = [
        f"`{policy}` on {label} at {sla:g} s, target {target:.1%}: met on **{met} of "
        f"{len(made)}** jitter draws; within the SLA {min(within):.3%} to {max(within):.3%}; "
        f"worker-s {min(cost):,.0f} to {max(cost):,.0f} ({spread:.2%} apart).",
        "",
        "| jitter seed | within SLA | worker-s | flaps | target |",
        "|---:|---:|---:|---:|---|",
    ]
    for i, d in enumerate(made):
        seed = f"{d.seed} (the verdict's)" if i == 0 else str(d.seed)
        lines.append(
            f"| {seed} | {d.score.sla_compliance:.3%} | {d.score.worker_seconds:,.0f} | "
            f"{d.score.flaps} | {'met' if d.score.sla_compliance >= target else 'not met'} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the cell's draws and write the table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--row", required=True, help="a set's row, e.g. 'nasa day 37'")
    parser.add_argument("--sla", type=float, required=True, help="the cell's SLA, s")
    parser.add_argument("--target", type=float, required=True, help="e.g. 0.999")
    parser.add_argument("--seeds", type=int, default=16, help="jitter draws, the verdict's first")
    parser.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    parser.add_argument("--out", default="cell_jitter.md")
    add_policy_option(parser)
    args = parser.parse_args(argv)
    if args.seeds < 1 or not args.sla > 0 or not 0 < args.target < 1:
        parser.error("--seeds >= 1, --sla > 0 s and 0 < --target < 1")
    row = find_row(args.row)
    if row.day is not None and not args.trace.is_file():
        parser.error(f"{row.label} needs the trace: {args.trace} is not a file")
    made = draws(row, args.trace, args.policy, args.sla, args.target, args.seeds)
    text = header("One verdict cell under other start-up jitter draws") + "\n"
    write(args.out, text + table(row.label, args.policy, args.sla, args.target, made) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
