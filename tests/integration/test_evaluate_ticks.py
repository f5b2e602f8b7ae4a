"""Tick mode on an AWS endpoint, with the template's environment: the scheduled invocation
ticks and queues the minute's later ticks on a real SQS queue, delayed until due; each message,
handed to the function as the event source does (batch size 1), is one tick; SQS's duplicate
delivery decides nothing; a tick the function fails or times out on goes to the DLQ, never back.

What the endpoint really does here: DelaySeconds, the redrive to the DLQ after one receive, and
the claim's conditional write. What it cannot: run the event source itself (moto does not invoke
a Python function from SQS without Docker; LocalStack's would need the function deployed), so
the test receives each message and invokes the handler with the event the source would send.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any

import pytest

from queue_autoscale.handlers import evaluate
from queue_autoscale.settings import EvaluateSettings
from tests.integration.test_evaluate import NOW, backlog_world, reset_runtime

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("moto")]
__all__ = ["reset_runtime"]  # the fixture, used by name

INTERVAL = 5
"""The template's shortest interval, so the queued ticks come due within seconds."""
REDELIVER_SECONDS = 1
"""The test queue's visibility timeout (the template's is the function's 70 s timeout)."""


def tick_queue(kit: Any, clients: Any) -> tuple[str, str]:
    """The tick queue as template.yaml makes it (redrive after one receive); (url, dlq url)."""
    dlq = kit.queue("evaluate-dlq")
    url = clients.sqs.create_queue(
        QueueName=kit.name("evaluate-ticks"),
        Attributes={
            "VisibilityTimeout": str(REDELIVER_SECONDS),
            "MessageRetentionPeriod": "120",
            "RedrivePolicy": json.dumps(
                {"deadLetterTargetArn": kit.queue_arn(dlq), "maxReceiveCount": 1}
            ),
        },
    )["QueueUrl"]
    return str(url), dlq


def as_event(message: dict[str, Any]) -> dict[str, Any]:
    """The event the tick queue's event source sends for one message."""
    return {
        "Records": [
            {"messageId": message["MessageId"], "eventSource": "aws:sqs", "body": message["Body"]}
        ]
    }


def receive(clients: Any, url: str, wait_seconds: float) -> list[dict[str, Any]]:
    """One message, polled in 1 s long polls (the clients' read timeout is 5 s) for up to
    `wait_seconds`; [] when none came."""
    deadline = time.monotonic() + wait_seconds
    while True:
        answer = clients.sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=1, WaitTimeSeconds=1 if wait_seconds else 0
        )
        if answer.get("Messages") or time.monotonic() >= deadline:
            return list(answer.get("Messages", []))


def test_the_minute_runs_as_queued_ticks_and_no_tick_decides_twice(
    kit: Any, clients: Any, function_environ: Any, lambda_context: Any, reset_runtime: Any
) -> None:
    # GIVEN a backlog, the tick queue, and the evaluate function's template environment
    world = backlog_world(kit, clients, function_environ)
    url, dlq = tick_queue(kit, clients)
    settings = EvaluateSettings.from_environ(
        world.environ(
            "EvaluateFunction",
            QueuesConfig=json.dumps([world.config]),
            LoadTable=world.table,
            ArchiveBucket=world.bucket,
            EvaluationIntervalSeconds=str(INTERVAL),
            EvaluateTickQueue=url,
        )
    )
    assert (settings.tick_mode.value, settings.tick_queue_url) == ("tick", url)
    clock = {"now": NOW}
    runtime = evaluate.build_runtime(settings, clients, clock=lambda: clock["now"])
    evaluate.set_runtime(runtime)
    scheduled = datetime.fromtimestamp(NOW, tz=UTC).isoformat()

    # WHEN the schedule invokes it for a minute of three ticks
    answer = evaluate.handler({"scheduled_time": scheduled, "max_ticks": 3}, lambda_context)

    # THEN it ticked once (scaled the backlog) and queued the two later ticks, delayed
    assert answer["ticks"] == 1 and answer["decisions"][0]["action"] == "up"
    assert answer["scheduled_ticks"] == [NOW + INTERVAL, NOW + 2 * INTERVAL]
    attributes = clients.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])
    assert attributes["Attributes"]["ApproximateNumberOfMessagesDelayed"] == "2"
    assert receive(clients, url, 0) == []  # nothing visible before it is due
    # WHEN the first queued tick comes due and the event source hands it to the function
    started = time.monotonic()
    (message,) = receive(clients, url, INTERVAL + 5)
    assert time.monotonic() - started >= INTERVAL - 2  # held back by its delay
    assert json.loads(message["Body"]) == {"due": NOW + INTERVAL}
    clock["now"] = NOW + INTERVAL + 0.2
    tick = evaluate.handler(as_event(message), lambda_context)
    # THEN it is one tick, which queues nothing
    assert (tick["ticks"], tick["due"], tick["scheduled_ticks"]) == (1, NOW + INTERVAL, [])
    assert len(tick["decisions"]) == 1
    # WHEN SQS delivers that message a second time THEN nothing is decided
    again = evaluate.handler(as_event(message), lambda_context)
    assert (again["ticks"], again["decisions"]) == (0, [])
    assert "already claimed" in again["skipped"]
    clients.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    # WHEN the next tick's invocation fails or times out (its message is not deleted)
    (failed,) = receive(clients, url, INTERVAL + 5)
    assert json.loads(failed["Body"]) == {"due": NOW + 2 * INTERVAL}
    time.sleep(REDELIVER_SECONDS + 0.5)
    # THEN it is not handed to the function again: the redrive moved it to the DLQ
    assert receive(clients, url, 1) == []
    (dead,) = receive(clients, dlq, 2)
    assert dead["Body"] == failed["Body"]
