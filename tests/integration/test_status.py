"""`queue-autoscale status` and `explain --stack` against a stack bootstrapped on the emulator.

GIVEN template.yaml's stack on the endpoint, jobs sent by a producer, ten of them started
(two after more than their SLA), the events ingested by record_events and one evaluate tick,
WHEN the CLI reads the stack by name (the endpoint from AWS_ENDPOINT_URL, as a user would),
THEN it shows what the controller decided, its last action, the hour's realized compliance
and the stack's alarms, from the stack's own stores.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from infra.emulator import EmulatorStack
from queue_autoscale.adapters.aws import make_clients
from queue_autoscale.cli import app
from queue_autoscale.client import EventRecorder, send_job
from queue_autoscale.config import parse_config
from queue_autoscale.demo import sqs_event
from queue_autoscale.handlers import evaluate, record_events
from queue_autoscale.settings import EvaluateSettings, RecordSettings
from tests.integration.conftest import REGION, bootstrap_stack, receive_all, reset_moto

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("moto")]

SLA_SECONDS = 30
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
"""The plain `status` output is kept here for a person to read."""


@pytest.fixture
def stack(aws_endpoint: Any) -> Iterator[EmulatorStack]:
    if aws_endpoint.moto_url:
        reset_moto(aws_endpoint.moto_url)
    suffix = uuid.uuid4().hex[:8]
    queues = parse_config(
        {"queue": f"jobs-{suffix}", "service": f"workers-{suffix}", "sla_seconds": SLA_SECONDS}
    )
    try:
        yield bootstrap_stack(aws_endpoint, queues, f"st-{suffix}")
    finally:
        record_events.set_runtime(None)
        evaluate.set_runtime(None)


def run_controller(stack: EmulatorStack, lambda_context: Any) -> dict[str, Any]:
    """Jobs, events through record_events, one evaluate tick; the tick's decision."""
    clients = make_clients(endpoint_url=stack.endpoint_url, region_name=REGION)
    (work,) = stack.work_queues
    environment = {
        "QUEUES_CONFIG_PARAMETER": stack.config_parameter,
        "LOAD_TABLE": stack.load_table,
        "ARCHIVE_BUCKET": stack.archive_bucket,
        "EVENTS_DLQ_URL": stack.events_dlq_url,
        "EVENT_BUS_NAME": stack.event_bus,
    }
    record_events.set_runtime(
        record_events.build_runtime(RecordSettings.from_environ(environment), clients)
    )
    evaluate.set_runtime(
        evaluate.build_runtime(EvaluateSettings.from_environ(environment), clients)
    )
    with EventRecorder(clients.sqs, stack.events_queue_url, flush_interval_seconds=3600) as rec:
        for index in range(40):
            send_job(clients.sqs, work.url, f"job {index}", rec, work.name)
        received = clients.sqs.receive_message(QueueUrl=work.url, MaxNumberOfMessages=10)
        for index, message in enumerate(received["Messages"]):
            late = index < 2  # two jobs waited 45 s, past the 30 s SLA
            rec.started(work.name, message["MessageId"], pickup_ms=45_000 if late else 800)
            rec.completed(work.name, message["MessageId"], duration_ms=2_000)
            clients.sqs.delete_message(QueueUrl=work.url, ReceiptHandle=message["ReceiptHandle"])
    events_arn = clients.sqs.get_queue_attributes(
        QueueUrl=stack.events_queue_url, AttributeNames=["QueueArn"]
    )["Attributes"]["QueueArn"]
    batch = receive_all(clients, stack.events_queue_url)
    assert record_events.handler(sqs_event(batch, events_arn), lambda_context) == {
        "batchItemFailures": []
    }
    (decision,) = evaluate.handler({"once": True}, lambda_context)["decisions"]
    assert decision["errors"] == []
    return dict(decision)


