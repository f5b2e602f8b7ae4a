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


CONSOLE_COLUMNS: dict[str, str] = {
    "policy": "policy",
    "jobs": "jobs",
    "within SLA": "within SLA",
    "p50 pickup s": "p50 s",
    "p99 pickup s": "p99 s",
    "max pickup s": "max s",
    "worker-s": "worker-s",
    "busy-s": "busy-s",
    "utilization": "util",
    "actions": "actions",
    "interrupted": "interrupted",
    "flaps": "flaps",
    "starts/h": "starts/h",
    "cost $": "cost $",
}
"""The console table's columns (`Score.cells` keys) and their short headings."""


def score_table(scores: Sequence[Score], title: str) -> Table:
    """One row per policy."""
    table = Table(title=title)
    for key, heading in CONSOLE_COLUMNS.items():
        table.add_column(heading, justify="left" if key == "policy" else "right")
    for s in scores:
        cells = s.cells()
        table.add_row(*(cells[key] for key in CONSOLE_COLUMNS))
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
