"""The shard lock item on DynamoDB (moto) and the asynchronous self-invoke (Stubber)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from queue_autoscale.adapters.aws import LAMBDA_CONFIG
from queue_autoscale.adapters.dynamodb import LoadTable, create_load_table
from queue_autoscale.adapters.errors import InvalidRequest, StateConflict, Throttled
from queue_autoscale.adapters.lambdas import FunctionInvoker

NOW = 1_763_000_000.0


@pytest.fixture
def table() -> Iterator[tuple[LoadTable, Any]]:
    with mock_aws():
        client = boto3.client(
            "dynamodb",
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        create_load_table(client, "load")
        yield LoadTable(client, "load"), client


def lock_item(client: Any, index: int) -> dict[str, Any]:
    item = client.get_item(
        TableName="load", Key={"pk": {"S": f"SHARD#{index}"}, "sk": {"S": "LOCK"}}
    )
    return dict(item["Item"])


def test_a_held_lock_refuses_another_owner_until_its_lease_ends(table: Any) -> None:
    locks, client = table
    # GIVEN shard 2's lock held by `a` until NOW + 60
    locks.acquire_lock("2/4", 2, "a", NOW, NOW + 60)
    # WHEN `b` asks before the lease ends THEN it is refused
    with pytest.raises(StateConflict, match="shard 2's lock is held"):
        locks.acquire_lock("2/4", 2, "b", NOW + 30, NOW + 90)
    # AND another shard's lock is free, and `a` may renew its own
    locks.acquire_lock("3/4", 3, "b", NOW + 30, NOW + 90)
    locks.acquire_lock("2/4", 2, "a", NOW + 30, NOW + 75)
    # WHEN the lease has ended THEN `b` takes it
    locks.acquire_lock("2/4", 2, "b", NOW + 76, NOW + 136)
    item = lock_item(client, 2)
    assert (item["owner"]["S"], item["shard"]["S"], float(item["held_until"]["N"])) == (
        "b",
        "2/4",
        NOW + 136,
    )
    assert int(item["expires_at"]["N"]) == int(NOW + 136) + 86_400  # the table's TTL removes it


def test_a_tick_is_claimed_once_and_never_after_a_later_one(table: Any) -> None:
    ticks, client = table
    # GIVEN shard 1's tick due at NOW claimed
    due_ms = round(NOW * 1000)
    ticks.claim_tick("1/2", 1, due_ms, NOW)
    # WHEN the same tick is claimed again (a duplicate delivery) THEN it is refused
    with pytest.raises(StateConflict, match="already claimed"):
        ticks.claim_tick("1/2", 1, due_ms, NOW + 1)
    # AND another shard's tick of the same due time is its own
    ticks.claim_tick("0/2", 0, due_ms, NOW + 1)
    # WHEN the next tick (15 s later) is claimed THEN it is, and an older one no longer is
    ticks.claim_tick("1/2", 1, due_ms + 15_000, NOW + 15)
    with pytest.raises(StateConflict):
        ticks.claim_tick("1/2", 1, due_ms + 14_999, NOW + 16)
    item = client.get_item(TableName="load", Key={"pk": {"S": "SHARD#1"}, "sk": {"S": "TICK"}})[
        "Item"
    ]
    assert (item["shard"]["S"], int(item["tick_due"]["N"])) == ("1/2", due_ms + 15_000)
    assert int(item["expires_at"]["N"]) == int(NOW + 15) + 86_400
    # AND the lock item of the loop mode is a different item
    ticks.acquire_lock("1/2", 1, "a", NOW, NOW + 60)


def test_a_released_lock_is_free_at_once_and_only_its_owner_releases_it(table: Any) -> None:
    locks, _ = table
    locks.acquire_lock("0/1", 0, "a", NOW, NOW + 60)
    with pytest.raises(StateConflict, match="no longer held by b"):
        locks.release_lock("0/1", 0, "b", NOW + 1)
    locks.release_lock("0/1", 0, "a", NOW + 50)
    locks.acquire_lock("0/1", 0, "b", NOW + 51, NOW + 111)


def lambda_client() -> Any:
    return boto3.client(
        "lambda",
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=LAMBDA_CONFIG,
    )


def test_a_shard_is_queued_as_an_asynchronous_invoke_of_the_function() -> None:
    client = lambda_client()
    payload = {"shard": 1, "shards": 3, "once": True}
    with Stubber(client) as stub:
        stub.add_response(
            "invoke",
            {"StatusCode": 202},
            {
                "FunctionName": "stack-evaluate",
                "InvocationType": "Event",
                "Payload": json.dumps(payload).encode("utf-8"),
            },
        )
        FunctionInvoker(client).invoke_async("stack-evaluate", payload)
        stub.assert_no_pending_responses()


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        ({"StatusCode": 200}, InvalidRequest),
        ("TooManyRequestsException", Throttled),
    ],
    ids=["not-queued", "throttled"],
)
def test_a_shard_not_queued_is_an_error(answer: Any, error: type[Exception]) -> None:
    client = lambda_client()
    with Stubber(client) as stub:
        if isinstance(answer, dict):
            stub.add_response("invoke", answer)
        else:
            stub.add_client_error("invoke", answer, http_status_code=429)
        with pytest.raises(error):
            FunctionInvoker(client).invoke_async("stack-evaluate", {"shard": 1, "shards": 2})
