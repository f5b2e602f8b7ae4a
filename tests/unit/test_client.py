"""client.py: batching, the worker helper, and never breaking the caller on a failed send."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from botocore.exceptions import ClientError

from queue_autoscale.client import EventRecorder, elapsed_ms, pack_messages, send_job
from queue_autoscale.events import ValidationContext, parse_body
from queue_autoscale.ingest.lateness import PRODUCER_FLUSH_SECONDS

URL = "https://sqs.us-east-1.amazonaws.com/123456789012/events"
NOW = 1_763_000_000.0


class FakeSqs:
    """Answers SendMessageBatch like SQS; scripted failures come first. `batches` holds what
    SQS accepted."""

    def __init__(self) -> None:
        self.batches: list[list[dict[str, Any]]] = []
        self.script: list[Any] = []
        self.sent: list[dict[str, Any]] = []

    def send_message_batch(self, **call: Any) -> dict[str, Any]:
        entries: list[dict[str, Any]] = call["Entries"]
        assert call["QueueUrl"] == URL
        assert len(entries) <= 10
        step = self.script.pop(0) if self.script else None
        if isinstance(step, Exception):
            raise step
        failed = step or []
        refused = {f["Id"] for f in failed}
        self.batches.append([e for e in entries if e["Id"] not in refused])
        return {"Successful": [{"Id": e["Id"]} for e in self.batches[-1]], "Failed": failed}

    def send_message(self, **call: Any) -> dict[str, Any]:
        self.sent.append(call)
        return {"MessageId": f"m-{len(self.sent)}"}

    def events(self) -> list[dict[str, Any]]:
        return [
            e for batch in self.batches for entry in batch for e in json.loads(entry["MessageBody"])
        ]


class Clock:
    def __init__(self, now: float = NOW) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def recorder(sqs: FakeSqs, clock: Clock | None = None, **kwargs: Any) -> EventRecorder:
    """A recorder these tests drive by hand: no background thread unless asked for."""
    kwargs.setdefault("background", False)
    return EventRecorder(sqs, URL, clock=clock or Clock(), **kwargs)


def test_pack_messages_caps_events_and_size() -> None:
    events = [{"type": "queued", "queue": "q", "job_id": str(i), "at": 1} for i in range(250)]
    packed = pack_messages(events)
    assert [count for _, count in packed] == [100, 100, 50]
    assert json.loads(packed[2][0])[0]["job_id"] == "200"
    small = pack_messages(events[:10], max_chars=200)
    assert all(len(body) <= 200 for body, _ in small)
    assert sum(count for _, count in small) == 10


def test_flush_sends_json_arrays_of_100_in_one_batch_call() -> None:
    sqs = FakeSqs()
    rec = recorder(sqs, flush_interval_seconds=3600)
    for i in range(250):
        rec.queued("orders", f"j{i}")
    assert sqs.batches == []
    assert rec.flush() == 250
    (batch,) = sqs.batches
    assert [len(json.loads(e["MessageBody"])) for e in batch] == [100, 100, 50]
    assert rec.stats.sent == 250
    assert rec.buffered == 0


def test_by_default_a_recorded_event_is_sent_within_the_flush_interval() -> None:
    # GIVEN a recorder as producers build it (background thread, the default interval)
    sqs = FakeSqs()
    rec = EventRecorder(sqs, URL)
    assert rec.flush_interval_seconds == PRODUCER_FLUSH_SECONDS == 1.0
    # WHEN one event is recorded and nothing else happens
    began = time.monotonic()
    rec.queued("orders", "j1")
    while not sqs.batches and time.monotonic() - began < 5 * PRODUCER_FLUSH_SECONDS:
        time.sleep(0.01)
    waited = time.monotonic() - began
    rec.close()
    # THEN the thread sent it, no later than one interval (and a scheduling margin) after
    assert [e["job_id"] for e in sqs.events()] == ["j1"]
    assert waited < PRODUCER_FLUSH_SECONDS + 0.5


def test_the_background_thread_sends_a_full_batch_without_waiting_for_the_interval() -> None:
    # GIVEN a background recorder whose interval is an hour (its buffer holds 10,000 events)
    sqs = FakeSqs()
    rec = EventRecorder(sqs, URL, flush_interval_seconds=3600)
    # WHEN 12,000 events are recorded faster than any interval
    for i in range(12_000):
        rec.queued("orders", f"j{i}")
    rec.close()
    # THEN the thread sent each thousand as it filled: none was dropped from a full buffer
    assert rec.stats.dropped == 0
    assert len(sqs.events()) == 12_000


def test_record_flushes_at_1000_events_and_after_the_interval() -> None:
    sqs, clock = FakeSqs(), Clock()
    rec = recorder(sqs, clock, flush_interval_seconds=1.0)
    for i in range(999):
        rec.queued("orders", f"j{i}")
    assert sqs.batches == []
    rec.queued("orders", "j999")
    assert len(sqs.batches) == 1 and len(sqs.batches[0]) == 10
    rec.queued("orders", "late")
    clock.now += 1.5
    rec.queued("orders", "later")
    assert [e["job_id"] for e in json.loads(sqs.batches[1][0]["MessageBody"])] == ["late", "later"]


def test_the_worker_helper_records_started_with_pickup_then_completed() -> None:
    sqs, clock = FakeSqs(), Clock()
    rec = recorder(sqs, clock, flush_interval_seconds=3600)
    message = {
        "MessageId": "m-7",
        "Attributes": {
            "SentTimestamp": str(int(NOW * 1000) - 2_500),
            "ApproximateReceiveCount": "2",
        },
    }
    with rec.job(message, "orders") as run:
        assert (run.job_id, run.pickup_ms, run.attempt) == ("m-7", 2_500, 2)
    rec.flush()
    started, completed = sqs.events()
    assert started == {
        "type": "started",
        "queue": "orders",
        "job_id": "m-7",
        "at": int(NOW * 1000),
        "pickup_ms": 2_500,
        "attempt": 2,
    }
    assert completed["type"] == "completed"
    assert completed["attempt"] == 2
    assert 1 <= completed["duration_ms"] < 1_000


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        pytest.param(0.0, 1, id="no measurable time: 1 ms"),
        pytest.param(0.00004, 1, id="40 microseconds: 1 ms"),
        pytest.param(0.001, 1, id="exactly 1 ms"),
        pytest.param(0.0012, 2, id="1.2 ms rounds up"),
        pytest.param(2.5, 2_500, id="2.5 s"),
    ],
)
def test_a_duration_is_whole_milliseconds_rounded_up_never_zero(
    seconds: float, expected: int
) -> None:
    assert elapsed_ms(100.0, 100.0 + seconds) == expected


def test_a_sub_millisecond_job_is_recorded_as_a_completion_of_1_ms() -> None:
    # GIVEN a worker whose job does nothing (microseconds)
    sqs = FakeSqs()
    rec = recorder(sqs, flush_interval_seconds=3600)
    with rec.job({"MessageId": "fast"}, "orders"):
        pass
    rec.flush()
    # THEN it is a completed event with a duration the ingest counts (not 0 ms)
    completed = sqs.events()[1]
    assert (completed["type"], completed["duration_ms"]) == ("completed", 1)


def test_the_worker_helper_records_failed_and_lets_the_job_error_through() -> None:
    sqs = FakeSqs()
    rec = recorder(sqs, flush_interval_seconds=3600)
    lambda_record = {"messageId": "abc", "attributes": {"SentTimestamp": str(int(NOW * 1000))}}
    with pytest.raises(RuntimeError, match="job broke"), rec.job(lambda_record, "orders"):
        raise RuntimeError("job broke")
    rec.flush()
    assert [(e["type"], e["job_id"]) for e in sqs.events()] == [
        ("started", "abc"),
        ("failed", "abc"),
    ]
    assert "duration_ms" in sqs.events()[1]


def test_a_failed_send_never_raises_and_is_retried_on_the_next_flush() -> None:
    sqs = FakeSqs()
    throttled = ClientError(
        {"Error": {"Code": "ThrottlingException", "Message": "slow"}}, "SendMessageBatch"
    )
    sqs.script = [throttled]
    rec = recorder(sqs, flush_interval_seconds=3600)
    rec.queued("orders", "a")
    rec.queued("orders", "b")
    assert rec.flush() == 0
    assert (rec.stats.send_failures, rec.buffered) == (1, 2)
    assert rec.flush() == 2
    assert [e["job_id"] for e in sqs.events()] == ["a", "b"]


def test_refused_entries_retry_unless_the_sender_is_at_fault() -> None:
    sqs = FakeSqs()
    sqs.script = [[{"Id": "0", "Code": "InternalError", "Message": "x", "SenderFault": False}]]
    rec = recorder(sqs, flush_interval_seconds=3600)
    rec.queued("orders", "a")
    assert rec.flush() == 0
    assert rec.buffered == 1
    sqs.script = [
        [{"Id": "0", "Code": "InvalidMessageContents", "Message": "x", "SenderFault": True}]
    ]
    assert rec.flush() == 0
    assert (rec.buffered, rec.stats.dropped, rec.stats.send_failures) == (0, 1, 2)


def test_a_full_buffer_drops_the_oldest_and_counts_it() -> None:
    sqs = FakeSqs()
    sqs.script = [ClientError({"Error": {"Code": "InternalFailure"}}, "SendMessageBatch")] * 5
    rec = recorder(sqs, flush_interval_seconds=3600, max_buffered_events=3)
    for job in "abcde":
        rec.queued("orders", job)
    assert rec.stats.dropped == 2
    sqs.script = []
    rec.flush()
    assert [e["job_id"] for e in sqs.events()] == ["c", "d", "e"]


def test_send_job_records_queued_under_the_message_id() -> None:
    sqs = FakeSqs()
    rec = recorder(sqs, flush_interval_seconds=3600)
    job_id = send_job(sqs, "https://sqs/work", "payload", rec, "orders", DelaySeconds=0)
    assert job_id == "m-1"
    assert sqs.sent[0]["DelaySeconds"] == 0
    rec.flush()
    assert sqs.events()[0]["job_id"] == "m-1"


def test_what_the_client_sends_is_what_record_events_accepts() -> None:
    sqs = FakeSqs()
    with recorder(sqs, flush_interval_seconds=3600) as rec:
        rec.queued("orders", "j")
        with rec.job(
            {"MessageId": "j", "Attributes": {"SentTimestamp": "1762999999000"}}, "orders"
        ):
            pass
    context = ValidationContext(queues={"orders"}, now_ms=int(NOW * 1000))
    parsed = parse_body(sqs.batches[0][0]["MessageBody"], context)
    assert parsed.rejected == []
    assert [(e.type, e.pickup_ms) for e in parsed.accepted] == [
        ("queued", None),
        ("started", 1_000),
        ("completed", None),
    ]


def test_an_empty_queue_url_is_refused_at_once() -> None:
    with pytest.raises(ValueError, match="events_queue_url is empty"):
        EventRecorder(FakeSqs(), "")
