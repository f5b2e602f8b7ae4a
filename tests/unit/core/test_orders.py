"""Pending orders, each with its own landing time (core/orders.py), and the fleet model that
reads them (core/pickup.py starts_by)."""

from __future__ import annotations

import math

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from queue_autoscale.core.models import ControllerState, Order
from queue_autoscale.core.orders import (
    kept_limit,
    landings,
    orders_from_rows,
    outstanding,
    placed,
)
from queue_autoscale.core.pickup import Fleet, starts_by
from queue_autoscale.core.state import state_from_dict, state_to_dict

NOW = 10_000.0
LEAD = 60.0


def test_a_small_bump_does_not_delay_the_big_order_before_it() -> None:
    """43 ordered 50 s ago, 1 more 10 s ago: the 43 land in 10 s, the one in 50 s (with only
    the last scale-up's time all 44 were taken to land in 50 s)."""
    orders = (Order(NOW - 50.0, 43), Order(NOW - 10.0, 1))
    assert landings(orders, 44, LEAD, NOW - 10.0, NOW) == ((43, 10.0), (1, 50.0))
    fleet = Fleet(running=5, landing=landings(orders, 44, LEAD, NOW - 10.0, NOW))
    # by 30 s: 5 x 30 + 43 x 20 worker-seconds, 1 job/s each
    assert starts_by(49, fleet, 1.0, LEAD, 30.0) == pytest.approx(150.0 + 860.0)
    late = Fleet(running=5, landing=landings((), 44, LEAD, NOW - 10.0, NOW))
    assert starts_by(49, late, 1.0, LEAD, 30.0) == pytest.approx(150.0)


def test_the_pending_workers_are_the_newest_ordered() -> None:
    """10 then 5 ordered, 12 still pending: the first order's 7 newest and the second's 5."""
    orders = (Order(NOW - 55.0, 10), Order(NOW - 20.0, 5))
    assert outstanding(orders, 12) == (Order(NOW - 55.0, 7), Order(NOW - 20.0, 5))
    assert outstanding(orders, 3) == (Order(NOW - 20.0, 3),)
    assert outstanding(orders, 0) == ()


def test_a_worker_no_order_accounts_for_lands_with_the_oldest() -> None:
    """4 pending, one order of 2 placed 20 s ago (40 s to land), last scale-up 50 s ago (10 s):
    the 2 unaccounted land in 10 s; with no scale-up known, no later than the order's 40 s."""
    orders = (Order(NOW - 20.0, 2),)
    assert landings(orders, 4, LEAD, NOW - 50.0, NOW) == ((2, 10.0), (2, 40.0))
    assert landings(orders, 4, LEAD, None, NOW) == ((2, 40.0), (2, 40.0))
    assert landings((), 3, LEAD, None, NOW) == ((3, LEAD),)
    assert landings((Order(NOW - 500.0, 3),), 3, LEAD, None, NOW) == ((3, 0.0),)


def test_cancelling_a_plan_keeps_the_soonest_landing() -> None:
    """Running 5, 10 land in 10 s and 10 in 50 s: a plan of 12 keeps 7 of the first."""
    fleet = Fleet(running=5, landing=((10, 10.0), (10, 50.0)))
    assert starts_by(12, fleet, 1.0, LEAD, 30.0) == pytest.approx(5 * 30.0 + 7 * 20.0)
    assert starts_by(3, fleet, 1.0, LEAD, 30.0) == pytest.approx(3 * 30.0)
    # a plan past the current 25 lands its 5 new workers after the lead
    assert starts_by(30, fleet, 1.0, LEAD, 70.0) == pytest.approx(
        5 * 70.0 + 10 * 60.0 + 10 * 20.0 + 5 * 10.0
    )


