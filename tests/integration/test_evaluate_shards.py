"""Sharded evaluate on an AWS endpoint: shard invocations with the template's environment tick
every queue once between them, each under its own lock item, and STATE names the shard."""

from __future__ import annotations

from typing import Any

import pytest

from queue_autoscale.adapters.dynamodb import queue_pk, shard_pk
from queue_autoscale.core.shard import shard_of
from queue_autoscale.handlers import evaluate
from tests.integration.test_evaluate import NOW, World, reset_runtime

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("moto")]
__all__ = ["reset_runtime"]  # the fixture, used by name

SHARDS = 2


def item(clients: Any, table: str, pk: str, sk: str) -> dict[str, Any]:
    answer = clients.dynamodb.get_item(
        TableName=table, Key={"pk": {"S": pk}, "sk": {"S": sk}}, ConsistentRead=True
    )
    return dict(answer.get("Item", {}))


def test_each_shard_ticks_its_own_queues_under_its_own_lock(
    kit: Any, clients: Any, function_environ: Any, lambda_context: Any, reset_runtime: Any
) -> None:
    # GIVEN six queues with their services, configured in one evaluate environment
    world = World(kit, clients, function_environ, running=1, max_workers=10)
    others = []
    for index in range(5):
        name = kit.name(f"jobs{index}")
        kit.queue(f"jobs{index}")
        kit.service(world.cluster, name, 1)
        others.append({"queue": name, "cluster": world.cluster, "max_workers": 10})
    world.runtime(*others)
    names = [world.queue, *(config["queue"] for config in others)]

    # WHEN the two shard invocations the dispatcher would start run one tick each
    answers = [
        evaluate.handler({"shard": index, "shards": SHARDS, "once": True}, lambda_context)
        for index in range(SHARDS)
    ]

    # THEN every queue was decided exactly once, by the shard its name hashes to
    decided = {d["queue"]: answer["shard"] for answer in answers for d in answer["decisions"]}
    assert sorted(decided) == sorted(names)
    assert sum(len(answer["decisions"]) for answer in answers) == len(names)
    assert decided == {name: f"{shard_of(name, SHARDS)}/{SHARDS}" for name in names}
    assert all(not d["errors"] for answer in answers for d in answer["decisions"])
    # AND each queue's STATE item names that shard and the tick's time
    for name in names:
        state = item(clients, world.table, queue_pk(name), "STATE")
        assert state["shard"]["S"] == decided[name]
        assert float(state["ticked_at"]["N"]) == NOW
    # AND each shard's lock item was taken by this invocation and released at its end
    for index in range(SHARDS):
        lock = item(clients, world.table, shard_pk(index), "LOCK")
        assert lock["owner"]["S"] == lambda_context.aws_request_id
        assert (lock["shard"]["S"], float(lock["held_until"]["N"])) == (f"{index}/{SHARDS}", NOW)
