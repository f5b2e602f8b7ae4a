"""record_events' jump test in-process (`ingest.jumps`): which batches ask for a jump tick, and
that no trouble with a line, its table or the tick queue ever fails a message."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, cast

import pytest

from queue_autoscale.adapters.errors import ServiceUnavailable, Throttled
from queue_autoscale.adapters.sqs import SendFailure
from queue_autoscale.core.jump import JumpLine, line_to_dict
from queue_autoscale.demo import sqs_event
from queue_autoscale.handlers import record_events
from queue_autoscale.ingest.runtime import RecordRuntime
from tests.unit.handlers.test_record_events_handler import NOW, FakeTable, runtime

__all__ = ["runtime"]  # the fixture, used by name
SECOND = int(NOW)
LINE = JumpLine(SECOND - 3, 2.0, 1.0, 3.64, ticked_at=SECOND - 2.5, expires_at=SECOND + 17.5)
"""The orders queue's line: 2 jobs/s sized on by the clock tick 3 s ago."""


class FakeLines:
    """The jump lines' three calls: lines on a dict, the queued counts from the runtime's fake
    counter table (what its writes left), with the faults a test sets."""

    def __init__(self, lines: Mapping[str, Mapping[str, Any]], table: FakeTable) -> None:
        self.lines = {queue: dict(line) for queue, line in lines.items()}
        self.table = table
        self.broken: set[str] = set()
        self.calls: list[tuple[str, str]] = []

    def jump_line(self, queue: str) -> dict[str, Any] | None:
        self.calls.append(("get", queue))
        if queue in self.broken:
            raise Throttled("GetItem", "slow down", code="ThrottlingException")
        line = self.lines.get(queue)
        return None if line is None else dict(line)

    def queued(self, queue: str, first_second: int, last_second: int) -> int:
        self.calls.append(("queued", queue))
        return sum(
            counts.get("queued", 0)
            for (name, second), counts in self.table.adds.items()
            if name == queue and first_second <= second <= last_second
        )

    def claim_jump(self, queue: str, since: float, now: float) -> bool:
        self.calls.append(("claim", queue))
        line = self.lines[queue]
        if line.get("since") != since or "fired_at" in line:
            return False
        line["fired_at"] = now
        return True


class FakeTicks:
    def __init__(self) -> None:
        self.sent: list[tuple[Mapping[str, Any], float]] = []
        self.refuse = False
        self.broken = False

    def schedule(self, ticks: Sequence[tuple[Mapping[str, Any], float]]) -> list[SendFailure]:
        if self.broken:
            raise ServiceUnavailable("SendMessageBatch", "503", code="ServiceUnavailable")
        if self.refuse:
            return [SendFailure(index, "KMS.Throttled", "no", False) for index in range(len(ticks))]
        self.sent.extend(ticks)
        return []


def with_jumps(runtime: RecordRuntime, lines: Mapping[str, Mapping[str, Any]]) -> None:
    runtime.jumps = FakeLines(lines, cast("FakeTable", runtime.table))
    runtime.ticks = FakeTicks()


def batch(*events: tuple[str, int, int]) -> dict[str, Any]:
    """One SQS event: a message per (queue, second, count) of queued events."""
    messages = []
    for index, (queue, second, count) in enumerate(events):
        body = [
            {
                "type": "queued",
                "queue": queue,
                "job_id": f"{queue}-{index}-{n}",
                "at": second * 1000,
            }
            for n in range(count)
        ]
        messages.append({"MessageId": f"m{index}", "Body": json.dumps(body)})
    return sqs_event(messages, "arn:aws:sqs:us-east-1:123456789012:events")


def test_arrivals_at_the_rate_sized_on_ask_for_nothing_and_a_jump_asks_once(
    runtime: Any, lambda_context: Any
) -> None:
    with_jumps(runtime, {"orders": line_to_dict(LINE)})
    # 3 s at 2 jobs/s: 6, as sized on
    assert record_events.handler(batch(("orders", SECOND - 1, 6)), lambda_context) == {
        "batchItemFailures": []
    }
    assert runtime.ticks.sent == []
    # 40 more now: 46 in the 3 s counted (to now, the newest event's second being under way)
    # where 6 were expected, far past 6 + 3.64 sqrt(6)
    record_events.handler(batch(("orders", SECOND, 40)), lambda_context)
    ((request, delay),) = runtime.ticks.sent
    assert delay == 0.0
    assert request == {
        "jump": "orders",
        "line": line_to_dict(LINE),
        "arrived": 46,
        "until": NOW,
    }
    # a further burst is counted by its own counters, but the claimed line asks no more
    record_events.handler(batch(("orders", SECOND - 2, 40)), lambda_context)
    assert len(runtime.ticks.sent) == 1
    assert runtime.jumps.calls[-1] == ("get", "orders")  # a fired line: no count, no claim
    assert runtime.table.adds[("orders", SECOND - 2)] == {"queued": 40}


