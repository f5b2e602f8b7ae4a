"""Amazon Data Firehose: the archive's events and decision records, buffered into S3 objects.

Each delivery stream (template.yaml: EventsDeliveryStream, DecisionsDeliveryStream) gzips what
it buffered into one object under the archive's Hive-style prefix (`events/dt=D/hour=H/`,
`decisions/dt=D/`, UTC, by the arrival of the object's oldest record), named
`<stream>-<version>-<yyyy-MM-dd-HH-mm-ss>-<uuid>.jsonl.gz`. Firehose concatenates records
as they are, so a record here is whole JSON lines, each ending in a newline: the object is
the same gzipped JSON lines the readers took from the one-object-per-batch archive.

PutRecordBatch takes at most 500 records and 4 MiB a call, 1,000 KiB a record, and may refuse
some records of a call it answers (FailedPutCount): those are sent again until
`retry_seconds` has passed, then the write fails as a failed PutObject did, naming the error.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from queue_autoscale.adapters.aws import (
    LAMBDA_CONNECT_TIMEOUT_SECONDS,
    LAMBDA_READ_TIMEOUT_SECONDS,
    AwsClients,
)
from queue_autoscale.adapters.errors import (
    InvalidRequest,
    MalformedResponse,
    ServiceUnavailable,
    Throttled,
    aws_call,
)
from queue_autoscale.adapters.s3 import Archive, encode_lines
from queue_autoscale.adapters.sqs import pack_batches

MAX_RECORDS_PER_CALL: Final = 500
MAX_BYTES_PER_CALL: Final = 4 * 1024 * 1024
"""PutRecordBatch's limits: records and bytes (of the data) in one call."""
MAX_RECORD_BYTES: Final = 1000 * 1024
"""One record's data at most (before base64)."""
RETRY_SECONDS: Final = float(LAMBDA_CONNECT_TIMEOUT_SECONDS + LAMBDA_READ_TIMEOUT_SECONDS)
"""How long refused records are sent again: one more call's connect and read timeouts, the
margin the record function already keeps before its deadline (ingest.batch)."""
ARCHIVE_BUFFER_SECONDS: Final = 300
"""How long a delivery stream gathers records before it writes an object (template.yaml's
IntervalInSeconds, or 128 MB first): `queue-autoscale status` reads the last 900 s of
decisions, so two thirds of its window is always delivered; 900 s (the most Firehose allows)
would save 11,680 of the two streams' 17,520 PutObjects a month ($0.06) and leave status none."""
FIRST_BACKOFF_SECONDS: Final = 0.1
"""The wait before the first resend; it doubles each time."""


def pack_records(lines: Sequence[bytes], max_bytes: int = MAX_RECORD_BYTES) -> list[bytes]:
    """Whole lines joined into as few records of at most `max_bytes` as order allows (Firehose
    bills each record rounded up to 5 KB: one record of many lines costs less than many). A
    line longer than `max_bytes` raises InvalidRequest: Firehose refuses such a record."""
    for line in lines:
        if len(line) > max_bytes:
            raise InvalidRequest(
                "PutRecordBatch",
                f"a {len(line)}-byte line is over the {max_bytes}-byte record limit",
                code="RecordTooLarge",
            )
    groups = pack_batches([len(line) for line in lines], max(1, len(lines)), max_bytes)
    return [b"".join(lines[index] for index in group) for group in groups]


def split_calls(
    records: Sequence[bytes],
    max_records: int = MAX_RECORDS_PER_CALL,
    max_bytes: int = MAX_BYTES_PER_CALL,
) -> list[list[bytes]]:
    """Records in order, grouped into calls within PutRecordBatch's count and byte limits."""
    groups = pack_batches([len(record) for record in records], max_records, max_bytes)
    return [[records[index] for index in group] for group in groups]


@dataclass(frozen=True, slots=True)
class RecordFailure:
    """One record of a call that Firehose refused."""

    index: int
    """Its position in the call."""
    code: str
    message: str


