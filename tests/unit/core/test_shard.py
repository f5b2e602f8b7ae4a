"""Shard assignment: covers every queue exactly once, is stable across processes, and moves
as few queues as possible when the shard count changes; the shard count fits the interval."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from queue_autoscale.core.shard import (
    Shard,
    TickCost,
    jump_hash,
    partition,
    plan_shards,
    shard_of,
    vcpus_for_memory,
    yields_to,
)

FUNCTIONS = Path(__file__).resolve().parents[3] / "functions"
names = st.lists(st.text(min_size=1, max_size=80), min_size=1, max_size=200, unique=True)
counts = st.integers(min_value=1, max_value=64)


@given(names, counts)
def test_every_queue_is_in_exactly_one_shard(queues: list[str], shards: int) -> None:
    parts = partition(queues, shards)
    assert len(parts) == shards
    seen = Counter(name for part in parts for name in part)
    assert seen == Counter(queues)  # each name once, none dropped, none invented
    for index, part in enumerate(parts):
        shard = Shard(index, shards)
        assert all(shard.owns(name) for name in part)
        assert not any(shard.owns(name) for name in queues if name not in part)


@given(names, counts)
def test_growing_by_one_shard_moves_queues_only_into_the_new_shard(
    queues: list[str], shards: int
) -> None:
    before = {name: shard_of(name, shards) for name in queues}
    after = {name: shard_of(name, shards + 1) for name in queues}
    moved = [name for name in queues if before[name] != after[name]]
    assert all(after[name] == shards for name in moved)
    # and shrinking back moves exactly those queues back, nothing else
    assert all(shard_of(name, shards) == before[name] for name in queues)


@given(counts, st.integers(min_value=0, max_value=1000))
@settings(max_examples=30, deadline=None)
def test_growing_by_one_shard_moves_about_one_in_n_plus_one(shards: int, salt: int) -> None:
    queues = [f"queue-{salt}-{index}" for index in range(4000)]
    moved = sum(1 for name in queues if shard_of(name, shards) != shard_of(name, shards + 1))
    expected = len(queues) / (shards + 1)
    # binomial(4000, 1/(N+1)): 5 standard deviations either side
    spread = 5 * math.sqrt(len(queues) * (1 / (shards + 1)) * (1 - 1 / (shards + 1)))
    assert abs(moved - expected) <= spread


@given(st.integers(min_value=0, max_value=2**64 - 1), counts)
def test_jump_hash_stays_in_range(key: int, buckets: int) -> None:
    assert 0 <= jump_hash(key, buckets) < buckets


def test_shards_are_balanced() -> None:
    sizes = [len(part) for part in partition((f"jobs-{i}" for i in range(10_000)), 8)]
    assert all(abs(size - 1250) <= 5 * math.sqrt(10_000 / 8 * 7 / 8) for size in sizes), sizes


@pytest.mark.parametrize("seed", ["0", "1", "random"])
def test_the_assignment_is_the_same_in_another_process(seed: str) -> None:
    # GIVEN queue names, assigned here and in fresh interpreters with other hash seeds
    queues = [f"orders-{i}" for i in range(300)] + ["ünïcode-q", "a" * 80]
    code = (
        "import json, sys; from queue_autoscale.core.shard import shard_of; "
        "names = json.load(sys.stdin); "
        "print(json.dumps({n: [shard_of(n, k) for k in (1, 2, 3, 7, 16)] for n in names}))"
    )
    env = {**os.environ, "PYTHONPATH": str(FUNCTIONS), "PYTHONHASHSEED": seed}
    answer = subprocess.run(
        [sys.executable, "-c", code],
        input=json.dumps(queues),
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    # THEN every process puts every queue in the same shard
    theirs = json.loads(answer.stdout)
    assert theirs == {n: [shard_of(n, k) for k in (1, 2, 3, 7, 16)] for n in queues}


@pytest.mark.parametrize(
    ("index", "count"), [(-1, 2), (2, 2), (0, 0)], ids=["negative", "past-end", "no-shards"]
)
def test_an_impossible_shard_is_refused(index: int, count: int) -> None:
    with pytest.raises(ValueError, match="need 0 <= shard < shards"):
        Shard(index, count)


@pytest.mark.parametrize(
    ("other", "ticked_at", "now", "yields"),
    [
        (None, None, 100.0, False),
        ("1/3", 95.0, 100.0, True),
        ("1/3", 80.0, 100.0, False),
        ("0/4", 99.0, 100.0, False),
    ],
    ids=["never-ticked", "another-shard-just-now", "another-shard-an-interval-ago", "itself"],
)
def test_a_shard_yields_a_queue_another_shard_ticked_this_interval(
    other: str | None, ticked_at: float | None, now: float, yields: bool
) -> None:
    assert yields_to(other, ticked_at, Shard(0, 4), now, interval_seconds=15) is yields


def test_the_plan_derives_shards_from_the_queue_count_and_the_tick_cost() -> None:
    cost = TickCost(cpu_seconds=0.01, calls=4, call_seconds=0.02)
    # 0.01 s CPU + 4 * 0.02 / 8 = 0.02 s a queue; half of a 12 s budget ticks 300 queues
    small = plan_shards(250, budget_seconds=12, max_shards=10, concurrency=8, cost=cost)
    big = plan_shards(10_000, budget_seconds=12, max_shards=50, concurrency=8, cost=cost)
    capped = plan_shards(10_000, budget_seconds=12, max_shards=10, concurrency=8, cost=cost)
    fixed = plan_shards(10_000, budget_seconds=12, max_shards=10, fixed=3, cost=cost)
    assert (small.capacity, small.count, small.fits) == (300, 1, True)
    assert (big.count, big.needed, big.fits) == (34, 34, True)
    assert (capped.count, capped.needed, capped.fits) == (10, 34, False)
    assert (fixed.count, fixed.fixed) == (3, True)
    assert plan_shards(0, budget_seconds=12, max_shards=10).count == 1


def test_a_smaller_function_gets_a_share_of_a_vcpu() -> None:
    assert vcpus_for_memory(1769) == 1.0
    assert vcpus_for_memory(3538) == 1.0
    assert vcpus_for_memory(512) == pytest.approx(0.2894, abs=1e-4)
    assert vcpus_for_memory(None) == 1.0
