"""The demo's live output: a compact table on a terminal, one line per tick in a log (both fit
80 columns), and the full table (every column, the decision's reason) written to the output."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

COLOURS = {"NORMAL": "green", "ELEVATED": "yellow", "WARNING": "dark_orange"}


@dataclass
class TickRow:
    """One evaluate tick."""

    elapsed: float
    phase: str
    rate: float
    visible: int | None
    in_flight: int | None
    oldest_age: float | None
    workers: int
    """Worker processes taking jobs."""
    stopping: int
    """Worker processes draining after SIGTERM."""
    pending: int
    """Tasks ordered before this tick's decision whose process had not started."""
    desired: int | None
    target: int | None
    load_ratio: float | None
    urgency: str
    action: str
    reason: str
    errors: list[str] = field(default_factory=list)
    jump: bool = False
    """A jump tick: the record path asked for it on the tick queue (else a clock tick)."""

    @property
    def kind(self) -> str:
        """The phase, or "jump" for a jump tick (the phase its neighbours show)."""
        return "jump" if self.jump else self.phase


def _num(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _count(value: int | None) -> str:
    return "-" if value is None else str(value)


def tick_line(row: TickRow) -> str:
    """One tick in at most 80 characters (the non-TTY log line)."""
    workers = f"{row.workers}" + (f"(-{row.stopping})" if row.stopping else "")
    line = (
        f"{row.elapsed:4.0f}s {row.kind[:5]:<5} {row.rate:5.1f}/s "
        f"depth {_count(row.visible):>4} run {_count(row.in_flight):>3} "
        f"age {_num(row.oldest_age):>5}s "
        f"wrk {workers:>6} -> {_count(row.desired):>3} {row.action[:10]}"
    )
    return line[:80]


def _queue_cells(row: TickRow) -> tuple[str, ...]:
    """The first six cells of both tables: time s, phase (or "jump"), jobs/s, depth, in flight,
    oldest s."""
    return (
        f"{row.elapsed:.0f}",
        row.kind,
        f"{row.rate:.1f}",
        _count(row.visible),
        _count(row.in_flight),
        _num(row.oldest_age),
    )


def compact_table(rows: Sequence[TickRow], header: str, limit: int = 14) -> Group:
    """The live table on a terminal: the latest ticks, eight columns within 80 characters."""
    table = Table(title="evaluate ticks", box=None, pad_edge=False)
    for name in ("t s", "phase", "jobs/s", "depth", "running", "oldest s", "workers", "desired"):
        table.add_column(name, justify="left" if name == "phase" else "right", no_wrap=True)
    table.add_column("action", no_wrap=True, max_width=12, overflow="ellipsis")
    for row in rows[-limit:]:
        workers = f"{row.workers}" + (f" (-{row.stopping})" if row.stopping else "")
        table.add_row(
            *_queue_cells(row),
            workers,
            _count(row.desired),
            Text(row.action, style=COLOURS.get(row.urgency, "red")),
        )
    return Group(Text(header), table)


def full_table(rows: Sequence[TickRow]) -> Table:
    """Every tick with every column and the decision's reason (written to ticks.txt)."""
    table = Table(title="queue-autoscale demo: evaluate ticks")
    for name in ("t s", "phase", "jobs/s", "depth", "in flight", "oldest s", "workers",
                 "stopping", "pending", "desired", "target", "load ρ", "urgency",
                 "action"):  # fmt: skip
        table.add_column(name, justify="left" if name in ("phase", "urgency") else "right")
    table.add_column("reason")
    for row in rows:
        table.add_row(
            *_queue_cells(row),
            str(row.workers),
            str(row.stopping),
            str(row.pending),
            _count(row.desired),
            _count(row.target),
            _num(row.load_ratio, 2),
            row.urgency,
            row.action,
            "; ".join(row.errors) if row.errors else row.reason,
        )
    return table


def write_ticks(rows: Sequence[TickRow], folder: Path) -> None:
    """ticks.jsonl (one object per tick) and ticks.txt (the full table) in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ticks.jsonl").write_text(
        "".join(json.dumps(asdict(row)) + "\n" for row in rows), encoding="utf-8"
    )
    with (folder / "ticks.txt").open("w", encoding="utf-8") as stream:
        Console(file=stream, width=220, color_system=None).print(full_table(rows))
