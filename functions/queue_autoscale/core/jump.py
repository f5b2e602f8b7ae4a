"""An arrival jump: the record path's reason to ask for an evaluation between two clock ticks.

A clock tick sees an onset up to an interval late. Where S <= L + I (`Knobs.correctable`
false) that interval is lost for good: the onset's jobs are due before the next tick's order
lands. The record path counts every `queued` event within its batching window, so it can tell
that the arrivals since the last tick passed what that tick sized on, and ask for a tick then.

The line is the move tests' (`predictive_knobs.move_sigmas`), for one look a second: z of half
a false alarm an hour at a look a second (3.64), read on the count's own tail, not the normal
one. The arrivals A over the s seconds since the tick are clumps of D jobs (D the per-second
index of dispersion the tick read), a Poisson count k = A / D of mean m = r s / D (r the rate
the tick sized on, jobs/s), and they jump where P(count >= k) is below the normal tail at z.
By the Wilson-Hilferty cube root of that tail (P(count >= k) = P(chi-square with 2k degrees
<= 2m)): 3 sqrt(k) (1 - 1 / (9k) - (m / k)^(1/3)) > z. Where m is large it is the normal test
A - r s > z sqrt(D r s) plus the count's skew, about D (z^2 + 2) / 6 jobs; where m is a few
jobs the normal test's line lies well inside the tail (at 1 job/s and D = 1: 5 jobs in a
second, 27 times the false alarms; this line is at 7, the exact Poisson one's). A false jump
only asks for a tick, which orders only where its own tests read a move. A jump tick decides
as any tick, but keeps the clock tick's readings (`keep_readings`): its growth and move tests
read over the whole time since that tick.

In production the clock tick stores its line in the queue's STATE item (`line_to_dict`); after
each batch the record path counts the jobs queued since the line's second from the counters and,
on a jump, claims the line once and asks the tick queue for a tick of that queue
(docs/decision.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from queue_autoscale.core.dispersion import long_window_dispersion
from queue_autoscale.core.models import ControllerState, QueueSettings, QueueSnapshot
from queue_autoscale.core.predictive_knobs import move_sigmas

TICKED_ON_JUMPS = ("predictive",)
"""The policies the record path may tick between their clock ticks (the seeded baseline keeps
the clock alone, as it was seeded)."""
SCHEDULE_SECONDS = 60.0
"""The evaluate function's schedule, s: once a minute. The minute's later ticks, and the jump
ticks, ride the tick queue."""
LOOK_SECONDS = 1.0
"""How often the record path looks (s): each second's counts, as it writes them."""


@dataclass(frozen=True, slots=True)
class JumpLine:
    """What a clock tick sized on, for the record path to test the arrivals since against."""

    since: float
    """The tick's time (epoch s): arrivals are counted from here."""
    rate: float
    """Arrival rate the tick sized on (jobs/s, >= 0)."""
    dispersion: float
    """Per-second index of dispersion the tick read (>= 1)."""
    sigmas: float
    """The normal quantile z of the count's tail a jump is read past."""
    ticked_at: float = 0.0
    """When the clock tick that drew the line ran (epoch s; a jump tick keeps it): a jump tick
    whose queue was ticked on the clock since is stale."""
    expires_at: float = math.inf
    """No jump is read past this (epoch s): the clock tick's inputs are stale by then."""

    def passed(self, arrived: float, until: float) -> bool:
        """Whether `arrived` jobs counted over (since, until] (epoch s) are a jump (never past
        `expires_at`)."""
        seconds = until - self.since
        if not seconds > 0 or not math.isfinite(arrived) or until > self.expires_at:
            return False
        expected = self.rate * seconds
        if not arrived > expected:
            return False
        clumps = arrived / self.dispersion  # k > 0: above a mean of at least 0
        mean = expected / self.dispersion
        root = 1.0 - 1.0 / (9.0 * clumps) - math.cbrt(mean / clumps)
        return 3.0 * math.sqrt(clumps) * root > self.sigmas


