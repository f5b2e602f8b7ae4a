"""Closing the loop on the SLA: realized compliance spends or saves headroom.

The sizing terms work on inputs (rates, backlog, age). This module looks at the outcome the
controller exists for, the share of jobs picked up within the SLA, and turns it into two
corrections the hybrid applies:

- **headroom** h (0..`MAX_HEADROOM`): the steady and trend terms size for lambda x (1 + h);
- **hold**: the stabilization window (how long capacity is kept after a burst, "delayed off")
  is stretched to window x (1 + h / MAX_HEADROOM), up to twice as long.

Measurement. The counters carry, per second, the jobs started and the sum of their pickup
times (from the `started` events). A second whose mean pickup exceeds the SLA counts its starts
as late (in a FIFO queue the starts of one second waited about equally long). Each second is
counted once, when it is at least one evaluation interval old (so its counter has settled),
into exponentially decaying sums with time constant W: realized compliance = 1 - late / started.

The law (b = 1 - percentile, the miss budget; m = (late - excused) / started, the fleet's own
miss share):

- m > b and the tick counted late starts of the fleet's own (the budget is being overspent
  now): h rises at MAX_HEADROOM / (L + S) x min(1, (m - b) / b) per second: to its cap within
  one provisioning lead plus one SLA at twice the budget or more, in proportion to the
  overspend below that (a window 7 % over budget adds 7 % of that pace). Once the misses stop,
  the share only decays: h holds (rising on the decayed share alone took diurnal at 10 s p95,
  seed 3, from +6 % to +49 % in the 350 s after a 2-minute episode, then held it 35 minutes);
- m < b / 4 (comfortably within it): h falls at MAX_HEADROOM / W per second;
- in between, or with fewer than 1 / b jobs counted (too few to tell a miss share of b): hold.
- within W of a burst onset h does not rise (the misses are the reaction bound's; they are
  counted all the same).

Excused misses: late starts counted within `reaction_seconds` (L + S + 2 intervals) of a burst
onset are the reaction bound's (jobs that arrived before workers ordered at the onset could
land); they lower the published compliance but spend none of the budget. Kept in their own
decayed sum, so a surge's misses no longer raise headroom a window later while they decay (on
the NASA day at 30 s, p99: 134 ticks at up to +50 % after a window, for no compliance). The
same holds after a surge the fleet ordered for when only the backlog's growth showed it
(`surge_at`, core/recurrence.py `surge_onset`): a 20-40 s rush at 1.5-2x the rate leaves the
windows' rate short of the onset test's doubling, yet its jobs wait for the same landing (on
the NASA day at 30 s, p99, seed 3: 1,153 such misses raised +50 % for the last 4,200 s).

The reading also gives the unspent budget, spare = b x started - (late - excused) jobs (0 with
fewer than 1 / b counted), which core/hybrid.py spends on letting idle capacity go one lead
after it is no longer needed instead of after the stabilization window, when spare covers the
jobs a mistaken release would make late.

Below b / 4 the fleet may also run hotter than the sizing terms' Erlang C (`comfortable`,
core/hot.py): the loop's comfort band is the evidence that the budget has room (with an SLA of
at least a lead, on the fleet's own misses: excused ones are no risk a hot fleet runs there).

Defaults come from the SLA S and the provisioning lead L, not from any workload:
W = 20 (L + S) (30 minutes at L = 60 s, S = 30 s).

Why it does not oscillate: h moves only outside the band [b/4, b], rises on misses it can only
have caused by being too small, and gives capacity back over W, much slower than the W-averaged
miss share it reads can change; on steady traffic that the sizing terms already serve within
the budget m stays below b/4 and h stays at 0. Below b/4 the loop also lets the sizing terms
run hot (core/hot.py), which moves only with the backlog and the load, not with m: on steady
Poisson traffic the fleet alternates between the load and one worker above it, m stays 0
(tests/unit/core/test_sla_loop.py, tests/unit/core/test_hot.py, and the steady simulated runs
in tests/sim/test_sla_loop_sim.py).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from operator import itemgetter
from typing import NamedTuple

from queue_autoscale.core.models import ControllerState, QueueSettings

MAX_HEADROOM = 0.5
"""At most 50 % more capacity than the sizing terms ask for."""
MAX_HOLD_FACTOR = 2.0
"""At the headroom's cap the stabilization window is stretched to this many times its length
(core/decision.py keeps the samples that long)."""
WINDOW_LEADS = 20.0
"""W = this x (provisioning lead + SLA)."""
COMFORT_SHARE = 0.25
"""Below this share of the miss budget the loop gives headroom back."""
_SECOND = itemgetter(0)


class LoopReading(NamedTuple):
    """The loop after one tick."""

    started: float
    """Decayed count of jobs started."""
    late: float
    """Decayed count of those picked up after the SLA."""
    through: float | None
    """Last counter second counted (epoch)."""
    headroom: float
    compliance: float | None
    """1 - late / started, None before any start was counted."""
    spare: float = 0.0
    """The unspent miss budget, jobs: b x started - (late - excused) over the window (0 with
    fewer than 1 / b jobs counted: too few to tell)."""
    excused: float = 0.0
    """Decayed count of the late jobs started within `reaction_seconds` of a burst onset: the
    reaction bound's misses, counted in the compliance but spending no budget."""

    @property
    def hold_factor(self) -> float:
        """How much longer than the stabilization window capacity is kept (1..MAX_HOLD_FACTOR)."""
        return 1.0 + (MAX_HOLD_FACTOR - 1.0) * self.headroom / MAX_HEADROOM


