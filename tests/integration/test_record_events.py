"""record_events against an AWS endpoint: events in -> counters, archive object, DLQ rejections."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from queue_autoscale.adapters.dynamodb import LoadTable, counter_pk, second_sk
from queue_autoscale.adapters.s3 import decode_jsonl_gz
from queue_autoscale.client import EventRecorder
from queue_autoscale.demo import sqs_event
from queue_autoscale.handlers import record_events
from queue_autoscale.settings import RecordSettings

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("moto")]

NOW = 1_763_000_000.0
"""2025-11-13T02:13:20Z, the handler's clock in these tests."""
NOW_MS = int(NOW * 1000)
TTL = 3 * 86_400


@pytest.fixture
def setup(kit: Any, clients: Any, function_environ: Any) -> Iterator[dict[str, Any]]:
    table = kit.load_table()
    bucket = kit.bucket()
    events_url = kit.queue("events")
    dlq_url = kit.queue("events-dlq")
    # the record function's environment from template.yaml, with this test's names
    environment = function_environ(
        "RecordEventsFunction",
        QueuesConfig=json.dumps([{"queue": "orders"}, {"queue": "emails"}]),
        LoadTable=table,
        ArchiveBucket=bucket,
        EventsDeadLetterQueue=dlq_url,
    )
    settings = RecordSettings.from_environ({**environment, "COUNTER_TTL_SECONDS": str(TTL)})
    record_events.set_runtime(record_events.build_runtime(settings, clients, clock=lambda: NOW))
    yield {
        "table": table,
        "bucket": bucket,
        "events_url": events_url,
        "dlq_url": dlq_url,
        "arn": kit.queue_arn(events_url),
    }
    record_events.set_runtime(None)


def counter(clients: Any, table: str, queue: str, second: int) -> dict[str, int]:
    item = clients.dynamodb.get_item(
        TableName=table, Key={"pk": {"S": counter_pk(queue)}, "sk": {"S": second_sk(second)}}
    ).get("Item")
    assert item is not None, f"no counter item for {queue} at {second}"
    return {key: int(value["N"]) for key, value in item.items() if "N" in value}