def parse_put_record_batch(response: Mapping[str, Any], sent: int) -> list[RecordFailure]:
    """The refused records of a PutRecordBatch answer to `sent` records. An answer whose
    responses do not match what was sent, or whose FailedPutCount disagrees with them, raises
    MalformedResponse (nothing can be taken as delivered)."""
    answers = response.get("RequestResponses")
    if not isinstance(answers, list) or len(answers) != sent:
        got = len(answers) if isinstance(answers, list) else answers
        raise MalformedResponse("PutRecordBatch", f"{got!r} responses for {sent} records")
    failures = [
        RecordFailure(
            index, str(answer.get("ErrorCode")), str(answer.get("ErrorMessage", "")) or "refused"
        )
        for index, answer in enumerate(answers)
        if not isinstance(answer, Mapping) or answer.get("ErrorCode") or not answer.get("RecordId")
    ]
    failed_count = response.get("FailedPutCount")
    if not isinstance(failed_count, int) or failed_count != len(failures):
        raise MalformedResponse(
            "PutRecordBatch", f"FailedPutCount {failed_count!r}, {len(failures)} records refused"
        )
    return failures


class DeliveryStream:
    """Sends records to one Firehose delivery stream through one client."""

    def __init__(
        self,
        client: Any,
        name: str,
        *,
        retry_seconds: float = RETRY_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._client = client
        self.name = name
        self._retry_seconds = retry_seconds
        self._clock = clock
        self._sleep = sleep

    def _send(self, records: Sequence[bytes]) -> tuple[list[bytes], list[RecordFailure]]:
        """One PutRecordBatch per call's worth; the refused records and why."""
        refused: list[bytes] = []
        failures: list[RecordFailure] = []
        for call in split_calls(records):
            with aws_call("PutRecordBatch", f"firehose:{self.name}"):
                response = self._client.put_record_batch(
                    DeliveryStreamName=self.name, Records=[{"Data": data} for data in call]
                )
            failed = parse_put_record_batch(response, len(call))
            refused.extend(call[failure.index] for failure in failed)
            failures.extend(failed)
        return refused, failures

    def put_lines(self, lines: Sequence[bytes]) -> int:
        """Deliver these newline-terminated lines; return the records sent. Records Firehose
        refuses are sent again, waiting 0.1 s, then twice as long each time, until
        `retry_seconds` has passed; then the write raises (Throttled when Firehose said
        ServiceUnavailableException, its answer to a stream over its throughput, else
        ServiceUnavailable), and the caller fails what it was writing."""
        pending = pack_records(lines)
        count = len(pending)
        give_up_at = self._clock() + self._retry_seconds
        wait = FIRST_BACKOFF_SECONDS
        while pending:
            pending, failures = self._send(pending)
            if not pending:
                break
            if self._clock() + wait > give_up_at:
                first = failures[0]
                throttled = first.code == "ServiceUnavailableException"
                raise (Throttled if throttled else ServiceUnavailable)(
                    "PutRecordBatch",
                    f"{len(pending)} of {count} records still refused after "
                    f"{self._retry_seconds:g} s: {first.message}",
                    code=first.code,
                    resource=f"firehose:{self.name}",
                )
            self._sleep(wait)
            wait *= 2
        return count


class StreamArchive:
    """The archive written through a delivery stream: events or decision records go to the
    stream; a rejected body (one object each, rare) still goes straight to the bucket."""

    def __init__(self, stream: DeliveryStream, bucket: Archive) -> None:
        self._stream = stream
        self._bucket = bucket

    def _put(self, label: str, records: Iterable[Mapping[str, Any]]) -> str:
        self._stream.put_lines(encode_lines(records))
        return f"firehose:{self._stream.name}/{label}"

    def put_events(
        self, at_epoch_seconds: float, batch_id: str, records: Iterable[Mapping[str, Any]]
    ) -> str:
        """Send one batch of accepted events; return where they went (the stream and the
        batch: Firehose names the object when it delivers it). `at_epoch_seconds` is unused:
        the stream files by arrival."""
        del at_epoch_seconds
        return self._put(batch_id, records)

    def put_decisions(
        self, at_epoch_seconds: float, tick_id: str, records: Iterable[Mapping[str, Any]]
    ) -> str:
        """Send one tick's decision records; return the stream and the tick."""
        del at_epoch_seconds
        return self._put(tick_id, records)

    def put_rejected(self, at_epoch_seconds: float, rejection_id: str, body: str) -> str:
        """Store a rejected body in the bucket (`Archive.put_rejected`); return its key."""
        return self._bucket.put_rejected(at_epoch_seconds, rejection_id, body)


def archive_writer(clients: AwsClients, bucket: str, stream: str | None) -> Archive | StreamArchive:
    """The archive a function writes: through `stream` when the stack names one (the
    template's delivery streams), else straight to `bucket`, one object per write."""
    archive = Archive(clients.s3, bucket)
    if not stream:
        return archive
    return StreamArchive(DeliveryStream(clients.firehose, stream), archive)
