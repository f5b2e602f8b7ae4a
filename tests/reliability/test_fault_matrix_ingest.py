"""Fault matrix, record_events: the events DLQ send, the archive put and the counter update,
each under throttling, a 5xx, a read timeout, a connect timeout and AccessDenied (botocore
`before-send` hook against the embedded emulator): only the records the failure touched are
reported failed, and redelivering them loses nothing. docs/fail-safe.md states the same.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from queue_autoscale.adapters.dynamodb import counter_pk, second_sk
from queue_autoscale.adapters.s3 import decode_jsonl_gz
from queue_autoscale.demo import sqs_event
from queue_autoscale.handlers import record_events
from queue_autoscale.settings import RecordSettings
from tests.reliability.faults import FAULTS, Fault, expected_attempts
from tests.reliability.worlds import NOW, MetricsRecorder

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("moto")]


@pytest.fixture
def ingest_world(kit: Any, clients: Any) -> Iterator[dict[str, Any]]:
    """Load table, bucket and events DLQ; record_events wired to them at NOW."""
    table, bucket, dlq = kit.load_table(), kit.bucket(), kit.queue("events-dlq")
    settings = RecordSettings.from_environ(
        {
            "QUEUES_CONFIG": json.dumps([{"queue": "orders"}]),
            "LOAD_TABLE": table,
            "ARCHIVE_BUCKET": bucket,
            "EVENTS_DLQ_URL": dlq,
        }
    )
    runtime = record_events.build_runtime(settings, clients, clock=lambda: NOW)
    runtime.publish_metrics = MetricsRecorder()
    record_events.set_runtime(runtime)
    yield {"table": table, "bucket": bucket, "dlq": dlq}
    record_events.set_runtime(None)


S1, S2 = int(NOW) - 20, int(NOW) - 10
"""The two seconds the batch's valid events count in."""


def _event(job: str, second: int) -> dict[str, Any]:
    return {"type": "queued", "queue": "orders", "job_id": job, "at": second * 1000 + 5}


BATCH = [
    {"MessageId": "m1", "Body": json.dumps([_event("a", S1), _event("b", S1)])},
    {"MessageId": "m2", "Body": json.dumps([_event("c", S2), _event("d", S2)])},
    {"MessageId": "m3", "Body": json.dumps({"type": "queued", "queue": "orders", "job_id": "x"})},
]
"""m1 and m2 hold valid events in S1 and S2; m3 an event without `at` (rejected)."""

RECORD_CASES = {
    # operation, client, match, the records reported failed
    "sqs-SendMessageBatch (DLQ)": ("SendMessageBatch", "sqs", None, {"m3"}),
    "s3-PutObject (archive)": ("PutObject", "s3", None, {"m1", "m2"}),
    "dynamodb-UpdateItem (one second)": ("UpdateItem", "dynamodb", second_sk(S1).encode(), {"m1"}),
}


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("case", list(RECORD_CASES.values()), ids=list(RECORD_CASES))
def test_record_events_fails_only_the_touched_records_and_loses_nothing(
    ingest_world: dict[str, Any],
    kit: Any,
    clients: Any,
    lambda_context: Any,
    case: tuple[str, str, bytes | None, set[str]],
    fault: str,
) -> None:
    operation, client, match, touched = case
    # GIVEN a batch of three records and one call failing
    injected = Fault(operation, fault, match=match).install(getattr(clients, client))
    event = sqs_event(BATCH, "arn:aws:sqs:us-east-1:123456789012:events")

    # WHEN the handler consumes the batch
    response = record_events.handler(event, lambda_context)

    # THEN exactly the touched records are reported failed, after botocore's retries
    assert {item["itemIdentifier"] for item in response["batchItemFailures"]} == touched
    assert injected.attempts == expected_attempts(fault)

    # WHEN the fault clears and SQS redelivers those records
    injected.active = False
    again = [message for message in BATCH if message["MessageId"] in touched]
    retry = record_events.handler(sqs_event(again, "arn:x"), lambda_context)

    # THEN nothing is left to retry and nothing is lost
    assert retry == {"batchItemFailures": []}
    archived = []
    for key in kit.archive_keys(ingest_world["bucket"], "events/"):
        body = clients.s3.get_object(Bucket=ingest_world["bucket"], Key=key)["Body"].read()
        archived.extend(decode_jsonl_gz(body))
    assert sorted({record["job_id"] for record in archived}) == ["a", "b", "c", "d"]
    reasons = [json.loads(m["Body"])["reason"] for m in kit.receive_all(ingest_world["dlq"])]
    assert reasons and all("field 'at' is missing" in reason for reason in reasons)
    queued = Counter[int]()
    for second in (S1, S2):
        item = clients.dynamodb.get_item(
            TableName=ingest_world["table"],
            Key={"pk": {"S": counter_pk("orders")}, "sk": {"S": second_sk(second)}},
        )["Item"]
        queued[second] = int(item["queued"]["N"])
    # Each record here feeds one key, so redelivery adds no over-count: exact counts.
    assert (queued[S1], queued[S2]) == (2, 2)
