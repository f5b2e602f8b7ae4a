"""Bursts that come back: remember their onsets, anticipate the next, keep capacity only when
it pays ("delayed off").

A reacting controller cannot pick up the first minute of a surge in time: workers ordered when
it shows land one provisioning lead L later (the reaction bound). The only route past that is
to order before the surge, which needs evidence that it will come. This module keeps that
evidence in the controller's state item, bounded to `MAX_BURSTS` (onset, need) pairs and
`MAX_BURSTS` ends:

- **onset**: the arrival rate reaches at least `ONSET_RATIO` x the lowest rate recorded within
  the last L + one interval, the rise keeps at least `MIN_RISE` more workers busy, and no onset
  was recorded within the last `refractory` = 2 (L + interval);
- **end**: the arrival rate falls to at most 1 / `ONSET_RATIO` of the highest rate recorded
  within the last trend window, the fall frees at least `MIN_RISE` busy workers, and no end was
  recorded since the last onset (before any onset: none yet). An end is seen even when its
  burst's onset was not (the controller started during it, or its rates were still filling);
- **need** of a burst: the highest sustained need from its onset until the next onset;
- **recurrence**: the last three onsets are `PERIOD_TOLERANCE` apart at most (the two
  intervals agree within 15 %): period P = their mean; the next onset is expected at
  last + P. One surge, or irregular ones, establish nothing.

Bursts that recurred but not (yet) regularly (two onsets `gap` <= `memory_seconds` apart, or
three unevenly spaced; or, with one onset seen, two ends `gap` apart around it: the burst before
it ended `gap` before it did, so the next, as far after it, starts `gap` after its onset): the
task's "if bursts recurred within T, hold until T + lead has passed", shaped like the
anticipation below: the last burst's need is kept from `early` + L before a burst as far after
it is due (last + gap) until gap + L after its onset, so a third burst as far after the second
finds the fleet up; in between, once the burst is over, its capacity is let go (holding it
through the whole gap cost more than the misses it saved).

With recurrence established the hybrid

- **anticipates**: from `early` = L + 2 intervals + the intervals' disagreement before the
  expected onset, the fleet is floored at the need of the last bursts, so the workers are
  running when the burst starts; the floor ends when the onset is seen (it becomes the next
  reference) or `grace` after the expected time (the burst did not come: recurrence lapses);
- **delays off, then lets go**: Gandhi and Harchol-Balter's "delayed off" result for servers
  with a setup time: an idle worker should be stopped only if it will not be needed again
  within about one setup time (stopping it saves less than re-provisioning costs). So the floor
  starts one more L earlier (a worker that would be re-ordered within L is kept), but in that
  extra lead it only keeps running workers: it orders none (`Recurrence.orders`), since a
  worker started before `early` idles that much longer.

While they recur regularly (`regular`) the hybrid sizes on the short rate window alone: the
long one averages a burst with the gap after it, and kept the burst's fleet for its 300 s.

Whether or not bursts recur, once the last burst is over (sustained need under half its need,
within `memory_seconds` of its onset) its capacity is kept one lead plus one interval (not the
stabilization window), and the scale-down goes straight to the recommendation instead of 25 %
a minute: a recurring burst is anticipated, not remembered; a one-off surge decays.

Pure: `now` and the settings come in; nothing here reads a clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from queue_autoscale.core import sla_loop
from queue_autoscale.core.models import Burst, ControllerState, QueueSettings, Sample
from queue_autoscale.core.onsets import MAX_BURSTS

ONSET_RATIO = 2.0
"""A burst starts when the arrival rate reaches at least this multiple of the lowest rate of
the last lead plus one interval (`QueueSettings.forecast_horizon_seconds`)..."""
MIN_RISE = 3.0
"""...and the rise keeps at least this many more workers busy (noise on a small fleet is not a
burst)."""
PERIOD_TOLERANCE = 0.15
"""Consecutive intervals between onsets agree within this share of the longer one."""


def last_onset(bursts: Sequence[Burst]) -> float | None:
    """The onset of the last remembered burst, epoch s (None: none remembered)."""
    return bursts[-1].at if bursts else None


class Recurrence(NamedTuple):
    """What the remembered bursts say at one tick."""

    bursts: tuple[Burst, ...]
    """The updated memory (oldest first), for the next state."""
    onset: bool
    """True when this tick recorded a new onset."""
    period: float | None
    """Seconds between onsets when they recur regularly, else None."""
    floor: int
    """Workers to keep now: the anticipated need in the window before an expected burst
    (0 outside it or without recurrence)."""
    expected_in: float | None
    """Seconds until the next expected onset (negative: overdue within the grace), None when
    nothing is expected."""
    held_for: float | None
    """While the hold of bursts that recurred but not (yet) regularly keeps capacity: seconds
    between the last two bursts (onsets, or ends with one onset seen; the floor is then the
    last burst's need, from `early` + lead before last + gap until gap + lead after the last
    onset); else None."""
    over: bool
    """True when the last burst is over (sustained need under half its need) and began less
    than `memory_seconds` ago: keep its capacity for one lead plus one interval only (a
    recurring one is anticipated, a one-off decays)."""
    ends: tuple[float, ...]
    """The updated burst ends (epoch s, oldest first), for the next state."""
    orders: bool = True
    """False while the floor only keeps running workers (the delayed off's extra lead before
    `early`): it holds what runs up to `floor` but orders none."""

    @property
    def recurring(self) -> bool:
        """True when bursts recur on a period (`period` is set)."""
        return self.period is not None


def memory_seconds(settings: QueueSettings) -> float:
    """How long after its onset a burst's end still shortens the hold, seconds: the SLA loop's
    window W (`sla_loop.window_seconds`, 20 (lead + SLA))."""
    return sla_loop.window_seconds(settings)


def refractory_seconds(settings: QueueSettings) -> float:
    """Shortest time between two onsets: 2 x (lead + interval), seconds."""
    return 2.0 * settings.forecast_horizon_seconds


def surge_onset(
    bursts: Sequence[Burst], surge_at: float | None, settings: QueueSettings, now: float
) -> bool:
    """True when a surge ordered for now on the backlog's growth alone starts a reaction of its
    own: no burst onset and no earlier such surge within `refractory_seconds` (a surge read
    that soon after one is the same rush, still being answered).

    The onset test reads the windows' rate, which a rush of 20-40 s at 1.5-2x the rate moves
    by well under the doubling it asks; the drain sees the rush in the backlog's growth and
    orders for it, and the jobs that arrived with it wait for that landing as an onset's do
    (core/sla_loop.py excuses their misses)."""
    onset = last_onset(bursts)  # the later of the two known (no generator: every tick)
    last = surge_at if onset is None or (surge_at is not None and surge_at > onset) else onset
    return last is None or now - last >= refractory_seconds(settings)


def update(
    state: ControllerState,
    need: int,
    rate: float,
    job_seconds: float,
    settings: QueueSettings,
    now: float,
) -> Recurrence:
    """Record an onset or an end, or grow the last burst's need, then read the recurrence.

    `need` is this tick's sustained need in workers (the steady term without the SLA loop's
    headroom), `rate` the arrival rate it was sized for (jobs/s) and `job_seconds` the mean job
    time. The baseline is the lowest arrival rate among the samples of the last lead plus one
    interval; the rise is counted in busy workers, (rate - baseline) x job time / concurrency.
    An end's reference is the highest rate among the samples of the last trend window (a rate
    read over the long window falls over that window after a burst).
    """
    bursts = state.bursts
    span = settings.forecast_horizon_seconds  # a lead plus an interval
    last = bursts[-1] if bursts else None
    onset = False
    # a fresh state's rates may still be filling their windows: no onset before one trend window
    history = max(span, settings.trend_window_seconds)
    covered = bool(state.samples) and now - state.samples[0].at >= history
    baseline, peak = _extremes(state.samples, now, span, history) if covered else (None, None)
    if baseline is not None and (last is None or now - last.at >= refractory_seconds(settings)):
        rise = (rate - baseline) * job_seconds / settings.worker_concurrency  # busy workers
        onset = rate >= ONSET_RATIO * baseline and rise >= MIN_RISE
    if onset:
        bursts = (*bursts, Burst(now, need))[-MAX_BURSTS:]
    elif last is not None and need > last.need:
        bursts = (*bursts[:-1], Burst(last.at, need))
    ends = state.burst_ends
    opened = last is not None and (not ends or ends[-1] < last.at)  # no end since the onset
    if peak is not None and not onset and (opened or (last is None and not ends)):
        fall = (peak - rate) * job_seconds / settings.worker_concurrency  # busy workers
        if ONSET_RATIO * rate <= peak and fall >= MIN_RISE:
            ends = (*ends, now)[-MAX_BURSTS:]
    return _read(bursts, ends, onset, need, settings, now)


def _extremes(
    samples: Sequence[Sample], now: float, recent_seconds: float, window_seconds: float
) -> tuple[float | None, float | None]:
    """(lowest arrival rate among the samples of the last `recent_seconds`, highest among those
    of the last `window_seconds`), jobs/s; None where no sample is that recent. One pass over
    the samples (this runs every tick)."""
    low: float | None = None
    high: float | None = None
    for sample in samples:
        age, y = now - sample.at, sample.arrival_rate
        if age <= recent_seconds and (low is None or y < low):
            low = y
        if age <= window_seconds and (high is None or y > high):
            high = y
    return low, high


def _read(
    bursts: tuple[Burst, ...],
    ends: tuple[float, ...],
    onset: bool,
    need: int,
    settings: QueueSettings,
    now: float,
) -> Recurrence:
    if not bursts:
        return Recurrence(bursts, onset, None, 0, None, None, False, ends)
    last = bursts[-1]
    lead = settings.provisioning_lead_seconds
    memory = memory_seconds(settings)
    over = 2 * need < last.need and now - last.at < memory
    regular = _regular(bursts, settings, now)
    if regular is not None:
        period, expected_in, floor, orders = regular
        return Recurrence(bursts, onset, period, floor, expected_in, None, over, ends, orders)
    gap = _gap(bursts, ends)  # recurred, not (yet) regularly: hold until the gap + a lead passed
    if gap is not None and gap <= memory and now - last.at <= gap + lead:
        due_in = last.at + gap - now
        if due_in <= _ahead(settings, 0.0):
            orders = due_in <= _early(settings, 0.0)
            return Recurrence(bursts, onset, None, last.need, None, gap, False, ends, orders)
        return Recurrence(bursts, onset, None, 0, None, None, over, ends)  # until then, let go
    return Recurrence(bursts, onset, None, 0, None, None, over, ends)  # one-off, or hold over


def regular(bursts: Sequence[Burst], settings: QueueSettings, now: float) -> bool:
    """True while the last three onsets recur on a period and the next is not overdue past
    its grace (the anticipation floor then brings each burst's need back before it)."""
    return _regular(tuple(bursts), settings, now) is not None


def _gap(bursts: tuple[Burst, ...], ends: tuple[float, ...]) -> float | None:
    """Seconds between the last two bursts: between their onsets, or, with only the last onset
    seen, between the two ends around it (the one before it and its own); else None."""
    if len(bursts) >= 2:
        return bursts[-1].at - bursts[-2].at
    if len(ends) >= 2 and ends[-2] < bursts[-1].at < ends[-1]:
        return ends[-1] - ends[-2]
    return None


def _regular(
    bursts: tuple[Burst, ...], settings: QueueSettings, now: float
) -> tuple[float, float, int, bool] | None:
    """(period, seconds to the next onset, floor now, whether it orders) when the last three
    onsets are evenly spaced and the next is not overdue past the grace, else None."""
    if len(bursts) < 3:
        return None
    a, b, c = bursts[-3:]
    first, second = b.at - a.at, c.at - b.at
    if abs(first - second) > PERIOD_TOLERANCE * max(first, second):
        return None
    period = (first + second) / 2.0
    expected_in = c.at + period - now
    grace = max(2.0 * settings.evaluation_interval_seconds, abs(first - second))
    if expected_in < -grace:  # the burst did not come: the recurrence lapsed
        return None
    anticipated = max(b.need, c.need)
    spread = abs(first - second)
    floor = anticipated if expected_in <= _ahead(settings, spread) else 0
    return period, expected_in, floor, expected_in <= _early(settings, spread)


def _early(settings: QueueSettings, spread: float) -> float:
    """How long before a burst is due its need is ordered, seconds: lead + 2 intervals +
    `spread` (the intervals' disagreement), so the workers run when it starts."""
    return settings.provisioning_lead_seconds + 2.0 * settings.evaluation_interval_seconds + spread


def _ahead(settings: QueueSettings, spread: float) -> float:
    """How long before a burst is due its need is kept, seconds: `early` plus one more lead,
    the delayed off (a running worker that would be re-ordered within a lead is kept; none is
    ordered before `early`)."""
    return _early(settings, spread) + settings.provisioning_lead_seconds
