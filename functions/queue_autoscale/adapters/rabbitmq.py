"""RabbitMQ (Amazon MQ): queue depth from the management HTTP API, CloudWatch as the fallback.

`GET /api/queues/{vhost}/{queue}` gives `messages_ready` (waiting, not delivered to any
consumer), `messages_unacknowledged` (delivered, not yet acked), `consumers` and, for classic
queues whose messages carry the AMQP `timestamp` property, `head_message_timestamp`: the stamp
of the oldest message the queue still holds, delivered-but-unacked ones included (checked on a
real broker), so the age it gives is an upper bound on the oldest waiting job's. Amazon MQ
publishes the same counts to CloudWatch (`AWS/AmazonMQ`, dimensions Broker, VirtualHost, Queue)
once a minute: the fallback when the API cannot be read.

Prefetch: a consumer holds up to `prefetch` unacked messages but works on at most
`concurrency` of them; the rest wait in its buffer. So in flight is
min(unacked, consumers * min(prefetch, concurrency)) and the remainder counts as waiting
(`split_unacked`). HTTP failures become the project's errors (adapters/errors.py).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, TypeGuard
from urllib.parse import quote

import urllib3

from queue_autoscale.adapters import deadline_http
from queue_autoscale.adapters.errors import (
    AccessDenied,
    AdapterError,
    InvalidRequest,
    MalformedResponse,
    NotFound,
    ServiceUnavailable,
    Throttled,
    aws_call,
)

OPERATION = "RabbitMQ GET /api/queues"
CLOUDWATCH_OPERATION = "GetMetricData AWS/AmazonMQ"
PERIOD_SECONDS = 60
LOOKBACK_SECONDS = 900
MAX_BODY_BYTES = 1 << 20
"""A queue object is a few KiB; a larger answer is not the management API's."""


@dataclass(frozen=True, slots=True)
class Credentials:
    """Management API user; never logged, never in the config file."""

    username: str
    password: str

    def __repr__(self) -> str:
        return f"Credentials(username={self.username!r}, password=***)"


@dataclass(frozen=True, slots=True)
class RabbitQueue:
    """One queue's counts as the broker reports them (messages)."""

    ready: int
    """messages_ready: not delivered to any consumer."""
    unacked: int
    """messages_unacknowledged: delivered to a consumer, not yet acked or rejected."""
    consumers: int | None
    """Consumers subscribed (None: not reported, as in CloudWatch without ConsumerCount)."""
    head_stamp: float | None = None
    """head_message_timestamp as the broker reports it: the AMQP timestamp the publisher put on
    the oldest message not yet acked, in the publisher's unit (`stamp_epoch_seconds`)."""
    measured_at: float | None = None
    """Epoch seconds the counts refer to (CloudWatch datapoints); None: live."""
    ttl_seconds: float | None = None
    """The queue's message TTL, s (x-message-ttl or the policy's message-ttl, the lower)."""


def _count(body: Mapping[str, Any], name: str, queue: str) -> int:
    raw = body.get(name)
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(raw):
        raise MalformedResponse(OPERATION, f"{name} = {raw!r} is not a count", resource=queue)
    if raw < 0 or raw != int(raw):
        raise MalformedResponse(OPERATION, f"{name} = {raw!r} is not a count", resource=queue)
    return int(raw)


def parse_queue(body: Any, queue: str = "") -> RabbitQueue:
    """The counts of a `GET /api/queues/{vhost}/{name}` answer.

    A queue that has just been declared reports no message counts until the broker's first
    statistics round (`collect_statistics_interval`): that is missing, not zero.
    """
    if not isinstance(body, Mapping):
        raise MalformedResponse(OPERATION, "the answer is not a JSON object", resource=queue)
    head = body.get("head_message_timestamp")
    oldest: float | None = None
    if _number(head) and head > 0:
        oldest = float(head)
    return RabbitQueue(
        ready=_count(body, "messages_ready", queue),
        unacked=_count(body, "messages_unacknowledged", queue),
        consumers=_count(body, "consumers", queue),
        head_stamp=oldest,
        ttl_seconds=_ttl_seconds(body),
    )


def _number(raw: Any) -> TypeGuard[float]:
    """A finite JSON number (not a bool)."""
    return isinstance(raw, int | float) and not isinstance(raw, bool) and math.isfinite(raw)


TTL_FIELDS = (("arguments", "x-message-ttl"), ("effective_policy_definition", "message-ttl"))
"""Where a queue's message TTL (ms) is set: its declare argument, or a policy."""


