"""Fault matrix: every AWS call the handlers make, under throttling, a 5xx, a read timeout, a
connect timeout and AccessDenied, injected with a botocore `before-send` hook against the
embedded emulator. docs/fail-safe.md's "Fault matrix" table states the same cases.

evaluate: the hurt queue never scales down and never above max, the other queue is still
evaluated, the error is counted in ControllerErrors and logged with the queue.
record_events: see test_fault_matrix_ingest.py.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest

from queue_autoscale.adapters.aws import make_clients
from queue_autoscale.controller import tick
from queue_autoscale.handlers import evaluate
from tests.integration.conftest import REGION, Endpoint, Kit
from tests.reliability.faults import FAULTS, CallLog, Fault, expected_attempts
from tests.reliability.worlds import (
    MAX_WORKERS,
    NOW,
    START_WORKERS,
    Fleet,
    MetricsRecorder,
    captured_logs,
)

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("moto")]


@dataclass(frozen=True)
class EvaluateCase:
    """One call of evaluate: which client, which operation, and what the tick must do."""

    client: str
    operation: str
    only_hurt: bool
    """The fault hits only the hurt queue's request (per-queue calls)."""
    hurt_acts: bool
    """The hurt queue still scales (the failed call is not one of its decision inputs)."""
    other_acts: bool
    """The other queue still scales."""


EVALUATE_CASES = {
    "sqs-GetQueueAttributes": EvaluateCase("sqs", "GetQueueAttributes", True, False, True),
    "cloudwatch-GetMetricData": EvaluateCase("cloudwatch", "GetMetricData", False, True, True),
    "ecs-DescribeServices": EvaluateCase("ecs", "DescribeServices", True, False, True),
    "ecs-UpdateService": EvaluateCase("ecs", "UpdateService", True, False, True),
    "dynamodb-BatchGetItem": EvaluateCase("dynamodb", "BatchGetItem", False, False, False),
    "dynamodb-Query": EvaluateCase("dynamodb", "Query", True, False, True),
    "dynamodb-PutItem": EvaluateCase("dynamodb", "PutItem", True, False, True),
    "events-PutEvents": EvaluateCase("events", "PutEvents", False, True, True),
    "s3-PutObject": EvaluateCase("s3", "PutObject", False, True, True),
}


SESSION = boto3.session.Session()
"""Shared so service models load once; each case still gets its own clients."""


@pytest.fixture(scope="module")
def fleet(aws_endpoint: Endpoint) -> Fleet:
    """One fleet for the whole matrix (built once: 45 cases x a fresh fleet is too slow)."""
    if aws_endpoint.embedded:  # start from nothing, as the per-test fixture would
        import urllib.request

        request = urllib.request.Request(f"{aws_endpoint.url}/moto-api/reset", method="POST")
        with urllib.request.urlopen(request, timeout=10) as answer:  # loopback only
            answer.read()
    clients = make_clients(endpoint_url=aws_endpoint.url, region_name=REGION)
    return Fleet.create(Kit(clients, uuid.uuid4().hex[:8]), clients)


@pytest.fixture
def clients(fleet: Fleet, aws_endpoint: Endpoint) -> Iterator[Any]:
    """Fresh clients per case (own retry quota, own fault hooks); the fleet reset after it."""
    yield make_clients(session=SESSION, endpoint_url=aws_endpoint.url, region_name=REGION)
    for queue in fleet.queues:
        fleet.clients.ecs.update_service(
            cluster=fleet.clusters[queue], service=queue, desiredCount=START_WORKERS
        )
        fleet.clients.dynamodb.delete_item(
            TableName=fleet.table, Key={"pk": {"S": f"Q#{queue}"}, "sk": {"S": "STATE"}}
        )


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("case", list(EVALUATE_CASES.values()), ids=list(EVALUATE_CASES))
def test_evaluate_under_a_failing_call(
    fleet: Fleet, clients: Any, case: EvaluateCase, fault: str
) -> None:
    # GIVEN two backlogged queues at 2 workers (max 5) and one call failing for the hurt one
    hurt, other = fleet.queues
    assert [fleet.desired(queue) for queue in fleet.queues] == [START_WORKERS] * 2
    runtime = fleet.runtime(clients)
    metrics = MetricsRecorder()
    runtime.publish_metrics = metrics
    match = hurt.encode() if case.only_hurt else None
    injected = Fault(case.operation, fault, match=match).install(getattr(clients, case.client))
    updates = CallLog("UpdateService").install(clients.ecs)

    # WHEN one tick runs
    with captured_logs(evaluate.logger) as logs:
        outcomes = {outcome.queue: outcome for outcome in tick.run_tick(runtime, NOW)}

    # THEN botocore tried the call as its standard retry mode says, and then gave up
    injected.active = False
    assert injected.attempts == expected_attempts(fault)
    # AND no service went down or above max; the hurt queue scaled only when it could decide
    for queue, acts in ((hurt, case.hurt_acts), (other, case.other_acts)):
        desired = fleet.desired(queue)
        assert START_WORKERS <= desired <= MAX_WORKERS
        assert outcomes[queue].applied is acts, outcomes[queue].errors
        assert desired == (MAX_WORKERS if acts else START_WORKERS)
    assert all(call["desiredCount"] <= MAX_WORKERS for call in updates.calls)
    # AND the error is counted in ControllerErrors and logged with the hurt queue
    assert metrics.last(hurt)["ControllerErrors"] >= 1
    assert any(case.operation in error for error in outcomes[hurt].errors)
    logged = [r for r in logs if r.levelname == "ERROR" and getattr(r, "queue", None) == hurt]
    assert logged and any(case.operation in str(getattr(r, "errors", "")) for r in logged)
    # AND a per-queue fault leaves the other queue's tick clean
    if case.only_hurt:
        assert metrics.last(other)["ControllerErrors"] == 0
        assert outcomes[other].errors == []
