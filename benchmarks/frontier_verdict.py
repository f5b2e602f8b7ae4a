"""The yardstick: each judged policy's verdict on every cell of the tuning or validation set.

Every row of the set (scenarios whole, NASA days whole) at SLA 10/30/60/300 s x target
95/99/99.9 %: the judged policies (`--policy`, default the controller's default and
seed-hybrid) each configured for the cell, the reaction bound, and KEDA,
target tracking and a static fleet each tuned with hindsight to the cheapest setting that
meets the cell (`sim/tuning.py`), judged by `sim/verdict.py`. The results file is rewritten
after every row, so an interrupted run keeps the rows it finished.

    nice -n 10 .venv/bin/python benchmarks/frontier_verdict.py --set validation
    nice -n 10 .venv/bin/python benchmarks/frontier_verdict.py --policy predictive,seed-hybrid \\
        --cache /work/verdict-cache     # a second run re-runs only the judged policies
    .venv/bin/python benchmarks/frontier_verdict.py --quick     # one row, one seed

Not in `run_all` and not in CI: the validation set took 74 min on the shared 2-core machine.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "functions"))

from queue_autoscale.ingest.lateness import EVENTS_BATCHING_WINDOW_SECONDS  # noqa: E402
from queue_autoscale.sim.arrivals import ArrivalError  # noqa: E402
from queue_autoscale.sim.policies import ABLATIONS, parse_policies  # noqa: E402
from queue_autoscale.sim.runner import RunSpec  # noqa: E402
from queue_autoscale.sim.tuning import (  # noqa: E402
    SLAS,
    TARGETS,
    Row,
    RowRuns,
    RunCache,
    set_rows,
    slim,
    tune_row,
)
from queue_autoscale.sim.yardstick import (  # noqa: E402
    JUDGED,
    Judged,
    judge_row,
    results_markdown,
)

DEFAULT_TRACE = ROOT.parent / "shared" / "traces" / "nasa-1995-per-second.tbz2"
JITTER_SECONDS = 10.0
"""New workers land 60 s + uniform 0..this (as the bench)."""
QUICK_ROW = "spike"
"""`--quick`: this scenario at the set's first seed."""
ABLATED = "predictive"
"""The policy `--ablate` takes apart (`sim.policies.ABLATIONS` are its variants)."""
BASE_COMMAND = "nice -n 10 .venv/bin/python benchmarks/frontier_verdict.py"


def run_spec() -> RunSpec:
    """The run settings of every row: the bench's, with the start-up jitter and the stack's
    default jump ticks (the record path's batching window)."""
    return RunSpec(
        provision_jitter_seconds=JITTER_SECONDS,
        jump_lateness_seconds=EVENTS_BATCHING_WINDOW_SECONDS,
    )


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=("validation", "tuning"), default="validation")
    parser.add_argument("--rows", help="only rows whose label starts with one of these (a,b)")
    parser.add_argument("--quick", action="store_true", help=f"one row: {QUICK_ROW}, one seed")
    parser.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    parser.add_argument("--out", type=Path, help="default: results/policy_frontier[_SET].md")
    parser.add_argument(
        "--policy",
        default=",".join(JUDGED),
        help="the policies to judge, comma-separated (simulate's grammar); the first is "
        "compared with each other one ('A beats B'). Default: %(default)s",
    )
    parser.add_argument(
        "--ablate",
        action="store_true",
        help="judge predictive and predictive with each mechanism off (the ablation; "
        "results/predictive_ablation.md unless --out)",
    )
    parser.add_argument(
        "--cache",
        type=Path,
        help="keep each row's scored runs here and reuse them: the peers' and the bound's "
        "while their code is unchanged, the judged policies' only for the very same package "
        "source (sim/tuning.RunCache)",
    )
    args = parser.parse_args(argv)
    try:
        args.policies = parse_policies(args.policy)
    except ArrivalError as error:
        parser.error(str(error))
    args.ablation = dict(ABLATIONS) if args.ablate else None
    if args.ablate:
        args.policies = [ABLATED, *ABLATIONS]
    return args


def chosen(args: argparse.Namespace) -> list[Row]:
    """The rows to run."""
    rows = set_rows(args.set, with_nasa=args.trace.is_file())
    if args.quick:
        return [r for r in rows if r.name == QUICK_ROW][:1]
    if args.rows:
        wanted = [w.strip() for w in args.rows.split(",") if w.strip()]
        rows = [r for r in rows if any(r.label.startswith(w) for w in wanted)]
    if not rows:
        raise SystemExit(f"no row matches {args.rows!r}")
    return rows


def row_runs(
    row: Row,
    args: argparse.Namespace,
    spec: RunSpec,
    cache: RunCache | None,
    tick: Callable[[int], None],
) -> RowRuns:
    """The row's tuned runs, each taken from `cache` where it keeps it for this code, else
    run (and kept)."""
    known = {} if cache is None else cache.load(row)
    rr = slim(tune_row(row, args.trace, spec, SLAS, TARGETS, tick, args.policies, known))
    if cache is not None:
        cache.save(row, rr.runs.scores)
    return rr


def main(argv: list[str]) -> int:
    args = parse(argv)
    rows = chosen(args)
    every = set_rows(args.set, with_nasa=args.trace.is_file())
    suffix = "" if args.set == "validation" else "_tuning"
    suffix += ".quick" if args.quick else ""
    name = "predictive_ablation" if args.ablate else "policy_frontier"
    out = args.out or ROOT / "benchmarks" / "results" / f"{name}{suffix}.md"
    spec = run_spec()
    setup = [
        f"- Jobs {spec.service_seconds:g} s mean (gamma, cv {spec.service_cv:g}), concurrency "
        f"{spec.concurrency}; a new worker takes jobs {spec.provision_delay_seconds} s + "
        f"uniform 0..{JITTER_SECONDS:g} s after it is ordered; fleet at most "
        f"{spec.max_workers}; our controller every {spec.interval_seconds} s; a 600 s "
        "warm-up at the first 5 minutes' rate before every row (not scored); the same jobs "
        "under every policy and setting of a row.",
        f"- Trace: {args.trace.name if args.trace.is_file() else 'absent: NASA rows skipped'}.",
    ]
    command = " ".join([BASE_COMMAND, *argv])
    machine = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores (shared)"
    cache = None if args.cache is None else RunCache.at(args.cache)
    started = time.perf_counter()
    done: list[tuple[str, list[Judged]]] = []
    for row in rows:
        began = time.perf_counter()

        def tick(count: int, label: str = row.label) -> None:
            print(f"\r{label}: {count} runs", end="", file=sys.stderr, flush=True)

        judged = judge_row(row_runs(row, args, spec, cache, tick), SLAS, TARGETS, args.policies)
        done.append((row.label, judged))
        passed = ", ".join(
            f"{p} {sum(j.verdicts[i].passed for j in judged)}/{len(judged)}"
            for i, p in enumerate(args.policies)
        )
        print(
            f"\r{row.label}: passes {passed} ({time.perf_counter() - began:.0f} s)",
            file=sys.stderr,
            flush=True,
        )
        judged_rows = {label for label, _ in done}
        pending = [r.label for r in every if r.label not in judged_rows]
        text = results_markdown(
            done,
            args.set,
            command,
            BASE_COMMAND,
            setup,
            time.perf_counter() - started,
            machine,
            pending,
            args.ablation,
        )
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
    print(f"written to {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
