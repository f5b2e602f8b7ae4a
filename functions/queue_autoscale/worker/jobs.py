"""Ready-made job functions for the demo, the tests and a first try of the runtime."""

from __future__ import annotations

import json
import time

from queue_autoscale.worker.runtime import Job

MAX_WORK_SECONDS = 3600.0


class JobFailedError(RuntimeError):
    """The job's body asked it to fail."""


def sleep_job(job: Job) -> None:
    """Sleep `work_seconds` from a JSON body ({"work_seconds": 0.5}); raise if it has
    `"fail": true` (a poison job). A body that is not such JSON fails the job."""
    try:
        data = json.loads(job.body)
        seconds = float(data.get("work_seconds", 0.0))
    except (ValueError, TypeError, AttributeError) as error:
        raise JobFailedError(f"unreadable job body: {error}") from error
    if not 0.0 <= seconds <= MAX_WORK_SECONDS:
        raise JobFailedError(f"work_seconds {seconds!r} outside 0..{MAX_WORK_SECONDS:g}")
    if data.get("fail"):
        raise JobFailedError("the job body asked to fail")
    time.sleep(seconds)
