"""Job functions that misbehave, for the worker's subprocess tests (`WORKER_JOB=tests.worker.
hostile_jobs:...`). Each reads a JSON body; `pid_file` names where a spawned child's PID goes."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from queue_autoscale.worker.runtime import Job

RAISES: dict[str, type[BaseException]] = {
    "SystemExit": SystemExit,
    "KeyboardInterrupt": KeyboardInterrupt,
    "GeneratorExit": GeneratorExit,
}


def raise_job(job: Job) -> None:
    """Raise the BaseException named by `raise` (none: sleep `work_seconds` and succeed)."""
    data = json.loads(job.body)
    name = data.get("raise")
    if name:
        raise RAISES[name]()
    time.sleep(float(data.get("work_seconds", 0.0)))


def fork_job(job: Job) -> None:
    """os.fork() and return in both processes, without os._exit in the child (the child's
    PID goes to `pid_file`)."""
    data = json.loads(job.body)
    child = os.fork()
    if child:
        Path(data["pid_file"]).write_text(str(child))


def orphan_job(job: Job) -> None:
    """Start a shell that ignores SIGTERM and sleeps 600 s, and return without waiting."""
    data = json.loads(job.body)
    child = subprocess.Popen(["sh", "-c", "trap '' TERM; exec sleep 600"])
    Path(data["pid_file"]).write_text(str(child.pid))
