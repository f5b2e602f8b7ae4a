"""SQS: queue depth for work queues and DLQs, batched sends, the events dead-letter queue.

SQS reports no age of the oldest message; that comes from CloudWatch (`cloudwatch.py`)
and the counters (see `core.counters.oldest_age`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from queue_autoscale.adapters.errors import MalformedResponse, aws_call
from queue_autoscale.validation import MAX_REASON_CHARACTERS, cut

DEPTH_ATTRIBUTES = (
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed",
)
MAX_BATCH_ENTRIES = 10
"""SendMessageBatch takes at most 10 entries."""
MAX_MESSAGE_BYTES = 256 * 1024
"""The largest body this project sends or accepts (SQS's classic limit)."""
MAX_BATCH_BYTES = 256 * 1024
"""The largest total payload of one SendMessageBatch (SQS's classic limit)."""


def pack_batches(
    sizes: Sequence[int], max_entries: int = MAX_BATCH_ENTRIES, max_bytes: int = MAX_BATCH_BYTES
) -> list[list[int]]:
    """Group message positions, in order, into batches within both entry and byte limits.

    A single message larger than `max_bytes` still gets a batch of its own (SQS refuses it
    and the caller sees the failure).
    """
    batches: list[list[int]] = []
    current: list[int] = []
    total = 0
    for index, size in enumerate(sizes):
        if current and (len(current) >= max_entries or total + size > max_bytes):
            batches.append(current)
            current, total = [], 0
        current.append(index)
        total += size
    if current:
        batches.append(current)
    return batches


@dataclass(frozen=True, slots=True)
class QueueDepth:
    """Message counts of one queue (jobs)."""

    visible: int
    """Waiting to be received (ApproximateNumberOfMessages)."""
    in_flight: int
    """Received and not yet deleted (ApproximateNumberOfMessagesNotVisible)."""
    delayed: int
    """Sent with a delay that has not passed (ApproximateNumberOfMessagesDelayed)."""


@dataclass(frozen=True, slots=True)
class SendFailure:
    """One entry of a SendMessageBatch that SQS did not accept."""

    index: int
    """Position of the body in the list given to `send_batch`."""
    code: str
    message: str
    sender_fault: bool


def _count(attributes: Mapping[str, Any], name: str, queue: str) -> int:
    if name not in attributes:
        raise MalformedResponse(
            "GetQueueAttributes", f"attribute {name!r} missing", code="Missing", resource=queue
        )
    raw = attributes[name]
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise MalformedResponse(
            "GetQueueAttributes",
            f"attribute {name!r} = {raw!r} is not an integer",
            code="NotANumber",
            resource=queue,
        ) from None
    if value < 0:
        raise MalformedResponse(
            "GetQueueAttributes",
            f"attribute {name!r} = {raw!r} is negative",
            code="Negative",
            resource=queue,
        )
    return value


def parse_queue_depth(response: Mapping[str, Any], queue: str = "") -> QueueDepth:
    """Read the three depth attributes from a GetQueueAttributes response."""
    attributes = response.get("Attributes")
    if not isinstance(attributes, Mapping):
        raise MalformedResponse(
            "GetQueueAttributes", "no 'Attributes' in the response", resource=queue
        )
    return QueueDepth(
        visible=_count(attributes, DEPTH_ATTRIBUTES[0], queue),
        in_flight=_count(attributes, DEPTH_ATTRIBUTES[1], queue),
        delayed=_count(attributes, DEPTH_ATTRIBUTES[2], queue),
    )


def parse_send_batch(response: Mapping[str, Any], offset: int = 0) -> list[SendFailure]:
    """The failed entries of a SendMessageBatch response (entry ids are positions)."""
    failures = []
    for entry in response.get("Failed", []) or []:
        failures.append(
            SendFailure(
                index=offset + int(entry["Id"]),
                code=str(entry.get("Code", "")),
                message=str(entry.get("Message", "")),
                sender_fault=bool(entry.get("SenderFault", False)),
            )
        )
    return failures


def is_queue_url(name_or_url: str) -> bool:
    """True for an SQS queue URL, False for a bare queue name."""
    return name_or_url.startswith(("https://", "http://"))


class SqsQueues:
    """Reads queue depths and sends message batches through one SQS client."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._urls: dict[str, str] = {}

    def queue_url(self, name: str) -> str:
        """The queue's URL (a URL passes through; names are resolved once and cached)."""
        if is_queue_url(name):
            return name
        if name not in self._urls:
            with aws_call("GetQueueUrl", name):
                response = self._client.get_queue_url(QueueName=name)
            self._urls[name] = str(response["QueueUrl"])
        return self._urls[name]

    def tag(self, name: str, tags: Mapping[str, str]) -> None:
        """Set tags on a queue (TagQueue keeps its other tags)."""
        url = self.queue_url(name)
        with aws_call("TagQueue", name):
            self._client.tag_queue(QueueUrl=url, Tags=dict(tags))

    def depth(self, name: str) -> QueueDepth:
        """Visible, in-flight and delayed counts of a queue (one GetQueueAttributes)."""
        url = self.queue_url(name)
        with aws_call("GetQueueAttributes", name):
            response = self._client.get_queue_attributes(
                QueueUrl=url, AttributeNames=list(DEPTH_ATTRIBUTES)
            )
        return parse_queue_depth(response, name)

    def send_batch(
        self,
        queue: str,
        bodies: Sequence[str],
        attributes: Sequence[Mapping[str, Any] | None] | None = None,
        delays: Sequence[int] | None = None,
    ) -> list[SendFailure]:
        """Send bodies in SendMessageBatch calls (<= 10 entries, <= 256 KiB); return refusals.
        `delays`: each message's DelaySeconds (0..900), when given.

        A failed call (not a refused entry) raises the project's error; entries sent by
        earlier calls of the same list stay sent.
        """
        url = self.queue_url(queue)
        failures: list[SendFailure] = []
        sizes = [
            len(body.encode("utf-8")) + attributes_bytes(attributes[i] if attributes else None)
            for i, body in enumerate(bodies)
        ]
        for batch in pack_batches(sizes):
            entries = []
            for index in batch:
                entry: dict[str, Any] = {"Id": str(index), "MessageBody": bodies[index]}
                extra = attributes[index] if attributes else None
                if extra:
                    entry["MessageAttributes"] = dict(extra)
                if delays is not None:
                    entry["DelaySeconds"] = delays[index]
                entries.append(entry)
            with aws_call("SendMessageBatch", queue):
                response = self._client.send_message_batch(QueueUrl=url, Entries=entries)
            failures.extend(parse_send_batch(response))
        return failures


def attributes_bytes(attributes: Mapping[str, Any] | None) -> int:
    """What message attributes add to a message's size as SQS counts it: each name, data type
    and value, bytes."""
    total = 0
    for name, value in (attributes or {}).items():
        total += len(name.encode("utf-8")) + len(str(value.get("DataType", "")).encode("utf-8"))
        total += len(str(value.get("StringValue", "")).encode("utf-8"))
        total += len(value.get("BinaryValue", b""))
    return total


MAX_DELAY_SECONDS = 900
"""SQS's longest DelaySeconds."""


class TickQueue:
    """Queues evaluate ticks: one message per tick, delayed until the tick is due."""

    def __init__(self, queues: SqsQueues, queue_url: str) -> None:
        self._queues = queues
        self._url = queue_url

    def schedule(self, ticks: Sequence[tuple[Mapping[str, Any], float]], /) -> list[SendFailure]:
        """Send each (request, delay in seconds) as a JSON body delayed by that many whole
        seconds (rounded, clipped to 0..900); the entries SQS refused."""
        bodies = [json.dumps(dict(request), separators=(",", ":")) for request, _ in ticks]
        delays = [max(0, min(MAX_DELAY_SECONDS, round(delay))) for _, delay in ticks]
        return self._queues.send_batch(self._url, bodies, delays=delays)


REASON_ATTRIBUTE = "reason"
"""Message attribute on a dead-lettered event holding the rejection reason."""


def dead_letter_body(
    body: str, reason: str, source_message_id: str, overflow_key: str | None = None
) -> str:
    """The wrapper body sent to the events DLQ: the original body and why it was rejected.

    When the original does not fit, `overflow_key` names the archive object holding it.
    """
    wrapper: dict[str, Any] = {"reason": cut(reason, MAX_REASON_CHARACTERS)}
    wrapper["message_id"] = source_message_id
    if overflow_key is None:
        wrapper["body"] = body
    else:
        wrapper["body_s3_key"] = overflow_key
        wrapper["body_bytes"] = len(body.encode("utf-8"))
    return json.dumps(wrapper, separators=(",", ":"))


class DeadLetters:
    """Sends rejected events to the events DLQ with their reason (never retried from there)."""

    def __init__(self, queues: SqsQueues, queue_url: str) -> None:
        self._queues = queues
        self._url = queue_url

    def reject_many(self, items: Sequence[tuple[str, str]]) -> list[SendFailure]:
        """Send (wrapper body, reason) pairs in batches; return the entries SQS refused."""
        bodies = [wrapper for wrapper, _ in items]
        attributes = [reason_attribute(reason) for _, reason in items]
        return self._queues.send_batch(self._url, bodies, attributes)


def reason_attribute(reason: str) -> dict[str, Any]:
    """The `reason` message attribute (first 1024 characters; the body holds all of it)."""
    return {REASON_ATTRIBUTE: {"DataType": "String", "StringValue": reason[:1024] or "unknown"}}