def window_seconds(settings: QueueSettings) -> float:
    """W: the time constant of the realized-compliance average, seconds."""
    return WINDOW_LEADS * (settings.provisioning_lead_seconds + settings.sla_seconds)


def after_onset(onset_at: float | None, settings: QueueSettings, now: float) -> bool:
    """True within W of the last burst onset (epoch s, None: none seen): the loop's reading is
    then the burst's, so headroom neither rises (`update`) nor is spent (core/hybrid.py). The
    fleet may run hot again after the shorter `reaction_seconds` (core/hot.py), or at once where
    the SLA covers a lead (`covers_lead`)."""
    return onset_at is not None and now - onset_at < window_seconds(settings)


def reaction_seconds(settings: QueueSettings) -> float:
    """How long after a burst onset late starts are the reaction bound's, seconds: lead + SLA +
    two intervals (a job that arrived when the onset showed waits for workers ordered at that
    tick or the next, a lead later, and is late once it has waited an SLA)."""
    return (
        settings.provisioning_lead_seconds
        + settings.sla_seconds
        + 2.0 * settings.evaluation_interval_seconds
    )


def covers_lead(settings: QueueSettings) -> bool:
    """True when the SLA is at least the provisioning lead: a backlog that shows now is picked
    up within the SLA by workers ordered now, so a mistake of the fleet's size (a step down, a
    fleet running hot) costs its own misses, which this loop reads, and a burst's reaction-bound
    misses say nothing about it."""
    return settings.sla_seconds >= settings.provisioning_lead_seconds


def comfortable(loop: LoopReading, settings: QueueSettings) -> bool:
    """True when the loop adds no headroom and has counted enough jobs (1 / b) to tell that
    their miss share is below `COMFORT_SHARE` of the budget b: the fleet may run hotter.

    With an SLA of at least a lead the share is the fleet's own (late - excused): a backlog a
    hot fleet lets build is served within the SLA by workers ordered when it shows, so a
    burst's excused misses say nothing about what running hot risks (on the NASA day at 60 s,
    p99, they alone kept Erlang C on 391 of 1,440 ticks while the own share stayed under
    b / 4). With a shorter SLA they count: they are the evidence of rushes, whose jobs a hot
    fleet leaves late beyond any order's reach (counting only its own there took NASA 30 s p99
    from 99.35 to 98.80 % and 10 s p95 from 95.02 to 93.65 %)."""
    budget = 1.0 - settings.percentile
    if loop.headroom > 0 or loop.started < 1.0 / budget:
        return False
    late = loop.late - loop.excused if covers_lead(settings) else loop.late
    return late < COMFORT_SHARE * budget * loop.started


