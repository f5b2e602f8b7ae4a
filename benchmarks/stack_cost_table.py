"""The stack's monthly bill at 1, 10, 100, 1,000 and 10,000 queues next to target tracking's
and KEDA's marginal cost, where each dollar goes, and what an idle queue adds: the arithmetic of
`queue-autoscale cost` (operator/cost.py) over this checkout's template.yaml. With
`--baseline REV` the same workloads are also billed with that revision's template.yaml and
metric list, so a reduction shows as before and after.

    .venv/bin/python benchmarks/stack_cost_table.py [--baseline b11844a] [--events-per-second 0.3]
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "functions"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import header, write

from queue_autoscale.controller.tick import DECIDE_SHARE
from queue_autoscale.core.shard import plan_shards, vcpus_for_memory
from queue_autoscale.demo.template import load_template
from queue_autoscale.operator.cost import (
    Usage,
    by_service,
    derived_evaluate_memory,
    idle_queue_usd,
    total_usd,
    usage,
)
from queue_autoscale.operator.cost_inputs import (
    EVENTS_PER_JOB,
    MINUTES_PER_MONTH,
    StackShape,
    Workload,
)
from queue_autoscale.operator.cost_peers import peer_costs
from queue_autoscale.operator.cost_template import (
    CLOUDFORMATION_MAX_RESOURCES,
    shape,
    stack_capacity,
)
from queue_autoscale.operator.prices import PRICED_ON, SOURCES, UNVERIFIED, US_EAST_1

ROOT = Path(__file__).resolve().parents[1]
SIZES = (1, 10, 100, 1_000, 10_000)


def baseline_shape(revision: str) -> StackShape:
    """The shape of `revision`'s template.yaml with that revision's per-queue metric count."""

    def show(path: str) -> str:
        return subprocess.run(
            ["git", "show", f"{revision}:{path}"], cwd=ROOT, check=True, capture_output=True
        ).stdout.decode("utf-8")

    with tempfile.NamedTemporaryFile("w", suffix=".yaml", encoding="utf-8") as handle:
        handle.write(show("template.yaml"))
        handle.flush()
        old = shape(load_template(Path(handle.name)))
    constants_text = show("functions/queue_autoscale/constants.py")
    if "SILENT_WHEN_ZERO_METRICS" not in constants_text:  # every value was extracted
        old = replace(old, idle_silent_metrics=0, healthy_silent_metrics=0)
    if "FLEET_METRICS" not in constants_text:  # ConfigErrors was the one fleet-wide metric
        old = replace(old, fleet_metrics=1, fleet_silent_metrics=0, fleet_healthy_silent_metrics=0)
    if old.queue_metrics == 0:  # PerQueueMetrics off by default there: none is published
        return old
    constants = ast.parse(constants_text)
    for node in ast.walk(constants):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id == "QUEUE_METRICS"
            and isinstance(node.value, ast.Dict)
        ):
            logged_only = re.search(
                r"LOGGED_ONLY_METRICS[^=]*=\s*frozenset\(\{([^}]*)\}", constants_text
            )
            skipped = len(re.findall(r'"\w+"', logged_only.group(1))) if logged_only else 0
            return replace(old, queue_metrics=len(node.value.keys) - skipped)
    return old


def dollars(usd: float) -> str:
    """USD, to the cent above a dollar, to the tenth of a cent below."""
    return f"{usd:,.2f}" if usd >= 1 else f"{usd:,.3f}"


def at_derived_memory(shape_: StackShape, workload: Workload) -> StackShape:
    """The shape with EvaluateMemorySize as `queue-autoscale cost` derives it for `workload`."""
    memory = derived_evaluate_memory(workload, shape_)
    return replace(shape_, evaluate=replace(shape_.evaluate, memory_mb=memory))


def sizes_table(template_current: StackShape, rate: float, base: StackShape | None) -> list[str]:
    """Total, per queue, top line item, idle queue and peers at each size (this template at
    the derived EvaluateMemorySize; the baseline at its own default)."""
    head = "| queues | evaluate shards x MB | total USD/month | USD per queue-month |"
    rule = "|---:|---|---:|---:|"
    if base is not None:
        head += " before USD/month | before per queue |"
        rule += "---:|---:|"
    head += " idle queue adds | largest line item | target tracking | KEDA |"
    rule += "---:|---|---:|---:|"
    out = [head, rule]
    for n in SIZES:
        workload = Workload(queues=n, events_per_second=rate)
        current = at_derived_memory(template_current, workload)
        lines = usage(workload, current, US_EAST_1)
        total = total_usd(lines)
        top = max(lines, key=lambda line: line.usd)
        shards = top_shards(workload, current)
        peers = {peer.name: peer.usd for peer in peer_costs(n, US_EAST_1)}
        row = f"| {n:,} | {shards} x {current.evaluate.memory_mb} | {dollars(total)} | "
        row += f"{dollars(total / n)} |"
        if base is not None:
            before = total_usd(usage(workload, base, US_EAST_1))
            row += f" {dollars(before)} | {dollars(before / n)} |"
        row += (
            f" {dollars(idle_queue_usd(workload, current, US_EAST_1))} | {top.service}: "
            f"{top.item} ({top.usd / total:.0%}) | {dollars(peers['target tracking'])} | "
            f"{dollars(peers['KEDA'])} |"
        )
        out.append(row)
    return out


def top_shards(workload: Workload, current: StackShape) -> str:
    """The evaluate function's shard count at this workload, and whether the plan fits."""
    plan = plan_shards(
        workload.queues,
        budget_seconds=DECIDE_SHARE * workload.interval_seconds,
        max_shards=current.max_evaluate_shards,
        vcpus=vcpus_for_memory(current.evaluate.memory_mb),
    )
    return str(plan.count) if plan.fits else f"{plan.count} (does not fit: needs {plan.needed})"


