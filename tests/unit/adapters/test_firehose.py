"""The Firehose archive writer: PutRecordBatch's limits, its per-record refusals, its retry
deadline, and a refused batch failing the record function's messages as a failed PutObject did."""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest
from botocore.stub import ANY, Stubber

from queue_autoscale.adapters.aws import AwsClients
from queue_autoscale.adapters.errors import (
    AccessDenied,
    InvalidRequest,
    MalformedResponse,
    ServiceUnavailable,
    Throttled,
)
from queue_autoscale.adapters.firehose import (
    MAX_BYTES_PER_CALL,
    MAX_RECORD_BYTES,
    MAX_RECORDS_PER_CALL,
    DeliveryStream,
    StreamArchive,
    archive_writer,
    pack_records,
    parse_put_record_batch,
    split_calls,
)
from queue_autoscale.adapters.s3 import Archive, decode_jsonl_gz, encode_lines
from queue_autoscale.ingest.batch import ingest
from queue_autoscale.ingest.parse import Message
from queue_autoscale.ingest.runtime import RecordRuntime
from queue_autoscale.settings import RecordSettings
from tests.unit.adapters.stubs import client
from tests.unit.handlers.evaluate_world import Clock

STREAM = "qa-events"


@pytest.fixture
def firehose(stubbed: Any) -> tuple[Any, Stubber]:
    made, stub = stubbed("firehose")
    return made, stub


def accepted(count: int) -> dict[str, Any]:
    return {
        "FailedPutCount": 0,
        "RequestResponses": [{"RecordId": f"r{i}"} for i in range(count)],
    }


def refused(count: int, bad: set[int], code: str = "ServiceUnavailableException") -> dict[str, Any]:
    return {
        "FailedPutCount": len(bad),
        "RequestResponses": [
            {"ErrorCode": code, "ErrorMessage": "Slow down."} if i in bad else {"RecordId": f"r{i}"}
            for i in range(count)
        ],
    }


def test_pack_records_keeps_lines_whole_and_under_the_record_limit() -> None:
    lines = [b"a" * 39 + b"\n", b"b" * 59 + b"\n", b"c" * 19 + b"\n", b"d" * 99 + b"\n"]
    # 40 + 60 = 100 fits a 100-byte record; + 20 would not; 20 + 100 would not either
    assert pack_records(lines, max_bytes=100) == [lines[0] + lines[1], lines[2], lines[3]]
    assert b"".join(pack_records(lines, max_bytes=100)) == b"".join(lines)
    assert pack_records([]) == []


def test_a_line_over_the_record_limit_is_refused_before_any_call() -> None:
    with pytest.raises(InvalidRequest, match="1025-byte line is over the 1024-byte"):
        pack_records([b"x" * 1024 + b"\n"], max_bytes=1024)
    assert len(pack_records([b"x" * (MAX_RECORD_BYTES - 1) + b"\n"])) == 1


def test_split_calls_respects_the_count_and_byte_limits() -> None:
    small = [b"x\n"] * (MAX_RECORDS_PER_CALL + 1)
    assert [len(call) for call in split_calls(small)] == [MAX_RECORDS_PER_CALL, 1]
    # five records of 1,000 KiB: four fill 4,000 KiB of the 4 MiB (4,096 KiB) a call takes
    big = [b"y" * MAX_RECORD_BYTES] * 5
    assert [len(call) for call in split_calls(big)] == [4, 1]
    assert 4 * MAX_RECORD_BYTES <= MAX_BYTES_PER_CALL < 5 * MAX_RECORD_BYTES


@pytest.mark.parametrize(
    ("response", "sent", "why"),
    [
        pytest.param({"FailedPutCount": 0, "RequestResponses": []}, 1, "0 responses", id="short"),
        pytest.param({"FailedPutCount": 0}, 1, "None responses", id="no-responses"),
        pytest.param(
            {"FailedPutCount": 0, "RequestResponses": [{"ErrorCode": "X"}]},
            1,
            "FailedPutCount 0, 1 records refused",
            id="count-disagrees",
        ),
        pytest.param(
            {"RequestResponses": [{"RecordId": "r"}]}, 1, "FailedPutCount None", id="no-count"
        ),
    ],
)
def test_an_answer_that_does_not_match_the_call_is_malformed(
    response: dict[str, Any], sent: int, why: str
) -> None:
    with pytest.raises(MalformedResponse, match=why):
        parse_put_record_batch(response, sent)


def test_parse_names_each_refused_record() -> None:
    (failure,) = parse_put_record_batch(refused(3, {1}), 3)
    assert (failure.index, failure.code, failure.message) == (
        1,
        "ServiceUnavailableException",
        "Slow down.",
    )
    assert parse_put_record_batch(accepted(2), 2) == []


def test_refused_records_alone_are_sent_again_after_a_backoff(firehose: Any) -> None:
    # GIVEN a stream that refuses the second of three records once
    made, stub = firehose
    records = [b"1" * 600_000 + b"\n", b"2" * 600_000 + b"\n", b"3" * 600_000 + b"\n"]
    stub.add_response(
        "put_record_batch",
        refused(3, {1}),
        {"DeliveryStreamName": STREAM, "Records": [{"Data": r} for r in records]},
    )
    stub.add_response(
        "put_record_batch",
        accepted(1),
        {"DeliveryStreamName": STREAM, "Records": [{"Data": records[1]}]},
    )
    clock = Clock()
    # WHEN three lines too big to share a record are written
    sent = DeliveryStream(made, STREAM, clock=clock, sleep=clock.sleep).put_lines(records)
    # THEN three records went, the refused one again alone after 0.1 s
    assert sent == 3
    assert clock.naps == [0.1]
    stub.assert_no_pending_responses()


