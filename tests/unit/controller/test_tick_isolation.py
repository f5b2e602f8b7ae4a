"""One queue's trouble stays its own: a slow or broken queue never takes the others' decisions,
metrics or decision log with it, and the tick publishes what it has within its budget."""

from __future__ import annotations

import dataclasses
import io
import json
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from queue_autoscale.adapters.ecs import ServiceRef
from queue_autoscale.adapters.sqs import QueueDepth
from queue_autoscale.controller import tick
from queue_autoscale.core import model_to_dict
from queue_autoscale.core.models import TrendModel
from queue_autoscale.telemetry import logger
from tests.unit.handlers.evaluate_world import NOW, FakeEcs, FakeSqs, build

BUDGET_SECONDS = 0.6
HANG_SECONDS = 10.0


class HangingSqs(FakeSqs):
    """Depth reads of `slow` block until released (a call stuck in retries and timeouts)."""

    def __init__(self, inner: FakeSqs, release: threading.Event) -> None:
        super().__init__()
        self.depths = inner.depths
        self.release = release

    def depth(self, name: str) -> QueueDepth:
        if name == "slow":
            self.release.wait(HANG_SECONDS)
        return super().depth(name)


class HangingEcs(FakeEcs):
    """UpdateService of the `slow` service blocks until released."""

    def __init__(self, inner: FakeEcs, release: threading.Event) -> None:
        super().__init__()
        self.services = inner.services
        self.release = release

    def set_desired(self, ref: ServiceRef, desired: int) -> int:
        if ref.service == "slow":
            self.release.wait(HANG_SECONDS)
        return super().set_desired(ref, desired)


@pytest.fixture
def release() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()  # let the stuck threads finish


def timed_tick(runtime: Any) -> tuple[dict[str, tick.QueueOutcome], float]:
    started = time.monotonic()
    outcomes = tick.run_tick(runtime, NOW)
    return {outcome.queue: outcome for outcome in outcomes}, time.monotonic() - started


def published_queues(runtime: Any) -> tuple[set[str], set[str], Sequence[str]]:
    metrics = {queue for queue, _ in runtime.publish_metrics.published}
    (log,) = runtime.archive.logs
    return (
        metrics,
        {line["queue"] for line in log},
        [e.detail["queue"] for e in runtime.events.published],
    )


def test_a_queue_whose_reads_hang_holds_while_the_others_scale(release: threading.Event) -> None:
    # GIVEN two backlogged queues, and the depth read of `slow` hangs
    runtime = build(others=["slow"])
    runtime.sqs = HangingSqs(runtime.sqs, release)
    runtime.tick_budget_seconds = BUDGET_SECONDS
    # WHEN one tick runs
    outcomes, seconds = timed_tick(runtime)
    # THEN it ends within its budget, not the hang's
    assert seconds < BUDGET_SECONDS + 0.5
    # AND `orders` scaled up as if nothing happened
    assert outcomes["orders"].applied and outcomes["orders"].errors == []
    # AND `slow` holds on its unread depth, with the error counted
    slow = outcomes["slow"]
    assert slow.decision is not None and slow.decision.action == "hold"
    assert "visible unknown" in slow.decision.reason
    assert any("read budget" in error for error in slow.errors)
    assert runtime.publish_metrics.last("slow")["ControllerErrors"] == len(slow.errors)
    # AND both queues' metrics, decision-log lines and decision events were published
    metrics, logged, evented = published_queues(runtime)
    assert metrics == logged == set(evented) == {"orders", "slow"}


def test_a_queue_whose_update_hangs_does_not_take_the_others_decisions(
    release: threading.Event,
) -> None:
    # GIVEN two backlogged queues, and UpdateService of `slow` hangs
    runtime = build(others=["slow"])
    runtime.ecs = HangingEcs(runtime.ecs, release)
    runtime.tick_budget_seconds = BUDGET_SECONDS
    # WHEN one tick runs
    outcomes, seconds = timed_tick(runtime)
    # THEN it publishes within its budget
    assert seconds < BUDGET_SECONDS + 0.5
    assert outcomes["orders"].applied and outcomes["orders"].decision is not None
    # AND `slow` is left out of this tick with its error counted, not silently dropped
    assert outcomes["slow"].decision is None
    assert outcomes["slow"].errors == ["evaluation not finished within the tick's budget"]
    assert runtime.publish_metrics.last("slow") == {"ControllerErrors": 1.0}
    metrics, logged, evented = published_queues(runtime)
    assert metrics == logged == {"orders", "slow"}
    assert set(evented) == {"orders"}
    # AND the tick's fleet metrics see it: one queue undecided, its error counted, the highest
    # load and usage those of `orders`, the one decided; and the heartbeat
    orders = outcomes["orders"].decision
    (fleet,) = runtime.publish_fleet_metrics.published
    assert fleet == {
        "MaxLoadRatio": orders.load_ratio,
        "MaxSlaUsage": orders.sla_usage,
        "MaxFleetUsage": 2 / 50,
        "QueueErrors": 1.0,
        "UndecidedQueues": 1.0,
    }


