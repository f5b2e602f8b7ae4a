"""TaskProtection against the fake agent, with the clock given: protect, renew, unprotect."""

from __future__ import annotations

import logging
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from queue_autoscale.worker.protection import RETRY_SECONDS, TaskProtection, expiry_minutes
from tests.worker.fake_agent import FakeAgent, serve_agent

ROOT = Path(__file__).resolve().parents[2]

ON = {"ProtectionEnabled": True, "ExpiresInMinutes": 4}
OFF = {"ProtectionEnabled": False}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def fake_agent() -> Iterator[tuple[FakeAgent, str]]:
    """The fake ECS agent on 127.0.0.1 for one test."""
    with serve_agent() as served:
        yield served


def bodies(agent: FakeAgent) -> list[dict[str, object]]:
    return [body for _, _, body in agent.requests]


def test_protects_once_renews_at_half_the_expiry_and_unprotects_when_idle(
    fake_agent: tuple[FakeAgent, str],
) -> None:
    agent, uri = fake_agent
    clock = Clock()
    protection = TaskProtection(uri, 4, clock=clock)
    protection.set_busy(True)
    protection.set_busy(True)  # no change: no call
    clock.now += 4 * 30.0 - 1
    protection.set_busy(True)
    assert bodies(agent) == [ON]
    clock.now += 1  # half of the 4-minute expiry: renew
    protection.set_busy(True)
    protection.set_busy(False)
    protection.set_busy(False)
    assert bodies(agent) == [ON, ON, OFF]
    assert agent.requests[0][1] == "/api/task-1/task-protection/v1/state"
    assert (protection.stats.protects, protection.stats.unprotects) == (2, 1)


def test_a_failing_agent_is_retried_after_a_pause_never_raised(
    fake_agent: tuple[FakeAgent, str],
) -> None:
    agent, uri = fake_agent
    agent.fail = True
    clock = Clock()
    protection = TaskProtection(uri, 4, clock=clock)
    protection.set_busy(True)
    protection.set_busy(True)
    assert len(agent.requests) == 1 and not protection.protected
    clock.now += RETRY_SECONDS
    agent.fail = False
    protection.set_busy(True)
    assert protection.protected and protection.stats.failures == 1


def test_an_unreachable_agent_is_a_logged_failure(caplog: pytest.LogCaptureFixture) -> None:
    protection = TaskProtection("http://127.0.0.1:9", 4, timeout_seconds=0.5)
    with caplog.at_level(logging.WARNING, logger="queue_autoscale.worker"):
        protection.set_busy(True)
    assert not protection.protected and protection.stats.failures == 1
    assert "task protection on failed" in caplog.text


def test_without_an_agent_uri_protection_is_off_with_one_log_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger="queue_autoscale.worker"):
        protection = TaskProtection(None, 4)
        protection.set_busy(True)
        protection.set_busy(False)
    assert not protection.enabled and protection.stats.protects == 0
    assert caplog.text.count("ECS_AGENT_URI is not set") == 1


@pytest.mark.parametrize(
    ("job_timeout", "minutes"),
    [(1.0, 2), (60.0, 2), (61.0, 3), (900.0, 16), (10**7, 2880)],
)
def test_the_expiry_covers_the_hard_job_limit_within_the_agents_range(
    job_timeout: float, minutes: int
) -> None:
    assert expiry_minutes(job_timeout) == minutes


@pytest.mark.parametrize("mode", ["headers", "body"])
def test_an_agent_that_trickles_its_answer_costs_one_deadline_not_the_main_loop(
    mode: str,
) -> None:
    # GIVEN an agent (a subprocess on 127.0.0.1) answering a byte every 0.2 s, for ever
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.reliability.trickle_server", mode, "0.2"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        uri = f"http://127.0.0.1:{int(server.stdout.readline())}/api/task-1"
        protection = TaskProtection(uri, 5, timeout_seconds=0.5)
        # WHEN the worker's main loop asks for protection
        began = time.monotonic()
        protection.set_busy(True)
        # THEN the call gives up at its 0.5 s deadline, as a failed agent call
        assert time.monotonic() - began < 1.5
        assert protection.stats.failures == 1 and not protection.protected
    finally:
        server.kill()
        server.communicate(timeout=10)
