"""record_events in-process with the canonical SQS event and in-memory adapters."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from queue_autoscale.adapters.errors import ServiceUnavailable, Throttled
from queue_autoscale.adapters.sqs import SendFailure
from queue_autoscale.demo import sqs_event
from queue_autoscale.events import Event, parse_body
from queue_autoscale.handlers import record_events
from queue_autoscale.ingest import batch as ingest_batch
from queue_autoscale.ingest.aggregate import aggregate, batch_id
from queue_autoscale.ingest.runtime import RecordRuntime
from queue_autoscale.settings import RecordSettings, SettingsError

NOW = 1_763_000_000.0
ORDERS_ID = "059f36b4-87a3-44ab-83d2-661975830a7d"
EMAILS_ID = "2e1424d4-f796-459a-8184-9c92662be6da"
JUNK_ID = "6c5ac2b0-4a3b-4e4e-9d0e-0bb1b0b6a0a1"


class FakeTable:
    def __init__(self) -> None:
        self.adds: dict[tuple[str, int], dict[str, int]] = {}
        self.expiry: dict[tuple[str, int], int] = {}
        self.broken: set[tuple[str, int]] = set()

    def add_counters_once(
        self,
        queue: str,
        second: int,
        contributions: Mapping[str, Mapping[str, int]],
        *,
        expires_at: int,
    ) -> None:
        if (queue, second) in self.broken:
            raise Throttled("UpdateItem", "slow down", code="ThrottlingException")
        assert (queue, second) not in self.adds, "one ADD per queue-second per batch"
        counts: dict[str, int] = {}
        for part in contributions.values():
            for name, amount in part.items():
                counts[name] = counts.get(name, 0) + amount
        self.adds[(queue, second)] = counts
        self.expiry[(queue, second)] = expires_at


class FakeArchive:
    def __init__(self) -> None:
        self.objects: dict[str, list[dict[str, Any]]] = {}
        self.rejected: dict[str, str] = {}
        self.broken = False

    def put_events(self, at: float, batch_id: str, records: Iterable[Mapping[str, Any]]) -> str:
        if self.broken:
            raise ServiceUnavailable("PutObject", "503", code="ServiceUnavailable")
        key = f"events/{batch_id}"
        self.objects[key] = [dict(record) for record in records]
        return key

    def put_rejected(self, at: float, rejection_id: str, body: str) -> str:
        key = f"rejected/{rejection_id}"
        self.rejected[key] = body
        return key


class FakeDeadLetters:
    def __init__(self) -> None:
        self.sent: list[tuple[str, str]] = []
        self.broken = False

    def reject_many(self, items: Sequence[tuple[str, str]]) -> list[SendFailure]:
        if self.broken:
            raise Throttled("SendMessageBatch", "slow down", code="RequestThrottled")
        self.sent.extend(items)
        return []


class Metrics:
    def __init__(self) -> None:
        self.published: dict[str, dict[str, float]] = {}

    def __call__(self, queue: str, values: Mapping[str, float]) -> None:
        self.published[queue] = dict(values)


@pytest.fixture
def runtime() -> Iterator[RecordRuntime]:
    settings = RecordSettings.from_environ(
        {
            "QUEUES_CONFIG": json.dumps([{"queue": "orders"}, {"queue": "emails"}]),
            "LOAD_TABLE": "load-table",
            "ARCHIVE_BUCKET": "archive-bucket",
            "EVENTS_DLQ_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/events-dlq",
            "COUNTER_TTL_SECONDS": "86400",
        }
    )
    built = RecordRuntime(
        settings=settings,
        table=FakeTable(),
        archive=FakeArchive(),
        dead_letters=FakeDeadLetters(),
        clock=lambda: NOW,
        publish_metrics=Metrics(),
    )
    record_events.set_runtime(built)
    yield built
    record_events.set_runtime(None)


def parts(runtime: RecordRuntime) -> tuple[Any, Any, Any, Any]:
    return runtime.table, runtime.archive, runtime.dead_letters, runtime.publish_metrics


def test_the_canonical_batch_is_counted_archived_and_dead_lettered(
    runtime: Any, load_event: Any, lambda_context: Any
) -> None:
    # WHEN the canonical three-record batch arrives
    response = record_events.handler(load_event("sqs_record_events.json"), lambda_context)

    # THEN nothing is retried
    assert response == {"batchItemFailures": []}
    table, archive, dead, metrics = parts(runtime)
    # AND counters are one ADD per (queue, second) with the sums of that second
    assert table.adds == {
        ("orders", 1_762_999_990): {"queued": 1},
        ("orders", 1_762_999_991): {
            "started": 1,
            "pickup_ms": 1_100,
            "pickups": 1,
            "completed": 1,
            "busy_ms": 700,
        },
        ("emails", 1_762_999_990): {"queued": 1},
    }
    assert table.expiry[("emails", 1_762_999_990)] == 1_762_999_990 + 86_400
    # AND the four accepted events are archived in one object
    ((key, records),) = archive.objects.items()
    assert key == f"events/{batch_id([ORDERS_ID, EMAILS_ID])}"
    assert [(r["queue"], r["type"]) for r in records] == [
        ("orders", "queued"),
        ("orders", "started"),
        ("orders", "completed"),
        ("emails", "queued"),
    ]
    # AND the unknown queue's event is dead-lettered with its reason
    ((wrapper, reason),) = dead.sent
    assert reason == "field 'queue' = \"payments\": unknown queue (not in the configured queues)"
    assert json.loads(wrapper)["message_id"] == JUNK_ID
    assert json.loads(json.loads(wrapper)["body"])["job_id"] == "p-1"
    # AND the counts are published per queue
    assert metrics.published == {
        "orders": {"AcceptedEvents": 3},
        "emails": {"AcceptedEvents": 1},
        "unknown": {"RejectedEvents": 1},
    }


def test_a_failed_counter_write_fails_only_the_records_in_that_second(
    runtime: Any, load_event: Any, lambda_context: Any
) -> None:
    runtime.table.broken = {("orders", 1_762_999_991)}
    response = record_events.handler(load_event("sqs_record_events.json"), lambda_context)
    assert response == {"batchItemFailures": [{"itemIdentifier": ORDERS_ID}]}
    assert ("emails", 1_762_999_990) in runtime.table.adds
    assert "orders" not in runtime.publish_metrics.published


def test_a_failed_archive_write_fails_every_record_with_accepted_events(
    runtime: Any, load_event: Any, lambda_context: Any
) -> None:
    runtime.archive.broken = True
    response = record_events.handler(load_event("sqs_record_events.json"), lambda_context)
    assert response == {
        "batchItemFailures": [{"itemIdentifier": ORDERS_ID}, {"itemIdentifier": EMAILS_ID}]
    }
    assert runtime.table.adds == {}, "nothing is counted that was not archived"
    assert len(runtime.dead_letters.sent) == 1


def test_a_failed_dlq_send_fails_the_rejected_record(
    runtime: Any, load_event: Any, lambda_context: Any
) -> None:
    runtime.dead_letters.broken = True
    response = record_events.handler(load_event("sqs_record_events.json"), lambda_context)
    assert response == {"batchItemFailures": [{"itemIdentifier": JUNK_ID}]}


def test_when_every_record_fails_the_whole_batch_is_retried(
    runtime: Any, load_event: Any, lambda_context: Any
) -> None:
    runtime.archive.broken = True
    runtime.dead_letters.broken = True
    event = load_event("sqs_record_events.json")
    response = record_events.handler(event, lambda_context)
    assert response == {
        "batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in event["Records"]]
    }


def test_an_oversized_body_goes_to_the_archive_and_the_dlq_points_at_it(
    runtime: Any, load_event: Any, lambda_context: Any
) -> None:
    event = load_event("sqs_record_events.json")
    event["Records"] = event["Records"][2:]
    event["Records"][0]["body"] = "x" * (300 * 1024)
    response = record_events.handler(event, lambda_context)
    assert response == {"batchItemFailures": []}
    ((wrapper, reason),) = runtime.dead_letters.sent
    assert reason == "body = 307200 bytes: over the 262144 byte limit"
    pointer = json.loads(wrapper)
    assert runtime.archive.rejected[pointer["body_s3_key"]] == "x" * (300 * 1024)
    assert pointer["body_bytes"] == 307_200


def test_a_bad_deploy_fails_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    record_events.set_runtime(None)
    monkeypatch.setenv("QUEUES_CONFIG", json.dumps([{"queue": "orders"}]))
    monkeypatch.setenv("LOAD_TABLE", "load-table")
    monkeypatch.setenv("ARCHIVE_BUCKET", "archive-bucket")
    monkeypatch.delenv("EVENTS_DLQ_URL", raising=False)
    monkeypatch.setenv("MAX_CLOCK_SKEW_SECONDS", "-1")
    with pytest.raises(SettingsError) as caught:
        record_events.get_runtime()
    assert str(caught.value) == (
        "$EVENTS_DLQ_URL is not set; "
        '$MAX_CLOCK_SKEW_SECONDS = "-1": Input should be greater than or equal to 0'
    )


event_strategy = st.builds(
    lambda kind, queue, at, duration, pickup: Event(
        type=kind,
        queue=queue,
        job_id="j",
        at=at,
        duration_ms=duration if kind in ("completed", "failed") else None,
        pickup_ms=pickup if kind == "started" else None,
    ),
    st.sampled_from(["queued", "started", "completed", "failed"]),
    st.sampled_from(["orders", "emails"]),
    st.integers(min_value=1_762_999_990_000, max_value=1_763_000_000_000),
    st.integers(min_value=0, max_value=10**6),
    st.one_of(st.none(), st.integers(min_value=0, max_value=10**6)),
)


@given(st.lists(event_strategy, max_size=200))
def test_aggregation_keeps_every_count_and_duration(events: list[Any]) -> None:
    totals = aggregate(events)
    for (queue, second), counts in totals.items():
        assert counts, "no empty update"
        assert all(value >= 0 for value in counts.values())
        assert any(e.queue == queue and e.second == second for e in events)
    for kind in ("queued", "started", "completed", "failed"):
        assert sum(c.get(kind, 0) for c in totals.values()) == sum(e.type == kind for e in events)
    assert sum(c.get("busy_ms", 0) for c in totals.values()) == sum(
        e.duration_ms or 0 for e in events
    )
    assert sum(c.get("pickup_ms", 0) for c in totals.values()) == sum(
        e.pickup_ms or 0 for e in events
    )
    assert sum(c.get("pickups", 0) for c in totals.values()) == sum(
        e.pickup_ms is not None for e in events
    )
    assert len(totals) == len({(e.queue, e.second) for e in events})


def test_an_unexpected_failure_reading_one_body_rejects_that_body_alone(
    runtime: Any, load_event: Any, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a validator that fails with a non-ValueError on the emails body (a bug, say)
    real = parse_body

    def flaky(body: str, context: Any) -> Any:
        if '"emails"' in body:
            raise OverflowError("int too large to convert")
        return real(body, context)

    monkeypatch.setattr(ingest_batch, "parse_body", flaky)
    # WHEN the canonical batch arrives
    response = record_events.handler(load_event("sqs_record_events.json"), lambda_context)
    # THEN nothing is retried: the orders events are counted, the emails body is dead-lettered
    # with the exception named, and the unknown-queue body is rejected as before
    assert response == {"batchItemFailures": []}
    table, _, dead, _ = parts(runtime)
    assert {queue for queue, _ in table.adds} == {"orders"}
    reasons = [reason for _, reason in dead.sent]
    assert "body could not be validated: OverflowError: int too large to convert" in reasons
    assert len(reasons) == 2


def queued(job: str, at_ms: int) -> dict[str, Any]:
    return {"type": "queued", "queue": "orders", "job_id": job, "at": at_ms}


def test_counter_writes_stop_before_the_invocations_end_and_the_rest_is_redelivered(
    runtime: Any, lambda_context: Any
) -> None:
    # GIVEN five messages, each one event in its own second, one write at a time, a clock that
    # moves 1 s per reading, and 10 s left in the invocation: writes may start until
    # NOW + 10 - DEADLINE_MARGIN_SECONDS (7 s), i.e. before NOW + 3
    ticks = iter(range(1_000))
    runtime.clock = lambda: NOW + next(ticks)
    runtime.max_concurrency = 1
    lambda_context.remaining_ms = 10_000
    at_ms = int(NOW * 1000)
    messages = [
        {"MessageId": f"m{k}", "Body": json.dumps(queued(f"j{k}", at_ms - k * 1000))}
        for k in range(1, 6)
    ]
    event = sqs_event(messages, "arn:aws:sqs:us-east-1:123456789012:events")

    # WHEN the batch runs
    response = record_events.handler(event, lambda_context)

    # THEN two writes started (at NOW + 1 and NOW + 2), the other three messages are reported
    # for redelivery, and nothing of theirs was written
    failed = [item["itemIdentifier"] for item in response["batchItemFailures"]]
    assert failed == ["m1", "m2", "m3"]  # keys are written oldest first
    assert sorted(second for _, second in runtime.table.adds) == [
        int(NOW) - 5,
        int(NOW) - 4,
    ]
