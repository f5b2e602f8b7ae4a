"""The demo's job driver: the producer of real jobs, and the pump that stands in for Lambda's SQS
event source mappings (the events queue's into record_events, the tick queue's into evaluate)."""

from __future__ import annotations

import hashlib
import json
import logging
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from queue_autoscale.client import EventRecorder, send_job
from queue_autoscale.demo.options import DemoOptions

LOG = logging.getLogger("queue_autoscale.demo")


@dataclass
class Produced:
    """What the producer sent."""

    jobs: int = 0
    refused: int = 0


def produce(
    sqs: Any,
    queue_url: str,
    queue: str,
    recorder: EventRecorder,
    options: DemoOptions,
    started: float,
    stop: threading.Event,
    produced: Produced,
) -> None:
    """Send Poisson arrivals at the phase's rate until the duration ends (or stop)."""
    rng = random.Random(options.seed)
    next_at = started
    while not stop.is_set():
        elapsed = next_at - started
        if elapsed >= options.duration_seconds:
            return
        next_at += rng.expovariate(options.rate_at(elapsed))
        wait = next_at - time.time()
        if wait > 0 and stop.wait(wait):
            return
        work = min(rng.expovariate(1.0 / options.mean_job_seconds), options.mean_job_seconds * 5)
        body = json.dumps({"work_seconds": round(max(0.02, work), 3)})
        try:
            send_job(sqs, queue_url, body, recorder, queue)
        except Exception as error:  # a refused send is not a job; count only what was sent
            LOG.warning("job not sent: %s", error)
            produced.refused += 1
            continue
        produced.jobs += 1


def sqs_event(
    messages: Sequence[Mapping[str, Any]], queue_arn: str, region: str = "us-east-1"
) -> dict[str, Any]:
    """A Lambda SQS event from ReceiveMessage results (what the demo and the tests feed
    record_events.handler, as Lambda's SQS event source mapping would)."""
    records = []
    for message in messages:
        attributes = dict(message.get("Attributes", {}))
        body = str(message["Body"])
        records.append(
            {
                "messageId": message["MessageId"],
                "receiptHandle": message.get("ReceiptHandle", "handle"),
                "body": body,
                "attributes": {
                    "ApproximateReceiveCount": attributes.get("ApproximateReceiveCount", "1"),
                    "SentTimestamp": attributes.get("SentTimestamp", str(int(time.time() * 1000))),
                    "SenderId": attributes.get("SenderId", "AIDAEXAMPLE"),
                    "ApproximateFirstReceiveTimestamp": attributes.get(
                        "ApproximateFirstReceiveTimestamp", str(int(time.time() * 1000))
                    ),
                },
                "messageAttributes": {},
                "md5OfBody": message.get("MD5OfBody")
                or hashlib.md5(
                    body.encode("utf-8", errors="surrogatepass"), usedforsecurity=False
                ).hexdigest(),
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": region,
            }
        )
    return {"Records": records}


EVENTS_FLUSH_SECONDS = 0.5
"""How often the producer's EventRecorder sends the events it buffered, s."""
PUMP_SECONDS = 0.5
"""How often the events pump reads the events queue, s (`pump_loop`)."""
POLL_SECONDS = 0.25
"""How often the run's main loop looks at the clock, the fleet and the tick queue, s."""
EVENTS_BATCH_SIZE = 10
"""Events per record_events invocation: one ReceiveMessage's most (the stack's mapping takes
up to 100 in a 2 s window; the demo's pump reads every half second instead)."""
TICK_BATCH_SIZE = 1
"""Ticks per evaluate invocation: the tick queue's mapping's BatchSize (EvaluateFunctionTick in
template.yaml; a test checks)."""


@dataclass(frozen=True)
class EventSource:
    """An SQS queue the stack has a Lambda event source mapping on, read as the mapping would."""

    url: str
    arn: str
    batch_size: int
    """Messages per invocation, at most 10."""
    visibility_timeout_seconds: int | None = None
    """How long a received message stays hidden, s (None: the queue's own, as the mapping)."""


@dataclass
class PumpStats:
    """What the invocations a pump made did."""

    invocations: int = 0
    records: int = 0
    failed_records: int = 0


def pump_once(
    sqs: Any,
    source: EventSource,
    invoke: Callable[[dict[str, Any]], Mapping[str, Any]],
    stats: PumpStats,
    max_batches: int = 50,
) -> int:
    """Poll `source` as Lambda's SQS mapping would: receive a batch, invoke with its SQS event,
    delete what the answer did not report failed (`batchItemFailures`). An invocation that
    raises deletes nothing: its messages come back after their visibility timeout (or go to
    the queue's DLQ), and the error propagates.

    Returns the records handled; bounded by `max_batches` batches.
    """
    handled = 0
    hide = (
        {}
        if source.visibility_timeout_seconds is None
        else {"VisibilityTimeout": source.visibility_timeout_seconds}
    )
    for _ in range(max_batches):
        answer = sqs.receive_message(
            QueueUrl=source.url,
            MaxNumberOfMessages=source.batch_size,
            WaitTimeSeconds=0,
            AttributeNames=["All"],
            **hide,
        )
        messages = answer.get("Messages", [])
        if not messages:
            break
        response = invoke(sqs_event(messages, source.arn))
        stats.invocations += 1
        stats.records += len(messages)
        failed = {item["itemIdentifier"] for item in response.get("batchItemFailures", [])}
        stats.failed_records += len(failed)
        done = [m for m in messages if m["MessageId"] not in failed]
        if done:
            sqs.delete_message_batch(
                QueueUrl=source.url,
                Entries=[
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done)
                ],
            )
        handled += len(messages)
    return handled


def pump_pass(pump: Callable[[], int], what: str) -> int:
    """One call of `pump`; a failure is logged (naming `what`) and counts as nothing handled."""
    try:
        return pump()
    except Exception as error:
        LOG.warning("%s pass failed: %s", what, error)
        return 0


def pump_loop(
    pump: Callable[[], int], stop: threading.Event, every_seconds: float = PUMP_SECONDS
) -> None:
    """Call `pump` until stop; a failed pass is logged and retried next pass."""
    while not stop.is_set():
        pump_pass(pump, "record_events")
        stop.wait(every_seconds)
