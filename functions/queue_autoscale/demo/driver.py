"""The demo's job driver: the producer of real jobs and the events pump that stands in for
Lambda's SQS event source mapping."""

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


@dataclass
class PumpStats:
    """What the record_events invocations did."""

    invocations: int = 0
    records: int = 0
    failed_records: int = 0


def pump_events_once(
    sqs: Any,
    events_url: str,
    events_arn: str,
    invoke: Callable[[dict[str, Any]], dict[str, Any]],
    stats: PumpStats,
    max_batches: int = 50,
) -> int:
    """Poll the events queue as Lambda's SQS mapping would: receive, invoke, delete successes.

    Returns the records handled; bounded by `max_batches` batches of 10.
    """
    handled = 0
    for _ in range(max_batches):
        answer = sqs.receive_message(
            QueueUrl=events_url,
            MaxNumberOfMessages=10,
            WaitTimeSeconds=0,
            VisibilityTimeout=10,
            AttributeNames=["All"],
        )
        messages = answer.get("Messages", [])
        if not messages:
            break
        response = invoke(sqs_event(messages, events_arn))
        stats.invocations += 1
        stats.records += len(messages)
        failed = {item["itemIdentifier"] for item in response.get("batchItemFailures", [])}
        stats.failed_records += len(failed)
        done = [m for m in messages if m["MessageId"] not in failed]
        if done:
            sqs.delete_message_batch(
                QueueUrl=events_url,
                Entries=[
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done)
                ],
            )
        handled += len(messages)
    return handled


def pump_loop(pump: Callable[[], int], stop: threading.Event, every_seconds: float = 0.5) -> None:
    """Call `pump` until stop; a failed pass is logged and retried next pass."""
    while not stop.is_set():
        try:
            pump()
        except Exception as error:
            LOG.warning("record_events pass failed: %s", error)
        stop.wait(every_seconds)
