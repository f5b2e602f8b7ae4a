"""How often a tick asks CloudWatch for a queue's oldest-message age: the share of minutes
with a GetMetricData for the queue.

The evaluate tick asks for an SQS queue's `ApproximateAgeOfOldestMessage` only when the
queue's depth read shows visible messages (an empty queue's age is 0), and at most once a
minute (`adapters.cloudwatch.OldestAgeReader`: SQS publishes one datapoint a minute). This
runs the controller's default policy (predictive; `--policy` names another) in the simulator at
the production interval (the default) and counts the ticks that saw a visible backlog and the
distinct minutes holding one: each such minute costs one metric of GetMetricData.
`queue-autoscale cost` bills these shares by rate, and every minute of a busy queue as the upper
bound beside them.

    nice -n 10 .venv/bin/python benchmarks/age_reads.py [--nasa PATH] [--policy NAME]

Writes benchmarks/results/age_reads.md.
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

from queue_autoscale.core.models import AgeSource  # noqa: E402
from queue_autoscale.sim.arrivals import Counts  # noqa: E402
from queue_autoscale.sim.runner import RunSpec, compare  # noqa: E402


def reads(label: str, counts: Counts, spec: RunSpec, policy: str) -> tuple[int, int, int, int]:
    """(ticks, ticks with a visible backlog, minutes, minutes with an age read) of `policy`'s
    run."""
    run = compare(label, counts, [policy], spec, record_decisions=True)
    decisions = run.decisions[policy]
    asking = [d for d in decisions if d.oldest_age_source is not AgeSource.EMPTY]
    minutes = {int(d.at // 60) for d in decisions}
    read = {int(d.at // 60) for d in asking}
    return len(decisions), len(asking), len(minutes), len(read)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nasa", type=Path, default=NASA, help="the NASA per-second trace")
    parser.add_argument("--out", default="age_reads.md")
    add_policy_option(parser)
    args = parser.parse_args()
    spec = RunSpec(sla_seconds=30.0)
    out = [
        header("How many minutes read a queue's oldest-message age"),
        f"{policy_words(args.policy)}, SLA 30 s at p99.9, interval {spec.interval_seconds} s, "
        "workers land 60 s "
        "after the order (warm-up "
        "ticks included). A tick asks only when the queue shows visible jobs; a minute with "
        "any such tick costs one GetMetricData metric.",
        "",
        "| workload | ticks | ticks with jobs visible | minutes | minutes with an age read "
        "| share |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for label, counts in workloads(args.nasa):
        ticks, asking, minutes, read = reads(label, counts, spec, args.policy)
        out.append(
            f"| {label} | {ticks:,} | {asking:,} | {minutes:,} | {read:,} | {read / minutes:.1%} |"
        )
        print(out[-1], flush=True)
    out += [
        "",
        "## By rate (Poisson, 2 h each)",
        "",
        "What `queue-autoscale cost` bills (`operator.cost_inputs.AGE_READ_SHARE`): the share "
        "at the queue's rate, linear between these rows.",
        "",
        "| jobs/s | events/s | ticks | ticks with jobs visible | minutes with an age read "
        "| share |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for rate, counts in poisson_sweep():
        ticks, asking, minutes, read = reads(f"poisson {rate:g}", counts, spec, args.policy)
        out.append(
            f"| {rate:g} | {3 * rate:g} | {ticks:,} | {asking:,} | {read:,} | "
            f"{read / minutes:.1%} |"
        )
        print(out[-1], flush=True)
    write(args.out, "\n".join(out))


if __name__ == "__main__":
    main()
