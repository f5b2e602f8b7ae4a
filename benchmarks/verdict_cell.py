"""One cell of the verdict's rows, run as `frontier_verdict.py` runs it, and what the policy did.

The verdict judges every cell from a table of scores; this runs one policy on one cell of the
same rows, with the same jobs, start-up jitter, warm-up and jump ticks (`frontier_verdict`'s
`run_spec`, `sim.tuning`'s `row_runs` and `Runs.run`, `cell_jitter`'s `find_row`), and prints
its score. It is how a change to the controller is read on the cells it moves before the sets
are run again.

    .venv/bin/python benchmarks/verdict_cell.py "flash-crowd seed 1" 60 0.99
    .venv/bin/python benchmarks/verdict_cell.py "nasa day 46" 10 0.99 --changes
    .venv/bin/python benchmarks/verdict_cell.py "steady seed 2" 10 0.95 --decisions 6420 6480
    .venv/bin/python benchmarks/verdict_cell.py "diurnal seed 1" 300 0.95 \\
        --policy "keda(queue_length=235,scale_down_stabilization=300,min_replicas=0)"

ROW is a row's label as the results files print it (either set's). Times are seconds since the
run's start, the warm-up included (the verdict scores from the warm-up's end). `--changes`
prints every second the desired count changed; `--decisions FROM TO` every decision of one of
our policies in that span, with its reason. Prints to standard output; writes no file.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "functions"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from cell_jitter import find_row  # noqa: E402
from frontier_verdict import DEFAULT_TRACE, run_spec  # noqa: E402

from queue_autoscale.core import DEFAULT_POLICY  # noqa: E402
from queue_autoscale.sim.bound import NAME as BOUND_NAME  # noqa: E402
from queue_autoscale.sim.engine import RunResult  # noqa: E402
from queue_autoscale.sim.scores import Score, scores_at  # noqa: E402
from queue_autoscale.sim.tuning import RunKey, is_ours, our_key, row_runs  # noqa: E402

REASON_CHARACTERS = 600
"""How much of a decision's reason `--decisions` prints."""


def score_line(label: str, sla: float, target: float, score: Score) -> str:
    """The cell's score in one line (the verdict's measures, and what drove the cost)."""
    return (
        f"{label} at {sla:g} s {target:.1%}: within {score.sla_compliance:.3%}, "
        f"{score.worker_seconds:,.0f} worker-s, {score.flaps} flaps, "
        f"util {score.utilization:.3f}, peak {score.peak_workers}, "
        f"{score.scaling_actions} actions, {score.task_starts} starts"
    )


def changes(result: RunResult) -> list[str]:
    """Each second the desired count changed: the change and the queue and fleet then."""
    series = result.series
    desired = series.desired
    return [
        f"{second} {desired[second - 1]} -> {desired[second]} running {series.running[second]} "
        f"waiting {series.visible[second]} oldest {series.oldest_age[second]:.0f} s"
        for second in range(1, len(desired))
        if desired[second] != desired[second - 1]
    ]


def cell_key(policy: str, sla: float, target: float) -> RunKey:
    """The run the verdict makes for this cell: ours configured for the cell (`our_key`), the
    reaction bound per SLA, a peer's run once per row (from the same warm fleet whatever the
    cell, `tuning.PEER_SLA`)."""
    if policy == BOUND_NAME:
        return BOUND_NAME, sla, None
    key = our_key(policy, sla, target)
    return key if is_ours(key) else (policy, None, None)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("row", help='a row label, e.g. "steady seed 1" or "nasa day 46"')
    parser.add_argument("sla", type=float, help="seconds")
    parser.add_argument("target", type=float, help="the percentile, e.g. 0.99")
    parser.add_argument("--policy", default=DEFAULT_POLICY, help="simulate's grammar")
    parser.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    parser.add_argument("--changes", action="store_true", help="every desired-count change")
    parser.add_argument(
        "--decisions", nargs=2, type=float, metavar=("FROM", "TO"), help="decisions in a span"
    )
    args = parser.parse_args(argv)
    if not args.sla > 0 or not 0 < args.target < 1:
        parser.error(f"give an SLA > 0 s and a target in (0, 1): {args.sla:g}, {args.target:g}")
    row = find_row(args.row)
    runs = row_runs(row, args.trace, run_spec(), (args.sla,))
    key = cell_key(args.policy, args.sla, args.target)
    policy, result = runs.run(key, record=args.decisions is not None)
    print(score_line(row.label, args.sla, args.target, scores_at(result, (args.sla,))[args.sla]))
    if args.changes:
        print("\n".join(changes(result)))
    if args.decisions is not None:
        start, end = args.decisions
        epoch = runs.spec.fleet().base_epoch
        for decision in getattr(policy, "decisions", []):
            if start <= decision.at - epoch <= end:
                print(
                    f"{decision.at - epoch:.0f} {decision.current} -> {decision.target}: "
                    f"{decision.reason[:REASON_CHARACTERS]}"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
