"""`status` as a person reads it: one block per queue and the alarms, within 80 columns."""

from __future__ import annotations

from datetime import UTC, datetime

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from queue_autoscale.operator.live import QueueStatus, StackStatus

ALARM_STYLE = {"OK": "green", "ALARM": "bold red", "INSUFFICIENT_DATA": "yellow"}
URGENCY_STYLE = {"NORMAL": "green", "ELEVATED": "yellow", "WARNING": "yellow"}


def clock(at: float | None) -> str:
    """HH:MM:SS UTC of an epoch time, '-' when unknown."""
    return "-" if at is None else datetime.fromtimestamp(at, UTC).strftime("%H:%M:%S")


def ago(at: float | None, now: float) -> str:
    """'42 s ago' / '3 min ago' / '2.5 h ago' of an epoch time, '-' when unknown."""
    if at is None:
        return "-"
    seconds = max(0.0, now - at)
    if seconds < 120:
        return f"{seconds:.0f} s ago"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min ago"
    return f"{seconds / 3600:.1f} h ago"


def _num(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def queue_rows(status: QueueStatus, now: float) -> list[tuple[str, str]]:
    """(field, value) lines of one queue's block."""
    q = status
    if q.decided_at is None:
        decided = "no decision in the log of the last 15 min"
        workers = "-"
    else:
        decided = f"{ago(q.decided_at, now)} ({clock(q.decided_at)} UTC)"
        workers = (
            f"{_num(q.running, 'd')} running, target {_num(q.target, 'd')} "
            f"({q.action}; winning term: {q.winner})"
        )
    usage = f" ({q.sla_usage:.0%} of it)" if q.sla_usage is not None else ""
    if q.compliance is None:
        compliance = "no job started in the last hour"
    else:
        compliance = (
            f"{q.compliance:.1%} of {q.compliance_jobs} jobs within {q.sla_seconds:g} s "
            f"(target {q.percentile:.0%})" + (", partial" if q.compliance_partial else "")
        )
    action = (
        "none recorded"
        if q.last_action is None
        else (f"{q.last_action}, {ago(q.last_action_at, now)} ({clock(q.last_action_at)} UTC)")
    )
    return [
        ("workers", workers),
        (
            "load ratio",
            f"{_num(q.load_ratio, '.2f')}   backlog/instance {_num(q.backlog_per_instance, '.1f')}",
        ),
        (
            "oldest job",
            f"{_num(q.oldest_age_seconds, '.1f')} s of a {q.sla_seconds:g} s SLA"
            f"{usage}   urgency {q.urgency or '-'}",
        ),
        ("pickup now", f"{_num(q.predicted_pickup_seconds, '.1f')} s predicted"),
        ("last action", action),
        ("last hour", compliance),
        ("decided", decided),
        ("reason", q.reason or "-"),
    ]


def queue_block(status: QueueStatus, now: float) -> Table:
    """One queue as a two-column table titled with its name and SLA."""
    table = Table(
        title=f"{status.queue}  (SLA {status.sla_seconds:g} s at p{status.percentile * 100:g})",
        title_justify="left",
        title_style="bold",
        show_header=False,
        box=None,
        padding=(0, 1),
    )
    table.add_column("field", style="dim", no_wrap=True)
    table.add_column("value", overflow="fold")
    for name, value in queue_rows(status, now):
        style = URGENCY_STYLE.get(status.urgency or "", "bold red") if name == "oldest job" else ""
        table.add_row(name, Text(value, style=style))
    return table


def alarms_block(status: StackStatus) -> RenderableType:
    """The stack's alarms with their states."""
    if status.alarms is None:
        return Text("alarms: could not be read", style="yellow")
    if not status.alarms:
        return Text(f"alarms: none named {status.stack}-*", style="yellow")
    table = Table(title="alarms", title_justify="left", title_style="bold", box=None)
    table.add_column("alarm", no_wrap=True)
    table.add_column("state", no_wrap=True)
    table.add_column("since", no_wrap=True)
    table.add_column("queues in it now", overflow="fold")
    for alarm in status.alarms:
        name = alarm.name.removeprefix(f"{status.stack}-")
        table.add_row(
            name,
            Text(alarm.state, style=ALARM_STYLE.get(alarm.state, "")),
            clock(alarm.updated_at),
            named(status.conditions.get(alarm.name, ())),
        )
    return table


SHOWN_QUEUES = 3
"""An alarm row names at most this many queues, then how many more (`--json` lists all)."""


def named(queues: tuple[str, ...]) -> str:
    """'a, b, c and 4 more', or '' for none."""
    shown = ", ".join(queues[:SHOWN_QUEUES])
    more = len(queues) - SHOWN_QUEUES
    return f"{shown} and {more} more" if more > 0 else shown


def status_view(status: StackStatus) -> Group:
    """The whole status: a header, each queue, the alarms, then any read errors."""
    header = Text(
        f"stack {status.stack} at {datetime.fromtimestamp(status.at, UTC):%Y-%m-%d %H:%M:%S} UTC",
        style="bold",
    )
    parts: list[RenderableType] = [header, Text("")]
    for queue in status.queues:
        parts += [queue_block(queue, status.at), Text("")]
    parts.append(alarms_block(status))
    parts += [Text(f"read error: {error}", style="yellow") for error in status.errors]
    return Group(*parts)
