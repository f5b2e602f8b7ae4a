"""queue_autoscale.worker as real subprocesses against the endpoint (embedded moto server).

Each test starts `python -m queue_autoscale.worker` with the environment a task definition
would give it, drives it through SQS, signals it by PID and reads the queue, the events queue
and the fake ECS agent (a loopback HTTP server this module starts and stops) afterwards.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from queue_autoscale.demo.summary import queue_counts
from tests.integration.conftest import Kit
from tests.integration.worker_kit import WorkerProcess, events, of, send, wait_for, work_queue
from tests.worker.fake_agent import FakeAgent

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("moto")]

# ------------------------------------------------------------------ drain


def test_sigterm_mid_job_finishes_the_job_returns_the_prefetched_and_exits_0(
    kit: Kit, start_worker: Callable[..., WorkerProcess]
) -> None:
    # GIVEN a worker running one 3 s job and holding three more it prefetched
    work, _ = work_queue(kit)
    events_url = kit.queue("events")
    ids = [send(kit, work, {"work_seconds": 3.0}) for _ in range(4)]
    worker = start_worker(work, events_url, worker_prefetch=3, worker_drain_seconds=10)
    wait_for(
        lambda: queue_counts(kit.clients.sqs, work) == (0, 4),
        15,
        "the worker holds all four messages",
    )
    time.sleep(0.5)  # the first job is under way
    # WHEN ECS stops the task
    signalled = time.monotonic()
    worker.stop()
    # THEN the prefetched three are visible again within a second
    wait_for(
        lambda: queue_counts(kit.clients.sqs, work)[0] == 3, 1.0, "three messages visible again"
    )
    # and the process exits 0 before its drain deadline, after the job finished
    code, stats, err = worker.result(timeout=15)
    took = time.monotonic() - signalled
    assert code == 0, err
    assert took < 10.0
    assert stats["completed"] == 1 and stats["returned_on_drain"] == 3
    assert stats["interrupted"] == 0 and stats["delete_failures"] == 0
    # the finished job's message is gone (deleted once); the other three are intact
    left = kit.receive_all(work)
    assert len(left) == 3
    done = (set(ids) - {m["MessageId"] for m in left}).pop()
    # its events are complete: started then completed, each once; nothing for the others
    recorded = events(kit, events_url)
    assert of(done, recorded) == [("started", 1), ("completed", 1)]
    started = next(e for e in recorded if e["job_id"] == done and e["type"] == "started")
    assert started["pickup_ms"] >= 0
    for other in {m["MessageId"] for m in left}:
        assert of(other, recorded) == []


def test_a_job_that_cannot_finish_by_the_deadline_is_released_not_lost(
    kit: Kit, start_worker: Callable[..., WorkerProcess]
) -> None:
    # GIVEN a 30 s job and a 1 s drain deadline
    work, _ = work_queue(kit)
    events_url = kit.queue("events")
    job = send(kit, work, {"work_seconds": 30.0})
    worker = start_worker(work, events_url, worker_drain_seconds=1)
    wait_for(lambda: queue_counts(kit.clients.sqs, work) == (0, 1), 15, "the worker took the job")
    time.sleep(0.3)
    # WHEN it is stopped
    worker.stop()
    code, stats, err = worker.result(timeout=10)
    # THEN it exits 0, the message is visible again for another worker, the events say failed
    assert code == 0, err
    assert stats["released_at_deadline"] == 1 and stats["interrupted"] == 1
    wait_for(
        lambda: queue_counts(kit.clients.sqs, work)[0] == 1, 2, "the released job is visible again"
    )
    assert of(job, events(kit, events_url)) == [("started", 1), ("failed", 1)]


# ------------------------------------------------------------------ heartbeat, retries


def test_a_job_longer_than_the_visibility_timeout_is_not_delivered_twice(
    kit: Kit, start_worker: Callable[..., WorkerProcess]
) -> None:
    # GIVEN a 5 s visibility timeout, an 11 s job (two timeouts over) and two workers polling
    work, _ = work_queue(kit, visibility=5)
    events_url = kit.queue("events")
    job = send(kit, work, {"work_seconds": 11.0})
    workers = [
        start_worker(work, events_url, worker_visibility_timeout=5, worker_drain_seconds=5)
        for _ in range(2)
    ]
    # WHEN the job runs to the end (the heartbeat keeps it invisible meanwhile)
    wait_for(lambda: queue_counts(kit.clients.sqs, work) == (0, 1), 15, "a worker took the job")
    wait_for(
        lambda: queue_counts(kit.clients.sqs, work) == (0, 0),
        20,
        "the job finished and was deleted",
    )
    for worker in workers:
        worker.stop()
    results = [worker.result(timeout=15) for worker in workers]
    # THEN it started once, completed once, and both workers drained cleanly
    assert of(job, events(kit, events_url)) == [("started", 1), ("completed", 1)]
    assert sum(stats["completed"] for _, stats, _ in results) == 1
    assert sum(stats["started"] for _, stats, _ in results) == 1
    assert [code for code, _, _ in results] == [0, 0]


def test_a_failing_job_is_retried_then_dead_lettered_and_the_events_say_so(
    kit: Kit, start_worker: Callable[..., WorkerProcess]
) -> None:
    # GIVEN a poison job on a queue that dead-letters after 2 receives
    work, dlq = work_queue(kit, dlq_after=2)
    events_url = kit.queue("events")
    job = send(kit, work, {"work_seconds": 0.1, "fail": True})
    worker = start_worker(work, events_url, worker_retry_base=1, worker_retry_max=2)
    # WHEN the worker keeps receiving it
    wait_for(
        lambda: queue_counts(kit.clients.sqs, dlq)[0] == 1, 25, "the poison job reached the DLQ"
    )
    worker.stop()
    code, stats, err = worker.result(timeout=15)
    # THEN it failed on both attempts, with a back-off between, and sits in the DLQ
    assert code == 0, err
    assert stats["failed"] == 2 and stats["completed"] == 0
    assert of(job, events(kit, events_url)) == [
        ("started", 1),
        ("failed", 1),
        ("started", 2),
        ("failed", 2),
    ]
    assert [m["MessageId"] for m in kit.receive_all(dlq)] == [job]
    assert queue_counts(kit.clients.sqs, work) == (0, 0)


def test_a_hung_job_is_released_at_the_hard_limit_and_the_worker_exits_2(
    kit: Kit, start_worker: Callable[..., WorkerProcess]
) -> None:
    work, _ = work_queue(kit)
    events_url = kit.queue("events")
    job = send(kit, work, {"work_seconds": 600.0})
    worker = start_worker(work, events_url, worker_job_timeout=1.5, worker_retry_base=1)
    code, stats, err = worker.result(timeout=20)
    assert code == 2, err
    assert stats["hung"] == 1
    wait_for(
        lambda: queue_counts(kit.clients.sqs, work)[0] == 1,
        5,
        "the hung job's message is visible again",
    )
    assert of(job, events(kit, events_url)) == [("started", 1), ("failed", 1)]


# ------------------------------------------------------------------ scale-in protection


def test_protection_is_on_while_a_job_runs_and_off_when_idle_with_an_expiry(
    kit: Kit,
    start_worker: Callable[..., WorkerProcess],
    fake_agent: tuple[FakeAgent, str],
) -> None:
    agent, uri = fake_agent
    work, _ = work_queue(kit)
    events_url = kit.queue("events")
    worker = start_worker(work, events_url, ecs_agent_uri=uri, worker_job_timeout=120)
    time.sleep(1.5)  # idle: nothing to protect
    assert agent.requests == []
    send(kit, work, {"work_seconds": 1.0})
    wait_for(
        lambda: queue_counts(kit.clients.sqs, work) == (0, 0), 15, "the job ran and was deleted"
    )
    wait_for(lambda: len(agent.requests) >= 2, 5, "protect and unprotect")
    worker.stop()
    code, _, err = worker.result(timeout=15)
    assert code == 0, err
    path = "/api/task-1/task-protection/v1/state"
    assert agent.requests == [
        ("PUT", path, {"ProtectionEnabled": True, "ExpiresInMinutes": 3}),
        ("PUT", path, {"ProtectionEnabled": False}),
    ]


def test_a_worker_whose_agent_endpoint_fails_keeps_working(
    kit: Kit,
    start_worker: Callable[..., WorkerProcess],
    fake_agent: tuple[FakeAgent, str],
) -> None:
    agent, uri = fake_agent
    agent.fail = True
    work, _ = work_queue(kit)
    events_url = kit.queue("events")
    for _ in range(3):
        send(kit, work, {"work_seconds": 0.2})
    worker = start_worker(work, events_url, ecs_agent_uri=uri)
    wait_for(lambda: queue_counts(kit.clients.sqs, work) == (0, 0), 15, "every job ran")
    worker.stop()
    code, stats, err = worker.result(timeout=15)
    assert code == 0, err
    assert stats["completed"] == 3
    assert agent.requests and all(r[2]["ProtectionEnabled"] for r in agent.requests)
    assert "task protection on failed" in err
