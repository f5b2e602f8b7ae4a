"""predictive against hybrid, cell by cell, on the yardstick's rows and run settings.

Each row of the tuning or validation set (`sim/tuning.py`: scenarios whole, NASA days x10) at
the chosen SLAs x targets: `predictive` and `hybrid` each configured for the cell's target,
KEDA at its documented setting and the reaction bound, all on the same jobs with the bench's
run settings (`frontier_verdict.py`'s: 60 s + 0..10 s landing, the stack's default interval).
This is a head-to-head, not the verdict: the tuned peers and the hindsight static fleet of
`sim/verdict.py` are left out (they take most of an hour a set).

    nice -n 10 .venv/bin/python benchmarks/predictive_compare.py --set tuning \\
        --slas 10,30,60,300 --targets 0.95,0.99 --out /tmp/tuning.md

Prints the markdown to standard output (and to --out).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "functions"))

from queue_autoscale.sim.bound import NAME as BOUND_NAME  # noqa: E402
from queue_autoscale.sim.runner import RunSpec  # noqa: E402
from queue_autoscale.sim.tuning import Row, RunKey, Runs, set_rows  # noqa: E402
from queue_autoscale.sim.workload import build_workload  # noqa: E402

DEFAULT_TRACE = ROOT.parent / "shared" / "traces" / "nasa-1995-per-second.tbz2"
JITTER_SECONDS = 10.0
"""New workers land 60 s + uniform 0..this (as frontier_verdict.py)."""
OURS = ("predictive", "hybrid")


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=("validation", "tuning"), default="tuning")
    parser.add_argument("--rows", help="only rows whose label starts with one of these (a,b)")
    parser.add_argument("--slas", default="10,30,60,300")
    parser.add_argument("--targets", default="0.95,0.99,0.999")
    parser.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    parser.add_argument("--out", type=Path)
    return parser.parse_args(argv)


def chosen(args: argparse.Namespace) -> list[Row]:
    rows = set_rows(args.set, with_nasa=args.trace.is_file())
    if args.rows:
        wanted = [w.strip() for w in args.rows.split(",") if w.strip()]
        rows = [r for r in rows if any(r.label.startswith(w) for w in wanted)]
    return rows


def row_lines(row: Row, runs: Runs, slas: list[float], targets: list[float]) -> list[list[str]]:
    """One line per cell: each policy's compliance, worker-seconds and flaps."""
    lines = []
    for sla in slas:
        bound = runs.score((BOUND_NAME, sla, None), sla)
        keda = runs.score(("keda", None, None), sla)
        for target in targets:
            cell = [row.label, f"{sla:g}", f"{target:.1%}"]
            for name in OURS:
                s = runs.score((name, sla, target), sla)
                mark = "" if s.sla_compliance >= target else " (miss)"
                cell.append(
                    f"{s.sla_compliance:.3%}{mark}, {s.worker_seconds:,.0f}, {s.flaps}, "
                    f"{s.peak_workers}"
                )
            cell.append(f"{keda.sla_compliance:.3%}, {keda.worker_seconds:,.0f}, {keda.flaps}")
            cell.append(f"{bound.sla_compliance:.3%}")
            lines.append(cell)
    return lines


def tally(runs_by_row: list[tuple[Row, Runs]], slas: list[float], targets: list[float]) -> str:
    """Cells each of ours meets, and worker-seconds on the cells both meet."""
    met = dict.fromkeys(OURS, 0)
    both = dict.fromkeys(OURS, 0.0)
    cells = 0
    for _, runs in runs_by_row:
        for sla in slas:
            for target in targets:
                cells += 1
                scores = {n: runs.score((n, sla, target), sla) for n in OURS}
                ok = {n: s.sla_compliance >= target for n, s in scores.items()}
                for n in OURS:
                    met[n] += ok[n]
                if all(ok.values()):
                    for n in OURS:
                        both[n] += scores[n].worker_seconds
    return (
        f"predictive meets the target on **{met['predictive']} of {cells}** cells, hybrid on "
        f"**{met['hybrid']}**; on the cells both meet, worker-seconds: predictive "
        f"{both['predictive']:,.0f}, hybrid {both['hybrid']:,.0f}."
    )


def markdown(
    done: list[tuple[Row, Runs]], slas: list[float], targets: list[float], seconds: float
) -> str:
    """The results so far: one line per cell, then the tally and the command."""
    head = ["row", "SLA s", "target", *OURS, "keda (documented)", "reaction bound"]
    text = [
        "Each policy cell: compliance, worker-seconds, flaps (and peak workers for ours).",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for row, runs in done:
        text += ["| " + " | ".join(c) + " |" for c in row_lines(row, runs, slas, targets)]
    text += ["", tally(done, slas, targets), ""]
    text.append(f"Ran in {seconds:.0f} s: `{' '.join(sys.argv)}`")
    return "\n".join(text) + "\n"


def main(argv: list[str]) -> int:
    args = parse(argv)
    slas = [float(s) for s in args.slas.split(",")]
    targets = [float(t) for t in args.targets.split(",")]
    spec = RunSpec(provision_jitter_seconds=JITTER_SECONDS)
    started = time.perf_counter()
    done: list[tuple[Row, Runs]] = []
    out = ""
    for row in chosen(args):
        counts = row.counts(args.trace)
        row_spec = replace(spec, seed=row.seed)
        workload = build_workload(
            row.label, counts, row_spec.fleet(), seed=row.seed, warmup_seconds=spec.warmup_seconds
        )
        runs = Runs(workload, counts, row_spec, tuple(slas))
        keys: list[RunKey] = [(n, s, t) for n in OURS for s in slas for t in targets]
        keys += [(BOUND_NAME, s, None) for s in slas] + [("keda", None, None)]
        runs.ensure(keys)
        done.append((row, runs))
        print(f"{row.label}: {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
        out = markdown(done, slas, targets, time.perf_counter() - started)
        if args.out:  # after every row: a run cut short keeps the rows it finished
            args.out.write_text(out, encoding="utf-8")
    print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
