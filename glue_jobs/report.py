"""The SLA report as one self-contained HTML file: tables plus matplotlib charts as base64 PNG."""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Mapping, Sequence

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 1200px; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; margin-top: 1.8em; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }
th { background: #f0f0f0; } td:first-child, th:first-child { text-align: left; }
img { max-width: 100%; } .note { color: #555; font-size: 0.9em; }
"""


def _png(figure: Figure) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90)
    encoded = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f'<img alt="chart" src="data:image/png;base64,{encoded}">'


def _queue_axes(queues: Sequence[str], height: float = 2.6) -> tuple[Figure, list[Axes]]:
    figure = Figure(figsize=(11, height * len(queues) + 0.4), layout="constrained")
    axes = [figure.add_subplot(len(queues), 1, index + 1) for index in range(len(queues))]
    return figure, axes


def compliance_chart(daily: pd.DataFrame) -> str:
    """Share of jobs picked up within the SLA per queue and day, %."""
    figure = Figure(figsize=(11, 3.5), layout="constrained")
    axes = figure.add_subplot(1, 1, 1)
    for queue, rows in daily.sort_values("period_start").groupby("queue"):
        axes.plot(rows["period_start"], rows["sla_share"] * 100.0, marker="o", label=str(queue))
    axes.set_ylim(0, 102)
    axes.set_ylabel("within SLA, %")
    axes.set_title("SLA compliance by day")
    axes.grid(alpha=0.3)
    axes.legend(loc="lower left", fontsize="small")
    return _png(figure)


def pickup_chart(hourly: pd.DataFrame) -> str:
    """Hourly pickup p50/p95/p99 per queue against its SLA, seconds."""
    queues = sorted(hourly["queue"].unique())
    figure, axes_list = _queue_axes(queues)
    for axes, queue in zip(axes_list, queues, strict=True):
        rows = hourly[hourly["queue"] == queue].sort_values("period_start")
        for column in ("pickup_p50", "pickup_p95", "pickup_p99"):
            axes.plot(rows["period_start"], rows[column], label=column.removeprefix("pickup_"))
        axes.axhline(float(rows["sla_seconds"].max()), color="red", linestyle="--", label="SLA")
        axes.set_ylabel("pickup, s")
        axes.set_title(f"{queue}: pickup time percentiles by hour")
        axes.grid(alpha=0.3)
        axes.legend(loc="upper left", fontsize="small")
    return _png(figure)


def backlog_chart(backlog: pd.DataFrame) -> str:
    """Reconstructed backlog (jobs) against workers, per queue."""
    queues = sorted(backlog["queue"].unique())
    figure, axes_list = _queue_axes(queues)
    for axes, queue in zip(axes_list, queues, strict=True):
        rows = backlog[backlog["queue"] == queue].sort_values("stamp")
        axes.step(rows["stamp"], rows["backlog"], where="post", color="tab:blue", label="backlog")
        axes.set_ylabel("backlog, jobs", color="tab:blue")
        axes.set_ylim(bottom=0)
        workers = axes.twinx()
        workers.step(rows["stamp"], rows["workers"], where="post", color="tab:orange")
        workers.set_ylabel("workers", color="tab:orange")
        workers.set_ylim(bottom=0)
        axes.set_title(f"{queue}: reconstructed backlog against workers")
        axes.grid(alpha=0.3)
    return _png(figure)


def _table(frame: pd.DataFrame) -> str:
    text: str = frame.to_html(
        index=False, escape=True, na_rep="-", float_format=lambda v: f"{v:.3g}"
    )
    return text


def render_report(
    title: str,
    summary: Mapping[str, object],
    daily: pd.DataFrame,
    hourly: pd.DataFrame,
    backlog: pd.DataFrame,
    cost_daily: pd.DataFrame | None,
    rejected: pd.DataFrame,
) -> str:
    """The whole report as one HTML string (no external files or links)."""
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        "<table>",
        *[
            f"<tr><th>{html.escape(str(key))}</th><td>{html.escape(str(value))}</td></tr>"
            for key, value in summary.items()
        ],
        "</table>",
        "<h2>Daily SLA per queue</h2>",
    ]
    daily_columns = [
        "queue",
        "period_start",
        "sla_seconds",
        "jobs",
        "attempts",
        "sla_share",
        "pickup_p50",
        "pickup_p95",
        "pickup_p99",
        "pickup_max",
        "breach_minutes",
        "failures",
        "unknown_pickup",
        "not_started",
        "mean_job_seconds",
        "arrival_rate",
    ]
    if daily.empty:
        parts.append("<p>No jobs in the archive.</p>")
    else:
        parts += [_table(daily[daily_columns]), compliance_chart(daily)]
        parts += ["<h2>Pickup time by hour</h2>", pickup_chart(hourly)]
    parts.append("<h2>Backlog</h2>")
    if backlog.empty:
        parts.append("<p>No intervals to reconstruct.</p>")
    else:
        parts += [
            "<p class='note'>Jobs waiting at the end of each interval, rebuilt from arrivals "
            "and capacity (workers from the decision log, or the completions seen) with the "
            "Lindley recursion; workers on the right axis.</p>",
            backlog_chart(backlog),
        ]
    parts.append("<h2>Cost</h2>")
    if cost_daily is None or cost_daily.empty:
        parts.append("<p>No decision log in the archive: worker-seconds unknown.</p>")
    else:
        parts.append(_table(cost_daily))
    parts.append("<h2>Rejected archive lines</h2>")
    parts.append("<p>None.</p>" if rejected.empty else _table(rejected))
    parts.append(
        "<p class='note'>Pickup = started - queued of the same attempt (retries are separate "
        "attempts; the worker's pickup_ms when the queued event is missing). Attempts started "
        "without either count in unknown_pickup and are left out of percentiles and share; "
        "attempts never started that had waited longer than the SLA when the data ends count "
        "against the share. Breach minutes: minutes in which some job had waited longer than "
        "its SLA.</p></body></html>"
    )
    return "\n".join(parts)
