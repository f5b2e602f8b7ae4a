"""The whole edge on one endpoint: client -> events queue -> record_events -> evaluate -> ECS."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from queue_autoscale.client import EventRecorder, send_job
from queue_autoscale.demo import sqs_event
from queue_autoscale.handlers import evaluate, record_events
from queue_autoscale.settings import EvaluateSettings, RecordSettings

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("moto")]


@pytest.fixture
def runtimes() -> Iterator[None]:
    yield
    record_events.set_runtime(None)
    evaluate.set_runtime(None)


def test_events_from_the_client_drive_the_scaling_decision(
    kit: Any, clients: Any, function_environ: Any, lambda_context: Any, runtimes: None
) -> None:
    # GIVEN the resources, one worker, and handlers wired to them on the real clock
    kit.require_ecs()
    queue, cluster = kit.name("orders"), kit.name("workers")
    work_url = kit.queue("orders")
    events_url, dlq_url = kit.queue("events"), kit.queue("events-dlq")
    kit.service(cluster, queue, running=1)
    # each function's environment from template.yaml, with this test's resource names
    names = {
        "QueuesConfig": json.dumps([{"queue": queue, "cluster": cluster}]),
        "LoadTable": kit.load_table(),
        "ArchiveBucket": kit.bucket(),
        "EventsDeadLetterQueue": dlq_url,
    }
    environment = function_environ("RecordEventsFunction", **names)
    record_events.set_runtime(
        record_events.build_runtime(RecordSettings.from_environ(environment), clients)
    )
    evaluate_environment = function_environ("EvaluateFunction", **names)
    evaluate.set_runtime(
        evaluate.build_runtime(EvaluateSettings.from_environ(evaluate_environment), clients)
    )

    # WHEN a producer sends 60 jobs and a worker reports 10 of them as 2 s jobs
    with EventRecorder(clients.sqs, events_url, flush_interval_seconds=3600) as recorder:
        for index in range(60):
            send_job(clients.sqs, work_url, f"job {index}", recorder, queue)
        received = clients.sqs.receive_message(
            QueueUrl=work_url,
            MaxNumberOfMessages=10,
            MessageSystemAttributeNames=["SentTimestamp"],
        )["Messages"]
        for message in received:
            pickup_ms = int(time.time() * 1000) - int(message["Attributes"]["SentTimestamp"])
            recorder.started(queue, message["MessageId"], pickup_ms=pickup_ms)
            recorder.completed(queue, message["MessageId"], duration_ms=2_000)
            clients.sqs.delete_message(QueueUrl=work_url, ReceiptHandle=message["ReceiptHandle"])
    batch = kit.receive_all(events_url)
    ingest = record_events.handler(sqs_event(batch, kit.queue_arn(events_url)), lambda_context)
    answer = evaluate.handler({"once": True}, lambda_context)

    # THEN every event was accepted, and the controller saw 50 waiting jobs
    assert ingest == {"batchItemFailures": []}
    assert kit.receive_all(dlq_url) == []
    (decision,) = answer["decisions"]
    assert decision["errors"] == []
    (line,) = [
        record
        for key in kit.archive_keys(environment["ARCHIVE_BUCKET"], "decisions/")
        for record in _records(clients, environment["ARCHIVE_BUCKET"], key)
    ]
    # The 60 arrived within a second: the short window's 1/s differs from the long window's
    # 60 / 300 s = 0.2/s by less than the noise of such bursty counts (dispersion about 59), so
    # the plan sizes on the long window's rate and the backlog carries the burst
    assert line["arrival_rate"] == pytest.approx(0.2)
    assert line["service_rate"] == pytest.approx(0.5)  # 2 s jobs, one at a time per worker
    assert line["oldest_age_source"] == "counters"
    assert line["running"] == 1
    # 50 waiting with just under 30 s left, mu = 0.5/s: more than 50 / (0.5 * 30) > 3 workers
    assert line["terms"]["drain"] >= 4
    # AND the service was scaled to the decision's target
    assert decision["action"] == "up" and decision["applied"] is True
    service = clients.ecs.describe_services(cluster=cluster, services=[queue])["services"][0]
    assert service["desiredCount"] == decision["target"] > 1


def _records(clients: Any, bucket: str, key: str) -> list[dict[str, Any]]:
    from queue_autoscale.adapters.s3 import decode_jsonl_gz

    return decode_jsonl_gz(clients.s3.get_object(Bucket=bucket, Key=key)["Body"].read())