def test_status_shows_the_live_decision_last_action_compliance_and_alarms(
    stack: EmulatorStack, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    decision = run_controller(stack, lambda_context)
    assert decision["action"] == "up" and decision["applied"]
    monkeypatch.setenv("AWS_ENDPOINT_URL", stack.endpoint_url)
    monkeypatch.setenv("AWS_DEFAULT_REGION", stack.region)
    runner = CliRunner()

    answer = runner.invoke(app, ["status", "--stack", stack.stack_name, "--json"])

    assert answer.exit_code == 0, answer.output
    status = json.loads(answer.stdout)
    (queue,) = status["queues"]
    assert queue["queue"] == stack.work_queues[0].name
    assert queue["sla_seconds"] == SLA_SECONDS and queue["percentile"] == 0.95
    # the controller's own decision, as logged
    assert queue["target"] == decision["target"] > 1
    assert queue["running"] == 1 and queue["action"] == "up"
    assert queue["winner"] in {"steady", "trend", "drain"}
    assert queue["load_ratio"] > 0 and queue["backlog_per_instance"] == 30.0  # 30 waiting, 1 up
    assert queue["oldest_age_seconds"] is not None and queue["urgency"] == "NORMAL"
    assert abs(queue["decided_at"] - time.time()) < 120
    # the last action from the controller state
    assert queue["last_action"] == f"up to {decision['target']}"
    assert abs(queue["last_action_at"] - queue["decided_at"]) < 1
    # 8 of the 10 started jobs were picked up within the SLA
    assert queue["compliance_jobs"] == 10 and queue["compliance"] == pytest.approx(0.8)
    assert not queue["compliance_partial"]
    # the stack's alarms, by the names template.yaml gives them (one per condition)
    names = {alarm["name"] for alarm in status["alarms"]}
    assert f"{stack.stack_name}-sla-breach" in names
    assert f"{stack.stack_name}-controller-silent" in names
    assert f"{stack.stack_name}-events-dlq-not-empty" in names
    # AND each condition alarm names the queues in its condition: the queue's load ratio is
    # over the overloaded threshold (30 waiting on 1 worker), its SLA usage is not
    conditions = status["conditions"]
    queue_name = stack.work_queues[0].name
    assert queue["load_ratio"] >= 1.0
    assert conditions[f"{stack.stack_name}-overloaded"] == [queue_name]
    assert conditions[f"{stack.stack_name}-sla-breach"] == []
    assert all(alarm["state"] in {"OK", "ALARM", "INSUFFICIENT_DATA"} for alarm in status["alarms"])
    assert status["errors"] == []

    # AND the plain view says the same within 80 columns
    text = runner.invoke(app, ["status", "--stack", stack.stack_name])
    assert text.exit_code == 0, text.output
    assert max(len(line) for line in text.stdout.splitlines()) <= 80
    assert f"1 running, target {decision['target']}" in text.stdout
    assert "80.0% of 10 jobs within 30 s" in text.stdout
    assert "sla-breach" in text.stdout
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "status.txt").write_text(text.stdout, encoding="utf-8")


def test_explain_stack_prints_the_logged_decision_with_its_reason(
    stack: EmulatorStack, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    decision = run_controller(stack, lambda_context)
    monkeypatch.setenv("AWS_ENDPOINT_URL", stack.endpoint_url)
    monkeypatch.setenv("AWS_DEFAULT_REGION", stack.region)
    queue = stack.work_queues[0].name
    runner = CliRunner()

    answer = runner.invoke(app, ["explain", "--stack", stack.stack_name, "--queue", queue])
    as_json = runner.invoke(
        app, ["explain", "--stack", stack.stack_name, "--queue", queue, "--json"]
    )
    unknown = runner.invoke(app, ["explain", "--stack", stack.stack_name, "--queue", "nope"])

    assert answer.exit_code == 0, answer.output
    assert decision["reason"].split()[0] in answer.stdout
    assert f"up  1 -> {decision['target']}" in answer.stdout
    record = json.loads(as_json.stdout)
    assert record["target"] == decision["target"] and record["reason"] == decision["reason"]
    assert unknown.exit_code == 2 and "has no queue 'nope'" in unknown.output