def test_records_still_refused_at_the_deadline_fail_the_write(firehose: Any) -> None:
    # GIVEN a stream over its throughput that refuses every record, and 1 s to retry
    made, stub = firehose
    for _ in range(4):  # at 0, 0.1, 0.3, 0.7 s; the next wait (0.8 s) would end past 1 s
        stub.add_response(
            "put_record_batch", refused(1, {0}), {"DeliveryStreamName": STREAM, "Records": ANY}
        )
    clock = Clock()
    stream = DeliveryStream(made, STREAM, retry_seconds=1.0, clock=clock, sleep=clock.sleep)
    # WHEN a line is written THEN it raises Throttled naming the stream and the refusal
    with pytest.raises(Throttled, match=r"firehose:qa-events .*1 of 1 records still refused"):
        stream.put_lines([b"{}\n"])
    assert clock.naps == [0.1, 0.2, 0.4]
    stub.assert_no_pending_responses()


def test_a_refusal_other_than_throughput_is_service_unavailable(firehose: Any) -> None:
    made, stub = firehose
    stub.add_response(
        "put_record_batch",
        refused(1, {0}, "InternalFailure"),
        {"DeliveryStreamName": STREAM, "Records": ANY},
    )
    stream = DeliveryStream(made, STREAM, retry_seconds=0.0)
    with pytest.raises(ServiceUnavailable, match="InternalFailure"):
        stream.put_lines([b"{}\n"])


def test_a_call_error_is_the_projects_error(firehose: Any) -> None:
    made, stub = firehose
    stub.add_client_error("put_record_batch", "AccessDeniedException", "no", http_status_code=400)
    with pytest.raises(AccessDenied, match="PutRecordBatch on firehose:qa-events"):
        DeliveryStream(made, STREAM).put_lines([b"{}\n"])


def test_the_stream_archive_sends_the_lines_the_bucket_archive_writes(firehose: Any) -> None:
    # GIVEN two decision records
    made, stub = firehose
    records = [{"queue": "orders", "target": 3}, {"queue": "emails", "target": 0}]
    lines = encode_lines(records)
    stub.add_response(
        "put_record_batch",
        accepted(1),
        {"DeliveryStreamName": STREAM, "Records": [{"Data": b"".join(lines)}]},
    )
    archive = StreamArchive(DeliveryStream(made, STREAM), Archive(client("s3"), "bucket"))
    # WHEN the tick's log is written THEN one record holds both lines, as one object would
    assert archive.put_decisions(1_763_000_000.0, "t1", records) == "firehose:qa-events/t1"
    stub.assert_no_pending_responses()
    # AND the same lines gzipped are what a reader decodes back to the records
    assert decode_jsonl_gz(gzip.compress(b"".join(lines))) == records


def test_archive_writer_uses_the_stream_only_when_named() -> None:
    clients = AwsClients(
        sqs=None,
        cloudwatch=None,
        ecs=None,
        dynamodb=None,
        s3=client("s3"),
        events=None,
        firehose=client("firehose"),
    )
    assert isinstance(archive_writer(clients, "bucket", None), Archive)
    assert isinstance(archive_writer(clients, "bucket", ""), Archive)
    assert isinstance(archive_writer(clients, "bucket", STREAM), StreamArchive)


class NoCounters:
    def __init__(self) -> None:
        self.writes = 0

    def add_counters_once(self, *_args: Any, **_kwargs: Any) -> None:
        self.writes += 1


class NoDeadLetters:
    def reject_many(self, items: Any) -> list[Any]:
        return []


def test_a_batch_the_stream_keeps_refusing_fails_every_message(firehose: Any) -> None:
    # GIVEN a record function archiving through a stream that refuses everything
    made, stub = firehose
    stub.add_response(
        "put_record_batch", refused(1, {0}), {"DeliveryStreamName": STREAM, "Records": ANY}
    )
    settings = RecordSettings.from_environ(
        {
            "QUEUES_CONFIG": json.dumps([{"queue": "orders"}]),
            "LOAD_TABLE": "load-table",
            "ARCHIVE_BUCKET": "archive-bucket",
            "EVENTS_DELIVERY_STREAM": STREAM,
            "EVENTS_DLQ_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/events-dlq",
        }
    )
    table = NoCounters()
    runtime = RecordRuntime(
        settings=settings,
        table=table,
        archive=StreamArchive(
            DeliveryStream(made, STREAM, retry_seconds=0.0), Archive(client("s3"), "bucket")
        ),
        dead_letters=NoDeadLetters(),
    )
    now = 1_763_000_000.0
    messages = [
        Message(
            f"m{i}",
            json.dumps(
                {"type": "queued", "queue": "orders", "job_id": f"j{i}", "at": 1_763_000_000_000}
            ),
        )
        for i in range(2)
    ]
    # WHEN the batch is ingested
    result = ingest(messages, runtime, now)
    # THEN both messages fail (SQS brings them back), and nothing was counted
    assert sorted(result.failed) == sorted(m.message_id for m in messages)
    assert all("archive write failed" in why for why in result.failed.values())
    assert table.writes == 0
    assert result.accepted == 0
