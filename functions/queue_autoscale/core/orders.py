"""The scale-ups still pending, each with when it lands: the predictive policy's view of the
fleet between an order and its workers taking jobs (docs/decision.md, "Measure"). Pure.

Workers of one order land together, a lead after it was placed; the oldest order lands first,
and a scale-in cancels the newest pending workers first (as ECS and the simulator do). So the
`pending` workers the fleet reports are the newest `pending` of the remembered orders; older
ones have landed. A pending worker no remembered order accounts for (a fresh state, another
controller's order) lands no later than the oldest remembered one, and within a lead of the
last scale-up.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from queue_autoscale.core.models import Order


def kept_limit(landing: float, interval: float) -> int:
    """The orders `placed` keeps apart: ceil(landing / interval), at least 1, where `landing`
    (s) is what `landings` is given and `interval` (s) the least time between two ticks (one
    order a tick at most). Of one more than that, the two oldest were placed at least
    landing - interval before this tick, so at the next they have both landed or are overdue
    (0 s to land): merged, they land as they did apart. The bound changes no decision; it keeps
    the state's size to what the lead and interval need."""
    return max(1, math.ceil(landing / interval))


def outstanding(orders: Sequence[Order], pending: int) -> tuple[Order, ...]:
    """The orders the `pending` workers belong to, oldest first: the newest `pending` workers
    ordered (the older ones landed)."""
    kept: list[Order] = []
    left = pending
    for order in reversed(orders):
        if left <= 0:
            break
        take = order.workers if order.workers < left else left
        kept.append(Order(order.at, take))
        left -= take
    return tuple(reversed(kept))


def landings(
    orders: Sequence[Order],
    pending: int,
    lead: float,
    last_scale_up_at: float | None,
    now: float,
) -> tuple[tuple[int, float], ...]:
    """(workers, seconds until they take jobs) of every pending worker, soonest first: an
    order's a lead after it was placed (0..lead from now); a worker no order accounts for,
    a lead after the last scale-up (a whole lead without one), and no later than the oldest
    order's."""
    if pending <= 0:
        return ()
    known = outstanding(orders, pending)
    groups = [(o.workers, _within(o.at + lead - now, lead)) for o in known]
    rest = pending - sum(o.workers for o in known)
    if rest > 0:
        lands = lead if last_scale_up_at is None else _within(last_scale_up_at + lead - now, lead)
        if groups and groups[0][1] < lands:
            lands = groups[0][1]
        groups.insert(0, (rest, lands))
    return tuple(sorted(groups, key=lambda g: g[1]))


def placed(
    orders: Sequence[Order], pending: int, current: int, target: int, now: float, limit: int
) -> tuple[Order, ...]:
    """The orders after this tick set the desired count from `current` to `target`: the
    pending ones, one more for a scale-up, the newest cancelled first for a scale-in. Past
    `limit` (`kept_limit`) the two oldest merge, at the later one's time."""
    kept = list(outstanding(orders, pending))
    if target > current:
        kept.append(Order(now, target - current))
    cancel = current - target
    while cancel > 0 and kept:
        last = kept.pop()
        if last.workers > cancel:
            kept.append(Order(last.at, last.workers - cancel))
        cancel -= last.workers
    while len(kept) > limit:
        first, second = kept[0], kept[1]
        kept[:2] = [Order(second.at, first.workers + second.workers)]
    return tuple(kept)


def orders_from_rows(rows: Any) -> tuple[Order, ...]:
    """Orders from the state item's [placed epoch s, workers] rows, oldest first. A row that is
    not two finite numbers with at least one worker is dropped, and anything but a list of rows
    reads as none (the pending workers then land a lead after the last scale-up). Every valid
    row is kept: the item is the controller's own write (`placed` keeps `kept_limit` orders),
    and the store bounds its size, as it does the samples'."""
    if not isinstance(rows, list | tuple):
        return ()
    out = []
    for row in rows:
        try:
            at, workers = float(row[0]), int(row[1])
        except (TypeError, ValueError, IndexError, KeyError, OverflowError):
            continue
        if math.isfinite(at) and workers >= 1:
            out.append(Order(at, workers))
    out.sort(key=lambda o: o.at)
    return tuple(out)


def _within(seconds: float, lead: float) -> float:
    """`seconds` held to 0..lead."""
    if not seconds > 0:
        return 0.0
    return seconds if seconds < lead else lead