def tick_queue_at(interval_seconds: float) -> bool:
    """Whether the stack (in tick mode) has a tick queue at this evaluation interval (s): only
    where a minute holds more than one tick (the template's HasTickQueue). Jump ticks ride it,
    so there are none without it."""
    return interval_seconds < SCHEDULE_SECONDS


def draws_lines(settings: QueueSettings) -> bool:
    """Whether a clock tick of this queue leaves a line: S <= L + I, where an onset's jobs are
    due before the next clock tick's order lands."""
    return settings.sla_seconds <= settings.forecast_horizon_seconds


def jump_line(
    settings: QueueSettings, rate: float, dispersion: float, now: float
) -> JumpLine | None:
    """The line a tick at `now` (epoch s) leaves for the record path; None where S > L + I
    (the next clock tick's order still lands before an onset's jobs are due) or the readings
    are not finite."""
    if not draws_lines(settings):
        return None
    if not (math.isfinite(rate) and rate >= 0 and math.isfinite(dispersion)):
        return None
    return JumpLine(
        float(math.floor(now)),
        rate,
        max(dispersion, 1.0),
        move_sigmas(LOOK_SECONDS),
        ticked_at=now,
        expires_at=now + settings.stale_after,
    )


def clock_line(
    settings: QueueSettings,
    snapshot: QueueSnapshot,
    state: ControllerState,
    rate: float,
    now: float,
) -> JumpLine | None:
    """The line a clock tick at `now` (epoch s) leaves, the same in the evaluate function and
    the simulator: the `rate` it sized on (jobs/s, the decision's) and the per-second dispersion
    its `snapshot` reads over the long window (`dispersion.long_window_dispersion`). None on the
    queue's first tick (`state`, the one the tick read, holds no sample): its windows were
    watched by no tick, so what they read is no rate to test arrivals against (a line at 0
    jobs/s would ask for a tick every few seconds until the next clock tick)."""
    if not state.samples:
        return None
    dispersion = long_window_dispersion(snapshot, settings.percentile)
    return jump_line(settings, rate, dispersion, now)


def moved(line: JumpLine, now: float) -> JumpLine:
    """The line a jump tick at `now` (epoch s) leaves: the same one, counted from now's second."""
    return replace(line, since=float(math.floor(now)))


LINE_FIELDS = ("since", "rate", "dispersion", "sigmas", "ticked_at", "expires_at")
"""A stored line's attributes (all numbers; `line_to_dict`)."""


def line_to_dict(line: JumpLine) -> dict[str, float]:
    """The line as stored and sent: its LINE_FIELDS."""
    return {name: float(getattr(line, name)) for name in LINE_FIELDS}


def line_from_dict(raw: Mapping[str, Any]) -> JumpLine:
    """A stored or sent line; ValueError unless every LINE_FIELDS value is a finite number, the
    rate at least 0, the dispersion at least 1 and the sigmas above 0."""
    values: dict[str, float] = {}
    for name in LINE_FIELDS:
        value = raw.get(name)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"jump line's {name} is not a number: {value!r}"[:200])
        if not math.isfinite(value):
            raise ValueError(f"jump line's {name} is not finite: {value!r}")
        values[name] = float(value)
    if values["rate"] < 0 or values["dispersion"] < 1 or values["sigmas"] <= 0:
        raise ValueError(f"jump line out of range: {values}")
    return JumpLine(**values)


def keep_readings(clock: ControllerState, jumped: ControllerState) -> ControllerState:
    """The state after a jump tick: what it ordered (`jumped`'s orders, scale times, surge and
    the version it wrote), with the clock tick's readings (`clock`'s samples, SLA loop counts,
    horizon spread, bursts and falls), so the next tick reads over the whole interval."""
    return replace(
        clock,
        version=jumped.version,
        last_scale_up_at=jumped.last_scale_up_at,
        last_scale_down_at=jumped.last_scale_down_at,
        last_set_desired=jumped.last_set_desired,
        orders=jumped.orders,
        surge_at=jumped.surge_at,
        unmet_since=jumped.unmet_since,
    )