def test_placed_adds_a_scale_up_and_cancels_the_newest_first() -> None:
    orders = (Order(NOW - 40.0, 6), Order(NOW - 20.0, 4))
    assert placed(orders, 10, 15, 18, NOW, 8) == (*orders, Order(NOW, 3))
    assert placed(orders, 10, 15, 9, NOW, 8) == (Order(NOW - 40.0, 4),)
    assert placed(orders, 10, 15, 4, NOW, 8) == ()
    assert placed(orders, 7, 12, 12, NOW, 8) == (Order(NOW - 40.0, 3), Order(NOW - 20.0, 4))


def test_the_orders_kept_are_bounded_by_the_lead_and_interval() -> None:
    # GIVEN a landing of 65 s (L 60 s + I / 2) and a tick every 10 s: 7 orders kept apart
    limit = kept_limit(65.0, 10.0)
    assert limit == 7 and kept_limit(3_630.0, 5.0) == 726 and kept_limit(0.0, 10.0) == 1
    orders: tuple[Order, ...] = ()
    # WHEN 40 ticks in a row each order one more worker and none has started
    for tick in range(40):
        pending = sum(o.workers for o in orders)
        orders = placed(orders, pending, pending, pending + 1, NOW + 10.0 * tick, limit)
    # THEN 7 are kept, the oldest holding the 34 workers of the orders it merged
    assert len(orders) == limit
    assert sum(o.workers for o in orders) == 40
    assert orders[0] == Order(NOW + 10.0 * (40 - limit), 40 - limit + 1)


def _by_landing(groups: tuple[tuple[int, float], ...]) -> dict[float, int]:
    """Workers landing at each time (s from now)."""
    out: dict[float, int] = {}
    for workers, seconds in groups:
        out[seconds] = out.get(seconds, 0) + workers
    return out


@settings(max_examples=300)
@example(landing=65.0, interval=10.0, ticks=[(0.0, 1, 1.0)] * 9)  # every order still pending
@given(
    landing=st.floats(0.0, 700.0),
    interval=st.floats(1.0, 60.0),
    ticks=st.lists(
        st.tuples(
            st.floats(0.0, 1.0), st.integers(-2, 8), st.one_of(st.just(1.0), st.floats(0.0, 1.0))
        ),
        min_size=1,
        max_size=60,
    ),
)
def test_merging_past_the_limit_changes_no_landing(
    landing: float, interval: float, ticks: list[tuple[float, int, float]]
) -> None:
    """Ticks at least an interval apart, any scale-ups and -ins and any pending count: the
    workers landing at each time are the same from the bounded orders as from all of them."""
    limit = kept_limit(landing, interval)
    bounded: tuple[Order, ...] = ()
    whole: tuple[Order, ...] = ()
    now = NOW
    current = 0
    for late, step, share in ticks:
        now += interval * (1.0 + late)
        pending = round(current * share)
        lands = landings(bounded, pending, landing, None, now)
        assert _by_landing(lands) == _by_landing(landings(whole, pending, landing, None, now))
        target = max(0, current + step)
        bounded = placed(bounded, pending, current, target, now, limit)
        whole = placed(whole, pending, current, target, now, 10_000)
        assert len(bounded) <= limit
        current = target


@pytest.mark.parametrize(
    "rows",
    [
        [[NOW, 0], [NOW, -3]],
        [[math.nan, 2], [math.inf, 2]],
        [[NOW, math.nan], [NOW, math.inf], [NOW, "many"]],
        [[NOW], [], "x", None, {"at": NOW}],
        7,
        "orders",
    ],
)
def test_hostile_rows_read_as_no_order(rows: object) -> None:
    assert orders_from_rows(rows) == ()


def test_orders_survive_the_state_item_and_an_old_item_has_none() -> None:
    state = ControllerState("jobs", orders=(Order(NOW - 30.0, 2), Order(NOW - 10.0, 5)))
    assert state_from_dict(state_to_dict(state)).orders == state.orders
    older = {k: v for k, v in state_to_dict(state).items() if k != "orders"}
    assert state_from_dict(older).orders == ()
    shuffled = {**state_to_dict(state), "orders": [[NOW - 10.0, 5], [NOW - 30.0, 2]]}
    assert state_from_dict(shuffled).orders == state.orders