def rise_rate(miss: float, settings: QueueSettings) -> float:
    """How fast headroom rises at a miss share `miss` over the budget b, per second: in
    proportion to the overspend, (miss - b) / b, so that an overspend of the budget's own size
    (miss >= 2 b) takes the headroom to its cap within one lead plus one SLA and a window just
    over budget adds about as little headroom as it overspent."""
    budget = 1.0 - settings.percentile
    full = MAX_HEADROOM / (settings.provisioning_lead_seconds + settings.sla_seconds)
    return full * min(1.0, max(0.0, miss - budget) / budget)


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
    onset_at: float | None = None,
    surge_at: float | None = None,
) -> LoopReading:
    """Count the newly settled seconds, decay the sums, move the headroom. `pickups` is the
    snapshot's, in time order.

    `onset_at` is the last burst onset (epoch s, core/recurrence.py): within W of it the
    headroom does not rise. Late starts within `reaction_seconds` of it, or of `surge_at` (the
    last surge ordered for on the backlog's growth alone, epoch s), spend no budget. Misses
    after an onset are the reaction bound's; headroom raised on them was spent a window later,
    on traffic the sizing terms were serving within budget (on the NASA day at SLA 30 s, p95:
    134 ticks at +50 % at 98.5 % realized)."""
    window = window_seconds(settings)
    settle = settings.evaluation_interval_seconds
    until = math.floor(now - settle)
    through = state.realized_through
    # the seconds counted now, (through, until]: the counts below read only these
    first = 0 if through is None else bisect_right(pickups, through, key=_SECOND)
    rows = tuple(pickups[first : bisect_right(pickups, until, key=_SECOND)])
    started, late = late_starts(rows, through, until, settings.sla_seconds)
    excused = _excused(rows, through, until, (onset_at, surge_at), settings) if late > 0 else 0
    last = state.samples[-1].at if state.samples else None
    dt = 0.0 if last is None else max(0.0, now - last)
    decay = math.exp(-dt / window) if dt > 0 else 1.0
    total = state.realized_started * decay + started
    missed = state.realized_late * decay + late
    pardoned = min(missed, state.realized_excused * decay + excused)
    own = missed - pardoned  # the misses the sizing terms could have prevented
    budget = 1.0 - settings.percentile
    headroom = state.headroom
    counted = total >= 1.0 / budget
    if counted and dt > 0:
        miss = own / total
        if miss > budget and late > excused and not after_onset(onset_at, settings, now):
            headroom = min(MAX_HEADROOM, headroom + rise_rate(miss, settings) * dt)
        elif miss < COMFORT_SHARE * budget:
            headroom = max(0.0, headroom - MAX_HEADROOM / window * dt)
    compliance = 1.0 - missed / total if total > 0 else None
    new_through = float(until) if through is None else max(through, float(until))
    spare = max(0.0, budget * total - own) if counted else 0.0
    return LoopReading(total, missed, new_through, headroom, compliance, spare, pardoned)


def _excused(
    rows: tuple[tuple[int, int, int], ...],
    through: float | None,
    until: int,
    anchors: Iterable[float | None],
    settings: QueueSettings,
) -> int:
    """Late starts among the seconds counted now, (through, until], that started within
    `reaction_seconds` of an anchor (epoch s: a burst onset, a surge), each second once."""
    reaction = reaction_seconds(settings)
    spans = sorted(
        (math.ceil(a) - 1.0, float(math.floor(a + reaction))) for a in anchors if a is not None
    )
    excused, done = 0, through
    for first, end in spans:  # late_starts counts seconds after `first`
        after = first if done is None else max(done, first)
        last = min(float(until), end)
        if last > after:
            excused += late_starts(rows, after, last, settings.sla_seconds)[1]
            done = last
    return excused