def _ttl_seconds(body: Mapping[str, Any]) -> float | None:
    """The message TTL in force, s: the queue argument and the policy's, the lower (RabbitMQ
    applies the lower of the two); None when neither is a usable number of milliseconds."""
    found = []
    for holder, key in TTL_FIELDS:
        values = body.get(holder)
        raw = values.get(key) if isinstance(values, Mapping) else None
        if _number(raw) and raw >= 0:
            found.append(float(raw) / 1000.0)
    return min(found) if found else None


STAMP_UNITS = ((1.0, "seconds"), (1_000.0, "milliseconds"))
"""The AMQP timestamp is seconds by the spec; some publishers put milliseconds."""


def stamp_epoch_seconds(
    stamp: float, now: float, max_age_seconds: float, max_skew_seconds: float
) -> tuple[float | None, str | None]:
    """(epoch seconds, note) of a head_message_timestamp; (None, why) when it cannot be right.

    A stamp is read in the first unit (seconds, then milliseconds) that puts it within
    [now - max_age - skew, now + skew]: a message can be neither older than the queue keeps
    messages nor from the future beyond clock skew. At most one unit fits while max_age is
    under ~50 years (a millisecond stamp read as seconds lies millennia ahead; a seconds stamp
    read as milliseconds lies in January 1970), so the rule never guesses. The note says when
    milliseconds were read, or why the stamp was refused.
    """
    for scale, unit in STAMP_UNITS:
        at = stamp / scale
        if now - max_age_seconds - max_skew_seconds <= at <= now + max_skew_seconds:
            note = None if scale == 1.0 else f"head_message_timestamp {stamp:.0f} read as {unit}"
            return at, note
    if stamp > now + max_skew_seconds:
        why = f"{stamp - now:.0f} s in the future (allowed clock skew {max_skew_seconds:g} s)"
    else:
        why = f"{now - stamp:.0f} s old, over the {max_age_seconds:g} s a message can be kept"
    return None, f"head_message_timestamp {stamp:g} ignored: {why}; age from our own events"


def split_unacked(
    ready: int, unacked: int, consumers: int | None, prefetch: int, concurrency: int
) -> tuple[int, int]:
    """(waiting, in flight) from the broker's counts, with the prefetch in mind.

    A consumer works on min(prefetch, concurrency) messages at once; what it holds beyond that
    sits in its prefetch buffer, waiting as surely as a ready message (and for a worker that is
    busy, not for a new one). With the consumer count unknown, every unacked message is taken
    as in flight (the broker's own reading).
    """
    if consumers is None:
        return ready, unacked
    working = min(unacked, consumers * min(prefetch, concurrency))
    return ready + (unacked - working), working


def _status_error(status: int, resource: str, body: bytes) -> AdapterError:
    text = body[:200].decode("utf-8", "replace")
    message = f"HTTP {status}: {text}"
    code = f"HTTP{status}"
    if status in (401, 403):
        return AccessDenied(OPERATION, message, code=code, resource=resource)
    if status == 404:
        return NotFound(OPERATION, message, code=code, resource=resource)
    if status == 429:
        return Throttled(OPERATION, message, code=code, resource=resource)
    if status >= 500:
        return ServiceUnavailable(OPERATION, message, code=code, resource=resource)
    return InvalidRequest(OPERATION, message, code=code, resource=resource)


class RabbitManagement:
    """Reads queues through one broker's management HTTP API (one GET per queue, each within
    a total deadline of `timeout_seconds`: adapters/deadline_http.py)."""

    def __init__(
        self, base_url: str, credentials: Credentials, timeout_seconds: float = 3.0
    ) -> None:
        self._base = base_url.rstrip("/")
        self._headers = urllib3.make_headers(
            basic_auth=f"{credentials.username}:{credentials.password}"
        )
        self._headers["Accept"] = "application/json"
        # No retries here: the tick runs every interval, and a slow broker must not hold it.
        self._deadline = timeout_seconds

    def queue(self, vhost: str, name: str) -> RabbitQueue:
        """One queue's counts (one GET); errors are the project's AdapterErrors."""
        url = f"{self._base}/api/queues/{quote(vhost, safe='')}/{quote(name, safe='')}"
        resource = f"{vhost}/{name}"
        answer = deadline_http.request(
            url,
            self._headers,
            deadline_seconds=self._deadline,
            max_bytes=MAX_BODY_BYTES,
            operation=OPERATION,
            resource=resource,
        )
        if answer.status != 200:
            raise _status_error(answer.status, resource, answer.body)
        try:
            data = json.loads(answer.body)
        except ValueError:
            raise MalformedResponse(
                OPERATION, "the answer is not JSON", resource=resource
            ) from None
        return parse_queue(data, resource)


