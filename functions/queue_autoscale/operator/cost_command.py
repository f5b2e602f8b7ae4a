"""`queue-autoscale cost`: the stack's monthly AWS bill by service and line item, in total and
per queue, for a queue count, interval, event rate and retentions (arithmetic in
`operator.cost`, prices pinned in `operator.prices`, the stack's shape read from template.yaml)."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Annotated

import typer

from queue_autoscale.core.models import DEFAULT_EVALUATION_INTERVAL_SECONDS
from queue_autoscale.demo.template import load_template
from queue_autoscale.operator.cost import (
    by_service,
    derived_evaluate_memory,
    idle_queue_usd,
    total_usd,
    usage,
)
from queue_autoscale.operator.cost_inputs import (
    StackShape,
    Workload,
)
from queue_autoscale.operator.cost_peers import peer_costs
from queue_autoscale.operator.cost_template import (
    CLOUDFORMATION_MAX_RESOURCES,
    shape,
    stack_capacity,
)
from queue_autoscale.operator.prices import PRICED_ON, US_EAST_1, Prices

MAX_RETENTION_DAYS = 3653
"""Ten years (CloudWatch Logs keeps logs at most this long): the bound of both retentions."""


def template_shape(
    evaluate_memory_mb: int | None = None,
    dashboard: bool = False,
    per_queue_metrics: bool = False,
    tracing: bool = False,
    platform_logs: bool = False,
    jump_ticks: bool = True,
) -> StackShape:
    """The shape of the checkout's template.yaml (the command runs from the repository), with
    EvaluateMemorySize overridden when given (MB), DashboardEnabled when `dashboard`,
    PerQueueMetrics when `per_queue_metrics`, EvaluateTracing=Active when `tracing` and
    FunctionSystemLogLevel=INFO when `platform_logs`, JumpTicks=false unless `jump_ticks`."""
    overrides: dict[str, object] = {}
    if not jump_ticks:
        overrides["JumpTicks"] = "false"
    if platform_logs:
        overrides["FunctionSystemLogLevel"] = "INFO"
    if tracing:
        overrides["EvaluateTracing"] = "Active"
    if per_queue_metrics:
        overrides["PerQueueMetrics"] = "true"
    if evaluate_memory_mb is not None:
        overrides["EvaluateMemorySize"] = evaluate_memory_mb
    if dashboard:
        overrides["DashboardEnabled"] = "true"
    return shape(load_template(), overrides)


def _money(usd: float) -> str:
    return f"{usd:,.2f}" if usd >= 0.01 or usd == 0 else f"{usd:.4f}"


def render(
    workload: Workload,
    shape: StackShape,
    prices: Prices = US_EAST_1,
    stack_limit: int | None = None,
) -> str:
    """The bill as Markdown: line items, services, totals, idle queue, peers; and a warning
    when one stack cannot hold `workload.queues` (`stack_limit`: the most it holds)."""
    lines = usage(workload, shape, prices)
    total = total_usd(lines)
    n = workload.queues
    out = [
        f"Monthly bill of the stack: {n:,} queue(s), interval {workload.interval_seconds:g} s, "
        f"{workload.events_per_second:g} events/s per queue, logs kept "
        f"{workload.log_retention_days} days, archive {workload.archive_retention_days} days. "
        f"{prices.region} list prices of {PRICED_ON}, no free tier; a month is 730 hours.",
        "",
        "| service | line item | quantity a month | USD a month | USD per queue |",
        "|---|---|---:|---:|---:|",
    ]
    for line in sorted(lines, key=lambda item: -item.usd):
        out.append(
            f"| {line.service} | {line.item} | {line.quantity:,.3g} {line.unit} | "
            f"{_money(line.usd)} | {_money(line.usd / n)} |"
        )
    out += ["", "| service | USD a month | share |", "|---|---:|---:|"]
    for service, usd in by_service(lines).items():
        out.append(f"| {service} | {_money(usd)} | {usd / total:.0%} |")
    memory = derived_evaluate_memory(workload, shape)
    out += [
        "",
        f"Total: **${_money(total)} a month**, ${_money(total / n)} per queue-month.",
        f"One more idle queue adds ${_money(idle_queue_usd(workload, shape, prices))} a month.",
        f"EvaluateMemorySize derived for {n:,} queues: {memory} MB "
        f"(deployed: {shape.evaluate.memory_mb} MB).",
        *_too_many(n, stack_limit),
        "",
        "Peers' marginal cost for the same fleet:",
        "",
    ]
    for peer in peer_costs(n, prices):
        out.append(f"- {peer.name}: ${_money(peer.usd)} a month ({peer.what})")
    return "\n".join(out)


def _too_many(queues: int, stack_limit: int | None) -> list[str]:
    if stack_limit is None or queues <= stack_limit:
        return []
    return [
        f"Not deployable as one stack: its per-queue alarms fit at most {stack_limit} queues in "
        f"CloudFormation's {CLOUDFORMATION_MAX_RESOURCES} resources; the alarm line is priced "
        "as if they existed (docs/cost.md)."
    ]


def cost(  # noqa: PLR0913 - a typer command: one parameter per option
    queues: Annotated[int, typer.Option("--queues", min=1, max=1_000_000)] = 1,
    interval: Annotated[
        float, typer.Option("--interval", min=5, max=60, help="EvaluationIntervalSeconds.")
    ] = DEFAULT_EVALUATION_INTERVAL_SECONDS,
    events_per_second: Annotated[
        float,
        typer.Option(
            "--events-per-second", min=0, max=100_000, help="Per queue (three events a job)."
        ),
    ] = 0.3,
    log_retention_days: Annotated[
        int, typer.Option("--log-retention-days", min=1, max=MAX_RETENTION_DAYS)
    ] = 30,
    archive_retention_days: Annotated[
        int, typer.Option("--archive-retention-days", min=1, max=MAX_RETENTION_DAYS)
    ] = 400,
    evaluate_memory: Annotated[
        int | None,
        typer.Option("--evaluate-memory", min=128, max=10_240, help="MB; default: the template's."),
    ] = None,
    dashboard: Annotated[
        bool, typer.Option("--dashboard", help="Bill the opt-in dashboard (DashboardEnabled=true).")
    ] = False,
    per_queue_metrics: Annotated[
        bool,
        typer.Option(
            "--per-queue-metrics", help="Bill per-queue CloudWatch metrics (PerQueueMetrics=true)."
        ),
    ] = False,
    tracing: Annotated[
        bool,
        typer.Option("--tracing", help="Bill X-Ray traces of the evaluate function (Active)."),
    ] = False,
    platform_logs: Annotated[
        bool,
        typer.Option(
            "--platform-logs",
            help="Bill Lambda's START, END and REPORT lines (FunctionSystemLogLevel=INFO).",
        ),
    ] = False,
    no_jump_ticks: Annotated[
        bool,
        typer.Option(
            "--no-jump-ticks", help="Bill the stack without jump ticks (JumpTicks=false)."
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the line items as JSON.")] = False,
) -> None:
    """The stack's own monthly AWS bill, by service and line item, in total and per queue."""
    workload = Workload(
        queues=queues,
        interval_seconds=interval,
        events_per_second=events_per_second,
        log_retention_days=log_retention_days,
        archive_retention_days=archive_retention_days,
    )
    shape = template_shape(
        evaluate_memory, dashboard, per_queue_metrics, tracing, platform_logs, not no_jump_ticks
    )
    if as_json:
        lines = usage(workload, shape, US_EAST_1)
        document = {
            "workload": asdict(workload),
            "priced_on": PRICED_ON,
            "lines": [asdict(line) for line in lines],
            "total_usd": total_usd(lines),
        }
        typer.echo(json.dumps(document, indent=2))
        return
    _, _, limit = stack_capacity(load_template())
    typer.echo(render(workload, shape, stack_limit=limit))


def register(app: typer.Typer) -> None:
    """Add `cost` to the CLI."""
    app.command(name="cost")(cost)
