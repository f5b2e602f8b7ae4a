"""A completed job's recorded duration is the time it held its worker's slot, the delete of its
message included (worker/runtime.py): the controller sizes the fleet on that time, and a
worker cannot start the next job before the delete returns."""

from __future__ import annotations

import threading
import time
from typing import Any

from queue_autoscale.client import EventRecorder
from queue_autoscale.worker.runtime import EXIT_OK, Job, Worker
from queue_autoscale.worker.settings import WorkerSettings

URL = "http://127.0.0.1:1/000000000000/work"
JOB_SECONDS = 0.1
DELETE_SECONDS = 0.3


class _Sqs:
    """One message on the first poll, then empty polls; every delete takes DELETE_SECONDS."""

    def __init__(self) -> None:
        self.polls = 0
        self.deleted: list[str] = []

    def receive_message(self, **_: Any) -> dict[str, Any]:
        self.polls += 1
        if self.polls > 1:
            time.sleep(0.05)
            return {}
        message = {
            "MessageId": "job-1",
            "ReceiptHandle": "receipt-1",
            "Body": "{}",
            "Attributes": {"ApproximateReceiveCount": "1"},
        }
        return {"Messages": [message]}

    def delete_message(self, *, ReceiptHandle: str, **_: Any) -> dict[str, Any]:  # noqa: N803
        time.sleep(DELETE_SECONDS)
        self.deleted.append(ReceiptHandle)
        return {}

    def change_message_visibility_batch(self, **_: Any) -> dict[str, Any]:
        return {}


class _Recorded(EventRecorder):
    """The worker's events, kept in a list instead of sent."""

    def __init__(self) -> None:
        super().__init__(sqs_client=object(), events_queue_url="events", background=False)
        self.seen: list[tuple[str, int | None]] = []

    def record(self, event_type: str, queue: str, job_id: str, **fields: Any) -> None:
        self.seen.append((event_type, fields.get("duration_ms")))

    def close(self) -> None:
        """Nothing buffered to send."""


def _job(_: Job) -> None:
    time.sleep(JOB_SECONDS)


def test_the_completed_duration_covers_the_delete_that_holds_the_slot() -> None:
    # GIVEN a 0.1 s job whose message takes 0.3 s to delete
    sqs, recorder = _Sqs(), _Recorded()
    settings = WorkerSettings(queue_url=URL, wait_seconds=0, drain_seconds=2.0)
    worker = Worker(settings, _job, sqs, recorder=recorder)
    # WHEN the worker runs it and is stopped once the message is gone
    stopper = threading.Thread(target=_stop_when_deleted, args=(worker, sqs), daemon=True)
    stopper.start()
    code = worker.run()
    stopper.join(timeout=5)
    # THEN the message was deleted once and the completed event counts the delete's time: the
    # slot was busy about 0.4 s, not the job's 0.1 s
    assert code == EXIT_OK
    assert sqs.deleted == ["receipt-1"]
    assert worker.stats.completed == 1
    durations = [ms for kind, ms in recorder.seen if kind == "completed"]
    assert len(durations) == 1
    assert durations[0] is not None
    assert durations[0] >= (JOB_SECONDS + DELETE_SECONDS) * 1000


def _stop_when_deleted(worker: Worker, sqs: _Sqs) -> None:
    deadline = time.monotonic() + 5
    while not sqs.deleted and time.monotonic() < deadline:
        time.sleep(0.01)
    worker.request_stop()