def test_only_arrivals_queued_since_the_lines_second_count(
    runtime: Any, lambda_context: Any
) -> None:
    # GIVEN 100 late events queued before the clock tick's second (it read them, or will have)
    with_jumps(runtime, {"orders": line_to_dict(LINE)})
    record_events.handler(batch(("orders", SECOND - 4, 100), ("orders", SECOND, 8)), lambda_context)
    # THEN only the 8 since count: no jump
    assert runtime.jumps.queued("orders", int(LINE.since), SECOND) == 8
    assert runtime.ticks.sent == []


@pytest.mark.parametrize(
    ("line", "why"),
    [
        (None, "no line (S > L + I, or no clock tick yet)"),
        ({**line_to_dict(LINE), "fired_at": NOW - 1}, "fired already"),
        ({**line_to_dict(LINE), "rate": "lots"}, "malformed"),
        ({**line_to_dict(LINE), "dispersion": -3.0}, "out of range"),
        ({**line_to_dict(LINE), "expires_at": SECOND - 1.0}, "stale"),
    ],
)
def test_no_usable_line_asks_for_nothing_and_fails_no_message(
    runtime: Any, lambda_context: Any, line: dict[str, Any] | None, why: str
) -> None:
    with_jumps(runtime, {} if line is None else {"orders": line})
    answer = record_events.handler(batch(("orders", SECOND, 100)), lambda_context)
    assert answer == {"batchItemFailures": []}, why
    assert runtime.ticks.sent == [], why
    assert runtime.table.adds[("orders", SECOND)] == {"queued": 100}, why


def test_a_failing_line_read_or_tick_queue_costs_the_jump_only(
    runtime: Any, lambda_context: Any
) -> None:
    # GIVEN the orders line's reads throttled, the emails queue's line fine
    lines = {"orders": line_to_dict(LINE), "emails": line_to_dict(LINE)}
    with_jumps(runtime, lines)
    runtime.jumps.broken = {"orders"}
    event = batch(("orders", SECOND, 100), ("emails", SECOND, 100))
    # WHEN both jump THEN the emails queue's tick is asked, and no message fails
    assert record_events.handler(event, lambda_context) == {"batchItemFailures": []}
    assert [request["jump"] for request, _ in runtime.ticks.sent] == ["emails"]
    # AND a tick queue that refuses or fails costs the jump ticks, not the messages
    for second, fault in ((SECOND - 1, "refuse"), (SECOND - 2, "broken")):
        with_jumps(runtime, {"orders": line_to_dict(LINE)})
        setattr(runtime.ticks, fault, True)
        again = batch(("orders", second, 100))
        assert record_events.handler(again, lambda_context) == {"batchItemFailures": []}
        assert runtime.ticks.sent == []


def test_a_message_that_failed_is_not_counted_against_the_line(
    runtime: Any, lambda_context: Any
) -> None:
    # GIVEN the counter write of the burst's second fails (its message is redelivered)
    with_jumps(runtime, {"orders": line_to_dict(LINE)})
    runtime.table.broken = {("orders", SECOND)}
    answer = record_events.handler(batch(("orders", SECOND, 100)), lambda_context)
    # THEN it is retried and asks for nothing: the redelivery counts it, once
    assert answer == {"batchItemFailures": [{"itemIdentifier": "m0"}]}
    assert runtime.jumps.calls == []


def test_without_a_tick_queue_no_line_is_read(runtime: Any, lambda_context: Any) -> None:
    lines = FakeLines({"orders": line_to_dict(LINE)}, runtime.table)
    runtime.jumps = lines  # a table, but no tick queue to ask (loop mode, 60 s interval)
    record_events.handler(batch(("orders", SECOND, 100)), lambda_context)
    assert lines.calls == []


def test_the_jump_tests_start_no_later_than_the_batch_deadline(
    runtime: Any, lambda_context: Any
) -> None:
    # GIVEN counter writes that take the invocation's minute
    with_jumps(runtime, {"orders": line_to_dict(LINE)})
    clock = {"now": NOW}
    runtime.clock = lambda: clock["now"]
    write = runtime.table.add_counters_once

    def slow(*args: Any, **kwargs: Any) -> None:
        write(*args, **kwargs)
        clock["now"] += 60.0

    runtime.table.add_counters_once = slow
    lambda_context.remaining_ms = 60_000
    # WHEN a jumping batch is counted THEN its count stands and no line is read
    assert record_events.handler(batch(("orders", SECOND, 100)), lambda_context) == {
        "batchItemFailures": []
    }
    assert runtime.table.adds[("orders", SECOND)] == {"queued": 100}
    assert runtime.jumps.calls == []