CLOUDWATCH_METRICS = {
    "ready": "MessageReadyCount",
    "unacked": "MessageUnacknowledgedCount",
    "consumers": "ConsumerCount",
}


def build_mq_queries(broker: str, vhost: str, queue: str) -> list[dict[str, Any]]:
    """One query per metric of one Amazon MQ RabbitMQ queue (ids are the keys of
    CLOUDWATCH_METRICS)."""
    dimensions = [
        {"Name": "Broker", "Value": broker},
        {"Name": "VirtualHost", "Value": vhost},
        {"Name": "Queue", "Value": queue},
    ]
    return [
        {
            "Id": key,
            "MetricStat": {
                "Metric": {
                    "Namespace": "AWS/AmazonMQ",
                    "MetricName": metric,
                    "Dimensions": dimensions,
                },
                "Period": PERIOD_SECONDS,
                "Stat": "Maximum",
            },
            "ReturnData": True,
        }
        for key, metric in CLOUDWATCH_METRICS.items()
    ]


def latest_values(results: Any, operation: str, resource: str) -> dict[str, tuple[float, float]]:
    """The newest (timestamp epoch seconds, value) of each query id in MetricDataResults."""
    if not isinstance(results, list):
        raise MalformedResponse(operation, "no MetricDataResults", resource=resource)
    newest: dict[str, tuple[float, float]] = {}
    for result in results:
        key = str(result.get("Id", ""))
        stamps = result.get("Timestamps", []) or []
        values = result.get("Values", []) or []
        if len(stamps) != len(values):
            raise MalformedResponse(
                operation, f"{len(stamps)} timestamps but {len(values)} values", resource=resource
            )
        for stamp, value in zip(stamps, values, strict=True):
            if not isinstance(stamp, datetime):
                raise MalformedResponse(operation, f"timestamp {stamp!r}", resource=resource)
            at = (stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)).timestamp()
            number = float(value)
            if not math.isfinite(number) or number < 0:
                raise MalformedResponse(operation, f"{key} = {value!r}", resource=resource)
            if key not in newest or at > newest[key][0]:
                newest[key] = (at, number)
    return newest


def parse_mq_metrics(results: Any, resource: str) -> RabbitQueue | None:
    """The fallback reading from CloudWatch; None when ready or unacked has no datapoint.

    The counts are the datapoint's maximum over its minute, measured at the minute's end.
    """
    newest = latest_values(results, CLOUDWATCH_OPERATION, resource)
    if "ready" not in newest or "unacked" not in newest:
        return None
    at = min(newest["ready"][0], newest["unacked"][0]) + PERIOD_SECONDS
    consumers = newest.get("consumers")
    return RabbitQueue(
        ready=round(newest["ready"][1]),
        unacked=round(newest["unacked"][1]),
        consumers=round(consumers[1]) if consumers else None,
        measured_at=at,
    )


def recent_metric_results(
    client: Any, queries: list[dict[str, Any]], now: float, operation: str, resource: str
) -> Any:
    """MetricDataResults of one GetMetricData over the lookback, on whole periods up to `now`
    (epoch seconds); AWS errors leave as the project's."""
    end = datetime.fromtimestamp(math.ceil(now / PERIOD_SECONDS) * PERIOD_SECONDS, UTC)
    with aws_call(operation, resource):
        response = client.get_metric_data(
            MetricDataQueries=queries,
            ScanBy="TimestampDescending",
            StartTime=end - timedelta(seconds=LOOKBACK_SECONDS),
            EndTime=end,
        )
    return response.get("MetricDataResults")


class AmazonMqMetrics:
    """Reads one RabbitMQ queue's counts from CloudWatch `AWS/AmazonMQ` (one GetMetricData)."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def queue(self, broker: str, vhost: str, name: str, now: float) -> RabbitQueue | None:
        """The latest counts (None: no datapoint within the lookback)."""
        resource = f"{broker}/{vhost}/{name}"
        queries = build_mq_queries(broker, vhost, name)
        results = recent_metric_results(self._client, queries, now, CLOUDWATCH_OPERATION, resource)
        return parse_mq_metrics(results, resource)
