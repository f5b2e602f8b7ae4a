"""The in-flight floor counts busy workers, not the messages workers hold: a worker that
prefetches holds more than it runs; and no scale-down cancels tasks still starting while the
backlog grows."""

from __future__ import annotations

import itertools
from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from queue_autoscale.core import ControllerState, CounterRow, Readings, build_snapshot
from queue_autoscale.core.constraints import busy_workers, movement
from queue_autoscale.core.measures import measure
from queue_autoscale.core.models import Sample
from queue_autoscale.core.snapshot import OldestAge
from tests.unit.core.builders import NOW, decide_default, settings, snapshot

RATE = 2
"""Jobs/s arriving, started and completed: the demo's quiet phase."""
JOB_MS = 500


def steady_rows(now: float, seconds: int = 300) -> list[CounterRow]:
    """`seconds` of steady counters up to `now`: RATE jobs/s of JOB_MS each."""
    return [
        CounterRow(
            second=int(now) - s,
            queued=RATE,
            started=RATE,
            completed=RATE,
            busy_ms=RATE * JOB_MS,
        )
        for s in range(1, seconds + 1)
    ]


class Depth:
    def __init__(self, visible: int, in_flight: int) -> None:
        self.visible, self.in_flight, self.delayed = visible, in_flight, 0


class Fleet:
    def __init__(self, workers: int) -> None:
        self.running = self.desired = workers
        self.pending = 0
        self.deployment_in_progress = False


def test_messages_held_beyond_the_running_workers_do_not_raise_the_floor() -> None:
    # GIVEN 6 running workers that each hold one running and one prefetched message
    held = measure(snapshot(in_flight=12, running=6, desired=6), settings())
    # THEN the floor counts the 6 busy workers, not 12 (a worker holds more than it runs)
    assert busy_workers(held, settings()) == 6
    # AND with fewer messages than workers, one worker per message (concurrency 1) ...
    assert busy_workers(measure(snapshot(in_flight=3, running=6), settings()), settings()) == 3
    # ... or per `worker_concurrency` messages
    four = settings(worker_concurrency=4)
    assert busy_workers(measure(snapshot(in_flight=9, running=6), four), four) == 3


def test_a_prefetching_fleet_on_steady_traffic_does_not_flap() -> None:
    # GIVEN steady traffic and workers that each hold one prefetched message beyond the one
    # they run: in flight = jobs in service + one per worker, so more workers hold more
    # (the positive feedback of issue 35's quiet phase: 2 -> 4 -> 1 -> 2 within 15 s)
    config = settings(
        min_workers=1,
        max_workers=30,
        evaluation_interval_seconds=5.0,
        provisioning_lead_seconds=10.0,
        expected_job_seconds=0.5,
    )
    state = ControllerState("jobs")
    workers = 2
    desired: list[int] = []
    for tick in range(40):
        now = NOW + 5.0 * tick
        readings = Readings(
            depth=Depth(visible=0, in_flight=1 + workers),
            oldest_age=OldestAge(age_seconds=0.0, lag_seconds=0.0),
            fleet=Fleet(workers),
            dlq_depth=0,
            rows=steady_rows(now),
        )
        evaluation = decide_default(build_snapshot("jobs", now, readings), config, state, now)
        state = evaluation.state
        workers = evaluation.decision.target
        desired.append(workers)
    # THEN the fleet settles and stays: no scale-out after a scale-in, no climb to the cap
    moves = [(a, b) for a, b in itertools.pairwise(desired) if a != b]
    downs = [i for i, (a, b) in enumerate(moves) if b < a]
    ups_after_down = [i for i, (a, b) in enumerate(moves) if b > a and any(d < i for d in downs)]
    assert ups_after_down == [], desired
    assert max(desired) <= 3, desired
    # AND the floor holds the 2 workers that hold messages, without raising them
    assert desired == [2] * 40, desired


def test_no_scale_down_while_ordered_tasks_have_not_started_and_the_backlog_grows() -> None:
    # GIVEN 8 desired, 2 running and 6 ordered not started; 99 waiting at the last tick
    config = settings()
    state = ControllerState(
        "jobs", samples=(Sample(at=NOW - 5, arrival_rate=10.0, visible=99, raw_target=8),)
    )
    growing = snapshot(visible=128, running=2, desired=8, pending=6, taken_at=NOW)
    # WHEN the recommendation falls to 6 (a rate estimate that dipped)
    target, steps = movement(6, 8, growing, state, config, NOW, 20.0, 0.0)
    # THEN the order stands, and says why
    assert target == 8
    assert [step.code for step in steps] == ["orders_pending"]
    assert "6 ordered tasks have not started" in steps[0].words
    # AND once the backlog shrinks, or the ordered tasks started, the scale-down may proceed
    shrinking = replace(growing, visible=90)
    landed = replace(growing, pending=0)
    assert movement(6, 8, shrinking, state, config, NOW, 20.0, 0.0)[1][0].code != "orders_pending"
    assert movement(6, 8, landed, state, config, NOW, 20.0, 0.0)[1][0].code != "orders_pending"


@given(
    current=st.integers(1, 500),
    cut=st.integers(1, 500),
    pending=st.integers(1, 500),
    before=st.integers(0, 10_000),
    growth=st.integers(1, 10_000),
)
def test_no_scale_down_ever_cancels_orders_while_the_backlog_grows(
    current: int, cut: int, pending: int, before: int, growth: int
) -> None:
    state = ControllerState(
        "jobs", samples=(Sample(at=NOW - 5, arrival_rate=1.0, visible=before, raw_target=1),)
    )
    grown = snapshot(visible=before + growth, running=1, desired=current, pending=pending)
    target, steps = movement(
        max(0, current - cut), current, grown, state, settings(), NOW, 90.0, 0.0
    )
    assert target == current
    assert steps[0].code == "orders_pending"
