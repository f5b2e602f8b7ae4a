"""sla_report, trend_fit and the daily job (both in one session) end to end on a tiny archive
written by the test."""

from __future__ import annotations

import gzip
import json
import random
from datetime import UTC, datetime
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from glue_jobs import daily, sla_report, trend_fit
from glue_jobs.layout import MANIFEST_FILE, parse_manifest

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

START = datetime(2026, 11, 2, 9, 0, tzinfo=UTC).timestamp()  # epoch seconds
CONFIG = json.dumps({"queues": [{"queue": "emails", "sla_seconds": 20}, {"queue": "reports"}]})


def write_jsonl_gz(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")


def partition(root: Path, kind: str, epoch_s: float, name: str, hourly: bool = True) -> Path:
    at = datetime.fromtimestamp(epoch_s, UTC)
    folder = root / kind / f"dt={at:%Y-%m-%d}"
    if hourly:
        folder = folder / f"hour={at:%H}"
    return folder / name


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> tuple[Path, dict[str, int]]:
    """Three hours of two queues: 'emails' (SLA 20 s) and 'reports' (default 30 s)."""
    root = tmp_path_factory.mktemp("archive")
    generator = random.Random(11)
    batches: dict[Path, list[str]] = {}
    expected = {"jobs_emails": 0, "late_emails": 0, "jobs_reports": 0, "duplicates": 0}
    for queue, count in (("emails", 120), ("reports", 60)):
        for index in range(count):
            queued = START + generator.uniform(0, 3 * 3600 - 200)
            wait = generator.choice([1.0, 3.0, 5.0, 45.0]) if queue == "emails" else 2.0
            started, duration = queued + wait, generator.uniform(0.5, 4.0)
            expected[f"jobs_{queue}"] += 1
            if queue == "emails" and wait > 20:
                expected["late_emails"] += 1
            for kind, at in (("queued", queued), ("started", started), ("completed", started)):
                body = {
                    "type": kind,
                    "queue": queue,
                    "job_id": f"{queue}-{index}",
                    "at": int(at * 1000) + (int(duration * 1000) if kind == "completed" else 0),
                    "duration_ms": int(duration * 1000) if kind == "completed" else None,
                    "attempt": 1,
                    "event_id": f"{queue}-{index}-{kind}",
                }
                line = json.dumps(body)
                path = partition(root, "events", at, f"batch-{int(at) // 600}.jsonl.gz")
                batches.setdefault(path, []).append(line)
                if index % 10 == 0 and kind == "queued":  # redelivered batch
                    batches.setdefault(path.with_name("redelivery.jsonl.gz"), []).append(line)
                    expected["duplicates"] += 1
    any_path = next(iter(batches))
    batches[any_path] += ["{not json", json.dumps({"type": "queued", "queue": "emails"})]
    for path, lines in batches.items():
        write_jsonl_gz(path, lines)
    for queue, workers in (("emails", 2), ("reports", 1)):
        ticks = [
            json.dumps(
                {
                    "queue": queue,
                    "at": START + 60 * tick,
                    "current": workers,
                    "target": workers,
                    "action": "hold",
                    "running": workers,
                    "arrival_rate": 0.01,
                    "load_ratio": 0.2,
                }
            )
            for tick in range(180)
        ]
        write_jsonl_gz(partition(root, "decisions", START, f"{queue}.jsonl.gz", False), ticks)
    return root, expected


@pytest.fixture(scope="module")
def reported(spark, archive, tmp_path_factory) -> tuple[Path, str]:
    """sla_report run once through main() over the archive: (output root, report URI)."""
    root, _ = archive
    out = tmp_path_factory.mktemp("report")
    argv = ["sla_report.py", "--input_uri", str(root), "--output_uri", str(out)]
    # the queue config from a local file, as under spark-submit (Glue passes the store's name)
    config = tmp_path_factory.mktemp("config") / "queues.json"
    config.write_text(CONFIG, encoding="utf-8")
    report = sla_report.main([*argv, "--config", str(config), "--interval_seconds", "60"])
    return out, report


def test_sla_report_main_writes_tables_and_a_self_contained_html(spark, archive, reported):
    _, expected = archive
    out, report = reported

    html = Path(report).read_text(encoding="utf-8")
    assert html.count("data:image/png;base64,") == 3
    assert "emails" in html
    assert "reports" in html
    assert "<script" not in html
    assert 'src="http' not in html
    for table in ("sla_hourly", "sla_daily", "cost_hourly", "cost_daily", "backlog"):
        assert list((out / table / "dt=2026-11-02").glob("*.parquet")), table
    assert list((out / "compacted_events" / "dt=2026-11-02" / "hour=9").glob("*.parquet"))
    daily = {row.queue: row for row in spark.read.parquet(str(out / "sla_daily")).collect()}
    assert daily["emails"].jobs == expected["jobs_emails"]
    assert daily["emails"].sla_seconds == 20.0
    assert daily["emails"].picked_up - daily["emails"].within_sla == expected["late_emails"]
    assert daily["reports"].jobs == expected["jobs_reports"]
    assert daily["reports"].sla_share == 1.0
    assert daily["reports"].sla_seconds == 30.0
    rejected = spark.read.parquet(str(out / "rejected_events")).collect()
    assert sorted(row.reason for row in rejected) == [
        "field 'job_id' is missing",
        "not a JSON object of the event schema",
    ]
    cost = {row.queue: row for row in spark.read.parquet(str(out / "cost_daily")).collect()}
    assert cost["emails"].worker_seconds == pytest.approx(2 * 60 * 180)
    assert 0 < cost["emails"].utilization < 0.1
    assert f"duplicates dropped (same event_id)</th><td>{expected['duplicates']}<" in html


def test_the_manifest_names_every_file_the_job_wrote(reported):
    # what `report --out s3://` brings down and puts back: all of the job's files, and only them
    out, _ = reported
    written = {
        path.relative_to(out).as_posix()
        for path in out.rglob("*")
        if path.is_file() and not path.name.endswith(".crc")
    }

    manifest = parse_manifest((out / MANIFEST_FILE).read_text(encoding="utf-8"), "manifest")

    assert set(manifest.files) == written - {MANIFEST_FILE}
    assert {"report.html", "_state.json"} <= set(manifest.files)
    assert [path for path in manifest.files if path.startswith("sla_daily/dt=2026-11-02/part-")]


def test_trend_fit_writes_parquet_json_and_model_items(spark, reported, tmp_path):
    root, _ = reported  # trend_fit reads the SLA report's hourly table
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        load_table(client)
        uri = trend_fit.run(
            str(root), str(tmp_path / "trend"), "load", holdout_days=7, dynamodb_client=client
        )
        item = client.get_item(
            TableName="load", Key={"pk": {"S": "Q#emails"}, "sk": {"S": "MODEL"}}
        )["Item"]

    document = json.loads(Path(uri).read_text(encoding="utf-8"))
    models = {model["queue"]: model for model in document["models"]}
    assert sorted(models) == ["emails", "reports"]
    # three hours of emails at ~40 jobs/hour: the level is about 40 / 3600 jobs/s
    assert models["emails"]["level"] == pytest.approx(40 / 3600, rel=0.5)
    assert len(models["emails"]["seasonal"]) == 168
    assert models["emails"]["mase"] is None  # three hours: no week to back-test on
    backtest = {row["queue"]: row for row in document["backtest"]}
    assert backtest["emails"] == {
        "queue": "emails",
        "holdout_hours": 0,
        "mase": None,
        "naive_mase": None,
        "weight": 0.0,
        "raises_capacity": False,
    }
    assert item["mase"] == {"NULL": True}
    assert item["queue"] == {"S": "emails"}
    assert len(item["seasonal"]["L"]) == 168
    assert list((tmp_path / "trend" / "trend_model").glob("*.parquet"))


def load_table(client) -> None:
    """The load table's keys, as template.yaml makes it."""
    client.create_table(
        TableName="load",
        KeySchema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )


def test_the_daily_job_reports_then_fits_on_what_the_report_wrote(
    spark, archive, tmp_path, monkeypatch
):
    # GIVEN the options template.yaml gives the Glue job (a local config file for the store)
    root, expected = archive
    out = tmp_path / "reports"
    config = tmp_path / "queues.json"
    config.write_text(CONFIG, encoding="utf-8")
    argv = ["daily.py", "--input_uri", str(root), "--output_uri", str(out), "--config"]
    argv += [str(config), "--interval_seconds", "60", "--table_name", "load"]
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        load_table(client)
        # WHEN the one daily job runs
        report, models = daily.main([*argv, "--holdout_days", "7"])
        item = client.get_item(
            TableName="load", Key={"pk": {"S": "Q#emails"}, "sk": {"S": "MODEL"}}
        )["Item"]

    # THEN the report is written, and the model was fitted on the hourly table it wrote
    assert Path(report) == out / "report.html"
    daily_rows = {row.queue: row for row in spark.read.parquet(str(out / "sla_daily")).collect()}
    assert daily_rows["emails"].jobs == expected["jobs_emails"]
    document = json.loads(Path(models).read_text(encoding="utf-8"))
    assert Path(models) == out / "trend_model.json"
    assert {model["queue"] for model in document["models"]} == {"emails", "reports"}
    # three hours of emails at ~40 jobs/hour: the level is about 40 / 3600 jobs/s
    emails = next(model for model in document["models"] if model["queue"] == "emails")
    assert emails["level"] == pytest.approx(40 / 3600, rel=0.5)
    assert item["queue"] == {"S": "emails"}
    assert len(item["seasonal"]["L"]) == 168


def test_a_missing_archive_is_named(spark, tmp_path):
    from glue_jobs.io import ArchiveError

    with pytest.raises(ArchiveError, match=r"cannot read events under .*nowhere/events"):
        sla_report.run(str(tmp_path / "nowhere"), str(tmp_path / "out"), spark=spark)
