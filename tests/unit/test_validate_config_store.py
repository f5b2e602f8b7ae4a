"""`validate-config --parameter NAME`: the same check and messages on the config store's
document (moto in-process stands in for SSM and S3)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws
from typer.testing import CliRunner

from queue_autoscale.cli import app

BAD = [{"queue": "emails", "max_workers": -3}]


@pytest.fixture
def ssm(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.setenv(key, "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        yield boto3.client("ssm", region_name="us-east-1")


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["validate-config", *args])
    return result.exit_code, result.stdout, result.stderr


def test_a_bad_document_in_the_store_gets_the_file_check_s_message(
    ssm: Any, tmp_path: Path
) -> None:
    # GIVEN the same bad document in a file and in the store
    ssm.put_parameter(Name="/stack/queues-config", Value=json.dumps(BAD), Type="String")
    file = tmp_path / "q.json"
    file.write_text(json.dumps(BAD))
    # WHEN both are checked
    from_store = run("--parameter", "/stack/queues-config")
    from_file = run(str(file))
    # THEN both fail with exit 2 and the same message, naming queue, field and value
    assert from_store[0] == from_file[0] == 2
    message = "error: queue 'emails': field 'max_workers' = -3"
    assert from_store[2].startswith(message) and from_file[2].startswith(message)
    assert from_store[2] == from_file[2]


def test_a_good_document_in_the_store_prints_its_effective_settings(ssm: Any) -> None:
    ssm.put_parameter(
        Name="/stack/queues-config", Value='{"queue": "thumbs", "sla_seconds": 10}', Type="String"
    )
    code, out, _ = run("--parameter", "/stack/queues-config")
    assert code == 0
    assert "Effective settings: /stack/queues-config" in out and "thumbs" in out and "10.0" in out


def test_an_unreadable_store_or_no_source_is_a_clear_error(ssm: Any) -> None:
    code, _, err = run("--parameter", "/missing")
    assert code == 2
    assert err.startswith("error: config store /missing: ssm:GetParameter on /missing failed")
    assert run()[2] == "error: give a config FILE or --parameter NAME (one of them)\n"
