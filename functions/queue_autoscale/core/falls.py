"""Falls that come back: the predictive policy's memory of whether a fall of the arrival rate
returned, so the delayed off holds the fleet through the next one as deep. Pure: `now` comes in.

- **fall**: the plan sizes on the short rate window because it fell below the long one past
  their noise (`predictive._sizing_rate`); it opens at the long window's rate then, the rate
  the queue sustained before it, and its depth is the lowest short rate since, as a share of
  that rate.
- **return**: the short rate is back within z of its noise of the fall's rate (z the
  percentile's normal quantile, the noise sd sqrt(D lambda / w) over the short window w, as
  the burst model reads it): the fall is evidence that falls as deep come back.
- **expiry**: a fall open longer than the memory did not come back: the evidence is gone
  until a fall returns again. The memory is the loop window (L + S) / b, how long the realized
  compliance remembers a late job (`knobs.loop_window_seconds`), and at least the span R + W
  (how far ahead the kept need holds): a return the hold missed is a late job the loop still
  counts.
- **hold**: while a fall is open and a fall as deep came back last time, the delayed off
  keeps the workers a return at the fall's rate needs before workers ordered at it land
  (`predictive._held`), until the rate returns, or for as long as the last one took to come
  back (at least the span).
- **lull**: a fall below the lowest short rate read before it opened, since the watch began (its
  floor), past that rate's noise, is to a rate the queue has not run at: nothing says whether
  it comes back, and a return's first jobs are due before any order lands. The delayed off
  holds through it as through a fall that came back, while it stays that low and open (at most
  the memory). A fall back to a rate read before it (a burst's end, the rate it rose from) holds
  nothing without evidence.

A log's outage or a producer's pause empties the queue for a minute or two, and then the rate
returns at once; a queue fed in cycles (a batch every quarter hour) empties for as long each
time. Where the SLA is shorter than the mean landing L + I / 2, the jobs of a return's first
L + I / 2 - S seconds are due before workers ordered at the return land. A burst that ends
falls to the rate before it and stays there for longer than the memory, so it leaves no
evidence, and a shallow dip that came back vouches for no deeper fall.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

from queue_autoscale.core.models import ControllerState, Fall, QueueSnapshot
from queue_autoscale.core.snapshot import watched_since


class FallReading(NamedTuple):
    """What the remembered fall says at one tick."""

    fall: Fall | None
    """The open fall, for the next state (None: none open)."""
    returned: float | None
    """The depth of the deepest fall that came back since one last did not, for the next state
    (None: no evidence)."""
    held_rate: float | None
    """The rate the delayed off holds this tick, jobs/s: the open fall's, where a fall as deep
    came back (None: no hold)."""
    after: float | None
    """How long the last fall that came back took to, s, for the next state (None: no
    evidence)."""
    lowest: float | None = None
    """The lowest short rate read since the watch began, with this tick's, jobs/s, for the next
    state (None: none read)."""
    lull: bool = False
    """Whether the open fall is held as a lull: below its floor, with no return vouching for it."""


def update(
    memo: FallReading,
    long: float,
    short: float,
    falling: bool,
    noise: Callable[[float], float],
    span: float,
    memory: float,
    now: float,
) -> FallReading:
    """This tick's fall memory. `memo` is the last tick's (its open fall, the depth of the
    deepest fall that came back and how long the last took to, s, and the lowest short rate
    read since the watch began), `long` and `short` the rate windows' rates (jobs/s, >= 0),
    `falling` whether the plan sizes on the short window because it fell below the long one,
    `noise(rate)` z of a rate's noise over the short window (jobs/s), `span` R + W and `memory`
    how long an open fall stays evidence (s, at least the span). A fall is as deep as the last
    that came back where its depth is within the short rate's noise of that one's (a fall to
    nothing is as deep as one to 4 % of a rate of 9 jobs/s)."""
    fall, returned, after = memo.fall, memo.returned, memo.after
    floor = memo.lowest  # the lowest read before this tick
    if fall is not None:
        depth = min(fall.depth, short / fall.rate)
        if short >= fall.rate - noise(fall.rate):  # back: falls this deep return
            returned = depth if returned is None else min(returned, depth)
            after = now - fall.at
            fall = None
        elif now - fall.at > max(span, memory):  # not back within the memory: no evidence
            returned, after, fall = None, None, None
        else:
            fall = fall._replace(depth=depth)
    if fall is None and falling and long > 0:
        fall = Fall(now, long, min(1.0, max(0.0, short / long)), floor)
    lowest = short if floor is None else min(floor, short)
    if fall is None:
        return FallReading(None, returned, None, after, lowest)
    lull = fall.floor is not None and short < fall.floor - noise(fall.floor)
    known = returned is not None and fall.depth >= returned - noise(fall.rate) / fall.rate
    holding = now - fall.at <= max(span, after or 0.0)  # as long as the last took, or the span
    vouched = known and holding
    held = fall.rate if lull or vouched else None
    return FallReading(fall, returned, held, after, lowest, lull and not vouched)


def read(
    snapshot: QueueSnapshot,
    state: ControllerState,
    noise: Callable[[float], float],
    span: float,
    memory: float,
    now: float,
    sized_rate: float,
) -> FallReading:
    """The state's fall memory with this tick's rate windows (`update`): a fall is read where
    the plan sizes on the short window below the long one (`sized_rate`, jobs/s, below the long
    window's), `noise(rate)` is z of a rate's noise over the short window (jobs/s, the burst
    model's), `span` is R + W and `memory` the loop window (s).
    Unchanged without both windows' rates; a tick before the watch's start is known reads no
    lowest rate (its windows held no counters, `snapshot.watched_since`)."""
    long, short = snapshot.arrival_rate, snapshot.arrival_rate_short
    kept = FallReading(
        state.fall,
        state.fall_returned,
        None,
        state.fall_returned_after,
        state.lowest_rate,
    )
    if long is None or short is None or not (math.isfinite(long) and math.isfinite(short)):
        return kept
    if long < 0 or short < 0:
        return kept
    reading = update(kept, long, short, sized_rate < long, noise, span, memory, now)
    if watched_since(snapshot, state) is None:  # the watch's start read no counters: no low
        return reading._replace(lowest=kept.lowest)
    return reading
