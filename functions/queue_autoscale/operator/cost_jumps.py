"""What jump ticks add to the stack's bill (`operator.cost`, `core.jump`, `ingest.jumps`).

Only where they exist: JumpTicks on, the tick queue (tick mode under a 60 s interval), and a
queue whose SLA the next clock tick's order cannot save (`core.jump.draws_lines`, at the core's
default lead). The line rides in the STATE item every tick writes anyway. Each record batch,
once per queue in it, reads the line (a GetItem of the STATE item, billed by its size) and
Queries the queue's counters since its second (strongly consistent: a unit per 4 KB begun);
each jump claims the line (an UpdateItem of the STATE item), sends a tick to the tick queue and
runs one evaluate tick of that queue.
"""

from __future__ import annotations

import math
from typing import Final

from queue_autoscale.core.jump import draws_lines
from queue_autoscale.core.models import QueueSettings
from queue_autoscale.operator.cost_inputs import (
    HOURS_PER_MONTH,
    MEASURED,
    SECONDS_PER_MONTH,
    StackShape,
    Usage,
    Workload,
    has_tick_queue,
)
from queue_autoscale.operator.cost_record import IngestRates
from queue_autoscale.operator.prices import Prices

JUMP_TICKS_PER_QUEUE_HOUR: Final = 20.0
"""Assumed: jump ticks a busy queue asks for an hour, above the most measured in the simulator
(benchmarks/results/jump_tick_rate.md: predictive, 2 s late, 10 s interval): steady 0.5, NASA
day 46 2.0, spike 3.5, bursty 17.0 an hour."""


def has_jump_ticks(workload: Workload, shape: StackShape) -> bool:
    """JumpTicks is on, the stack has the tick queue and the workload's queues draw lines."""
    settings = QueueSettings(
        queue="q",
        sla_seconds=workload.sla_seconds,
        evaluation_interval_seconds=workload.interval_seconds,
    )
    return shape.jump_ticks and has_tick_queue(workload, shape) and draws_lines(settings)


def jump_usage(
    workload: Workload,
    shape: StackShape,
    rates: IngestRates,
    prices: Prices,
    tick_seconds: float,
) -> list[Usage]:
    """The jump lines' reads and writes and the jump ticks' invocations and messages; a jump
    tick bills `tick_seconds`, a one-queue tick's."""
    if not has_jump_ticks(workload, shape):
        return []
    checks = rates.queue_batches * SECONDS_PER_MONTH
    busy = workload.events_per_second > 0
    jumps = workload.queues * JUMP_TICKS_PER_QUEUE_HOUR * HOURS_PER_MONTH if busy else 0.0
    # the Query reads the counters of up to an interval (the line moves every clock tick)
    rows = math.ceil(workload.interval_seconds) * MEASURED.counter_item_bytes
    query_units = max(1, math.ceil(rows / 4096))
    state_read = 0.5 * max(1, math.ceil(MEASURED.state_item_bytes / 4096))
    state_write = max(1, math.ceil(MEASURED.state_item_bytes / 1024))
    # per jump tick: the claim and the tick's own STATE write, its reads as a tick's
    writes = 2 * state_write * jumps
    reads = checks * (state_read + query_units) + (state_read + query_units + 0.5) * jumps
    gb_seconds = jumps * tick_seconds * shape.evaluate.memory_mb / 1024
    gb_price = shape.evaluate.gb_second_usd(prices)
    return [
        Usage(
            "DynamoDB",
            f"jump ticks (assumed {JUMP_TICKS_PER_QUEUE_HOUR:g} a busy queue-hour): the line's "
            "claim and the tick's STATE write",
            writes,
            "write units",
            writes / 1e6 * prices.dynamodb_per_million_write_units,
        ),
        Usage(
            "DynamoDB",
            "jump lines: a STATE GetItem and a counters Query per queue per record batch; a jump "
            "tick's reads",
            reads,
            "read units",
            reads / 1e6 * prices.dynamodb_per_million_read_units,
        ),
        Usage(
            "Lambda",
            f"jump ticks: evaluate, {tick_seconds:.2f} s each, and their requests",
            gb_seconds,
            "GB-s",
            gb_seconds * gb_price + jumps / 1e6 * prices.lambda_per_million_requests,
        ),
        Usage(
            "SQS",
            "jump ticks: a send and a delete on the tick queue each",
            2 * jumps,
            "requests",
            2 * jumps / 1e6 * prices.sqs_per_million_requests,
        ),
    ]
