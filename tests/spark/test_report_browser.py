"""The SLA report as a person opens it: headless Chromium loads the report the Spark job built.

GIVEN a small archive (a two-minute demo-like run, and seven synthetic days of two queues),
WHEN sla_report builds the report and Chromium opens it,
THEN every chart image loaded and shows drawn data (saturated pixels, not an empty frame), no
element overflows the page width (at a desktop and a narrow width), and a full-page screenshot
is kept under test-artifacts/ for a person to open.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from glue_jobs import sla_report
from tests.spark import browser
from tests.spark.archives import QUEUES, SyntheticQueue, config_json, write_archive

pytestmark = [
    pytest.mark.spark,
    pytest.mark.xdist_group("spark"),
    pytest.mark.skipif(
        browser.chromium() is None,
        reason="chromium is not installed: `make setup` runs infra/install_chromium.sh",
    ),
]

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
START = datetime(2026, 11, 2, 0, 0, tzinfo=UTC).timestamp()
DEMO_QUEUE = (SyntheticQueue("demo-jobs", 30.0, 0.95, 4.0, 0.5),)
MIN_COLORED_SHARE = 0.002
"""A chart whose data is drawn has at least this share of saturated pixels; an empty frame
(axes, grid and text only, all grey) has none."""


def build(spark, tmp_path: Path, name: str, seconds: float, queues, **kwargs) -> Path:
    root = tmp_path / f"{name}-archive"
    write_archive(root, START, seconds, queues=queues, **kwargs)
    uri = sla_report.run(
        str(root),
        str(tmp_path / f"{name}-out"),
        config_json(queues),
        interval_seconds=10,
        spark=spark,
    )
    return Path(uri)


def check_page(report: Path, name: str) -> dict:
    found = browser.inspect_page(report, width=1280)
    assert found["images"], "the report has no chart"
    for image in found["images"]:
        assert image["complete"] and image["naturalWidth"] > 0, f"{image['alt']}: not loaded"
        assert image["colored"] >= MIN_COLORED_SHARE, f"{image['alt']}: no data drawn {image}"
        assert image["right"] <= found["width"], f"{image['alt']}: wider than the page"
    assert found["overflow"] == [], found["overflow"]
    assert found["scrollWidth"] <= found["width"]
    narrow = browser.inspect_page(report, width=800)
    assert narrow["overflow"] == [], narrow["overflow"]
    assert narrow["scrollWidth"] <= narrow["width"]
    shot = browser.screenshot(report, ARTIFACTS / f"report-{name}.png", 1280, found["height"])
    assert shot.stat().st_size > 10_000
    return found


def test_demo_sized_report_opens_in_chromium_with_charts_and_no_overflow(spark, tmp_path):
    report = build(spark, tmp_path, "demo", 120.0, DEMO_QUEUE, tick_seconds=5.0)
    found = check_page(report, "demo")
    # compliance by hour (one point), pickup by hour, backlog: three charts
    assert len(found["images"]) == 3


def test_seven_day_report_opens_in_chromium_with_charts_and_no_overflow(spark, tmp_path):
    report = build(spark, tmp_path, "7-days", 7 * 86_400.0, QUEUES, rate_scale=0.25)
    found = check_page(report, "7-days")
    assert len(found["images"]) == 3
    html = report.read_text(encoding="utf-8")
    assert "SLA compliance by day" in html
