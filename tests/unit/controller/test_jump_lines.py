"""Where an evaluate clock tick leaves a jump line for the record path in the queue's STATE item
(`controller.tick`), and where it leaves none."""

from __future__ import annotations

import pytest

from queue_autoscale.adapters.dynamodb import JUMP_FIELD
from queue_autoscale.adapters.errors import ServiceUnavailable
from queue_autoscale.controller.tick import run_tick
from queue_autoscale.core.jump import line_from_dict
from queue_autoscale.core.predictive_knobs import move_sigmas
from queue_autoscale.core.shard import WHOLE
from tests.unit.handlers.evaluate_world import NOW, FakeTable, build


def stored(table: object, queue: str = "orders") -> dict[str, object]:
    assert isinstance(table, FakeTable)
    return table.states[queue]


def test_a_clock_tick_draws_the_line_it_sized_on_where_a_jump_can_help() -> None:
    # GIVEN a queue at a 10 s interval with a 30 s SLA: lead 60 s + interval 10 s is later than
    # its jobs' deadline
    runtime = build(interval=10, sla_seconds=30)
    runtime.jump_lines = True
    # WHEN the clock ticks the queue for the first time
    run_tick(runtime, NOW - 9.6, 10.0, WHOLE)
    # THEN it draws no line: its windows were watched by no tick before, so they read no rate
    assert JUMP_FIELD not in stored(runtime.table)
    # WHEN the clock ticks again
    (orders,) = run_tick(runtime, NOW + 0.4, 10.0, WHOLE)
    # THEN its STATE item holds the line it sized on, counted from the tick's second
    raw = stored(runtime.table)[JUMP_FIELD]
    assert isinstance(raw, dict)
    line = line_from_dict(raw)
    assert orders.decision is not None and orders.applied
    assert (line.since, line.ticked_at, line.expires_at) == (NOW, NOW + 0.4, NOW + 20.4)
    assert line.rate == orders.decision.arrival_rate and line.dispersion >= 1.0
    assert line.sigmas == pytest.approx(move_sigmas(1.0))


@pytest.mark.parametrize(
    ("sla", "jump_lines", "policy"),
    [
        pytest.param(300, True, "predictive", id="next-clock-tick-lands-in-time"),
        pytest.param(30, False, "predictive", id="no-jump-ticks"),
        pytest.param(30, True, "seed-hybrid", id="policy-keeps-the-clock"),
    ],
)
def test_no_line_where_no_jump_tick_can_help_or_come(
    sla: int, jump_lines: bool, policy: str
) -> None:
    runtime = build(interval=10, sla_seconds=sla)
    runtime.jump_lines, runtime.policy = jump_lines, policy
    run_tick(runtime, NOW - 10.0, 10.0, WHOLE)  # a first tick draws none anywhere
    (outcome,) = run_tick(runtime, NOW, 10.0, WHOLE)
    assert outcome.decision is not None and not outcome.errors
    assert JUMP_FIELD not in stored(runtime.table)


def test_a_tick_that_holds_on_its_inputs_draws_no_line() -> None:
    # GIVEN a queue whose second clock tick drew a line
    runtime = build(interval=10, sla_seconds=30)
    runtime.jump_lines = True
    run_tick(runtime, NOW - 20.0, 10.0, WHOLE)
    run_tick(runtime, NOW - 10.0, 10.0, WHOLE)
    assert JUMP_FIELD in stored(runtime.table)
    # WHEN the next tick cannot read the queue's depth
    runtime.sqs.depths["orders"] = ServiceUnavailable("GetQueueAttributes", "503")  # type: ignore[attr-defined]
    (outcome,) = run_tick(runtime, NOW, 10.0, WHOLE)
    # THEN it holds, and the STATE item it writes holds no line
    assert outcome.decision is not None and not outcome.decision.inputs_ok
    assert JUMP_FIELD not in stored(runtime.table)
