"""The re-order confirmation (core/constraints.py confirm_reorder): a scale-out that would
reverse a recent scale-in on bursty traffic waits one interval, when the miss budget pays."""

from __future__ import annotations

from queue_autoscale.core import ControllerState
from queue_autoscale.core.constraints import REVISIT_SECONDS, confirm_reorder
from queue_autoscale.core.models import Constraint
from queue_autoscale.core.state import state_from_dict, state_to_dict
from tests.unit.core.builders import NOW, settings

# the bench's set-up: a 60 s lead, a 10 s interval, 1 s jobs (mu = 1 job/s per worker)
SETTINGS = settings(provisioning_lead_seconds=60.0, evaluation_interval_seconds=10.0)
RELEASED = ControllerState("jobs", last_scale_down_at=NOW - 25.0)
"""Workers were let go 25 s ago: the NASA day's median gap from a scale-in to its flap."""


def confirm(
    target: int = 49,
    state: ControllerState = RELEASED,
    spare: float = 500.0,
    bursty: bool = True,
    now: float = NOW,
) -> tuple[int, bool]:
    got, step = confirm_reorder(
        target, 38, state, SETTINGS, now, spare=spare, service_rate=1.0, bursty=bursty
    )
    assert step is None or step.code is Constraint.REORDER_CONFIRM
    return got, step is not None


def test_a_paid_reorder_soon_after_a_release_waits_one_interval() -> None:
    # 38 -> 49 asks for 11 workers: at 1 job/s each, a 10 s wait delays at most 110 jobs,
    # which a budget of 500 unspent misses pays for: hold at 38 this tick
    assert confirm() == (38, True)
    # AND the step says why, with the numbers
    _, step = confirm_reorder(
        49, 38, RELEASED, SETTINGS, NOW, spare=500.0, service_rate=1.0, bursty=True
    )
    assert step is not None and "110 jobs" in step.words and "25 s after a scale-in" in step.words


def test_the_next_tick_that_still_wants_it_orders_it() -> None:
    deferred = ControllerState("jobs", last_scale_down_at=NOW - 35.0, reorder_deferred_at=NOW - 10)
    assert confirm(state=deferred) == (49, False)
    # a deferral older than the snapshot staleness (two intervals) is not this order's
    stale = ControllerState("jobs", last_scale_down_at=NOW - 35.0, reorder_deferred_at=NOW - 30)
    assert confirm(state=stale) == (38, True)


def test_a_surge_the_budget_cannot_pay_for_is_ordered_at_once() -> None:
    # 38 -> 200: 1,620 jobs could wait on the delay, more than the 500 unspent
    assert confirm(target=200) == (200, False)
    assert confirm(spare=109.0) == (49, False)  # 110 needed
    assert confirm(spare=110.0) == (38, True)


def test_only_within_a_lead_plus_five_minutes_of_a_scale_in() -> None:
    edge = NOW - (60.0 + REVISIT_SECONDS)
    assert confirm(state=ControllerState("jobs", last_scale_down_at=edge)) == (38, True)
    late = ControllerState("jobs", last_scale_down_at=edge - 1.0)
    assert confirm(state=late) == (49, False)
    assert confirm(state=ControllerState("jobs")) == (49, False)  # never scaled in


def test_not_on_poisson_like_traffic_nor_for_a_scale_in() -> None:
    assert confirm(bursty=False) == (49, False)
    got, step = confirm_reorder(
        30, 38, RELEASED, SETTINGS, NOW, spare=500.0, service_rate=1.0, bursty=True
    )
    assert (got, step) == (30, None)


def test_the_deferral_survives_the_state_item() -> None:
    state = ControllerState("jobs", reorder_deferred_at=NOW - 10.0)
    assert state_from_dict(state_to_dict(state)).reorder_deferred_at == NOW - 10.0
    assert state_from_dict(state_to_dict(RELEASED)).reorder_deferred_at is None
    # an item written before the field existed reads as no deferral
    old = {k: v for k, v in state_to_dict(RELEASED).items() if k != "reorder_deferred_at"}
    assert state_from_dict(old).reorder_deferred_at is None


def test_an_activation_or_a_raised_minimum_is_never_deferred() -> None:
    # GIVEN a paid re-order 25 s after a scale-in, which a fleet of 38 would defer
    # WHEN the fleet is empty (a scale-to-zero queue's first job) THEN it is ordered at once
    got, step = confirm_reorder(
        3, 0, RELEASED, settings(min_workers=0), NOW, spare=500.0, service_rate=1.0, bursty=True
    )
    assert (got, step) == (3, None)
    # AND WHEN the minimum was raised above the running fleet THEN the fleet is not held below it
    raised = settings(
        provisioning_lead_seconds=60.0, evaluation_interval_seconds=10.0, min_workers=40
    )
    got, step = confirm_reorder(
        45, 38, RELEASED, raised, NOW, spare=500.0, service_rate=1.0, bursty=True
    )
    assert (got, step) == (45, None)