def where_it_goes(current: StackShape, n: int, rate: float) -> list[str]:
    """Line items of one size, largest first, and the services' shares."""
    workload = Workload(queues=n, events_per_second=rate)
    lines = usage(workload, at_derived_memory(current, workload), US_EAST_1)
    total = total_usd(lines)
    out = [
        f"### {n:,} queue(s): ${dollars(total)} a month, ${dollars(total / n)} per queue",
        "",
        "| service | line item | USD/month | share |",
        "|---|---|---:|---:|",
    ]
    for line in sorted(lines, key=lambda item: -item.usd):
        if line.usd / total >= 0.005:
            out.append(
                f"| {line.service} | {line.item} | {dollars(line.usd)} | {line.usd / total:.0%} |"
            )
    services = ", ".join(f"{k} {v / total:.0%}" for k, v in by_service(lines).items())
    return [*out, "", f"By service: {services}.", ""]


def capacity_section() -> list[str]:
    """How many queues one stack holds: the template translated for one and two queues."""
    one, per_queue, most = stack_capacity(load_template())
    if most is None:
        text = (
            f"The template translates to {one} resources with one queue and {per_queue} more "
            "per queue: no resource grows with the queue count (the alarms are one per "
            "condition over the fleet metrics), so every row above is one deployable stack "
            f"within CloudFormation's {CLOUDFORMATION_MAX_RESOURCES} resources. "
            "`tests/unit/test_deploy.py` checks the same resource count for 1 and 1,000 queues "
            "with the parameters `deploy` derives."
        )
    else:
        text = (
            f"The template translates to {one} resources with one queue and {per_queue} more "
            f"per queue; CloudFormation holds at most {CLOUDFORMATION_MAX_RESOURCES} resources "
            f"a stack, so one stack deploys at most **{most} queues**."
        )
    return ["## How many queues one stack holds", "", text, ""]


def per_queue_metrics_section(rate: float) -> list[str]:
    """The bill with PerQueueMetrics=true (the per-queue values as CloudWatch metrics)."""
    opted = shape(load_template(), {"PerQueueMetrics": "true"})
    out = [
        "## With PerQueueMetrics=true",
        "",
        "| queues | total USD/month | USD per queue-month | custom metrics line |",
        "|---:|---:|---:|---:|",
    ]
    for n in SIZES:
        lines = billed(opted, n, rate)
        total = total_usd(lines)
        metrics = item_usd(lines, "custom metrics")
        out.append(f"| {n:,} | {dollars(total)} | {dollars(total / n)} | {dollars(metrics)} |")
    return [*out, ""]


def billed(current: StackShape, queues: int, rate: float) -> list[Usage]:
    """The month's line items at `queues` queues of `rate` events/s, the memory derived."""
    workload = Workload(queues=queues, events_per_second=rate)
    return usage(workload, at_derived_memory(current, workload), US_EAST_1)