def test_fleet_metrics_take_the_highest_value_and_count_errors_over_the_queues() -> None:
    # GIVEN a tick over three queues: two decided with different loads, one left undecided
    runtime = build(others=["light", "broken"])
    runtime.sqs.depths["light"] = QueueDepth(visible=0, in_flight=0, delayed=0)
    runtime.table.states["broken"] = {"version": "not a number", "samples": 7}
    # WHEN the tick runs
    outcomes, _ = timed_tick(runtime)
    # THEN each maximum is that of the queue holding it, not a sum or a mean
    decided = [outcomes[name].decision for name in ("orders", "light")]
    assert all(decided)
    (fleet,) = runtime.publish_fleet_metrics.published
    assert fleet["MaxLoadRatio"] == max(d.load_ratio for d in decided if d)
    assert fleet["MaxSlaUsage"] == max(d.sla_usage for d in decided if d)
    # AND the undecided queue is counted, with its error
    assert (fleet["UndecidedQueues"], fleet["QueueErrors"]) == (1, 1)
    # AND a tick with no queue still sends MaxLoadRatio (0), the heartbeat: the controller is alive
    assert tick.fleet_metrics([]) == {
        "MaxLoadRatio": 0.0,
        "MaxSlaUsage": 0.0,
        "MaxFleetUsage": 0.0,
        "QueueErrors": 0.0,
        "UndecidedQueues": 0.0,
    }


def test_a_queue_whose_evaluation_raises_is_that_queues_error_only() -> None:
    # GIVEN a stored state item of `broken` that is not a state
    runtime = build(others=["broken"])
    runtime.table.states["broken"] = {"version": "not a number", "samples": 7}
    # WHEN one tick runs
    outcomes, _ = timed_tick(runtime)
    # THEN `orders` scales and `broken` reports its failure
    assert outcomes["orders"].applied
    assert outcomes["broken"].decision is None
    assert outcomes["broken"].errors[0].startswith("evaluation failed:")
    assert runtime.publish_metrics.last("broken") == {"ControllerErrors": 1.0}


@pytest.mark.parametrize(
    "model",
    [
        pytest.param({"queue": "orders"}, id="missing-fields"),
        pytest.param({"queue": "orders", "fitted_at": NOW, "level": "fast"}, id="bad-level"),
        pytest.param(
            {"queue": "orders", "fitted_at": NOW, "level": 1.0, "seasonal": [1.0] * 24},
            id="short-seasonal",
        ),
    ],
)
def test_a_malformed_trend_model_costs_only_the_trend_term(model: dict[str, Any]) -> None:
    # GIVEN the same backlogged queue with a good model and with a malformed one
    good = build()
    good.table.models["orders"] = model_to_dict(
        TrendModel("orders", NOW, level=0.0, slope_per_hour=0.0)
    )
    bad = build()
    bad.table.models["orders"] = model
    # WHEN each ticks
    (with_good,) = tick.run_tick(good, NOW)
    (with_bad,) = tick.run_tick(bad, NOW)
    # THEN the malformed model still gets a decision, the same the backlog asks for, and scales
    assert with_bad.decision is not None and with_good.decision is not None
    assert with_bad.decision.target == with_good.decision.target > 2
    assert with_bad.applied
    # AND the unusable model is the one error counted
    (error,) = with_bad.errors
    assert error.startswith("trend model unusable, deciding without it")
    assert bad.publish_metrics.last("orders")["ControllerErrors"] == 1.0


def test_the_minute_loop_gives_each_tick_at_most_the_time_left() -> None:
    # GIVEN a 30 s interval and an invocation with 12 s left (the handler's deadline)
    runtime = build(interval=30)
    budgets: list[float | None] = []
    real = tick.run_tick

    def spy(
        runtime: Any, now: float, budget_seconds: float | None = None, shard: Any = None
    ) -> Any:
        budgets.append(budget_seconds)
        return real(runtime, now, budget_seconds, shard)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tick, "run_tick", spy)
        tick.run(runtime, deadline=runtime.clock() + 12.0)
    # THEN the one tick that fits is budgeted the 12 s, not the 30 s interval
    assert budgets == [12.0]


def test_a_quiet_decision_is_logged_at_debug_and_news_at_info() -> None:
    # GIVEN a tick's outcome for a backlogged queue, which scales it (news)
    runtime = build()
    (outcome,) = tick.run_tick(runtime, NOW)
    assert outcome.decision is not None and outcome.says_something
    quiet = dataclasses.replace(outcome, applied=False, news=False, errors=[])
    assert not quiet.says_something
    lines = io.StringIO()
    handler: Any = logger.registered_handler
    previous = handler.setStream(lines)
    level = logger.log_level  # another test of the session may have changed it
    logger.setLevel("INFO")
    try:
        # WHEN both are published at the functions' log level (INFO)
        tick.publish(runtime, NOW, [outcome])
        tick.publish(runtime, NOW, [quiet])
        with_debug = io.StringIO()
        handler.setStream(with_debug)
        logger.setLevel("DEBUG")
        tick.publish(runtime, NOW, [quiet])
    finally:
        logger.setLevel(level)
        handler.setStream(previous)
    # THEN only the news logs its decision line; the quiet tick's shows only at DEBUG, and
    # both are in the decision log
    logged = [json.loads(line) for line in lines.getvalue().splitlines()]
    decisions = [line for line in logged if line["message"] == "decision"]
    assert [(d["level"], d["target"]) for d in decisions] == [("INFO", outcome.decision.target)]
    (debug,) = [json.loads(line) for line in with_debug.getvalue().splitlines()]
    assert (debug["level"], debug["message"]) == ("DEBUG", "decision")
    assert [len(log) for log in runtime.archive.logs][-3:] == [1, 1, 1]
