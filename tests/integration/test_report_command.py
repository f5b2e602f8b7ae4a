"""`queue-autoscale report` from an s3:// archive on the endpoint, as a user runs it.

GIVEN a two-minute archive uploaded under s3://<bucket>/archive/ on the endpoint,
WHEN the command runs in its own process (its own local Spark, AWS_ENDPOINT_URL set),
THEN the report is built by the Glue job's code, uploaded under the s3:// output, the
progress bar reaches "done", and a missing archive is one error line with exit code 2.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
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
    files = [path for path in sorted(local.rglob("*")) if path.is_file()]
    for path in files:
        store.upload(path, f"archive/{path.relative_to(local).as_posix()}")
    assert {path.relative_to(local).parts[0] for path in files} == {"events", "decisions"}
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


def sla_daily_rows(s3: Any, bucket: str, files: list[str], folder: Path) -> list[tuple[str, str]]:
    """(day, queue) of every row of the sla_daily files named (the day from the dt= folder)."""
    rows = []
    for index, key in enumerate(files):
        local = folder / f"{index}.parquet"
        s3.download_file(bucket, key, str(local))
        day = key.split("dt=", 1)[1].split("/", 1)[0]
        rows += [(day, queue) for queue in pq.read_table(local).column("queue").to_pylist()]
    return sorted(rows)


def test_an_s3_output_at_a_bucket_root_is_continued_and_other_objects_are_left_alone(
    endpoint: Any, clients: Any, suffix: str, tmp_path: Path
) -> None:
    bucket = f"report-{suffix}"
    clients.s3.create_bucket(Bucket=bucket)
    others = {"notes.txt": b"the team's notes", "team/data.csv": b"a,b\n1,2\n"}
    for key, body in others.items():
        clients.s3.put_object(Bucket=bucket, Key=key, Body=body)
    before = {key: clients.s3.head_object(Bucket=bucket, Key=key) for key in others}
    day = 86_400.0
    first, second = tmp_path / "first", tmp_path / "second"
    # a queue a day (one queue's job ids would repeat, and its events be taken for
    # redeliveries); the first run's archive holds days 0 and 1, the second's 1 and 2
    for folder, nths in ((first, (0, 1)), (second, (1, 2))):
        for nth in nths:
            queue = (replace(QUEUE[0], name=f"day-{nth}"),)
            write_archive(folder, START + nth * day, 120.0, queues=queue, tick_seconds=5.0)
    days = [datetime.fromtimestamp(START + n * day, UTC).strftime("%Y-%m-%d") for n in range(3)]

    one = run_cli(endpoint.url, "--archive", str(first), "--out", f"s3://{bucket}")
    two = run_cli(endpoint.url, "--archive", str(second), "--out", f"s3://{bucket}/")

    assert one.returncode == 0, one.stderr[-3000:]
    assert two.returncode == 0, two.stderr[-3000:]
    assert two.stdout.strip().endswith(f"report: s3://{bucket}/report.html")
    assert "(every table replaced)" in one.stdout and "(incremental)" in two.stdout
    manifest = json.loads(clients.s3.get_object(Bucket=bucket, Key="_manifest.json")["Body"].read())
    tables = [path for path in manifest["files"] if path.startswith("sla_daily/")]
    store = Archive(clients.s3, bucket)
    assert sorted(store.keys("sla_daily/")) == sorted(tables)  # no earlier run's part files
    # the first run's day 1 is kept though the second archive no longer holds it; each once
    rows = sla_daily_rows(
        clients.s3, bucket, [p for p in tables if p.endswith(".parquet")], tmp_path
    )
    assert rows == [(day, f"day-{nth}") for nth, day in enumerate(days)]
    for key, body in others.items():
        now = clients.s3.head_object(Bucket=bucket, Key=key)
        assert (now["ETag"], now["LastModified"]) == (
            before[key]["ETag"],
            before[key]["LastModified"],
        )
        assert clients.s3.get_object(Bucket=bucket, Key=key)["Body"].read() == body
    assert " superseded ones deleted" in " ".join(two.stderr.split())


def test_a_failure_inside_spark_is_one_line_last_exit_2(endpoint: Any, tmp_path: Path) -> None:
    # GIVEN an archive object that is not gzip (a truncated upload): the command ended in a
    # 225-line Py4JJavaError traceback, exit 1
    bad = tmp_path / "archive" / "events" / "dt=2026-11-02" / "hour=09" / "b.jsonl.gz"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"garbage, not gzip")

    answer = run_cli(
        endpoint.url, "--archive", str(tmp_path / "archive"), "--out", str(tmp_path / "out")
    )

    # THEN the innermost Java cause and the file it was reading, as the last line, exit 2
    assert answer.returncode == 2, answer.stderr[-2000:]
    last = answer.stderr.strip().splitlines()[-1]
    assert last.startswith("error: SparkFailed: java.io.IOException: not a gzip file ("), last
    assert last.endswith(f"Encountered error while reading file file://{bad}.)"), last
