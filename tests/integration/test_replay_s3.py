"""`simulate --archive s3://BUCKET/PREFIX` replays the archive on the endpoint as it replays
the same archive from a folder (its events/ and decisions/ are copied to a scratch folder)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from queue_autoscale.adapters.s3 import Archive
from tests.integration.conftest import REGION, create_config_parameter

pytestmark = [pytest.mark.integration]

DEMO = Path(__file__).resolve().parents[1] / "sim" / "data" / "demo-archive"


def simulate(
    endpoint: str, archive: str, out: Path, config: tuple[str, str] | None = None
) -> list[dict[str, Any]]:
    env = {**os.environ, "AWS_ENDPOINT_URL": endpoint, "AWS_DEFAULT_REGION": REGION,
           "QUEUE_AUTOSCALE_SIM_PROCESSES": "1"}  # fmt: skip
    command = [sys.executable, "-m", "queue_autoscale.cli", "simulate", "--archive", archive,
               "--queue", "demo-jobs", *(config or ("--config", str(DEMO / "queues.json"))),
               "--policy", "predictive,keda", "--json", str(out)]  # fmt: skip
    answer = subprocess.run(command, check=False, capture_output=True, text=True, env=env,
                            timeout=300)  # fmt: skip
    assert answer.returncode == 0, answer.stderr[-3000:]
    rows: list[dict[str, Any]] = json.loads(out.read_text())
    for row in rows:
        row.pop("wall_seconds")
    return rows


def test_an_s3_archive_replays_as_its_folder_does(
    endpoint: Any, clients: Any, suffix: str, tmp_path: Path
) -> None:
    # GIVEN the demo's archive under s3://<bucket>/archive/ on the endpoint
    bucket = f"replay-{suffix}"
    clients.s3.create_bucket(Bucket=bucket)
    store = Archive(clients.s3, bucket)
    for path in sorted(p for p in DEMO.rglob("*.gz")):
        store.upload(path, f"archive/{path.relative_to(DEMO).as_posix()}")
    # WHEN it is replayed from S3 and from the folder
    from_s3 = simulate(endpoint.url, f"s3://{bucket}/archive", tmp_path / "s3.json")
    from_folder = simulate(endpoint.url, str(DEMO), tmp_path / "folder.json")
    # THEN the rows are the same, "as run" included
    assert [row["policy"] for row in from_s3] == ["predictive", "keda", "as run"]
    assert from_s3 == from_folder
    assert from_s3[2]["jobs"] == 579


def test_the_queue_config_comes_from_the_config_store(
    endpoint: Any, clients: Any, suffix: str, tmp_path: Path
) -> None:
    # GIVEN the demo queue's config in a stack's config store (an SSM parameter)
    name = create_config_parameter(
        clients, f"/replay-{suffix}/queues", (DEMO / "queues.json").read_text()
    )
    # WHEN the demo's archive is replayed with --parameter and with --config
    from_store = simulate(endpoint.url, str(DEMO), tmp_path / "a.json", ("--parameter", name))
    from_file = simulate(endpoint.url, str(DEMO), tmp_path / "b.json")
    # THEN the same settings were replayed
    assert from_store == from_file
    assert from_store[0]["sla_seconds"] == 30.0
