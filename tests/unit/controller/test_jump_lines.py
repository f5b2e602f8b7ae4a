"""Where an evaluate clock tick leaves a jump line for the record path (`controller.tick`), and
that a line it cannot store costs that queue an error, never its decision."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from queue_autoscale.adapters.errors import Throttled
from queue_autoscale.controller.tick import run_tick
from queue_autoscale.core.jump import line_from_dict
from queue_autoscale.core.predictive_knobs import move_sigmas
from queue_autoscale.core.shard import WHOLE
from tests.unit.handlers.evaluate_world import NOW, build


class FakeLines:
    def __init__(self) -> None:
        self.lines: dict[str, dict[str, float]] = {}
        self.broken = False

    def put_jump_line(self, queue: str, line: Mapping[str, float]) -> bool:
        if self.broken:
            raise Throttled("PutItem", "slow down", code="ThrottlingException")
        self.lines[queue] = dict(line)
        return True


def test_a_clock_tick_draws_the_line_it_sized_on_where_a_jump_can_help() -> None:
    # GIVEN a queue at a 10 s interval with a 30 s SLA: lead 60 s + interval 10 s is later than
    # its jobs' deadline
    runtime = build(interval=10, sla_seconds=30)
    lines = FakeLines()
    runtime.lines = lines
    # WHEN the clock ticks
    (orders,) = run_tick(runtime, NOW + 0.4, 10.0, WHOLE)
    # THEN it leaves the line it sized on, counted from the tick's second
    line = line_from_dict(lines.lines["orders"])
    assert orders.decision is not None
    assert (line.since, line.ticked_at, line.expires_at) == (NOW, NOW + 0.4, NOW + 20.4)
    assert line.rate == orders.decision.arrival_rate and line.dispersion >= 1.0
    assert line.sigmas == pytest.approx(move_sigmas(1.0))


def test_no_line_where_the_next_clock_ticks_order_still_lands_in_time() -> None:
    # a 300 s SLA: an order placed a tick late still lands before the onset's jobs are due
    runtime = build(interval=10, sla_seconds=300)
    runtime.lines = FakeLines()
    (outcome,) = run_tick(runtime, NOW, 10.0, WHOLE)
    assert outcome.decision is not None and not outcome.errors
    assert runtime.lines.lines == {}


@pytest.mark.parametrize("policy", ["seed-hybrid"])
def test_a_policy_that_keeps_the_clock_draws_no_line(policy: str) -> None:
    runtime = build(interval=10, sla_seconds=30)
    runtime.lines, runtime.policy = FakeLines(), policy
    run_tick(runtime, NOW, 10.0, WHOLE)
    assert runtime.lines.lines == {}


def test_a_line_not_stored_is_the_queues_error_and_the_tick_still_acts() -> None:
    runtime = build(interval=10, sla_seconds=30)
    lines = FakeLines()
    lines.broken = True
    runtime.lines = lines
    (outcome,) = run_tick(runtime, NOW, 10.0, WHOLE)
    assert outcome.applied and outcome.decision is not None and outcome.decision.target > 2
    assert outcome.errors == [
        "jump line not stored: PutItem failed (ThrottlingException): slow down"
    ]
