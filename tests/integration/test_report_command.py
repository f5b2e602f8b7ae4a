"""`queue-autoscale report` from an s3:// archive on the endpoint, as a user runs it.

GIVEN a two-minute archive uploaded under s3://<bucket>/archive/ on the endpoint,
WHEN the command runs in its own process (its own local Spark, AWS_ENDPOINT_URL set),
THEN the report is built by the Glue job's code, uploaded under the s3:// output, the
progress bar reaches "done", and a missing archive is one error line with exit code 2.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from queue_autoscale.adapters.s3 import Archive
from tests.integration.conftest import REGION
from tests.spark.archives import SyntheticQueue, config_json, write_archive

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.xdist_group("spark")]

START = 1_793_000_000.0
QUEUE = (SyntheticQueue("demo-jobs", 30.0, 0.95, 4.0, 0.5),)


def run_cli(endpoint: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_DEFAULT_REGION": REGION,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "TZ": "UTC",
    }
    command = [sys.executable, "-m", "queue_autoscale.cli", "report", *args]
    return subprocess.run(
        command, check=False, capture_output=True, text=True, env=env, timeout=900
    )


def test_report_from_an_s3_archive_is_uploaded_with_a_progress_bar(
    endpoint: Any, clients: Any, suffix: str, tmp_path: Path
) -> None:
    bucket = f"archive-{suffix}"
    clients.s3.create_bucket(Bucket=bucket)
    local = tmp_path / "archive"
    jobs = write_archive(local, START, 120.0, queues=QUEUE, tick_seconds=5.0)
    store = Archive(clients.s3, bucket)
    assert store.upload_tree(local, "archive") >= 2  # events and decisions
    config = tmp_path / "config.json"
    config.write_text(config_json(QUEUE), encoding="utf-8")

    answer = run_cli(
        endpoint.url,
        "--archive",
        f"s3://{bucket}/archive",
        "--out",
        f"s3://{bucket}/reports/first",
        "--config",
        str(config),
        "--interval",
        "10",
    )

    assert answer.returncode == 0, answer.stderr[-3000:]
    assert answer.stdout.strip().endswith(f"report: s3://{bucket}/reports/first/report.html")
    assert "done" in answer.stderr and "rendering the report" not in answer.stdout
    html = clients.s3.get_object(Bucket=bucket, Key="reports/first/report.html")["Body"].read()
    text = html.decode("utf-8")
    assert "SLA compliance by minute" in text and "demo-jobs" in text
    assert f"<td>{jobs['demo-jobs']}</td>" in text  # the whole-window jobs count
    uploaded = store.keys("reports/first/")
    assert [key for key in uploaded if "/sla_daily/" in key]  # the Parquet tables went up too
    assert not [key for key in uploaded if key.endswith(".crc")]  # not local Spark's checksums

    missing = run_cli(endpoint.url, "--archive", f"s3://{bucket}/nothing", "--out", str(tmp_path))
    assert missing.returncode == 2
    assert "no objects under events/ or decisions/" in missing.stderr
