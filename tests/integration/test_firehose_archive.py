"""The archive through Firehose, as far as an emulator can show it, and the archive's readers
on the objects Firehose writes on AWS.

On the endpoint's Firehose (moto by default; LocalStack with `make test-localstack`) the stream
writer's PutRecordBatch is accepted and its records reach the bucket concatenated, as AWS
concatenates them. Neither emulator buffers, evaluates the prefix's `!{timestamp:...}`
expressions, gzips or applies FileExtension (moto writes each call at once, uncompressed,
under the literal prefix and `YYYY/MM/DD/HH/`), so what AWS files is built here the way
Firehose documents it (one gzipped object of the concatenated records per buffer, named
`<stream>-<version>-<yyyy-MM-dd-HH-mm-ss>-<uuid><FileExtension>` under the evaluated prefix)
and the readers are run on that.
"""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime
from typing import Any

from queue_autoscale.adapters.firehose import DeliveryStream, StreamArchive, pack_records
from queue_autoscale.adapters.s3 import Archive, encode_lines
from queue_autoscale.demo import sqs_event
from queue_autoscale.handlers import record_events
from queue_autoscale.settings import RecordSettings

NOW = 1_763_000_000.0  # 2025-11-13T02:13:20Z


def firehose_key(prefix: str, stream: str, at: float, serial: int) -> str:
    """The key Firehose gives an object of `stream` delivered at `at` (epoch s)."""
    moment = datetime.fromtimestamp(at, UTC)
    return (
        f"{prefix}{stream}-1-{moment:%Y-%m-%d-%H-%M-%S}-"
        f"0000{serial:04d}-aaaa-bbbb-cccc-dddddddddddd.jsonl.gz"
    )


def test_the_stream_writer_delivers_concatenated_lines(kit: Any, clients: Any) -> None:
    # GIVEN a delivery stream into the archive bucket on the endpoint
    bucket = kit.bucket()
    stream = kit.delivery_stream("events", bucket)
    records = [{"queue": "orders", "job_id": f"j{i}", "type": "queued"} for i in range(3)]
    archive = StreamArchive(DeliveryStream(clients.firehose, stream), Archive(clients.s3, bucket))
    # WHEN a batch is archived through it
    where = archive.put_events(NOW, "batch-1", records)
    # THEN the call was accepted, and the bucket holds the batch's lines, in order
    assert where == f"firehose:{stream}/batch-1"
    keys = kit.archive_keys(bucket, "delivered/")
    assert len(keys) == 1, keys
    body = clients.s3.get_object(Bucket=bucket, Key=keys[0])["Body"].read()
    if body[:2] == b"\x1f\x8b":  # an emulator that compresses as AWS does
        body = gzip.decompress(body)
    assert body == b"".join(encode_lines(records))


def test_recent_records_reads_firehose_objects_newest_first(kit: Any, clients: Any) -> None:
    # GIVEN decision and event objects as the template's streams write them on AWS: several
    # records (of several lines each) concatenated and gzipped into one object per buffer
    bucket = kit.bucket()
    store = Archive(clients.s3, bucket)
    for serial, at in enumerate((NOW - 600, NOW - 300, NOW)):
        ticks = [{"queue": "orders", "at": at - 15 * i, "target": serial} for i in range(4)]
        data = gzip.compress(b"".join(pack_records(encode_lines(ticks), max_bytes=120)))
        key = firehose_key("decisions/dt=2025-11-13/", "qa-decisions", at, serial)
        clients.s3.put_object(Bucket=bucket, Key=key, Body=data)
        events = [{"queue": "orders", "job_id": f"j{serial}-{i}"} for i in range(3)]
        data = gzip.compress(b"".join(pack_records(encode_lines(events), max_bytes=80)))
        key = firehose_key("events/dt=2025-11-13/hour=02/", "qa-events", at, serial)
        clients.s3.put_object(Bucket=bucket, Key=key, Body=data)
    # WHEN status reads the last 900 s of decisions, at most two objects
    decisions, left = store.recent_records("decisions", NOW - 900, NOW, max_objects=2)
    # THEN it reads the two newest objects whole, newest first, and says one was left unread
    assert [d["target"] for d in decisions] == [2, 2, 2, 2, 1, 1, 1, 1]
    assert left
    # AND the hour's events are every line of every object
    events, left = store.recent_records("events", NOW - 3600, NOW)
    assert sorted(e["job_id"] for e in events) == sorted(
        f"j{serial}-{i}" for serial in range(3) for i in range(3)
    )
    assert not left


def test_the_record_function_archives_through_the_stream_its_template_names(
    kit: Any, clients: Any, function_environ: Any, lambda_context: Any
) -> None:
    # GIVEN the record function's template environment naming an events delivery stream
    bucket = kit.bucket()
    stream = kit.delivery_stream("events", bucket)
    environment = function_environ(
        "RecordEventsFunction",
        QueuesConfig=json.dumps([{"queue": "orders"}]),
        LoadTable=kit.load_table(),
        ArchiveBucket=bucket,
        EventsDeadLetterQueue=kit.queue("events-dlq"),
        EventsDeliveryStream=stream,
    )
    settings = RecordSettings.from_environ(environment)
    assert settings.events_stream == stream
    record_events.set_runtime(record_events.build_runtime(settings, clients, clock=lambda: NOW))
    at = int(NOW * 1000)
    bodies = [
        {"type": "queued", "queue": "orders", "job_id": "j1", "at": at - 2_000},
        {
            "type": "started",
            "queue": "orders",
            "job_id": "j1",
            "at": at - 1_000,
            "pickup_ms": 1_000,
        },
    ]
    message = {"MessageId": "m1", "Body": json.dumps(bodies), "Attributes": {}}
    try:
        # WHEN a batch arrives
        response = record_events.handler(
            sqs_event([message], "arn:aws:sqs:us-east-1:123456789012:events"), lambda_context
        )
    finally:
        record_events.set_runtime(None)
    # THEN it is not retried, nothing went to the bucket's events/ folder directly, and the
    # stream delivered both events as JSON lines
    assert response == {"batchItemFailures": []}
    assert kit.archive_keys(bucket, "events/") == []
    (key,) = kit.archive_keys(bucket, "delivered/")
    body = clients.s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    if body[:2] == b"\x1f\x8b":
        body = gzip.decompress(body)
    lines = [json.loads(line) for line in body.decode().splitlines()]
    assert [(e["type"], e["job_id"]) for e in lines] == [("queued", "j1"), ("started", "j1")]
