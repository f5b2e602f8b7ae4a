"""The SLA report as one self-contained HTML file: tables plus matplotlib charts as base64 PNG.

Rendering only: every function here takes pandas frames the job has already collected
(`sla_report.run` reads and aggregates), so the report renders the same for any reader.
Charts fit their axes to the data (a two-minute demo and a month of history both read), draw
single points as labelled markers, and carry a title, units and the SLA line where one applies.
Tables scroll inside the page; every column has a definition on hover and in the glossary.
"""

from __future__ import annotations

import base64
import html
import io
import shlex
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

import matplotlib.dates
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em auto; padding: 0 1em; color: #222;
       max-width: 1100px; line-height: 1.4; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; margin-top: 1.8em; }
.scroll { max-width: 100%; overflow-x: auto; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: right; white-space: nowrap; }
th { background: #f0f0f0; } td:first-child, th:first-child { text-align: left; }
th a { color: inherit; text-decoration: none; border-bottom: 1px dotted #888; }
img { max-width: 100%; height: auto; display: block; } .note { color: #555; font-size: 0.9em; }
.bad { color: #b00020; font-weight: 600; }
dl.glossary dt { font-weight: 600; margin-top: 0.5em; } dl.glossary dd { margin-left: 1.5em; }
"""

DEFINITIONS: dict[str, str] = {
    "queue": "The SQS work queue.",
    "target": "The queue's configured percentile: the share of jobs the SLA promises.",
    "period_start": "Start of the hour or day (UTC) the row covers.",
    "sla_seconds": "The queue's pickup-time SLA, seconds (from the config; 30 s if absent).",
    "jobs": "Distinct job ids first seen in the period.",
    "attempts": "Deliveries: a retried job counts once per attempt.",
    "sla_share": "Within SLA: attempts picked up within the SLA / (attempts with a known pickup "
    "+ attempts never started that had already waited longer than the SLA when the data ends).",
    "pickup_p50": "Median pickup time, seconds: started - queued of one attempt (retries are "
    "separate attempts), or the worker's pickup_ms when the queued event is missing.",
    "pickup_p95": "95th percentile of pickup time, seconds.",
    "pickup_p99": "99th percentile of pickup time, seconds.",
    "pickup_max": "Longest pickup time, seconds.",
    "breach_minutes": "Minutes in which some job of the queue had waited longer than its SLA.",
    "failures": "Attempts that ended with a `failed` event.",
    "unknown_pickup": "Attempts started without a `queued` event or pickup_ms: left out of "
    "percentiles and share.",
    "not_started": "Attempts queued and never started when the data ends.",
    "mean_job_seconds": "Mean duration of finished attempts, seconds.",
    "arrival_rate": "Queued events in the period / the period's length, jobs/s.",
    "ticks": "Controller decisions logged for the queue in the period.",
    "worker_seconds": "Task-seconds billed: each decision's running ECS task count (the decision "
    "log's `running`, else `current`) times the seconds until the queue's next decision (capped "
    "at twice the median tick gap; the last decision counts one median gap).",
    "mean_workers": "worker_seconds / the seconds the decisions cover.",
    "busy_seconds": "Sum of the durations of attempts that finished in the period, seconds.",
    "utilization": "busy_seconds / worker_seconds.",
    "replay": "The command that replays the queue's window under every scaling policy, next to "
    "what really happened (add --config with the queues config for its own settings).",
    "reason": "Why an archive line was rejected.",
    "count": "Archive lines rejected for this reason.",
    "backlog": "Jobs waiting at the end of each interval, rebuilt with the Lindley recursion "
    "from arrivals and capacity (workers from the decision log, or completions seen).",
    "workers": "Mean running workers in the interval (from the decision log).",
}
"""Every number's definition, shown on hover (title) and in the glossary at the end."""

DAILY_COLUMNS = (
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
)
COST_COLUMNS = (
    "queue",
    "period_start",
    "ticks",
    "worker_seconds",
    "mean_workers",
    "busy_seconds",
    "utilization",
)
OVERVIEW_COLUMNS = (
    "queue",
    "sla_seconds",
    "target",
    "jobs",
    "sla_share",
    "pickup_max",
    "breach_minutes",
    "worker_seconds",
    "utilization",
    "replay",
)
DATES: Any = matplotlib.dates
"""matplotlib.dates has no type hints; its calls are made through this."""
PERIOD = {"minute": timedelta(minutes=1), "hour": timedelta(hours=1), "day": timedelta(days=1)}
SHORT_HOURS = 3
"""Data within this many hours is charted by the minute."""
COMPLIANCE_DAYS = 3
"""Data over at least this many days is charted by the day for compliance."""
LABEL_POINTS = 4
"""Series with at most this many points get their values written next to the markers."""
CHART_WIDTH_INCHES = 11.0
CHART_DPI = 90


def _png(figure: Figure, alt: str) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=CHART_DPI)
    encoded = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f'<img class="chart" alt="{html.escape(alt)}" src="data:image/png;base64,{encoded}">'


def _times(values: pd.Series) -> list[datetime]:
    """Timestamps (naive = UTC, as the job's session writes them) as datetimes."""
    return [pd.Timestamp(value).to_pydatetime().replace(tzinfo=None) for value in values]


def _x(times: Sequence[datetime]) -> list[float]:
    """matplotlib's date numbers (days since its epoch) for the x axis."""
    return [float(DATES.date2num(at)) for at in times]


def fit_time_axis(axes: Axes, times: Sequence[datetime], pad: timedelta) -> None:
    """X from the first to the last time, `pad` either side, with concise date labels (UTC)."""
    if not times:
        return
    first, last = min(times), max(times)
    axes.set_xlim(float(DATES.date2num(first - pad)), float(DATES.date2num(last + pad)))
    locator = DATES.AutoDateLocator(minticks=3, maxticks=9)
    axes.xaxis.set_major_locator(locator)
    axes.xaxis.set_major_formatter(DATES.ConciseDateFormatter(locator))
    axes.set_xlabel("time, UTC")


def _label_points(axes: Axes, times: Sequence[datetime], values: Sequence[float], fmt: str) -> None:
    """Write each value beside its marker when a series has few points."""
    if len(times) > LABEL_POINTS:
        return
    for at, value in zip(times, values, strict=True):
        if pd.notna(value):
            axes.annotate(
                fmt.format(value),
                (float(DATES.date2num(at)), value),
                textcoords="offset points",
                xytext=(6, 6),
                fontsize="small",
            )


def detail_period(hourly: pd.DataFrame) -> str:
    """The finest period the charts use: 'minute' when the data covers at most SHORT_HOURS
    hours (a demo run), else 'hour'."""
    return "minute" if hourly["period_start"].nunique() <= SHORT_HOURS else "hour"


def _period_of(rows: pd.DataFrame) -> str:
    return str(rows["period"].iloc[0]) if "period" in rows and len(rows) else "hour"


def compliance_chart(
    rows: pd.DataFrame, period: str, percentiles: Mapping[str, float] | None = None
) -> str:
    """The compliance figure as an <img> tag."""
    return _png(compliance_figure(rows, period, percentiles), f"SLA compliance by {period}")


def compliance_figure(
    rows: pd.DataFrame, period: str, percentiles: Mapping[str, float] | None = None
) -> Figure:
    """Share of jobs picked up within the SLA per queue and period, %, with each target."""
    figure = Figure(figsize=(CHART_WIDTH_INCHES, 3.6), layout="constrained")
    axes = figure.add_subplot(1, 1, 1)
    all_times: list[datetime] = []
    lowest = 100.0
    for queue, group in rows.sort_values("period_start").groupby("queue"):
        shown = group[group["sla_share"].notna()]
        times, shares = _times(shown["period_start"]), list(shown["sla_share"] * 100.0)
        (line,) = axes.plot(_x(times), shares, marker="o", label=f"{queue}")
        _label_points(axes, times, shares, "{:.1f}%")
        target = (percentiles or {}).get(str(queue))
        if target is not None:
            axes.axhline(
                target * 100.0,
                color=line.get_color(),
                linestyle="--",
                linewidth=1,
                label=f"{queue} target {target:.1%}",
            )
            lowest = min(lowest, target * 100.0)
        all_times += times
        lowest = min([lowest, *shares])
    fit_time_axis(axes, all_times, PERIOD[period] / 2)
    axes.set_ylim(max(0.0, lowest - max(2.0, (100.0 - lowest) * 0.25)), 100.5)
    axes.set_ylabel("picked up within SLA, %")
    axes.set_title(f"SLA compliance by {period} (share of jobs picked up within the SLA)")
    axes.grid(alpha=0.3)
    axes.legend(loc="lower left", fontsize="small")
    return figure


def pickup_chart(rows: pd.DataFrame) -> str:
    """The pickup figure as an <img> tag."""
    return _png(pickup_figure(rows), f"pickup time by {_period_of(rows)}")


def pickup_figure(sla_rows: pd.DataFrame) -> Figure:
    """Pickup p50/p95/p99 per queue and period (the rows' own) against its SLA, seconds."""
    period = _period_of(sla_rows)
    queues = sorted(sla_rows["queue"].unique())
    figure = Figure(figsize=(CHART_WIDTH_INCHES, 2.8 * len(queues) + 0.4), layout="constrained")
    for index, queue in enumerate(queues):
        axes = figure.add_subplot(len(queues), 1, index + 1)
        rows = sla_rows[sla_rows["queue"] == queue].sort_values("period_start")
        times = _times(rows["period_start"])
        top = 0.0
        for column in ("pickup_p50", "pickup_p95", "pickup_p99"):
            values = list(rows[column])
            label = column.removeprefix("pickup_")
            axes.plot(_x(times), values, marker="o", markersize=3, label=label)
            _label_points(axes, times, values, "{:.1f} s")
            top = max([top, *(v for v in values if pd.notna(v))])
        sla = float(rows["sla_seconds"].max())
        axes.axhline(sla, color="red", linestyle="--", label=f"SLA {sla:g} s")
        fit_time_axis(axes, times, PERIOD[period] / 2)
        axes.set_ylim(0, max(top, sla) * 1.15)
        axes.set_ylabel("pickup, s")
        axes.set_title(f"{queue}: pickup time by {period} (p50 / p95 / p99) against the SLA")
        axes.grid(alpha=0.3)
        axes.legend(loc="upper left", fontsize="small", ncols=4)
    return figure


def backlog_chart(backlog: pd.DataFrame) -> str:
    """The backlog figure as an <img> tag."""
    return _png(backlog_figure(backlog), "backlog and workers")


def backlog_figure(backlog: pd.DataFrame) -> Figure:
    """Reconstructed backlog (jobs) against workers, per queue."""
    queues = sorted(backlog["queue"].unique())
    figure = Figure(figsize=(CHART_WIDTH_INCHES, 2.8 * len(queues) + 0.4), layout="constrained")
    for index, queue in enumerate(queues):
        axes = figure.add_subplot(len(queues), 1, index + 1)
        rows = backlog[backlog["queue"] == queue].sort_values("stamp")
        times = _times(rows["stamp"])
        marker = "o" if len(times) <= LABEL_POINTS else None
        x = _x(times)
        axes.step(x, rows["backlog"], where="post", color="tab:blue", marker=marker)
        axes.set_ylabel("backlog, jobs", color="tab:blue")
        axes.set_ylim(0, max(1.0, float(rows["backlog"].max())) * 1.1)
        workers = axes.twinx()
        workers.step(x, rows["workers"], where="post", color="tab:orange", marker=marker)
        workers.set_ylabel("workers", color="tab:orange")
        workers.set_ylim(0, max(1.0, float(rows["workers"].max())) * 1.15)
        span = (max(times) - min(times)) if times else timedelta(0)
        fit_time_axis(axes, times, max(span / 50, timedelta(seconds=30)))
        axes.set_title(f"{queue}: reconstructed backlog (left, jobs) and workers (right)")
        axes.grid(alpha=0.3)
    return figure


def _cell(column: str, value: Any) -> str:
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return "-"
    if column in {"sla_share", "utilization", "target"}:
        return f"{float(value):.1%}"
    if column == "period_start":
        stamp = pd.Timestamp(value)
        return str(stamp.strftime("%Y-%m-%d" if stamp == stamp.normalize() else "%Y-%m-%d %H:%M"))
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"
    return str(value)


def _header(column: str) -> str:
    definition = DEFINITIONS.get(column)
    if definition is None:
        return f"<th>{html.escape(column)}</th>"
    return (
        f"<th title='{html.escape(definition, quote=True)}'>"
        f"<a href='#def-{column}'>{html.escape(column)}</a></th>"
    )


def table(frame: pd.DataFrame, columns: Sequence[str] | None = None) -> str:
    """A table inside a horizontally scrolling box; headers carry their definitions."""
    chosen = [c for c in (columns or list(frame.columns)) if c in frame.columns]
    head = "".join(_header(column) for column in chosen)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(_cell(c, row[c]))}</td>" for c in chosen) + "</tr>"
        for _, row in frame[chosen].iterrows()
    )
    return f"<div class='scroll'><table><tr>{head}</tr>{body}</table></div>"


def replay_command(queue: str, days: pd.Series, archive: str) -> str:
    """`queue-autoscale simulate --archive` over the days of `days` (period starts), UTC."""
    first = pd.Timestamp(days.min()).normalize()
    end = pd.Timestamp(days.max()).normalize() + pd.Timedelta(days=1)
    return (
        f"queue-autoscale simulate --archive {shlex.quote(archive)} --queue {shlex.quote(queue)} "
        f"--from {first:%Y-%m-%dT%H:%M:%SZ} --to {end:%Y-%m-%dT%H:%M:%SZ}"
    )


def queue_overview(
    daily: pd.DataFrame,
    cost_daily: pd.DataFrame | None,
    percentiles: Mapping[str, float],
    archive: str = "ARCHIVE",
) -> pd.DataFrame:
    """One row per queue over the whole window: jobs, compliance against target, cost, and the
    command that replays it from `archive`."""
    rows = []
    for queue, group in daily.groupby("queue"):
        judged = float((group["picked_up"] + group["late_not_started"]).sum())
        share = float(group["within_sla"].sum()) / judged if judged else float("nan")
        row: dict[str, object] = {
            "queue": queue,
            "sla_seconds": float(group["sla_seconds"].max()),
            "target": percentiles.get(str(queue)),
            "jobs": int(group["jobs"].sum()),
            "sla_share": share,
            "pickup_max": group["pickup_max"].max(),
            "breach_minutes": int(group["breach_minutes"].sum()),
            "replay": replay_command(str(queue), group["period_start"], archive),
        }
        if cost_daily is not None and not cost_daily.empty:
            cost = cost_daily[cost_daily["queue"] == queue]
            work = float(cost["worker_seconds"].sum())
            row["worker_seconds"] = work
            row["utilization"] = float(cost["busy_seconds"].sum()) / work if work else None
        rows.append(row)
    return pd.DataFrame(rows)


def _glossary() -> str:
    items = "".join(
        f"<dt id='def-{name}'>{html.escape(name)}</dt><dd>{html.escape(text)}</dd>"
        for name, text in sorted(DEFINITIONS.items())
    )
    return f"<h2 id='definitions'>Definitions</h2><dl class='glossary'>{items}</dl>"


def render_report(  # noqa: PLR0913 - one per table of the report
    title: str,
    summary: Mapping[str, object],
    daily: pd.DataFrame,
    hourly: pd.DataFrame,
    backlog: pd.DataFrame,
    cost_daily: pd.DataFrame | None,
    rejected: pd.DataFrame,
    percentiles: Mapping[str, float] | None = None,
    detail: pd.DataFrame | None = None,
) -> str:
    """The whole report as one HTML string (no external files or links).

    `percentiles` maps a queue to its configured SLA percentile (0..1), drawn as its target.
    `detail` holds the SLA rows at the charts' finest period (default `hourly`; per minute
    for a short run, see `detail_period`).
    """
    targets = dict(percentiles or {})
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        "<div class='scroll'><table>",
        *[
            f"<tr><th>{html.escape(str(key))}</th><td>{html.escape(str(value))}</td></tr>"
            for key, value in summary.items()
        ],
        "</table></div>",
    ]
    if daily.empty:
        parts.append("<h2>SLA</h2><p>No jobs in the archive.</p>")
    else:
        fine = hourly if detail is None or detail.empty else detail
        by_day = daily["period_start"].nunique() >= COMPLIANCE_DAYS
        compliance_rows = daily if by_day else fine
        period, fine_period = _period_of(compliance_rows), _period_of(fine)
        parts += [
            "<h2>Per queue, whole window</h2>",
            table(
                queue_overview(daily, cost_daily, targets, str(summary.get("archive", "ARCHIVE"))),
                OVERVIEW_COLUMNS,
            ),
            f"<h2>SLA compliance by {period}</h2>",
            compliance_chart(compliance_rows, period, targets),
            f"<h2>Pickup time by {fine_period}</h2>",
            pickup_chart(fine),
            "<h2>Daily SLA per queue</h2>",
            table(daily, DAILY_COLUMNS),
        ]
    parts.append("<h2>Backlog</h2>")
    if backlog.empty:
        parts.append("<p>No intervals to reconstruct.</p>")
    else:
        parts += [
            f"<p class='note'>{html.escape(DEFINITIONS['backlog'])}</p>",
            backlog_chart(backlog),
        ]
    parts.append("<h2>Cost</h2>")
    if cost_daily is None or cost_daily.empty:
        parts.append("<p>No decision log in the archive: worker-seconds unknown.</p>")
    else:
        parts += [
            f"<p class='note'>worker_seconds: {html.escape(DEFINITIONS['worker_seconds'])} "
            "ECS's runningCount counts RUNNING tasks only, so this leaves out what Fargate "
            "also bills: a task's provisioning (PENDING, from its image pull) and its drain "
            "after a scale-in (STOPPING); the demo and the simulator count a task from its "
            "order to its exit.</p>",
            table(cost_daily, COST_COLUMNS),
        ]
    parts.append("<h2>Rejected archive lines</h2>")
    parts.append("<p>None.</p>" if rejected.empty else table(rejected))
    parts += [_glossary(), "</body></html>"]
    return "\n".join(parts)