def test_events_become_counters_archive_and_dlq_rejections(
    setup: dict[str, Any], kit: Any, clients: Any, lambda_context: Any, queue_log_lines: Any
) -> None:
    # GIVEN a producer and a worker emitting through the client, plus two bad events and junk
    recorder = EventRecorder(clients.sqs, setup["events_url"], flush_interval_seconds=3600)
    recorder.queued("orders", "j1", at_ms=NOW_MS - 6_000)
    recorder.queued("orders", "j2", at_ms=NOW_MS - 5_900)
    recorder.started("orders", "j1", pickup_ms=1_200, at_ms=NOW_MS - 4_800)
    recorder.completed("orders", "j1", 800, at_ms=NOW_MS - 4_000)
    recorder.queued("payments", "p1", at_ms=NOW_MS - 4_000)  # not a configured queue
    recorder.completed("orders", "j2", -5, at_ms=NOW_MS - 3_000)  # the client clamps to 0
    recorder.record("failed", "emails", "e1", at_ms=NOW_MS - 3_000)  # no duration_ms
    assert recorder.flush() == 7
    clients.sqs.send_message(QueueUrl=setup["events_url"], MessageBody="not json {")
    negative = {"type": "completed", "queue": "orders", "job_id": "j3", "at": NOW_MS - 2_000}
    negative["duration_ms"] = -5
    clients.sqs.send_message(QueueUrl=setup["events_url"], MessageBody=json.dumps(negative))
    messages = kit.receive_all(setup["events_url"])
    assert len(messages) == 3
    event = sqs_event(messages, setup["arn"])

    # WHEN the handler consumes the batch
    response = record_events.handler(event, lambda_context)

    # THEN nothing is retried
    assert response == {"batchItemFailures": []}
    # AND one ADD per (queue, second) holds the exact counts and the TTL
    s_queued, s_started, s_done = (
        (NOW_MS - 6_000) // 1000,
        (NOW_MS - 4_800) // 1000,
        (NOW_MS - 3_000) // 1000,
    )
    assert counter(clients, setup["table"], "orders", s_queued) == {
        "queued": 2,
        "expires_at": s_queued + TTL,
    }
    assert counter(clients, setup["table"], "orders", s_started) == {
        "started": 1,
        "pickup_ms": 1_200,
        "pickups": 1,
        "expires_at": s_started + TTL,
    }
    assert counter(clients, setup["table"], "orders", (NOW_MS - 4_000) // 1000) == {
        "completed": 1,
        "busy_ms": 800,
        "expires_at": (NOW_MS - 4_000) // 1000 + TTL,
    }
    assert counter(clients, setup["table"], "orders", s_done) == {
        "completed": 1,
        "busy_ms": 0,
        "expires_at": s_done + TTL,
    }
    # AND one archive object holds exactly the accepted events, partitioned by day and hour
    keys = kit.archive_keys(setup["bucket"], "events/")
    assert len(keys) == 1
    assert keys[0].startswith("events/dt=2025-11-13/hour=02/")
    body = clients.s3.get_object(Bucket=setup["bucket"], Key=keys[0])["Body"].read()
    archived = decode_jsonl_gz(body)
    assert sorted((r["type"], r["job_id"]) for r in archived) == [
        ("completed", "j1"),
        ("completed", "j2"),
        ("queued", "j1"),
        ("queued", "j2"),
        ("started", "j1"),
    ]
    assert len({r["event_id"] for r in archived}) == 5
    # AND the DLQ holds each rejection with its reason, naming the field and value
    rejected = kit.receive_all(setup["dlq_url"])
    reasons = sorted(json.loads(m["Body"])["reason"] for m in rejected)
    assert len(reasons) == 4
    assert reasons[0].startswith("body is not JSON")
    assert (
        reasons[1]
        == "event [4]: field 'queue' = \"payments\": unknown queue (not in the configured queues)"
    )
    assert reasons[2] == "event [6]: field 'duration_ms' is required when type = 'failed'"
    assert reasons[3] == "field 'duration_ms' = -5: Input should be greater than or equal to 0"
    wrapped = {json.loads(m["Body"]).get("body") for m in rejected}
    assert "not json {" in wrapped
    assert all(m["MessageAttributes"]["reason"]["StringValue"] for m in rejected)
    # AND the log lines count accepted and rejected events per queue (plain fields: the
    # stack's PerQueueMetrics defaults to "false")
    by_queue = {doc["Queue"]: doc for doc in queue_log_lines()}
    assert set(by_queue) == {"orders", "emails", "unknown"}
    assert "_aws" not in by_queue["orders"]
    assert by_queue["orders"]["AcceptedEvents"] == 5.0
    assert by_queue["orders"]["RejectedEvents"] == 1.0
    assert by_queue["emails"]["RejectedEvents"] == 1.0
    assert by_queue["unknown"]["RejectedEvents"] == 2.0


def test_a_failed_counter_write_retries_only_the_records_it_touched(
    setup: dict[str, Any], kit: Any, clients: Any, lambda_context: Any
) -> None:
    # GIVEN a batch with one valid message and one junk message, and a table that is gone
    runtime = record_events.get_runtime()
    runtime.table = LoadTable(clients.dynamodb, "no-such-table-" + kit.suffix)
    good = json.dumps({"type": "queued", "queue": "orders", "job_id": "a", "at": NOW_MS - 1000})
    clients.sqs.send_message(QueueUrl=setup["events_url"], MessageBody=good)
    clients.sqs.send_message(QueueUrl=setup["events_url"], MessageBody="[]")
    messages = kit.receive_all(setup["events_url"])
    good_id = next(m["MessageId"] for m in messages if m["Body"] == good)

    # WHEN the handler runs
    response = record_events.handler(sqs_event(messages, setup["arn"]), lambda_context)

    # THEN only the valid record is reported for redelivery; the junk one is dead-lettered
    assert response == {"batchItemFailures": [{"itemIdentifier": good_id}]}
    rejected = kit.receive_all(setup["dlq_url"])
    assert [json.loads(m["Body"])["reason"] for m in rejected] == [
        "body = []: an empty array holds no event"
    ]


