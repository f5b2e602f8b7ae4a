"""How many hours a queue sends MaxLoadRatio, MaxSlaUsage or MaxFleetUsage as a CloudWatch metric.

Without the dashboard (`DashboardEnabled=false`, the default) the evaluate tick sends these
three fleet metrics only at or above the lowest threshold of the alarms on them
(`controller.runtime.fleet_floors`: OverloadingThreshold and OverloadedThreshold,
SlaUsageThreshold, FleetUsageThreshold, read here from template.yaml's defaults); below it they
stay plain fields of the log line. CloudWatch bills a custom metric for each hour in which it is
sent. This runs the controller's default policy (predictive; `--policy` names another) in the
simulator at the production interval on a week of Poisson arrivals per rate and counts the clock
hours holding a tick whose load ratio (arrival rate / fleet service rate), SLA usage (oldest age
/ SLA), or fleet usage (workers / max_workers), is at or above the threshold. The fleet usage is
counted with the balanced profile's 1..10 workers, only at the rates those 10 serve with
headroom (up to 3 jobs/s); above, its share depends on how far above the load an operator sets
max_workers.

    nice -n 10 .venv/bin/python benchmarks/alarm_metric_hours.py [--policy NAME]

Writes benchmarks/results/alarm_metric_hours.md.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "functions"))
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))

from _report import add_policy_option, header, policy_words, write  # noqa: E402
from state_writes import POISSON_RATES, poisson  # noqa: E402

from infra.template import load_template  # noqa: E402
from queue_autoscale.config import PROFILE_DEFAULTS, Profile  # noqa: E402
from queue_autoscale.sim.runner import RunSpec, compare  # noqa: E402

WEEK_SECONDS = 7 * 86_400
"""Each rate's run: a week of per-second Poisson arrivals (168 clock hours)."""
FLEET_RATE_LIMIT = 3.0
"""Jobs/s up to which the balanced profile's 10 workers serve the load with headroom (1 s jobs:
at most 3 busy workers of 10)."""


def hours(rate: float, spec: RunSpec, policy: str, at: tuple[float, float, float]) -> list[int]:
    """[hours, hours with load ratio >= at[0], with SLA usage >= at[1], with fleet usage >=
    at[2]] of `policy`'s week at `rate` jobs/s."""
    load_at, sla_at, fleet_at = at
    run = compare(
        f"poisson {rate:g}", poisson(rate, WEEK_SECONDS), [policy], spec, record_decisions=True
    )
    decisions = run.decisions[policy]
    every = {int(d.at // 3600) for d in decisions}
    load = {int(d.at // 3600) for d in decisions if d.load_ratio >= load_at}
    sla = {int(d.at // 3600) for d in decisions if d.sla_usage >= sla_at}
    fleet = {int(d.at // 3600) for d in decisions if (d.fleet_usage or 0.0) >= fleet_at}
    return [len(every), len(load), len(sla), len(fleet)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="alarm_metric_hours.md")
    add_policy_option(parser)
    args = parser.parse_args()
    parameters = load_template()["Parameters"]
    load_at = min(
        float(parameters[name]["Default"])
        for name in ("OverloadingThreshold", "OverloadedThreshold")
    )
    sla_at = float(parameters["SlaUsageThreshold"]["Default"])
    fleet_at = float(parameters["FleetUsageThreshold"]["Default"])
    balanced = PROFILE_DEFAULTS[Profile.BALANCED]
    spec = RunSpec(sla_seconds=30.0)
    bounded = replace(
        spec, min_workers=balanced["min_workers"], max_workers=balanced["max_workers"]
    )
    out = [
        header("How many hours send MaxLoadRatio, MaxSlaUsage or MaxFleetUsage"),
        f"{policy_words(args.policy)}, SLA 30 s at p99.9, interval {spec.interval_seconds} s, "
        "workers land 60 s after the order, a week of Poisson arrivals per rate (warm-up ticks "
        f"included). Thresholds: template.yaml's defaults, the lower of OverloadingThreshold and "
        f"OverloadedThreshold {load_at:g}, SlaUsageThreshold {sla_at:g} and "
        f"FleetUsageThreshold {fleet_at:g}. Up to {FLEET_RATE_LIMIT:g} jobs/s the fleet is the "
        f"balanced profile's {balanced['min_workers']}..{balanced['max_workers']} workers; "
        f"above, 1..{spec.max_workers} (never near its max: no fleet share).",
        "",
        "What `queue-autoscale cost` bills (`operator.cost_inputs.LOAD_ALARM_HOUR_SHARE`, "
        "`SLA_ALARM_HOUR_SHARE`, `FLEET_ALARM_HOUR_SHARE`): the share of hours at the queue's "
        "rate, linear between these rows; a stack of N such queues sends each metric in "
        "1 - (1 - share)^N of its hours (the queues taken as independent).",
        "",
        "| jobs/s | events/s | hours | hours with load ratio >= threshold | share "
        "| hours with SLA usage >= threshold | share "
        "| hours with fleet usage >= threshold | share |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for rate in POISSON_RATES:
        fleet_measured = rate <= FLEET_RATE_LIMIT
        total, load, sla, fleet = hours(
            rate, bounded if fleet_measured else spec, args.policy, (load_at, sla_at, fleet_at)
        )
        fleet_cells = f"{fleet:,} | {fleet / total:.1%}" if fleet_measured else "- | -"
        out.append(
            f"| {rate:g} | {3 * rate:g} | {total:,} | {load:,} | {load / total:.1%} "
            f"| {sla:,} | {sla / total:.1%} | {fleet_cells} |"
        )
        print(out[-1], flush=True)
    write(args.out, "\n".join(out))


if __name__ == "__main__":
    main()
