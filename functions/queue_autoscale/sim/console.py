"""Rich output shared by `simulate` and `bench`: the score table and the progress bar."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from queue_autoscale.sim.arrivals import Counts
from queue_autoscale.sim.runner import Comparison, RunSpec, compare
from queue_autoscale.sim.runner import Progress as ProgressFn
from queue_autoscale.sim.scores import Score

LONG_RUN_SECONDS = 4 * 3600
"""Workloads at least this long get a progress bar."""


def score_table(scores: Sequence[Score], title: str) -> Table:
    """One row per policy."""
    table = Table(title=title)
    for column in ("policy", "jobs", "within SLA", "p50 s", "p99 s", "max s", "worker-s",
                   "busy-s", "util", "actions", "interrupted", "cost $"):  # fmt: skip
        table.add_column(column, justify="left" if column == "policy" else "right")
    for s in scores:
        table.add_row(
            s.policy,
            f"{s.jobs:,}",
            f"{s.sla_compliance:.4%}",
            f"{s.p50_pickup_seconds:.2f}",
            f"{s.p99_pickup_seconds:.2f}",
            f"{s.max_pickup_seconds:.1f}",
            f"{s.worker_seconds:,.0f}",
            f"{s.busy_seconds:,.0f}",
            f"{s.utilization:.3f}",
            str(s.scaling_actions),
            f"{s.interrupted_jobs:,}",
            f"{s.cost_usd:.2f}",
        )
    return table


@contextmanager
def progress_bar(enabled: bool, console: Console) -> Iterator[ProgressFn | None]:
    """A rich progress bar per policy, or nothing."""
    if not enabled:
        yield None
        return
    columns = (TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        tasks: dict[str, TaskID] = {}

        def update(policy: str, done: int, total: int) -> None:
            if policy not in tasks:
                tasks[policy] = bar.add_task(f"simulating {policy}", total=total)
            bar.update(tasks[policy], completed=done)

        yield update


def run_comparison(
    label: str,
    counts: Counts,
    policies: list[str],
    spec: RunSpec,
    console: Console,
    record_decisions: bool = False,
) -> Comparison:
    """compare() with a progress bar on long workloads."""
    with progress_bar(counts.size >= LONG_RUN_SECONDS, console) as update:
        return compare(label, counts, policies, spec, update, record_decisions)
