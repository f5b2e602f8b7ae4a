"""Helpers for the worker subprocess tests: start `python -m queue_autoscale.worker` with a
task's environment on the embedded endpoint, send jobs, read events and queue counts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import REGION, Endpoint, Kit
from tests.worker.fake_agent import FakeAgent, serve_agent

ROOT = Path(__file__).resolve().parents[2]
SLEEP_JOB = "queue_autoscale.worker.jobs:sleep_job"


def wait_for(check: Callable[[], bool], seconds: float, what: str) -> None:
    """Poll `check` every 0.1 s until it holds; fail naming `what` after `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError(f"not within {seconds:g} s: {what}")


def send(kit: Kit, url: str, body: dict[str, Any]) -> str:
    """Send one job; its MessageId."""
    return str(
        kit.clients.sqs.send_message(QueueUrl=url, MessageBody=json.dumps(body))["MessageId"]
    )


def events(kit: Kit, url: str) -> list[dict[str, Any]]:
    """Every event the recorders sent to the events queue."""
    return [event for m in kit.receive_all(url) for event in json.loads(m["Body"])]


def of(job_id: str, recorded: list[dict[str, Any]]) -> list[tuple[str, int]]:
    """(type, attempt) of one job's events, in the order sent."""
    return [(e["type"], e.get("attempt", 1)) for e in recorded if e["job_id"] == job_id]


@dataclass
class WorkerProcess:
    """One worker subprocess."""

    process: subprocess.Popen[str]

    def stop(self) -> None:
        """SIGTERM, as ECS sends on a scale-in."""
        self.process.send_signal(signal.SIGTERM)

    def result(self, timeout: float) -> tuple[int, dict[str, Any], str]:
        """(exit code, the stats line, stderr) once it exits within `timeout`."""
        out, err = self.process.communicate(timeout=timeout)
        lines = [line for line in out.splitlines() if line.startswith('{"worker"')]
        return self.process.returncode, json.loads(lines[-1])["worker"] if lines else {}, err


@pytest.fixture
def start_worker(endpoint: Endpoint) -> Iterator[Callable[..., WorkerProcess]]:
    """Start workers with a task's environment; every one is killed (by PID) at teardown."""
    started: list[WorkerProcess] = []

    def start(queue_url: str, events_url: str, **options: Any) -> WorkerProcess:
        environment = {
            **os.environ,
            "AWS_ENDPOINT_URL": endpoint.url,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": REGION,
            "WORKER_QUEUE_URL": queue_url,
            "WORKER_EVENTS_QUEUE_URL": events_url,
            "WORKER_JOB": SLEEP_JOB,
            "WORKER_WAIT_SECONDS": "1",
            "WORKER_LOG_LEVEL": "INFO",
        }
        environment.pop("ECS_AGENT_URI", None)
        for key, value in options.items():
            environment[key.upper()] = str(value)
        process = subprocess.Popen(
            [sys.executable, "-m", "queue_autoscale.worker"],
            cwd=ROOT,
            env=environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        worker = WorkerProcess(process)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        if worker.process.poll() is None:
            worker.process.kill()
            worker.process.communicate(timeout=10)


@pytest.fixture
def fake_agent() -> Iterator[tuple[FakeAgent, str]]:
    """The fake ECS agent on 127.0.0.1 for one test."""
    with serve_agent() as served:
        yield served


def work_queue(kit: Kit, visibility: int = 30, dlq_after: int | None = None) -> tuple[str, str]:
    """(work queue URL, DLQ URL) with the redrive policy when `dlq_after` is given."""
    dlq = kit.queue("work-dlq")
    attributes = {"VisibilityTimeout": str(visibility)}
    if dlq_after is not None:
        attributes["RedrivePolicy"] = json.dumps(
            {"deadLetterTargetArn": kit.queue_arn(dlq), "maxReceiveCount": dlq_after}
        )
    url = kit.clients.sqs.create_queue(QueueName=kit.name("work"), Attributes=attributes)
    return str(url["QueueUrl"]), dlq
