"""The embedded emulator's ECS follows the task lifecycle of the demo's worker processes, read
through adapters/ecs.py and DescribeServices as on AWS (demo/ecs_tasks.py says what is
modelled)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from queue_autoscale.adapters.ecs import EcsServices, ServiceRef, ServiceStatus
from queue_autoscale.demo.ecs_tasks import EmulatedService, TaskCounts
from queue_autoscale.demo.fleet import WorkerFleet, WorkerLaunch
from tests.integration.conftest import REGION, Kit

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("moto")]


def _status(kit: Kit, ref: ServiceRef) -> ServiceStatus:
    status = EcsServices(kit.clients.ecs).describe([ref])[ref]
    assert isinstance(status, ServiceStatus), status
    return status


def test_describe_services_counts_started_processes_running_and_orders_pending(
    endpoint: Any, kit: Kit, tmp_path: Path
) -> None:
    # GIVEN a service with one task and the demo's fleet of real worker processes behind it
    endpoint.require("ecs")
    if not endpoint.embedded:
        pytest.skip("the task counts can only be set on the embedded emulator")
    cluster, service = kit.name("c"), kit.name("s")
    kit.service(cluster, service, 1)
    ref = ServiceRef(cluster, service)
    environment = {
        "AWS_ENDPOINT_URL": endpoint.url,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "WORKER_QUEUE_URL": kit.queue("work"),
        "WORKER_JOB": "queue_autoscale.worker.jobs:sleep_job",
        "WORKER_WAIT_SECONDS": "1",
    }
    fleet = WorkerFleet(WorkerLaunch(environment, tmp_path / "w.log", 5.0), 10.0, 10)
    ecs = EmulatedService(cluster, service, REGION)
    assert ecs.embedded
    fleet.start_now(1, now=0.0)
    try:
        # WHEN the controller orders 4 tasks (moto alone would report running 4 at once)
        EcsServices(kit.clients.ecs).set_desired(ref, 4)
        fleet.follow(4, now=1.0)
        ecs.publish(fleet.counts())
        # THEN the 3 ordered ones are pending until their provisioning delay has passed
        ordered = _status(kit, ref)
        assert (ordered.desired, ordered.running, ordered.pending) == (4, 1, 3)
        fleet.tick(now=10.9)
        ecs.publish(fleet.counts())
        assert (_status(kit, ref).running, _status(kit, ref).pending) == (1, 3)
        fleet.tick(now=11.0)
        ecs.publish(fleet.counts())
        started = _status(kit, ref)
        assert (started.desired, started.running, started.pending) == (4, 4, 0)
        # WHEN desiredCount falls to 2: two tasks are told to stop and drain
        EcsServices(kit.clients.ecs).set_desired(ref, 2)
        fleet.follow(2, now=12.0)
        ecs.publish(fleet.counts())
        # THEN the draining two are in neither count (STOPPING is not RUNNING)
        assert fleet.counts() == TaskCounts(running=2, pending=0, stopping=2)
        stopped = _status(kit, ref)
        assert (stopped.desired, stopped.running, stopped.pending) == (2, 2, 0)
    finally:
        fleet.stop_all(time.monotonic)
    assert fleet.totals.unclean_exits == 0


def test_a_service_of_another_process_is_not_driven(endpoint: Any, kit: Kit) -> None:
    # GIVEN a service name the embedded emulator does not hold
    endpoint.require("ecs")
    ecs = EmulatedService("no-such-cluster", "no-such-service", REGION)
    # WHEN the fleet publishes its counts THEN nothing is written, and the caller knows it
    assert not ecs.embedded
    assert ecs.publish(TaskCounts(running=1, pending=0, stopping=0)) is False
