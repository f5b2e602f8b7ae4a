"""A worker whose queue does not exist stops with its own exit code (worker/runtime.py)."""

from __future__ import annotations

import threading
from typing import Any

from botocore.exceptions import ClientError

from queue_autoscale.worker.runtime import EXIT_NO_QUEUE, Worker
from queue_autoscale.worker.settings import WorkerSettings

URL = "http://127.0.0.1:1/000000000000/gone"


class _Sqs:
    """ReceiveMessage answers as SQS does for a deleted queue, or as a throttled call."""

    def __init__(self, code: str, limit: int = 1_000) -> None:
        self.code = code
        self.calls = 0
        self.limit = limit

    def receive_message(self, **_: Any) -> dict[str, Any]:
        self.calls += 1
        if self.calls > self.limit:
            return {}
        raise ClientError({"Error": {"Code": self.code, "Message": "x"}}, "ReceiveMessage")


def _worker(sqs: _Sqs) -> Worker:
    settings = WorkerSettings(queue_url=URL, wait_seconds=0, drain_seconds=1.0)
    return Worker(settings, lambda body: None, sqs)


def test_a_queue_that_does_not_exist_stops_the_worker_with_exit_3() -> None:
    # GIVEN SQS answering ReceiveMessage with QueueDoesNotExist
    sqs = _Sqs("AWS.SimpleQueueService.NonExistentQueue")
    # WHEN the worker runs (no stop is ever requested)
    code = _worker(sqs).run()
    # THEN it stops after that one answer, with the missing-queue exit code
    assert code == EXIT_NO_QUEUE == 3
    assert sqs.calls == 1


def test_a_throttled_receive_is_retried_not_fatal() -> None:
    # GIVEN two throttled answers, then empty polls
    sqs = _Sqs("ThrottlingException", limit=2)
    worker = _worker(sqs)
    stopper = threading.Timer(2.5, worker.request_stop)
    stopper.start()
    # WHEN it runs until stopped
    code = worker.run()
    stopper.cancel()
    # THEN it kept polling past the throttled answers and drained cleanly
    assert code == 0
    assert sqs.calls > 2
