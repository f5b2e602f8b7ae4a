"""What late counters do to the controller: the simulator with the newest seconds of counters
withheld from every tick (`RunSpec.counter_delay_seconds`), on the named scenarios.

Events reach the load table late by the producer's flush (EventRecorder's 1 s) plus the events
queue's batching window (template.yaml's MaximumBatchingWindowInSeconds) plus the record batch.
The simulator withholds whole seconds, the worst case of that lateness (in production a late
second is partly written). Each delay runs the default policy on the same jobs, at production's
15 s interval, and reports compliance, worker-seconds and flaps against the run with no delay.

    nice -n 10 .venv/bin/python benchmarks/counter_lateness.py [--delays 0,2,5,10,15,30]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "functions"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import header, write

from queue_autoscale.core import DEFAULT_POLICY
from queue_autoscale.sim.runner import RunSpec, compare, load_arrivals
from queue_autoscale.sim.scores import Score

SCENARIOS = ("steady", "spike", "ramp", "bursty", "flash-crowd")
POLICY = DEFAULT_POLICY


def run(name: str, delay: int, sla: float, seed: int) -> Score:
    """The policy on one scenario with counters `delay` seconds late."""
    label, counts = load_arrivals(name, None, seed=seed)
    spec = RunSpec(sla_seconds=sla, seed=seed, counter_delay_seconds=delay)
    return compare(label, counts, [POLICY], spec).scores[0]


def cell(scores: list[Score], base: list[Score]) -> str:
    """Worst seed's compliance, worker-seconds against no delay (all seeds), flaps (all seeds)."""
    worst = min(s.sla_compliance for s in scores)
    spent = sum(s.worker_seconds for s in scores) / sum(s.worker_seconds for s in base) - 1
    return f"{worst:.2%}, {spent:+.1%}, {sum(s.flaps for s in scores)}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delays", default="0,2,5,10,15,30")
    parser.add_argument("--slas", default="10,30,60")
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--out", default="counter_lateness.md")
    args = parser.parse_args()
    delays = [int(d) for d in args.delays.split(",")]
    slas = [float(s) for s in args.slas.split(",")]
    seeds = [int(s) for s in args.seeds.split(",")]
    started = time.perf_counter()
    lines = [
        header("What late counters do to the controller"),
        "",
        f"Policy `{POLICY}` at production's 15 s interval, 60 s provisioning delay, p99.9 "
        f"target, seeds {args.seeds}; the counters of the last *delay* seconds withheld from "
        "every tick (whole seconds: the worst case of events that arrive late). Each cell: the "
        "worst seed's share of jobs picked up within the SLA; worker-seconds of all seeds "
        "against the same runs with no delay; flaps of all seeds.",
        "",
        "| scenario | SLA s | " + " | ".join(f"delay {d} s" for d in delays) + " |",
        "|---|---:|" + "---|" * len(delays),
    ]
    for name in SCENARIOS:
        for sla in slas:
            runs = [[run(name, delay, sla, seed) for seed in seeds] for delay in delays]
            cells = [cell(scores, runs[0]) for scores in runs]
            lines.append(f"| {name} | {sla:g} | " + " | ".join(cells) + " |")
            print(lines[-1], flush=True)
    lines += ["", f"{time.perf_counter() - started:.0f} s on this machine."]
    write(args.out, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
