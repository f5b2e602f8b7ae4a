"""The worker's process group: jobs run as threads, so the worker leads its own process group
and, on exit, ends every process left in it (a job's forgotten subprocess, a forked child).

Linux only (it reads /proc); elsewhere the group is still led but nothing is ended. A child that
leaves the group on purpose (`setsid`, `start_new_session=True`) is its own keeper.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from pathlib import Path

LOG = logging.getLogger("queue_autoscale.worker")
PROC = Path("/proc")
CHILD_GRACE_SECONDS = 2.0
"""Between SIGTERM and SIGKILL for a child left at exit, s: spent after the drain, so it comes
out of the margin kept between `drain_seconds` and the task's stopTimeout."""
POLL_SECONDS = 0.05


def lead_group() -> int:
    """Make this process its own process group's leader (a no-op when it already is, as PID 1
    in a container or a shell's job is); returns the group id."""
    if os.getpgid(0) != os.getpid():
        try:
            os.setpgid(0, 0)
        except OSError as error:  # a session leader cannot move; it already leads its group
            LOG.warning("could not lead a process group: %s", error)
    return os.getpgid(0)


def group_members(pgid: int) -> list[int]:
    """Live processes (not zombies) of process group `pgid` other than this one."""
    me = os.getpid()
    members = []
    try:
        entries = list(PROC.iterdir())
    except OSError:
        return []
    for entry in entries:
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # gone meanwhile
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) ": state ppid pgrp
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def _signal_all(pids: list[int], signum: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except OSError:  # exited meanwhile
            continue


def _reap() -> None:
    """Collect this process's own exited children (no zombies left behind)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def end_group(pgid: int, grace_seconds: float = CHILD_GRACE_SECONDS) -> int:
    """SIGTERM every other process of group `pgid` (only when this process leads it), SIGKILL
    those still there after `grace_seconds`; returns how many were found."""
    if pgid != os.getpid():
        return 0
    left = group_members(pgid)
    if not left:
        return 0
    LOG.warning("ending %d process(es) jobs left behind: %s", len(left), left)
    _signal_all(left, signal.SIGTERM)
    deadline = time.monotonic() + grace_seconds
    while time.monotonic() < deadline:
        _reap()
        if not group_members(pgid):
            return len(left)
        time.sleep(POLL_SECONDS)
    _signal_all(group_members(pgid), signal.SIGKILL)
    time.sleep(POLL_SECONDS)
    _reap()
    return len(left)
