"""The SLA report's rendering (glue_jobs.report) on small pandas frames, no Spark.

The charts are checked as matplotlib figures: what their axes span, what they draw, their
titles and units; the HTML for its scrolling tables and its definitions.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

import matplotlib.dates
import pandas as pd
import pytest

from glue_jobs import report

DAY = datetime(2026, 11, 2)


def sla_rows(period: str, starts: list[datetime], queue: str = "orders", sla: float = 30.0):
    n = len(starts)
    return pd.DataFrame(
        {
            "queue": [queue] * n,
            "period": [period] * n,
            "period_start": pd.to_datetime(starts),
            "sla_seconds": [sla] * n,
            "jobs": [100] * n,
            "attempts": [100] * n,
            "picked_up": [100] * n,
            "late_not_started": [0] * n,
            "within_sla": [90 + i % 10 for i in range(n)],
            "sla_share": [(90 + i % 10) / 100 for i in range(n)],
            "pickup_p50": [2.0 + i for i in range(n)],
            "pickup_p95": [12.0 + i for i in range(n)],
            "pickup_p99": [25.0 + i for i in range(n)],
            "pickup_max": [40.0 + i for i in range(n)],
            "breach_minutes": [1] * n,
            "failures": [0] * n,
            "unknown_pickup": [0] * n,
            "not_started": [0] * n,
            "mean_job_seconds": [1.5] * n,
            "arrival_rate": [0.2] * n,
        }
    )


def span_days(axes) -> float:
    low, high = axes.get_xlim()
    return high - low


def test_a_single_day_is_one_labelled_point_on_an_axis_one_day_wide() -> None:
    # GIVEN one day of data (the chart spanned 2025 to 2029)
    daily = sla_rows("day", [DAY])
    # WHEN it is charted
    figure = report.compliance_figure(daily, "day", {"orders": 0.95})
    (axes,) = figure.axes
    # THEN the x axis spans that day and half a day either side, the point is labelled
    assert span_days(axes) == pytest.approx(1.0)
    center = matplotlib.dates.date2num(DAY)
    low, high = axes.get_xlim()
    assert low < center < high
    assert [text.get_text() for text in axes.texts] == ["90.0%"]
    # AND it has a title, the unit, and the target line at 95%
    assert "SLA compliance by day" in axes.get_title()
    assert "%" in axes.get_ylabel()
    targets = [line for line in axes.lines if "target" in str(line.get_label())]
    assert [line.get_ydata()[0] for line in targets] == [95.0]
    assert axes.get_ylim()[0] < 90.0 <= axes.get_ylim()[1]


def test_a_week_by_hour_fits_its_axis_and_draws_every_point() -> None:
    starts = [DAY + timedelta(hours=h) for h in range(7 * 24)]
    hourly = sla_rows("hour", starts)
    figure = report.pickup_figure(hourly)
    (axes,) = figure.axes
    assert span_days(axes) == pytest.approx(7.0)  # 167 h between the first and last + 2 x 0.5 h
    drawn = [line for line in axes.lines if len(line.get_xdata()) == len(starts)]
    assert {line.get_label() for line in drawn} == {"p50", "p95", "p99"}
    assert len(axes.texts) == 0  # many points: no value labels
    sla = [line for line in axes.lines if str(line.get_label()).startswith("SLA")]
    assert sla and sla[0].get_ydata()[0] == 30.0
    assert axes.get_ylim()[1] >= max(hourly["pickup_p99"])
    assert axes.get_ylabel() == "pickup, s" and "by hour" in axes.get_title()


def test_a_two_minute_run_is_charted_by_the_minute() -> None:
    hourly = sla_rows("hour", [DAY])
    minutes = sla_rows("minute", [DAY + timedelta(minutes=m) for m in range(3)])
    assert report.detail_period(hourly) == "minute"
    assert report.detail_period(sla_rows("hour", [DAY + timedelta(hours=h) for h in range(9)])) == (
        "hour"
    )
    figure = report.pickup_figure(minutes)
    (axes,) = figure.axes
    assert span_days(axes) * 24 * 60 == pytest.approx(3.0)  # 3 minutes: 2 apart + half each side
    assert "by minute" in axes.get_title()
    assert len(axes.texts) == 9  # three points per percentile, each labelled


def test_backlog_axes_start_at_zero_and_span_the_data() -> None:
    stamps = [DAY + timedelta(seconds=10 * i) for i in range(30)]
    backlog = pd.DataFrame(
        {
            "queue": ["orders"] * 30,
            "stamp": pd.to_datetime(stamps),
            "backlog": [float(i % 7) for i in range(30)],
            "workers": [3.0] * 30,
        }
    )
    figure = report.backlog_figure(backlog)
    axes = figure.axes[0]
    low, high = axes.get_xlim()
    assert low <= matplotlib.dates.date2num(stamps[0])
    assert high >= matplotlib.dates.date2num(stamps[-1])
    assert (high - low) * 86_400 < 400  # 290 s of data, not years
    assert axes.get_ylim()[0] == 0 and figure.axes[1].get_ylim()[0] == 0


def test_tables_scroll_inside_the_page_and_every_header_has_a_definition() -> None:
    daily = sla_rows("day", [DAY, DAY + timedelta(days=1)])
    html = report.table(daily, report.DAILY_COLUMNS)
    assert html.startswith("<div class='scroll'><table>")
    headers = re.findall(r"<th title='([^']*)'><a href='#def-(\w+)'>", html)
    assert [name for _, name in headers] == list(report.DAILY_COLUMNS)
    assert all(len(text) > 10 for text, _ in headers)
    assert "<td>90.0%</td>" in html and "<td>2026-11-02</td>" in html
    assert ".scroll { max-width: 100%; overflow-x: auto; }" in report.STYLE


def test_the_report_defines_every_column_it_shows_and_its_cost() -> None:
    daily = sla_rows("day", [DAY])
    hourly = sla_rows("hour", [DAY])
    cost = pd.DataFrame(
        {
            "queue": ["orders"],
            "period_start": pd.to_datetime([DAY]),
            "ticks": [10],
            "worker_seconds": [600.0],
            "mean_workers": [1.0],
            "busy_seconds": [150.0],
            "utilization": [0.25],
        }
    )
    backlog = pd.DataFrame(columns=["queue", "stamp", "backlog", "workers"])
    html = report.render_report(
        "t", {"archive": "x"}, daily, hourly, backlog, cost, pd.DataFrame(), {"orders": 0.95}
    )
    linked = set(re.findall(r"href='#def-(\w+)'", html))
    defined = set(re.findall(r"<dt id='def-(\w+)'>", html))
    assert linked <= defined
    assert "worker_seconds" in linked and "utilization" in linked
    assert "running ECS task count" in html  # what the cost counts
    # the overview: 90 of 100 within the SLA against a 95% target, 25% utilization
    overview = html.split("<h2>Per queue, whole window</h2>")[1].split("<h2>")[0]
    assert "<td>90.0%</td>" in overview and "<td>95.0%</td>" in overview
    assert "<td>25.0%</td>" in overview
    assert html.count("data:image/png;base64,") == 2  # compliance, pickup (no backlog rows)


def test_each_queue_row_shows_the_command_that_replays_its_window() -> None:
    # GIVEN two days of one queue in an archive on S3
    daily = sla_rows("day", [DAY, DAY + timedelta(days=1)], queue="gpu jobs")
    # WHEN the per-queue overview is built
    overview = report.queue_overview(daily, None, {}, "s3://bucket/archive")
    # THEN its replay cell is the simulate command over those two whole days (quoted)
    (command,) = overview["replay"].tolist()
    assert command == (
        "queue-autoscale simulate --archive s3://bucket/archive --queue 'gpu jobs' "
        "--from 2026-11-02T00:00:00Z --to 2026-11-04T00:00:00Z"
    )
    assert "replay" in report.OVERVIEW_COLUMNS and "replay" in report.DEFINITIONS
