"""Sharded ticks: every queue ticked by exactly one shard per interval, none dropped when the
shard count changes, each shard under its own lock, the dispatcher starting the others, and
per-queue writes and UpdateService calls running concurrently within a shard, bounded."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Mapping
from typing import Any, cast

import pytest
from pydantic import ValidationError

from infra.template import load_template
from queue_autoscale.adapters.ecs import ServiceRef
from queue_autoscale.adapters.errors import Throttled
from queue_autoscale.controller import shards, tick
from queue_autoscale.controller.request import parse_request
from queue_autoscale.core.shard import DEFAULT_MAX_SHARDS, Shard, shard_of
from queue_autoscale.handlers import evaluate
from tests.unit.handlers.conftest import FakeLambdaContext
from tests.unit.handlers.evaluate_world import NOW, FakeEcs, build

QUEUES = ["orders"] + [f"jobs-{index:02d}" for index in range(1, 40)]
INTERVAL = 30.0


def world(**settings: Any) -> Any:
    """40 backlogged queues (orders plus QUEUES[1:]) at a 30 s interval."""
    runtime = build(interval=INTERVAL, others=QUEUES[1:])
    if settings:
        runtime.settings = runtime.settings.model_copy(update=settings)
    return runtime


def tick_all_shards(runtime: Any, count: int, now: float) -> Counter[str]:
    """Run every shard of `count` once at `now`; how often each queue was decided."""
    decided: Counter[str] = Counter()
    for index in range(count):
        for outcome in tick.run_tick(runtime, now, shard=Shard(index, count)):
            assert outcome.decision is not None, outcome.errors
            decided[outcome.queue] += 1
    return decided


def every_queue(runtime: Any) -> set[str]:
    return {config.queue for config in runtime.queues(NOW)}


def test_the_shards_of_one_tick_decide_every_queue_once() -> None:
    # GIVEN 40 queues over 3 shards
    runtime = world()
    # WHEN every shard ticks
    decided = tick_all_shards(runtime, 3, NOW)
    # THEN each queue was decided exactly once, each by its own shard, and scaled once
    assert set(decided) == every_queue(runtime)
    assert set(decided.values()) == {1}
    updates = Counter(ref.service for ref, _ in runtime.ecs.updates)
    assert set(updates.values()) == {1} and len(updates) == 40
    for queue, state in runtime.table.states.items():
        assert state["shard"] == f"{shard_of(queue, 3)}/3"


@pytest.mark.parametrize(("before", "after"), [(3, 4), (4, 3), (1, 5), (5, 1)])
def test_no_queue_is_dropped_or_doubled_when_the_shard_count_changes(
    before: int, after: int
) -> None:
    # GIVEN a tick with `before` shards
    runtime = world()
    first = tick_all_shards(runtime, before, NOW)
    # WHEN the next interval's tick has `after` shards
    second = tick_all_shards(runtime, after, NOW + INTERVAL)
    # THEN both ticks decided every queue exactly once
    assert first == second == Counter(dict.fromkeys(every_queue(runtime), 1))
    assert {state["shard"] for state in runtime.table.states.values()} <= {
        f"{index}/{after}" for index in range(after)
    }


def test_a_new_layout_leaves_queues_the_old_one_ticked_this_interval() -> None:
    # GIVEN the 3-shard layout ticked every queue, and a 4-shard layout starts 10 s later
    runtime = world()
    tick_all_shards(runtime, 3, NOW)
    updates, events = len(runtime.ecs.updates), len(runtime.events.published)
    # WHEN the 4 new shards tick within the same interval
    late = [tick.run_tick(runtime, NOW + 10, shard=Shard(i, 4)) for i in range(4)]
    # THEN none of them ticks, scales or publishes a queue the old layout just ticked
    assert late == [[], [], [], []]
    assert (len(runtime.ecs.updates), len(runtime.events.published)) == (updates, events)
    # and one interval on, the new layout takes every queue over, once each
    assert tick_all_shards(runtime, 4, NOW + INTERVAL) == Counter(
        dict.fromkeys(every_queue(runtime), 1)
    )


class SlowEcs(FakeEcs):
    """UpdateService takes 50 ms and counts how many run at once."""

    def __init__(self, inner: FakeEcs, failing: str) -> None:
        super().__init__()
        self.services = inner.services
        self.failing = failing
        self.active = 0
        self.most = 0
        self.lock = threading.Lock()

    def set_desired(self, ref: ServiceRef, desired: int) -> int:
        with self.lock:
            self.active += 1
            self.most = max(self.most, self.active)
        try:
            time.sleep(0.05)
            if ref.service == self.failing:
                raise Throttled("UpdateService", "Rate exceeded", resource=ref.service)
            return super().set_desired(ref, desired)
        finally:
            with self.lock:
                self.active -= 1


def test_updates_run_concurrently_within_a_shard_bounded_and_a_failure_stays_its_queues() -> None:
    # GIVEN 40 queues that all scale, UpdateService taking 50 ms, one of them throttled
    runtime = world()
    runtime.max_concurrency = 8
    runtime.ecs = SlowEcs(runtime.ecs, failing="jobs-07")
    # WHEN one (unsharded) tick runs
    outcomes = {outcome.queue: outcome for outcome in tick.run_tick(runtime, NOW)}
    # THEN the calls overlapped, never more than the pool's 8 at once
    assert 1 < runtime.ecs.most <= 8
    # and only the throttled queue carries the error; the other 39 scaled
    assert [q for q, o in outcomes.items() if o.errors] == ["jobs-07"]
    assert "Rate exceeded" in outcomes["jobs-07"].errors[0]
    assert sum(outcome.applied for outcome in outcomes.values()) == 39


def test_a_shard_waits_for_its_lock_then_gives_its_minute_up() -> None:
    # GIVEN shard 1/3's lock held by an earlier invocation until a minute from now
    runtime = world()
    runtime.table.locks[1] = ("earlier", NOW + 60)
    # WHEN another invocation of shard 1/3 starts
    result = shards.run_shard(runtime, Shard(1, 3), owner="later", max_ticks=1)
    # THEN it polled for one interval, ran no tick, and left the lock with its holder
    assert (result.locked, result.ticks) == (False, [])
    assert result.errors == ["shard 1/3: lock held by another invocation"]
    assert sum(runtime.clock.naps) == pytest.approx(INTERVAL, abs=shards.LOCK_POLL_SECONDS)
    assert runtime.table.locks[1] == ("earlier", NOW + 60)
    # and another shard's lock is its own: shard 2/3 runs meanwhile
    assert shards.run_shard(runtime, Shard(2, 3), owner="other", max_ticks=1).locked


def test_a_shard_whose_lock_cannot_be_written_publishes_its_queues_undecided() -> None:
    # GIVEN the lock table refusing every write (the loop mode's lock, not its holder)
    runtime = world()

    def refused(*_args: Any) -> None:
        raise Throttled("PutItem", "Rate exceeded")

    runtime.table.acquire_lock = refused
    # WHEN shard 1/3 starts its minute
    result = shards.run_shard(runtime, Shard(1, 3), owner="me", max_ticks=1)
    # THEN it ticks nothing, and its queues are the fleet's UndecidedQueues (the queue-silent
    # alarm's metric: the invocation logs, so only this says nothing decides them)
    assert (result.locked, result.ticks) == (False, [])
    owned = sum(1 for q in QUEUES if shard_of(q, 3) == 1)
    assert owned > 0
    assert runtime.publish_fleet_metrics.published == [{"UndecidedQueues": float(owned)}]
    # AND a lock another invocation holds publishes nothing: its holder ticks the shard
    held = world()
    held.table.locks[1] = ("earlier", NOW + 60)
    shards.run_shard(held, Shard(1, 3), owner="later", max_ticks=1)
    assert held.publish_fleet_metrics.published == []


def test_a_shard_takes_a_lock_released_while_it_waits() -> None:
    runtime = world()
    runtime.table.locks[0] = ("earlier", NOW + 5)  # the previous minute ends in 5 s
    result = shards.run_shard(runtime, Shard(0, 2), owner="next", max_ticks=1)
    assert result.locked and len(result.ticks) == 1
    assert {o.queue for o in result.ticks[0]} == {q for q in QUEUES if shard_of(q, 2) == 0}
    assert runtime.table.locks[0][0] == "next"  # released at its end, by its owner
    assert runtime.table.locks[0][1] == runtime.clock()


class FakeInvoker:
    def __init__(self, refuse: set[int] = frozenset()) -> None:  # type: ignore[assignment]
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.refuse = refuse
        self.lock = threading.Lock()

    def invoke_async(self, function_name: str, payload: Mapping[str, Any]) -> None:
        if payload["shard"] in self.refuse:
            raise Throttled("Invoke", "Rate exceeded", resource=function_name)
        with self.lock:
            self.calls.append((function_name, dict(payload)))


def test_the_dispatcher_starts_the_other_shards_and_ticks_shard_zero() -> None:
    # GIVEN a deployment fixed at 3 shards
    runtime = world(shards=3)
    runtime.invoker = FakeInvoker()
    # WHEN the scheduled invocation runs
    result = shards.dispatch(runtime, "stack-evaluate", {"once": True}, owner="o", max_ticks=1)
    # THEN it queued shards 1 and 2 of 3 with the minute's options, and ticked shard 0's queues
    assert sorted(runtime.invoker.calls, key=lambda call: call[1]["shard"]) == [
        ("stack-evaluate", {"once": True, "shard": 1, "shards": 3}),
        ("stack-evaluate", {"once": True, "shard": 2, "shards": 3}),
    ]
    assert (result.shard, result.started, result.errors) == (Shard(0, 3), [1, 2], [])
    assert {o.queue for o in result.ticks[0]} == {q for q in QUEUES if shard_of(q, 3) == 0}


def test_a_shard_that_cannot_be_started_is_reported_and_shard_zero_still_ticks() -> None:
    runtime = world(shards=3)
    runtime.invoker = FakeInvoker(refuse={2})
    result = shards.dispatch(runtime, "stack-evaluate", {}, owner="o", max_ticks=1)
    assert result.started == [1]
    assert len(result.errors) == 1 and "shard 2/3 not started" in result.errors[0]
    assert result.ticks and result.ticks[0]
    # AND shard 2's queues count as undecided in the fleet metrics the silent alarm reads
    shard_two = sum(1 for q in QUEUES if shard_of(q, 3) == 2)
    assert shard_two > 0
    undecided = [m["UndecidedQueues"] for m in runtime.publish_fleet_metrics.published]
    assert undecided[0] == shard_two
    assert undecided[1:] == [0.0]  # shard 0's own tick decided all of its queues


def test_without_a_lambda_client_every_other_shards_queues_count_as_undecided() -> None:
    runtime = world(shards=3)
    runtime.invoker = None
    shards.dispatch(runtime, "stack-evaluate", {}, owner="o", max_ticks=1)
    others = sum(1 for q in QUEUES if shard_of(q, 3) != 0)
    assert runtime.publish_fleet_metrics.published[0] == {"UndecidedQueues": float(others)}


def test_the_shard_count_is_derived_from_the_queue_count_and_capped() -> None:
    # 40 queues at a 30 s interval fit one shard; at 5 s on 128 MB they need 3, capped at 2
    assert shards.plan_for(world()).count == 1
    starved = shards.plan_for(world(memory_mb=128, max_shards=2, evaluation_interval_seconds=5))
    assert starved.count == 2 and starved.needed > 2 and not starved.fits


def test_the_handler_runs_the_shard_its_event_names() -> None:
    runtime = world()
    evaluate.set_runtime(runtime)
    try:
        answer = evaluate.handler(
            {"shard": 1, "shards": 2, "once": True}, cast(Any, FakeLambdaContext())
        )
    finally:
        evaluate.set_runtime(None)
    assert answer["shard"] == "1/2"
    assert {d["queue"] for d in answer["decisions"]} == {q for q in QUEUES if shard_of(q, 2) == 1}


@pytest.mark.parametrize(
    "event",
    [{"shard": 1}, {"shards": 2}, {"shard": 2, "shards": 2}, {"shard": -1, "shards": 2}],
    ids=["shard-alone", "shards-alone", "shard-past-end", "negative"],
)
def test_an_impossible_shard_request_is_refused(event: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        parse_request(event)


def test_the_templates_shard_cap_is_the_codes_default() -> None:
    parameter = load_template()["Parameters"]["MaxEvaluateShards"]
    assert int(parameter["Default"]) == DEFAULT_MAX_SHARDS


class FlakyEvents:
    """PutEvents that takes 20 ms, counts overlapping calls, and fails the call carrying
    `failing`'s events."""

    def __init__(self, failing: str) -> None:
        self.failing = failing
        self.published: list[Any] = []
        self.calls = 0
        self.active = 0
        self.most = 0
        self.lock = threading.Lock()

    def publish(self, events: Any) -> list[Any]:
        with self.lock:
            self.calls += 1
            self.active += 1
            self.most = max(self.most, self.active)
        try:
            time.sleep(0.02)
            if any(event.detail["queue"] == self.failing for event in events):
                raise Throttled("PutEvents", "Rate exceeded", resource="default")
            with self.lock:
                self.published.extend(events)
            return []
        finally:
            with self.lock:
                self.active -= 1


def test_decision_events_go_out_concurrently_and_a_failed_call_is_its_queues_error() -> None:
    # GIVEN 40 scaling queues (3 events each: decided, scaled, breach predicted) and the call
    # carrying jobs-20's events fails
    runtime = world()
    runtime.max_concurrency = 4
    runtime.events = FlakyEvents(failing="jobs-20")
    # WHEN a tick publishes
    outcomes = {outcome.queue: outcome for outcome in tick.run_tick(runtime, NOW)}
    # THEN the calls overlapped, bounded by the pool, 10 events a call
    assert runtime.events.calls == 12 and 1 < runtime.events.most <= 4
    # AND only the queues whose events rode in the failed call carry its error
    failed = {q for q, o in outcomes.items() if o.errors}
    assert "jobs-20" in failed and 1 <= len(failed) <= 10
    assert all("decision events not published" in outcomes[q].errors[0] for q in failed)
    # (a queue whose events straddle two calls may have some out and still carry the error)
    published = {event.detail["queue"] for event in runtime.events.published}
    assert set(QUEUES) - failed <= published and "jobs-20" not in published
