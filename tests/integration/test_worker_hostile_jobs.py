"""Jobs that misbehave, run by real worker subprocesses on the embedded endpoint: a job that
raises SystemExit / KeyboardInterrupt, a job that forks without os._exit, and a job that leaves
a child ignoring SIGTERM. The worker frees the slot, backs the message off, records `failed`
once, carries on, and leaves no process of its group behind when it exits."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from queue_autoscale.demo.summary import queue_counts
from tests.integration.conftest import Kit
from tests.integration.worker_kit import WorkerProcess, events, of, send, wait_for, work_queue

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("moto")]

HOSTILE = "tests.worker.hostile_jobs"


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes whose process group is `pgid`."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


@pytest.fixture
def pid_dir(tmp_path: Path) -> Iterator[Path]:
    """Where jobs write their children's PIDs; any child still alive at teardown is killed."""
    yield tmp_path
    for pid_file in tmp_path.glob("*.pid"):
        pid = int(pid_file.read_text())
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("raised", ["SystemExit", "KeyboardInterrupt"])
def test_a_job_raising_a_base_exception_fails_that_job_only_and_the_worker_carries_on(
    kit: Kit, start_worker: Callable[..., WorkerProcess], raised: str
) -> None:
    # GIVEN one job that raises SystemExit / KeyboardInterrupt, then three ordinary jobs
    work, _ = work_queue(kit)
    events_url = kit.queue("events")
    bad = send(kit, work, {"raise": raised})
    good = [send(kit, work, {"work_seconds": 0.1}) for _ in range(3)]
    worker = start_worker(work, events_url, worker_job=f"{HOSTILE}:raise_job", worker_retry_base=30)
    # WHEN the worker runs them (one slot: the three wait for the bad job's slot)
    wait_for(
        lambda: queue_counts(kit.clients.sqs, work) == (0, 1),
        15,
        "the three ordinary jobs ran and only the bad one is held (backing off)",
    )
    signalled = time.monotonic()
    worker.stop()
    code, stats, err = worker.result(timeout=15)
    # THEN the worker drained at once and exited 0
    assert code == 0, err
    assert time.monotonic() - signalled < 5.0
    assert stats["failed"] == 1 and stats["completed"] == 3 and stats["interrupted"] == 0
    # the bad job failed once and its message backs off (still invisible, not deleted)
    recorded = events(kit, events_url)
    assert of(bad, recorded) == [("started", 1), ("failed", 1)]
    for job in good:
        assert of(job, recorded) == [("started", 1), ("completed", 1)]
    assert queue_counts(kit.clients.sqs, work) == (0, 1)


def test_a_job_that_forks_without_exiting_the_child_runs_once_and_leaves_nothing(
    kit: Kit, start_worker: Callable[..., WorkerProcess], pid_dir: Path
) -> None:
    # GIVEN a job that forks and returns in both processes (no os._exit in the child)
    work, _ = work_queue(kit)
    events_url = kit.queue("events")
    pid_file, second = pid_dir / "child.pid", pid_dir / "second.pid"
    job = send(kit, work, {"pid_file": str(pid_file)})
    after = send(kit, work, {"pid_file": str(second)})
    worker = start_worker(work, events_url, worker_job=f"{HOSTILE}:fork_job")
    # both jobs wrote their child's PID and left the queue: the approximate counts alone read
    # (0, 0) once on LocalStack with only one job completed when the worker was stopped
    wait_for(
        lambda: (
            pid_file.exists() and second.exists() and queue_counts(kit.clients.sqs, work) == (0, 0)
        ),
        15,
        "both jobs ran",
    )
    # WHEN the worker is stopped
    worker.stop()
    code, stats, err = worker.result(timeout=15)
    # THEN each job completed once (the children did not run the worker's code after the job)
    assert code == 0, err
    assert stats["completed"] == 2 and stats["failed"] == 0
    recorded = events(kit, events_url)
    assert of(job, recorded) == [("started", 1), ("completed", 1)]
    assert of(after, recorded) == [("started", 1), ("completed", 1)]
    # and no child is left
    assert not alive(int(pid_file.read_text()))
    assert group_members(worker.process.pid) == []


def test_a_child_that_ignores_sigterm_is_ended_when_the_worker_exits(
    kit: Kit, start_worker: Callable[..., WorkerProcess], pid_dir: Path
) -> None:
    # GIVEN a job that leaves a shell ignoring SIGTERM, sleeping 600 s, holding the pipes
    work, _ = work_queue(kit)
    events_url = kit.queue("events")
    pid_file = pid_dir / "child.pid"
    send(kit, work, {"pid_file": str(pid_file)})
    worker = start_worker(work, events_url, worker_job=f"{HOSTILE}:orphan_job")
    wait_for(lambda: queue_counts(kit.clients.sqs, work) == (0, 0), 15, "the job ran")
    child = int(pid_file.read_text())
    assert alive(child)
    # WHEN the worker is stopped
    worker.stop()
    code, stats, err = worker.result(timeout=15)
    # THEN it exits 0 and its process group is empty
    assert code == 0, err
    assert stats["completed"] == 1
    wait_for(lambda: not alive(child), 2, "the child is gone")
    assert group_members(worker.process.pid) == []
