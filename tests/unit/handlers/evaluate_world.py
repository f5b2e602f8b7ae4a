"""An in-memory world for the evaluate tick: fakes of each adapter and a runtime over them."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from queue_autoscale.adapters.cloudwatch import OldestAge
from queue_autoscale.adapters.ecs import ServiceRef, ServiceStatus
from queue_autoscale.adapters.errors import AdapterError, StateConflict
from queue_autoscale.adapters.eventbridge import DecisionEvent, EntryFailure
from queue_autoscale.adapters.sqs import QueueDepth
from queue_autoscale.controller.runtime import EvaluateRuntime
from queue_autoscale.core import CounterRow
from queue_autoscale.settings import EvaluateSettings

NOW = 1_763_000_000.0
SECOND = int(NOW)


class Clock:
    """A clock that only moves when the handler sleeps."""

    def __init__(self) -> None:
        self.now = NOW
        self.naps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.naps.append(seconds)
        self.now += seconds


class FakeSqs:
    def __init__(self) -> None:
        self.depths: dict[str, QueueDepth | AdapterError] = {}

    def depth(self, name: str) -> QueueDepth:
        answer = self.depths[name]
        if isinstance(answer, AdapterError):
            raise answer
        return answer


class FakeOldest:
    def __init__(self) -> None:
        self.ages: dict[str, OldestAge | None] = {}
        self.asked: list[list[str]] = []
        """The queue names of each GetMetricData."""

    def oldest_ages(self, names: Sequence[str], now: float) -> dict[str, OldestAge | None]:
        self.asked.append(list(names))
        return {name: self.ages.get(name) for name in names}


class FakeEcs:
    def __init__(self) -> None:
        self.services: dict[ServiceRef, ServiceStatus | AdapterError] = {}
        self.updates: list[tuple[ServiceRef, int]] = []
        self.update_error: AdapterError | None = None

    def describe(self, refs: Sequence[ServiceRef]) -> dict[ServiceRef, Any]:
        return {ref: self.services[ref] for ref in refs}

    def set_desired(self, ref: ServiceRef, desired: int) -> int:
        if self.update_error:
            raise self.update_error
        self.updates.append((ref, desired))
        status = self.services[ref]
        if isinstance(status, ServiceStatus):
            self.services[ref] = ServiceStatus(status.running, desired, 0, False, "ACTIVE")
        return desired


class FakeTable:
    def __init__(self) -> None:
        self.rows: dict[str, list[CounterRow]] = {}
        self.states: dict[str, dict[str, Any]] = {}
        self.models: dict[str, dict[str, Any]] = {}
        self.locks: dict[int, tuple[str, float]] = {}
        """Shard index -> (owner, held until)."""
        self.claims: dict[int, int] = {}
        """Shard index -> the due time of its last claimed tick (epoch ms)."""
        self.read_error: AdapterError | None = None

    def read_documents(self, queues: Sequence[str]) -> dict[str, tuple[Any, Any]]:
        if self.read_error:
            raise self.read_error
        return {queue: (self.states.get(queue), self.models.get(queue)) for queue in queues}

    def counter_rows(self, queue: str, first: int, last: int) -> list[CounterRow]:
        return [row for row in self.rows.get(queue, []) if first <= row.second <= last]

    def write_state(self, queue: str, state: Mapping[str, Any], expected_version: int) -> int:
        self.states[queue] = {**state, "version": expected_version + 1}
        return expected_version + 1

    def acquire_lock(self, shard: str, index: int, owner: str, now: float, until: float) -> None:
        held = self.locks.get(index)
        if held and held[0] != owner and held[1] >= now:
            raise StateConflict("PutItem", f"shard {index}'s lock is held")
        self.locks[index] = (owner, until)

    def claim_tick(self, shard: str, index: int, due_ms: int, now: float) -> None:
        if self.claims.get(index, -1) >= due_ms:
            raise StateConflict("PutItem", f"shard {index}'s tick {due_ms} was claimed")
        self.claims[index] = due_ms

    def release_lock(self, shard: str, index: int, owner: str, now: float) -> None:
        if self.locks.get(index, (owner, 0.0))[0] == owner:
            self.locks[index] = (owner, now)


class FakeArchive:
    def __init__(self) -> None:
        self.logs: list[list[dict[str, Any]]] = []

    def put_decisions(self, at: float, tick_id: str, records: Iterable[Mapping[str, Any]]) -> str:
        self.logs.append([dict(record) for record in records])
        return tick_id


class FakeEvents:
    def __init__(self) -> None:
        self.published: list[DecisionEvent] = []
        self.refuse: set[str] = set()

    def publish(self, events: Sequence[DecisionEvent]) -> list[EntryFailure]:
        self.published.extend(events)
        return [
            EntryFailure(index, "InternalFailure", "no")
            for index, event in enumerate(events)
            if event.detail_type in self.refuse
        ]


class Metrics:
    def __init__(self) -> None:
        self.published: list[tuple[str, dict[str, float]]] = []

    def __call__(self, queue: str, values: Mapping[str, float]) -> None:
        self.published.append((queue, dict(values)))

    def last(self, queue: str) -> dict[str, float]:
        return [values for name, values in self.published if name == queue][-1]


class FleetMetrics:
    """Records each tick's fleet metrics (what emf_fleet_metrics would print)."""

    def __init__(self) -> None:
        self.published: list[dict[str, float]] = []

    def __call__(self, values: Mapping[str, float]) -> None:
        self.published.append(dict(values))


ORDERS = ServiceRef("workers", "orders")


def build(
    interval: float = 30,
    global_dry_run: bool = False,
    others: Sequence[str] = (),
    mode: str = "loop",
    **queue: Any,
) -> EvaluateRuntime:
    """A runtime over fakes: queue `orders` (with `queue`'s config overrides) and `others`,
    each backlogged at 120 visible on 2 running workers (the core scales each up). `mode` is
    $TICK_MODE (these tests drive the minute's loop unless they say otherwise)."""
    configs = [{"queue": "orders", "cluster": "workers", "max_workers": 50, **queue}]
    configs += [{"queue": name, "cluster": "workers", "max_workers": 50} for name in others]
    settings = EvaluateSettings.from_environ(
        {
            "QUEUES_CONFIG": json.dumps(configs),
            "LOAD_TABLE": "load-table",
            "ARCHIVE_BUCKET": "archive-bucket",
            "EVALUATION_INTERVAL_SECONDS": str(interval),
            "DRY_RUN": str(global_dry_run).lower(),
            "TICK_MODE": mode,
        }
    )
    clock = Clock()
    sqs, ecs, table = FakeSqs(), FakeEcs(), FakeTable()
    rows = [CounterRow(second=s, queued=6) for s in range(SECOND - 20, SECOND)]
    rows += [
        CounterRow(second=s, completed=1, busy_ms=1000) for s in range(SECOND - 300, SECOND - 20)
    ]
    for name in ("orders", *others):
        sqs.depths[name] = QueueDepth(visible=120, in_flight=2, delayed=0)
        ecs.services[ServiceRef("workers", name)] = ServiceStatus(2, 2, 0, False, "ACTIVE")
        table.rows[name] = rows
    return EvaluateRuntime(
        settings=settings,
        sqs=sqs,
        oldest=FakeOldest(),
        ecs=ecs,
        table=table,
        archive=FakeArchive(),
        events=FakeEvents(),
        clock=clock,
        sleep=clock.sleep,
        publish_metrics=Metrics(),
        publish_fleet_metrics=FleetMetrics(),
    )
