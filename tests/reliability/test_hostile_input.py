"""Hostile and outlier input on the emulator (issue 11): real SQS queues, the record_events and
evaluate handlers with the template's environment, the load table, the archive and the DLQ.

- One absurd duration and one plausible 11-hour outlier among 10,000 good events: the queue
  that received them decides within one worker of an identical queue that did not, in the
  same tick (which also shows the outlier's queue does not hold the other one back).
- Hostile bodies mixed into batches with good ones: every good event is counted and archived,
  every bad body or event reaches the events DLQ with its reason, and no record is retried.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from queue_autoscale.adapters.dynamodb import LoadTable
from queue_autoscale.adapters.s3 import decode_jsonl_gz
from queue_autoscale.client import EventRecorder
from queue_autoscale.demo import sqs_event
from queue_autoscale.handlers import evaluate, record_events
from queue_autoscale.settings import EvaluateSettings, RecordSettings

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("moto")]

GOOD_SECONDS = 250
"""Good events are spread over this many past seconds (inside the 300 s rate window)."""


@pytest.fixture
def runtimes() -> Iterator[None]:
    yield
    record_events.set_runtime(None)
    evaluate.set_runtime(None)


def _ingest(
    kit: Any, events_url: str, lambda_context: Any
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every message of the events queue through record_events, 10 a batch as Lambda does;
    returns (the messages, every batchItemFailures entry)."""
    messages = kit.receive_all(events_url)
    failures: list[dict[str, Any]] = []
    for start in range(0, len(messages), 10):
        chunk = messages[start : start + 10]
        answer = record_events.handler(sqs_event(chunk, kit.queue_arn(events_url)), lambda_context)
        failures.extend(answer["batchItemFailures"])
    return messages, failures


def _dead_letters(kit: Any, dlq_url: str) -> list[dict[str, Any]]:
    return [json.loads(message["Body"]) for message in kit.receive_all(dlq_url)]