def test_an_event_of_thousands_of_unknown_fields_is_dead_lettered_with_a_bounded_reason(
    setup: dict[str, Any], kit: Any, clients: Any, lambda_context: Any
) -> None:
    # GIVEN a body near the 256 KiB limit holding one event with ~24,000 unknown fields (its
    # reason listed every one: 1.4 million characters), and a good event in another message
    bad: dict[str, Any] = {"type": "queued", "queue": "orders", "job_id": "j", "at": NOW_MS}
    bad |= {f"x{i}": 0 for i in range(24_000)}
    body = json.dumps(bad, separators=(",", ":"))
    assert 200_000 < len(body) < 256 * 1024
    clients.sqs.send_message(QueueUrl=setup["events_url"], MessageBody=body)
    good = {"type": "queued", "queue": "orders", "job_id": "g", "at": NOW_MS - 1_000}
    clients.sqs.send_message(QueueUrl=setup["events_url"], MessageBody=json.dumps(good))
    messages = kit.receive_all(setup["events_url"])

    # WHEN the handler consumes the batch
    response = record_events.handler(sqs_event(messages, setup["arn"]), lambda_context)

    # THEN nothing is retried, the good event is counted once
    assert response == {"batchItemFailures": []}
    second = (NOW_MS - 1_000) // 1000
    assert counter(clients, setup["table"], "orders", second)["queued"] == 1
    # AND the DLQ holds the bad event with its first ten problems and how many more
    (dead,) = kit.receive_all(setup["dlq_url"])
    wrapper = json.loads(dead["Body"])
    reason = wrapper["reason"]
    assert reason.startswith("field 'x0' = 0: Extra inputs are not permitted; field 'x1' = 0")
    assert reason.endswith("; and 23990 more")
    assert len(reason) < 1_000
    assert "body_s3_key" in wrapper  # the body itself went to the archive


class FlakyUpdates:
    """The DynamoDB client, except that UpdateItem on one second's counter item fails
    `failures` times (throttled after botocore's retries, as far as the handler can tell)."""

    def __init__(self, real: Any, second: int, failures: int) -> None:
        self._real = real
        self._second = str(second)
        self.left = failures

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def update_item(self, **kwargs: Any) -> Any:
        if kwargs["Key"]["sk"]["S"].endswith(self._second) and self.left > 0:
            self.left -= 1
            error = {"Code": "ProvisionedThroughputExceededException", "Message": "slow down"}
            raise ClientError({"Error": error}, "UpdateItem")
        return self._real.update_item(**kwargs)


def test_a_batch_failing_half_way_redelivered_three_times_counts_each_event_once(
    setup: dict[str, Any], kit: Any, clients: Any, lambda_context: Any
) -> None:
    # GIVEN three messages sharing seconds, one of whose seconds (s3) fails three times
    s1, s2, s3, s4 = (NOW_MS - k * 1_000 for k in (40, 30, 20, 10))

    def queued(job: str, at: int) -> dict[str, Any]:
        return {"type": "queued", "queue": "orders", "job_id": job, "at": at}

    bodies = [
        [queued("a1", s1), queued("a2", s2)],
        [queued("b1", s2), queued("b2", s3), queued("b3", s3)],
        [queued("c1", s1), queued("c2", s4)],
    ]
    for body in bodies:
        clients.sqs.send_message(QueueUrl=setup["events_url"], MessageBody=json.dumps(body))
    messages = kit.receive_all(setup["events_url"])
    runtime = record_events.get_runtime()
    runtime.table = LoadTable(FlakyUpdates(clients.dynamodb, s3 // 1000, 3), setup["table"])

    # WHEN the batch runs and SQS redelivers what it reports failed, until nothing is
    deliveries = []
    batch = messages
    while batch:
        response = record_events.handler(sqs_event(batch, setup["arn"]), lambda_context)
        failed = {item["itemIdentifier"] for item in response["batchItemFailures"]}
        deliveries.append(len(failed))
        batch = [m for m in batch if m["MessageId"] in failed]

    # THEN it failed half way (the message touching s3) three times, then finished
    assert deliveries == [1, 1, 1, 0]
    # AND every event is counted exactly once
    got = {
        s: counter(clients, setup["table"], "orders", s // 1000)["queued"] for s in (s1, s2, s3, s4)
    }
    assert got == {s1: 2, s2: 2, s3: 2, s4: 1}
