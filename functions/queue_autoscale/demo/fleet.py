"""The demo's worker fleet: one `python -m queue_autoscale.worker` process per running task.

It follows the ECS service's desiredCount as ECS would: a rise starts processes
`provisioning_seconds` later; a fall cancels tasks still provisioning first, then stops running
ones chosen at random (ECS does not know which are busy) with SIGTERM, and each drains: it
stops receiving, returns the messages it prefetched, finishes its job and exits 0. Each process
prints its stats as one JSON line on exit; the fleet adds them up. Processes are signalled and
killed by their own PID only. `counts` is what DescribeServices reports for the fleet
(demo/ecs_tasks.py says what is modelled).

A billed worker-second is counted as the simulator counts one: from the order (desiredCount
rose; provisioning included) to the process's exit (drain included); a cancelled order bills
from the order to its cancellation. Fargate starts billing at the image pull, a few seconds
into provisioning, so this is an upper bound by that much per task.
"""

from __future__ import annotations

import json
import logging
import random
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from queue_autoscale.demo.ecs_tasks import TaskCounts

LOG = logging.getLogger("queue_autoscale.demo")
JOB = "queue_autoscale.worker.jobs:sleep_job"
"""The demo's job: sleep the body's work_seconds."""


@dataclass(frozen=True)
class WorkerLaunch:
    """How to start one worker process: its environment (the task definition's) and log."""

    environment: Mapping[str, str]
    log_path: Path
    drain_seconds: float


@dataclass
class FleetTotals:
    """The exited workers' stats, added up (messages unless named otherwise)."""

    started_processes: int = 0
    stopped_by_scale_in: int = 0
    completed: int = 0
    failed: int = 0
    returned_on_drain: int = 0
    interrupted: int = 0
    """Jobs a stopped worker could not finish (released at its drain deadline or hung)."""
    unclean_exits: int = 0
    """Processes that exited non-zero or printed no stats (other than the case below)."""
    stopped_while_starting: int = 0
    """Processes SIGTERM reached before they installed their handler: still importing, they
    held no message (the handler is installed before the first receive)."""
    worker_seconds: float = 0.0
    """Billed worker-seconds: order to exit (see the module's docstring)."""

    def add(self, stats: Mapping[str, Any]) -> None:
        """Add one worker's stats line."""
        self.completed += int(stats.get("completed", 0))
        self.failed += int(stats.get("failed", 0))
        self.returned_on_drain += int(stats.get("returned_on_drain", 0))
        self.interrupted += int(stats.get("interrupted", 0))


@dataclass
class _Task:
    process: subprocess.Popen[str]
    ordered_at: float
    """When the task was ordered (billing starts), epoch seconds."""
    log: IO[str]
    stopping: bool = False


@dataclass(frozen=True)
class _Order:
    """A task ordered and not started: when it was ordered and when its process starts."""

    ordered_at: float
    starts_at: float


@dataclass
class WorkerFleet:
    """Worker processes following desiredCount (times are epoch seconds, passed in)."""

    launch: WorkerLaunch
    provisioning_seconds: float
    max_workers: int
    rng: random.Random = field(default_factory=lambda: random.Random(7))
    totals: FleetTotals = field(default_factory=FleetTotals)
    _tasks: list[_Task] = field(default_factory=list)
    _pending: list[_Order] = field(default_factory=list)
    """Tasks ordered and not started, oldest first."""

    @property
    def running(self) -> int:
        """Processes taking work (not stopping)."""
        return sum(1 for task in self._tasks if not task.stopping)

    @property
    def stopping(self) -> int:
        """Processes draining after SIGTERM."""
        return sum(1 for task in self._tasks if task.stopping)

    @property
    def pending(self) -> int:
        """Tasks ordered whose process has not started."""
        return len(self._pending)

    def counts(self) -> TaskCounts:
        """The fleet as DescribeServices counts it."""
        return TaskCounts(running=self.running, pending=self.pending, stopping=self.stopping)

    def follow(self, desired: int, now: float) -> None:
        """Order or stop tasks so that running + provisioning = desired (capped)."""
        desired = min(max(desired, 0), self.max_workers)
        have = self.running + len(self._pending)
        if desired > have:
            order = _Order(now, now + self.provisioning_seconds)
            self._pending.extend([order] * (desired - have))
        while have > desired and self._pending:
            cancelled = self._pending.pop()  # the newest order is furthest from running
            self.totals.worker_seconds += max(0.0, now - cancelled.ordered_at)
            have -= 1
        if have > desired:
            live = [task for task in self._tasks if not task.stopping]
            for task in self.rng.sample(live, have - desired):
                self._stop(task)
                self.totals.stopped_by_scale_in += 1

    def start_now(self, count: int, now: float) -> None:
        """The service's tasks already running when the demo starts."""
        for _ in range(min(count, self.max_workers)):
            self._start(now)

    def tick(self, now: float) -> None:
        """Start the tasks whose provisioning delay passed; collect the ones that exited."""
        ready = [order for order in self._pending if order.starts_at <= now]
        self._pending = [order for order in self._pending if order.starts_at > now]
        for order in ready:
            self._start(order.ordered_at)
        for task in [t for t in self._tasks if t.process.poll() is not None]:
            self._collect(task, now)

    def stop_all(self, clock: Callable[[], float]) -> None:
        """SIGTERM every process, wait for each drain (bounded), kill a stuck one by PID."""
        now = clock()
        self.totals.worker_seconds += sum(max(0.0, now - o.ordered_at) for o in self._pending)
        self._pending.clear()
        for task in self._tasks:
            if not task.stopping:
                self._stop(task)
        for task in list(self._tasks):
            try:
                task.process.wait(timeout=self.launch.drain_seconds + 10)
            except subprocess.TimeoutExpired:
                LOG.error("worker %d did not exit after its drain: killed", task.process.pid)
                task.process.kill()
                task.process.wait(timeout=10)
            self._collect(task, clock())

    # -- one process -------------------------------------------------------------------------

    def _start(self, ordered_at: float) -> None:
        log = self.launch.log_path.open("a", encoding="utf-8")
        process = subprocess.Popen(
            [sys.executable, "-m", "queue_autoscale.worker"],
            env=dict(self.launch.environment),
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )
        self._tasks.append(_Task(process, ordered_at, log))
        self.totals.started_processes += 1

    def _stop(self, task: _Task) -> None:
        task.stopping = True
        if task.process.poll() is None:
            task.process.send_signal(signal.SIGTERM)

    def _collect(self, task: _Task, now: float) -> None:
        out, _ = task.process.communicate()
        task.log.close()
        self._tasks.remove(task)
        self.totals.worker_seconds += max(0.0, now - task.ordered_at)
        lines = [line for line in out.splitlines() if line.startswith('{"worker"')]
        if task.stopping and task.process.returncode == -signal.SIGTERM and not lines:
            self.totals.stopped_while_starting += 1
        elif task.process.returncode != 0 or not lines:
            self.totals.unclean_exits += 1
            LOG.error("worker %d exited %s", task.process.pid, task.process.returncode)
        if lines:
            self.totals.add(json.loads(lines[-1])["worker"])
