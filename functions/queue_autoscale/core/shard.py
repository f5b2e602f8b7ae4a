"""Which evaluate shard ticks which queue, and how many shards a fleet of queues needs.

A queue belongs to shard `jump_hash(blake2b(name), N)`: Lamping and Veach's jump consistent
hash ("A Fast, Minimal Memory, Consistent Hash Algorithm", 2014) over a 64-bit digest of the
queue name. The digest is hashlib's, not Python's salted `hash()`, so every process, every
container and every Python version puts a queue in the same shard. Going from N to N + 1
shards moves only the queues that land in the new shard N (about 1/(N + 1) of them); going
from N + 1 to N moves only shard N's queues. Pure: no I/O, no clock.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable
from dataclasses import dataclass

_MASK64 = (1 << 64) - 1
_JUMP_MULTIPLIER = 2862933555777941757
"""The 64-bit linear congruential step of the paper's reference implementation."""

MAX_SHARDS = 256
"""The most shards a deployment may ask for."""
DEFAULT_MAX_SHARDS = 48
"""The template's MaxEvaluateShards default: the cap on derived shards. 10,000 queues at the
default 10 s interval need 37 at 1769 MB (one vCPU); 48 leaves room for about 13,000."""
LAMBDA_FULL_VCPU_MB = 1769
"""Lambda memory size at which a function gets one full vCPU (CPU scales with memory)."""


def shard_key(name: str) -> int:
    """A stable unsigned 64-bit key for a queue name (the first 8 bytes of its BLAKE2b)."""
    return int.from_bytes(hashlib.blake2b(name.encode("utf-8"), digest_size=8).digest(), "big")


def jump_hash(key: int, buckets: int) -> int:
    """The bucket in [0, buckets) of a 64-bit key, by jump consistent hashing."""
    if buckets < 1:
        raise ValueError(f"buckets must be >= 1, got {buckets}")
    key &= _MASK64
    bucket, jump = -1, 0
    while jump < buckets:
        bucket = jump
        key = (key * _JUMP_MULTIPLIER + 1) & _MASK64
        jump = int((bucket + 1) * (float(1 << 31) / float((key >> 33) + 1)))
    return bucket


def shard_of(name: str, shards: int) -> int:
    """The shard index in [0, shards) that ticks the queue `name`."""
    return jump_hash(shard_key(name), shards)


@dataclass(frozen=True, slots=True)
class Shard:
    """One of `count` evaluate shards: it ticks the queues whose shard_of is `index`."""

    index: int = 0
    count: int = 1

    def __post_init__(self) -> None:
        if self.count < 1 or not 0 <= self.index < self.count:
            raise ValueError(f"shard {self.index} of {self.count}: need 0 <= shard < shards")

    @property
    def label(self) -> str:
        """`index/count`, as logs, lock items and STATE items name the shard."""
        return f"{self.index}/{self.count}"

    def owns(self, name: str) -> bool:
        """True when this shard ticks the queue `name`."""
        return self.count == 1 or shard_of(name, self.count) == self.index


WHOLE = Shard()
"""The single shard that owns every queue (no sharding)."""


def partition(names: Iterable[str], shards: int) -> list[list[str]]:
    """The names each of `shards` shards ticks, in the order given (every name exactly once)."""
    parts: list[list[str]] = [[] for _ in range(shards)]
    for name in names:
        parts[shard_of(name, shards)].append(name)
    return parts


def yields_to(
    other_label: str | None,
    other_ticked_at: float | None,
    mine: Shard,
    now: float,
    interval_seconds: float,
) -> bool:
    """True when another shard ticked this queue less than 0.9 interval ago, so this shard
    leaves it this tick (two shard layouts overlap only while N changes; seconds)."""
    if other_label is None or other_ticked_at is None or other_label == mine.label:
        return False
    return now - other_ticked_at < 0.9 * interval_seconds


@dataclass(frozen=True, slots=True)
class TickCost:
    """What one queue costs a tick (benchmarks/results/controller_tick.md measures it)."""

    cpu_seconds: float = 0.007
    """Controller CPU per queue on one full vCPU: botocore, the core, EMF (measured 6.8-6.9 ms
    at 100 and 1,000 queues)."""
    calls: float = 4.0
    """Latency-bound AWS calls per queue: GetQueueAttributes, counters Query, STATE PutItem,
    UpdateService when scaling, and its share of the batched reads and PutEvents."""
    call_seconds: float = 0.03
    """A conservative per-call latency on AWS (single-digit to tens of milliseconds)."""

    def per_queue_seconds(self, vcpus: float, concurrency: int) -> float:
        """Wall seconds one queue adds to a tick: its CPU on `vcpus`, plus its calls spread over
        `concurrency` threads (summed, not overlapped: a safe upper estimate)."""
        return self.cpu_seconds / vcpus + self.calls * self.call_seconds / max(1, concurrency)


DEFAULT_TICK_COST = TickCost()
HEADROOM = 0.5
"""A shard plans to use half of a tick's decision budget, so slow calls still fit."""


@dataclass(frozen=True, slots=True)
class ShardPlan:
    """How many shards tick `queues` queues, and whether that many fit the interval."""

    queues: int
    count: int
    capacity: int
    """Queues one shard can tick within HEADROOM of its decision budget."""
    needed: int
    """Shards the queue count needs at that capacity (count is less when capped)."""
    fixed: bool
    """True when the count was set by the operator, not derived."""

    @property
    def fits(self) -> bool:
        """True when every shard has at most `capacity` queues to tick (on average)."""
        return self.queues <= self.count * self.capacity


def vcpus_for_memory(memory_mb: int | None) -> float:
    """Lambda vCPUs at a memory size (one at 1,769 MB; a single-threaded tick uses at most one)."""
    if not memory_mb:
        return 1.0
    return min(1.0, memory_mb / LAMBDA_FULL_VCPU_MB)


def plan_shards(
    queues: int,
    *,
    budget_seconds: float,
    max_shards: int,
    fixed: int = 0,
    vcpus: float = 1.0,
    concurrency: int = 16,
    cost: TickCost = DEFAULT_TICK_COST,
) -> ShardPlan:
    """The shard count for `queues` queues: `fixed` when > 0, else enough shards that each
    ticks its queues within HEADROOM of `budget_seconds` (a tick's decision budget), at most
    `max_shards` and never more shards than queues."""
    per_queue = cost.per_queue_seconds(vcpus, concurrency)
    capacity = max(1, math.floor(HEADROOM * budget_seconds / per_queue))
    needed = max(1, math.ceil(queues / capacity))
    if fixed > 0:
        return ShardPlan(queues, fixed, capacity, needed, fixed=True)
    count = max(1, min(needed, max_shards, max(1, queues)))
    return ShardPlan(queues, count, capacity, needed, fixed=False)