def item_usd(lines: list[Usage], starts: str) -> float:
    """USD of the one line item whose name starts with `starts`."""
    (found,) = [line.usd for line in lines if line.item.startswith(starts)]
    return found


RATES: tuple[float, ...] = (0.09, 0.3, 0.9, 3.0, 9.0, 30.0, 90.0)
"""Events/s per queue of the by-rate table: age_reads.py's and decision_events.py's Poisson
rates (a job is three events)."""


def by_rate_section(current: StackShape, queues: int) -> list[str]:
    """The per-queue bill at the rates the age-read and decision-event shares were measured at,
    with the age read's upper bound (every busy minute read) beside its measured share."""
    out = [
        f"## By rate, at {queues:,} queues",
        "",
        "GetMetricData bills the share of minutes with visible messages measured at the rate "
        "(`benchmarks/results/age_reads.md`, predictive, the controller's default policy, in the "
        "simulator), and the decision events "
        "the share of ticks publishing (`decision_events.md`); the upper bound bills every busy "
        "minute's age read. USD per queue-month.",
        "",
        "| events/s | jobs/s | total | GetMetricData | its upper bound | total at the upper "
        "bound | decision events |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    every = queues * MINUTES_PER_MONTH / 1000 * US_EAST_1.get_metric_data_per_thousand_metrics
    for rate in RATES:
        lines = billed(current, queues, rate)
        total, read = total_usd(lines), item_usd(lines, "GetMetricData")
        out.append(
            f"| {rate:g} | {rate / EVENTS_PER_JOB:g} | {total / queues:.3f} | "
            f"{read / queues:.3f} | {every / queues:.3f} | {(total - read + every) / queues:.3f} "
            f"| {item_usd(lines, 'decision events') / queues:.3f} |"
        )
    return [*out, ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--baseline", help="a git revision whose template is billed beside")
    parser.add_argument("--events-per-second", type=float, default=0.3, help="per queue")
    parser.add_argument("--out", default="cost.md")
    args = parser.parse_args()
    current = shape(load_template())
    base = baseline_shape(args.baseline) if args.baseline else None
    rate = args.events_per_second
    out = [
        header("What the stack itself costs a month (`queue-autoscale cost`'s arithmetic)"),
        f"Prices: {US_EAST_1.region} list prices as published on " + ", ".join(SOURCES) + "; "
        f"each checked on {PRICED_ON} against the pages `operator/prices.py` names "
        "(PRICE_SOURCES, mostly pages quoting AWS: the AWS pages draw their tables in the "
        "browser); no page found states "
        + ", ".join(f"`{name}`" for name in sorted(UNVERIFIED))
        + " (kept as transcribed on 2026-11-28); no free tier; a month is 730 hours. Workload: "
        f"{rate:g} events/s per queue ({rate / EVENTS_PER_JOB:g} jobs/s), interval "
        f"{Workload(queues=1).interval_seconds:g} s, logs "
        "30 days, archive 400 days; EvaluateMemorySize as `queue-autoscale cost` derives it for "
        "the queue count (the before column: the baseline template's default). The same "
        "numbers per size come from `queue-autoscale cost --queues N --evaluate-memory MB`. "
        "Without the dashboard MaxSlaUsage and MaxFleetUsage are billed for the hours they are "
        "sent, at or above their alarm's threshold: the share of a queue's hours measured at its "
        "rate (`alarm_metric_hours.md`: none at 0.1 jobs/s in a week of Poisson arrivals), "
        "1 - (1 - share)^N for N queues.",
        "",
        "## The bill by size",
        "",
        *sizes_table(current, rate, base),
        "",
        f"Before = the template and metric list of `{args.baseline}`." if base else "",
        "",
        "## Where each dollar goes",
        "",
    ]
    for n in (1, 10_000):
        out += where_it_goes(current, n, rate)
    out += capacity_section()
    out += by_rate_section(current, 10_000)
    out += per_queue_metrics_section(rate)
    memory = {n: derived_evaluate_memory(Workload(queues=n), current) for n in SIZES}
    out += [
        "## Evaluate memory derived from the queue count",
        "",
        "| queues | " + " | ".join(f"{n:,}" for n in SIZES) + " |",
        "|---|" + "---:|" * len(SIZES),
        "| EvaluateMemorySize MB | " + " | ".join(str(memory[n]) for n in SIZES) + " |",
    ]
    write(args.out, "\n".join(out))


if __name__ == "__main__":
    main()
