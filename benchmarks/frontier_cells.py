"""The bench's frontier cells for chosen workloads and SLAs, one line per cell (issue 15).

`queue-autoscale bench` sweeps every workload at every profile's SLA and writes the verdicts;
this prints the same cells for the workloads and SLAs you name, in about a minute for every
workload with `--ours-only` (the default policy at each target and the reaction bound, no
peers), so a change to the controller can be compared cell by cell before the bench is
regenerated. The cells, windows, run settings and verdicts are the bench's own (`sim.bench`'s
workloads and `bench_spec`, `sim.frontier`'s window, settings and `goal_verdict`). The tables of
cells that moved in benchmarks/results/hybrid_experiments.md were made with it.

    .venv/bin/python benchmarks/frontier_cells.py all --ours-only > before.txt
    .venv/bin/python benchmarks/frontier_cells.py steady,nasa --slas 30,60 --seed 3

With the peers (no `--ours-only`) each line ends with the goal's verdict, as in
results/policy_frontier.md. Workloads: the scenario names and `nasa` (the NASA x10 day).
Prints to standard output; writes no results file.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "functions"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import bench_workloads  # noqa: E402

from queue_autoscale.core import DEFAULT_POLICY  # noqa: E402
from queue_autoscale.sim.arrivals import ArrivalError, Counts  # noqa: E402
from queue_autoscale.sim.bench import SweepOptions, bench_spec, parse_slas  # noqa: E402
from queue_autoscale.sim.bound import NAME as BOUND_NAME  # noqa: E402
from queue_autoscale.sim.engine import run_policy  # noqa: E402
from queue_autoscale.sim.frontier import (  # noqa: E402
    SLAS,
    TARGETS,
    WINDOW_SECONDS,
    Frontier,
    goal_verdict,
    ours_for,
    run_setting,
    sweep,
    sweep_settings,
    sweep_window,
)
from queue_autoscale.sim.honest import honest_scores  # noqa: E402
from queue_autoscale.sim.policies import initial_workers, make_policy  # noqa: E402
from queue_autoscale.sim.runner import RunSpec  # noqa: E402
from queue_autoscale.sim.scores import score  # noqa: E402
from queue_autoscale.sim.workload import build_workload  # noqa: E402


def chosen_workloads(names: str, seed: int) -> list[tuple[str, Counts]]:
    """The bench's workloads (label, per-second counts) whose label starts with one of the
    comma-separated `names` (`all`: every one)."""
    workloads, note = bench_workloads(seed, None)
    wanted = [name.strip() for name in names.split(",") if name.strip()]
    picked = [
        (label, counts)
        for label, counts, _ in workloads
        if names == "all" or any(label.startswith(name) for name in wanted)
    ]
    if not picked:
        known = ", ".join(label for label, _, _ in workloads)
        raise SystemExit(f"no workload matches {names!r}; known: {known}. {note}".strip())
    return picked


def cell_frontier(label: str, counts: Counts, spec: RunSpec, ours_only: bool) -> Frontier:
    """One workload at one SLA: the bench's sweep, or ours at each target and the bound."""
    workload = build_workload(
        label, counts, spec.fleet(), seed=spec.seed, warmup_seconds=spec.warmup_seconds
    )
    if not ours_only:
        return sweep(label, counts, spec, False, honest_scores, workload)
    settings = spec.settings()
    points = tuple(
        run_setting(workload, counts, setting, spec, honest_scores)
        for setting in sweep_settings(settings, counts, False)
        if setting.policy == DEFAULT_POLICY
    )
    bound = make_policy(BOUND_NAME, settings, counts)
    start = initial_workers(bound, settings, float(counts[:300].mean()))
    bound_score = score(run_policy(workload, bound, spec.fleet(), start), spec.sla_seconds)
    return Frontier(label, spec.sla_seconds, points, bound_score)


def main() -> None:
    """Print one line per workload x SLA x target."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("workloads", help="comma-separated names (steady, ..., nasa) or all")
    parser.add_argument(
        "--slas", default=",".join(f"{sla:g}" for sla in SLAS), help="seconds, comma-separated"
    )
    parser.add_argument("--ours-only", action="store_true", help="no peers, no verdict")
    parser.add_argument("--seed", type=int, default=0, help="the bench's --seed (default 0)")
    args = parser.parse_args()
    try:  # the bench's own rule, before any workload is loaded or run
        slas = parse_slas(args.slas)
    except ArrivalError as error:
        parser.error(str(error))
    spec0 = bench_spec(SweepOptions(), args.seed)
    started = time.perf_counter()
    for label, full in chosen_workloads(args.workloads, args.seed):
        counts, _ = sweep_window(full, WINDOW_SECONDS)
        for sla in slas:
            frontier = cell_frontier(label, counts, replace(spec0, sla_seconds=sla), args.ours_only)
            bound = frontier.bound
            for target in TARGETS:
                point = ours_for(frontier.points, target)
                if point is None or bound is None:
                    continue
                s = point.score
                verdict = "" if args.ours_only else goal_verdict(frontier, target)
                print(
                    f"{label:12s} sla {sla:>5g} p{target:<6g} ws {s.worker_seconds:>11,.0f} "
                    f"comp {s.sla_compliance:.4%} util {s.utilization:.3f} "
                    f"max {s.max_pickup_seconds:.0f} flaps {point.extra.get('flaps', 0):.0f} "
                    f"bound {bound.sla_compliance:.4%} {verdict}",
                    flush=True,
                )
    print(f"wall {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
