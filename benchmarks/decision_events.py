"""How often a tick's decision says something new: the share of ticks that publish
ScalingDecisionMade.

The evaluate tick publishes ScalingDecisionMade when the decision's headline
(`controller.tick.headline`: target, action, inputs usable, overloading / overloaded, urgency,
breach predicted) differs from the last one published, or when it acted, has errors or lost the
state race. This runs the controller's default policy (predictive; `--policy` names another) in
the simulator at the production interval (the default) and counts the ticks whose headline
changed or whose action was a scaling (the simulator has no errors and no second controller).

    nice -n 10 .venv/bin/python benchmarks/decision_events.py [--nasa PATH] [--policy NAME]

Writes benchmarks/results/decision_events.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "functions"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _report import add_policy_option, header, policy_words, write  # noqa: E402
from state_writes import NASA, poisson_sweep, workloads  # noqa: E402

from queue_autoscale.controller.tick import headline  # noqa: E402
from queue_autoscale.core import Action  # noqa: E402
from queue_autoscale.sim.arrivals import Counts  # noqa: E402
from queue_autoscale.sim.runner import RunSpec, compare  # noqa: E402


def shares(label: str, counts: Counts, spec: RunSpec, policy: str) -> tuple[int, int, int]:
    """(ticks, ticks publishing ScalingDecisionMade, of those the scalings) of `policy`'s run."""
    run = compare(label, counts, [policy], spec, record_decisions=True)
    decisions = run.decisions[policy]
    published = scalings = 0
    last: list[object] | None = None
    for decision in decisions:
        now = headline(decision)
        scaled = decision.action is not Action.HOLD
        published += now != last or scaled
        scalings += scaled
        last = now
    return len(decisions), published, scalings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nasa", type=Path, default=NASA, help="the NASA per-second trace")
    parser.add_argument("--out", default="decision_events.md")
    add_policy_option(parser)
    args = parser.parse_args()
    spec = RunSpec(sla_seconds=30.0)
    runs = workloads(args.nasa)
    out = [
        header("How many ticks publish ScalingDecisionMade"),
        f"{policy_words(args.policy)}, SLA 30 s at p99.9, interval {spec.interval_seconds} s, "
        "workers land 60 s "
        "after the order (warm-up "
        "ticks included; the first tick always publishes).",
        "",
        "| workload | ticks | ticks publishing | share | of them scalings |",
        "|---|---:|---:|---:|---:|",
    ]
    for label, counts in runs:
        ticks, published, scalings = shares(label, counts, spec, args.policy)
        out.append(
            f"| {label} | {ticks:,} | {published:,} | {published / ticks:.1%} | {scalings:,} |"
        )
        print(out[-1], flush=True)
    out += [
        "",
        "## By rate (Poisson, 2 h each)",
        "",
        "What `queue-autoscale cost` bills (`operator.cost_inputs.DECISION_EVENT_SHARE`): the "
        "share at the queue's rate, linear between these rows.",
        "",
        "| jobs/s | events/s | ticks | ticks publishing | share | of them scalings |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for rate, counts in poisson_sweep():
        ticks, published, scalings = shares(f"poisson {rate:g}", counts, spec, args.policy)
        out.append(
            f"| {rate:g} | {3 * rate:g} | {ticks:,} | {published:,} | {published / ticks:.1%} "
            f"| {scalings:,} |"
        )
        print(out[-1], flush=True)
    write(args.out, "\n".join(out))


if __name__ == "__main__":
    main()
