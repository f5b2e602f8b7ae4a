"""How the controller moved the fleet, judged from the demo's ticks: flaps and wrong-way
scale-downs (times in seconds since the demo started)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from queue_autoscale.demo.live import TickRow

QUIET_PHASES = frozenset({"quiet", "quiet again"})
"""The phases where arrivals are steady: a flap there is churn, not a response to load."""


@dataclass(frozen=True)
class ScalingFacts:
    """The scaling moves the summary judges."""

    flaps: tuple[tuple[float, str], ...]
    """(time, phase) of each scale-out within the flap window of an earlier scale-in."""
    wrong_way_scale_downs: tuple[float, ...]
    """Times desiredCount was lowered while the visible backlog was above the previous
    tick's and tasks ordered earlier had not started."""

    @property
    def quiet_flaps(self) -> int:
        """Flaps in the quiet phases."""
        return sum(1 for _, phase in self.flaps if phase in QUIET_PHASES)


class Move(NamedTuple):
    """A change of desiredCount between two ticks."""

    at: float
    phase: str
    before: int
    after: int
    growing: bool
    """The visible backlog was above the previous tick's."""
    pending: int
    """Tasks ordered before the decision whose process had not started."""


def moves(rows: Sequence[TickRow]) -> list[Move]:
    """Each tick whose desiredCount differs from the previous known one."""
    found: list[Move] = []
    last: TickRow | None = None
    for row in rows:
        if row.desired is None:
            continue
        if last is not None and last.desired is not None and row.desired != last.desired:
            growing = (
                row.visible is not None and last.visible is not None and row.visible > last.visible
            )
            found.append(
                Move(row.elapsed, row.phase, last.desired, row.desired, growing, row.pending)
            )
        last = row
    return found


def flaps(rows: Sequence[TickRow], window_seconds: float) -> tuple[tuple[float, str], ...]:
    """Scale-outs within `window_seconds` (the lead plus the stabilization window) after a
    scale-in: a task stopped and another ordered for the same load."""
    scale_ins: list[float] = []
    found: list[tuple[float, str]] = []
    for move in moves(rows):
        if move.after < move.before:
            scale_ins.append(move.at)
        elif any(move.at - at <= window_seconds for at in scale_ins):
            found.append((move.at, move.phase))
    return tuple(found)


def wrong_way_scale_downs(rows: Sequence[TickRow]) -> tuple[float, ...]:
    """Scale-downs decided while the backlog grew and earlier orders had not landed."""
    return tuple(
        move.at
        for move in moves(rows)
        if move.after < move.before and move.growing and move.pending > 0
    )


def judge(rows: Sequence[TickRow], flap_window_seconds: float) -> ScalingFacts:
    """Flaps and wrong-way scale-downs of one run's ticks."""
    return ScalingFacts(flaps(rows, flap_window_seconds), wrong_way_scale_downs(rows))