def _good_events(recorder: EventRecorder, queue: str, now_ms: int, jobs: int) -> None:
    """`jobs` one-second jobs: queued and completed, spread evenly over the last GOOD_SECONDS
    (in time order, so a batch touches few (queue, second) counters: one UpdateItem each)."""
    per_second = -(-jobs // GOOD_SECONDS)
    for index in range(jobs):
        at = now_ms - 1_000 * (1 + index // per_second)
        recorder.queued(queue, f"j{index}", at_ms=at)
        recorder.completed(queue, f"j{index}", 1_000, at_ms=at + 1)


def test_one_absurd_event_among_10000_good_ones_moves_the_decision_by_at_most_one_worker(
    kit: Any, clients: Any, lambda_context: Any, runtimes: None
) -> None:
    # GIVEN two identical queues of 16 workers (max 50; the 5,000 one-second jobs below, about
    # 17 a second, keep about that many busy), and the template's handler environment
    kit.require_ecs()
    cluster = kit.name("workers")
    clean, dirty = kit.name("clean"), kit.name("dirty")
    kit.queue("clean"), kit.queue("dirty")
    events_url, dlq_url = kit.queue("events"), kit.queue("events-dlq")
    for queue in (clean, dirty):
        kit.service(cluster, queue, running=16)
    environment = {
        "QUEUES_CONFIG": json.dumps(
            [{"queue": q, "cluster": cluster, "max_workers": 50} for q in (clean, dirty)]
        ),
        "LOAD_TABLE": kit.load_table(),
        "ARCHIVE_BUCKET": kit.bucket(),
        "EVENTS_DLQ_URL": dlq_url,
    }
    record_events.set_runtime(
        record_events.build_runtime(RecordSettings.from_environ(environment), clients)
    )
    evaluate.set_runtime(
        evaluate.build_runtime(EvaluateSettings.from_environ(environment), clients)
    )

    # WHEN each gets 10,000 good events (5,000 one-second jobs), and the dirty one also gets a
    # 10^15 ms duration (31,000 years) and a plausible 11-hour job
    now_ms = int(time.time() * 1000)
    # (sent from the recording thread at every 1,000 events: 20,002 events recorded in a tight
    # loop outrun a background sender, and the bounded buffer then drops the oldest)
    recorder = EventRecorder(clients.sqs, events_url, flush_interval_seconds=3600, background=False)
    with recorder:
        for queue in (clean, dirty):
            _good_events(recorder, queue, now_ms, 5_000)
        recorder.completed(dirty, "absurd", 10**15, at_ms=now_ms - 100_500)
        recorder.completed(dirty, "outlier", 11 * 3_600_000, at_ms=now_ms - 120_500)
    assert (recorder.stats.sent, recorder.stats.dropped) == (20_002, 0)
    _, failures = _ingest(kit, events_url, lambda_context)
    answer = evaluate.handler({"once": True}, lambda_context)

    # THEN ingest retried nothing; only the absurd duration was rejected, with its reason
    assert failures == []
    (rejected,) = _dead_letters(kit, dlq_url)
    assert "field 'duration_ms' = 1000000000000000" in rejected["reason"]
    assert "max_job_seconds 43200 s" in rejected["reason"]
    # AND both queues were decided in the same tick, without errors
    decisions = {d["queue"]: d for d in answer["decisions"]}
    assert decisions[clean]["errors"] == [] and decisions[dirty]["errors"] == []
    # AND the 11-hour job did not move the dirty queue's job time or its decision
    lines = {
        line["queue"]: line
        for key in kit.archive_keys(environment["ARCHIVE_BUCKET"], "decisions/")
        for line in decode_jsonl_gz(
            clients.s3.get_object(Bucket=environment["ARCHIVE_BUCKET"], Key=key)["Body"].read()
        )
    }
    assert lines[clean]["service_rate"] == pytest.approx(1.0)  # 1 s jobs
    assert lines[dirty]["service_rate"] == pytest.approx(1.0)
    assert 2 < lines[clean]["terms"]["steady"] < 50  # 5,000 jobs / 300 s need more than 2
    assert abs(lines[dirty]["terms"]["steady"] - lines[clean]["terms"]["steady"]) <= 1
    assert abs(decisions[dirty]["target"] - decisions[clean]["target"]) <= 1
    assert decisions[dirty]["target"] < 50  # the plain mean (8.9 s) would have asked for max


def _event(queue: str, job: str, at: int, **extra: Any) -> dict[str, Any]:
    return {"type": "queued", "queue": queue, "job_id": job, "at": at, **extra}


HOSTILE: Sequence[tuple[str, str]] = (
    ("[" * 5_000 + "]" * 5_000, "nests deeper than 8 levels"),
    ('{"a":' * 20 + "1" + "}" * 20, "nests deeper than 8 levels"),
    ('{"type":"queued","queue":"Q","job_id":"n","at":NaN}', "NaN is not a JSON number"),
    ('{"type":"queued","queue":"Q","job_id":"i","at":Infinity}', "Infinity is not a JSON number"),
    ('{"type":"queued","queue":"Q","job_id":"d","at":' + "9" * 5_000 + "}", "cannot be read"),
    ("not json at all", "body is not JSON"),
)
"""Bodies rejected whole ("Q" is replaced by the configured queue)."""


def test_hostile_bodies_mixed_with_good_ones_reject_only_themselves(
    kit: Any, clients: Any, lambda_context: Any, runtimes: None
) -> None:
    # GIVEN one configured queue and the handler with the template's environment
    queue = kit.name("orders")
    events_url, dlq_url = kit.queue("events"), kit.queue("events-dlq")
    table_name = kit.load_table()
    environment = {
        "QUEUES_CONFIG": json.dumps([{"queue": queue}]),
        "LOAD_TABLE": table_name,
        "ARCHIVE_BUCKET": kit.bucket(),
        "EVENTS_DLQ_URL": dlq_url,
    }
    record_events.set_runtime(
        record_events.build_runtime(RecordSettings.from_environ(environment), clients)
    )
    now_ms = int(time.time() * 1000)
    second = now_ms // 1000 - 5
    at = second * 1000 + 1
    # AND bodies that mix good events with hostile ones: each of those is rejected alone
    mixed = [
        _event(queue, "g1", at),
        _event(queue, "big", 2**70),  # beyond 64 bits
        _event(queue, "g2", at),
        _event(queue, "float", float(at)),  # a float where an integer belongs
        {"type": "completed", "queue": queue, "job_id": "long", "at": at, "duration_ms": 10**18},
        _event(queue, "g3", at),
        {"type": "started", "queue": queue, "job_id": "p", "at": at, "pickup_ms": 2**64},
        _event("payments", "unknown-queue", at),
    ]
    surrogate = json.dumps([_event(queue, "g4", at)])[:-1] + ',{"type":"queued","queue":"'
    surrogate += queue + '","job_id":"\\ud800","at":' + str(at) + "}]"
    bodies = [json.dumps(mixed), surrogate, json.dumps([_event(queue, "g5", at)])]
    bodies += [body.replace('"Q"', json.dumps(queue)) for body, _ in HOSTILE]
    for index, body in enumerate(bodies):
        clients.sqs.send_message(QueueUrl=events_url, MessageBody=body)
        if index == 1:  # good events in messages of their own, between the hostile ones
            clients.sqs.send_message(
                QueueUrl=events_url, MessageBody=json.dumps(_event(queue, "g6", at))
            )

    # WHEN record_events consumes the events queue
    _, failures = _ingest(kit, events_url, lambda_context)

    # THEN no record is retried
    assert failures == []
    # AND every good event (g1..g6) is counted and archived
    (row,) = LoadTable(clients.dynamodb, table_name).counter_rows(queue, second, second)
    assert row.queued == 6
    archived = [
        record["job_id"]
        for key in kit.archive_keys(environment["ARCHIVE_BUCKET"], "events/")
        for record in decode_jsonl_gz(
            clients.s3.get_object(Bucket=environment["ARCHIVE_BUCKET"], Key=key)["Body"].read()
        )
    ]
    assert sorted(archived) == ["g1", "g2", "g3", "g4", "g5", "g6"]
    # AND every bad one reached the DLQ with a reason naming what is wrong
    reasons = sorted(letter["reason"] for letter in _dead_letters(kit, dlq_url))
    expected = [
        "event [1]: field 'at' = 1180591620717411303424",
        "event [3]: field 'at' = ",
        "event [4]: field 'duration_ms' = 1000000000000000000",
        "event [6]: field 'pickup_ms' = 18446744073709551616",
        "event [7]: field 'queue' = \"payments\"",
        "event [1]: field 'job_id' = ",
        *(words for _, words in HOSTILE),
    ]
    assert len(reasons) == len(expected)
    for words in expected:
        assert any(words in reason for reason in reasons), (words, reasons)
