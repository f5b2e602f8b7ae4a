"""The archive's share of the stack's bill (`operator.cost`): the decision log and the events
through their Firehose delivery streams, or one S3 object per shard tick and per record batch
without them."""

from __future__ import annotations

import math

from queue_autoscale.operator.cost_inputs import (
    GB,
    MEASURED,
    SECONDS_PER_MONTH,
    StackShape,
    StreamBuffer,
    Usage,
    Workload,
)
from queue_autoscale.operator.cost_record import IngestRates
from queue_autoscale.operator.prices import Prices


def stream_objects(stream: StreamBuffer, sent_bytes: float) -> float:
    """Objects a delivery stream writes a month for `sent_bytes` of records: one each time its
    buffer interval passes or its buffer size fills, whichever comes first."""
    return max(SECONDS_PER_MONTH / stream.seconds, sent_bytes / (stream.mib * 2**20))


def decision_log(
    workload: Workload, shards: int, puts: float, stream: StreamBuffer | None, prices: Prices
) -> list[Usage]:
    """One object per shard tick, or one record per shard tick into the decisions stream."""
    if stream is None:
        return [
            Usage(
                "S3",
                "decision-log PutObject (one per shard tick)",
                puts,
                "requests",
                puts / 1000 * prices.s3_per_thousand_puts,
            )
        ]
    per_put = workload.queues / shards * MEASURED.decision_record_bytes
    return delivered("decision log", "shard tick", puts, per_put, stream, prices)


def delivered(
    what: str, per: str, puts: float, put_bytes: float, stream: StreamBuffer, prices: Prices
) -> list[Usage]:
    """A delivery stream's month: `puts` PutRecordBatch calls of `put_bytes` each, packed into
    records of at most 1,000 KiB (200 x 5 KB, so only each call's last record is rounded up),
    and the objects it writes (one per buffer interval, or per buffer size of records)."""
    step = prices.firehose_record_increment_bytes
    ingested = puts * step * math.ceil(put_bytes / step) / GB
    sent = puts * put_bytes
    objects = 0.0
    if puts > 0:
        objects = stream_objects(stream, sent)
    return [
        Usage(
            "Firehose",
            f"{what} ingested (one record per {per}, each billed in {step / 1024:g} KB steps)",
            ingested,
            "GB",
            ingested * prices.firehose_per_gb,
        ),
        Usage(
            "S3",
            f"{what} objects Firehose writes (one per {stream.seconds:g} s buffer)",
            objects,
            "requests",
            objects / 1000 * prices.s3_per_thousand_puts,
        ),
    ]


def event_archive(
    workload: Workload, shape: StackShape, rates: IngestRates, prices: Prices
) -> list[Usage]:
    """One archive object per record batch, or the batch's events as one record into the
    events stream."""
    batches = rates.batches * SECONDS_PER_MONTH
    if shape.events_stream is None:
        return [
            Usage(
                "S3",
                f"event-archive PutObject (one per batch, {shape.record_window_seconds:g} s "
                "window)",
                batches,
                "requests",
                batches / 1000 * prices.s3_per_thousand_puts,
            )
        ]
    events = workload.queues * workload.events_per_second * SECONDS_PER_MONTH
    per_batch = events / batches * MEASURED.event_line_bytes if batches else 0.0
    return delivered(
        "event archive", "record batch", batches, per_batch, shape.events_stream, prices
    )


def archive_objects(workload: Workload, shape: StackShape, rates: IngestRates) -> float:
    """Event-archive objects a month: one per batch, or what the events stream writes."""
    batches = rates.batches * SECONDS_PER_MONTH
    stream = shape.events_stream
    if stream is None or batches == 0:
        return batches
    sent = (
        workload.queues * workload.events_per_second * SECONDS_PER_MONTH * MEASURED.event_line_bytes
    )
    return stream_objects(stream, sent)
