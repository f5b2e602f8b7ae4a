"""The SLA loop's reading: the realized compliance, from the pickups the counters carry.

The sizing works on inputs (rates, backlog, age). This module reads the outcome the controller
exists for, the share of jobs picked up within the SLA, which predictive turns into its chance
level (core/predictive_knobs.py `chance_level`, the loop's only output).

Measurement. The counters carry, per second, the jobs started and the sum of their pickup
times (from the `started` events). A second whose mean pickup exceeds the SLA counts its starts
as late (in a FIFO queue the starts of one second waited about equally long). Each second is
counted once, when it is at least one evaluation interval old (so its counter has settled),
into exponentially decaying sums with time constant (L + S) / b
(`predictive_knobs.loop_window_seconds`): realized compliance = 1 - late / started.

Excused misses: late starts counted within the horizon H = L + I + S
(`predictive_knobs.horizon_seconds`) of the last surge the fleet ordered for (`surge_at`) are
the reaction bound's (jobs that arrived before workers ordered at the surge could land); they
lower the published compliance but are kept in their own decayed sum, so the chance level does
not rise on misses no fleet could prevent.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from operator import itemgetter
from typing import NamedTuple

from queue_autoscale.core.models import ControllerState, QueueSettings
from queue_autoscale.core.predictive_knobs import horizon_seconds, loop_window_seconds

_SECOND = itemgetter(0)


class LoopReading(NamedTuple):
    """The loop after one tick."""

    started: float
    """Decayed count of jobs started."""
    late: float
    """Decayed count of those picked up after the SLA."""
    through: float | None
    """Last counter second counted (epoch)."""
    compliance: float | None
    """1 - late / started, None before any start was counted."""
    excused: float = 0.0
    """Decayed count of the late jobs started within the horizon of a surge: the
    reaction bound's misses, counted in the compliance but not in the chance level."""
    seconds: float = 0.0
    """Seconds since the last tick, which the sums decayed over (0 on a first tick)."""


def late_starts(
    pickups: Iterable[tuple[int, int, int]], after: float | None, until: float, sla: float
) -> tuple[int, int]:
    """(started, late) over counter seconds in (after, until]; `pickups` rows are (second,
    started, summed pickup ms)."""
    started = late = 0
    for second, count, pickup_ms in pickups:
        if count <= 0 or second > until or (after is not None and second <= after):
            continue
        started += count
        if pickup_ms / count > sla * 1000.0:
            late += count
    return started, late


def update(
    state: ControllerState,
    pickups: Sequence[tuple[int, int, int]],
    settings: QueueSettings,
    now: float,
    surge_at: float | None = None,
) -> LoopReading:
    """Count the newly settled seconds and decay the sums. `pickups` is the snapshot's, in
    time order. Late starts within the horizon (`horizon_seconds`) of `surge_at` (the last
    surge ordered for, epoch s) are excused: the reaction bound's, not the sizing's."""
    window = loop_window_seconds(settings)
    settle = settings.evaluation_interval_seconds
    until = math.floor(now - settle)
    through = state.realized_through
    # the seconds counted now, (through, until]: the counts below read only these
    first = 0 if through is None else bisect_right(pickups, through, key=_SECOND)
    rows = tuple(pickups[first : bisect_right(pickups, until, key=_SECOND)])
    started, late = late_starts(rows, through, until, settings.sla_seconds)
    excused = _excused(rows, through, until, surge_at, settings) if late > 0 else 0
    last = state.samples[-1].at if state.samples else None
    dt = 0.0 if last is None else max(0.0, now - last)
    decay = math.exp(-dt / window) if dt > 0 else 1.0
    total = state.realized_started * decay + started
    missed = state.realized_late * decay + late
    pardoned = min(missed, state.realized_excused * decay + excused)
    compliance = 1.0 - missed / total if total > 0 else None
    new_through = float(until) if through is None else max(through, float(until))
    return LoopReading(total, missed, new_through, compliance, pardoned, dt)


def _excused(
    rows: tuple[tuple[int, int, int], ...],
    through: float | None,
    until: int,
    surge_at: float | None,
    settings: QueueSettings,
) -> int:
    """Late starts among the seconds counted now, (through, until], that started within
    the horizon of the last surge (`surge_at`, epoch s; None: none)."""
    if surge_at is None:
        return 0
    first = math.ceil(surge_at) - 1.0  # late_starts counts seconds after `first`
    after = first if through is None else max(through, first)
    last = min(float(until), float(math.floor(surge_at + horizon_seconds(settings))))
    return late_starts(rows, after, last, settings.sla_seconds)[1] if last > after else 0
