"""Bursts that recur: the predictive policy's forecast of the next one, used only where it
passed its back-test (docs/decision.md, "Recurring bursts"). Pure: `now` comes in.

- **onset**: the rate the plan sizes on, less z of its noise (z the percentile's normal
  quantile), is past what the steady plan serves at the baseline (the lowest rate of the last
  reach R = L + I) plus z of its noise: a rise the fleet sized for the baseline cannot carry,
  and not the rate's noise. None until the last burst ended, nor within 2R of its onset (the
  rise fills the rate windows for a reach, and the baseline must lie past it), nor before the
  samples cover W + 2R (a fresh state's first samples are read while the rate windows fill).
- **end**: the rate plus z of its noise is served by a steady plan below the last reach's
  peak less z of its noise; once per onset.
- Each is stamped at the last sample still on the old level (it began after that sample): the
  rate windows show a change a tick or two late, and the forecast must not inherit that lag.
- **burst rate**: the highest rate seen from an onset until the next, jobs/s.
- **model**: the next onset comes one period P (the last gap between onsets) after the last.
- **back-test**: the model predicted the last onset from the two before it, and the last end
  before the last onset came P after the one before it, each within R (every check that can be
  made is made; at least one must be). An onset predicted that closely is served by workers
  ordered within the delayed off's own span. An expected onset that has not come R after its
  time fails the model until a new one passes.
- **forecast**: where the model passed, arrivals at the burst rate (the highest of the last
  three bursts') from the back-test's error before the expected onset, and from a predicted
  onset until R after it (the rate windows fill with it meanwhile).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

from queue_autoscale.core.models import Burst, Sample

REMEMBERED = 3
"""Onsets and ends the state keeps: what the model reads, so no decision depends on it. The
model takes the period from the last two onsets and back-tests it on the one before; the
back-test reads the last two ends before the last onset, and at most one end follows it (one
per onset)."""


class Surge(NamedTuple):
    """A back-tested forecast of the next burst."""

    starts_in: float
    """Seconds from now the arrivals are forecast at `rate` (0: from now on)."""
    rate: float
    """Jobs/s forecast from then on: the back-tested bursts' highest rate."""
    period: float
    """Seconds between onsets (the last gap)."""
    expected_in: float
    """Seconds until the expected onset (negative: overdue, within the reach)."""


class Onsets(NamedTuple):
    """What the remembered onsets and ends say at one tick."""

    bursts: tuple[Burst, ...]
    """The updated onsets, oldest first, for the next state."""
    ends: tuple[float, ...]
    """The updated ends (epoch s), oldest first, for the next state."""
    surge: Surge | None
    """The forecast burst when the model passed its back-test and one is expected; else None."""


def history_seconds(window: float, reach: float) -> float:
    """The samples' span `update` needs before it reads any (s): the long rate window W filled,
    then a reach R of baseline and one of rise. The controller keeps at least this much."""
    return window + 2.0 * reach


def update(  # noqa: PLR0913 - the tick's measures, computed once
    bursts: Sequence[Burst],
    ends: Sequence[float],
    samples: Sequence[Sample],
    rate: float,
    noise: Callable[[float], float],
    serves: Callable[[float], float],
    reach: float,
    window: float,
    now: float,
) -> Onsets:
    """Record an onset or an end or raise the last burst's rate, then read the back-tested model.

    `rate` is the rate the plan sizes on, `noise(r)` z standard deviations of a rate r's reading
    and `serves(r)` the rate the steady plan for r serves (all jobs/s); `reach` R = L + I and
    `window` the long rate window W (seconds). `samples` are the controller's (oldest first);
    nothing is read before they cover W + 2R (a fresh state's first
    samples are read while the rate windows fill; then a reach of baseline and one of rise). A
    change is stamped at the last sample still on the old level (it began after that sample),
    not at its reading."""
    kept, over = tuple(bursts), tuple(ends)
    last = kept[-1] if kept else None
    fresh = not samples or now - samples[0].at < history_seconds(window, reach)
    low, high = (None, None) if fresh else _extremes(samples, now, reach)
    ended = last is None or (bool(over) and over[-1] > last.at)  # the last burst is over
    if low is not None and ended and now - (last.at if last else -math.inf) >= 2.0 * reach:
        quiet = low + noise(low)
        if rate - noise(rate) > serves(quiet):
            began = _last_sample(samples, lambda r: r <= quiet)
            kept = (*kept, Burst(now if began is None else began, 0, rate))[-REMEMBERED:]
            return Onsets(kept, over, forecast(kept, over, reach, now))
    if last is not None and rate > last.rate:
        kept = (*kept[:-1], last._replace(rate=rate))
    opened = not over or (last is not None and over[-1] < last.at)  # no end since the onset
    if high is not None and opened:
        busy = high - noise(high)
        if serves(rate + noise(rate)) < busy:
            stamp = _last_sample(samples, lambda r: r >= busy)
            over = (*over, now if stamp is None else stamp)[-REMEMBERED:]
    return Onsets(kept, over, forecast(kept, over, reach, now))


def forecast(
    bursts: Sequence[Burst], ends: Sequence[float], reach: float, now: float
) -> Surge | None:
    """The burst the model (one last gap P after the last onset) forecasts, if it passed its
    back-test: the next one from the back-test's error before its expected onset until a reach
    past it (then overdue: the model failed), and the last one itself until a reach after its
    onset (the rate windows fill with it within a reach); else None."""
    if len(bursts) < 2:
        return None
    second, last = bursts[-2].at, bursts[-1].at
    period = last - second
    error = _back_test(bursts, ends, period, last)
    if error is None or error > reach:
        return None
    expected_in = last + period - now
    rate = max(b.rate for b in bursts[-3:])
    if now - last < reach:  # the burst the model predicted is on: its rate is still filling
        return Surge(0.0, rate, period, expected_in)
    if expected_in < -reach:  # the burst did not come: the model failed
        return None
    return Surge(max(0.0, expected_in - error), rate, period, expected_in)


def _back_test(
    bursts: Sequence[Burst], ends: Sequence[float], period: float, last: float
) -> float | None:
    """The model's largest error, seconds, over the last changes it could have predicted: the
    last onset from the two before it, and the last end before the last onset from the end
    before that one (P after it); None when neither can be checked yet."""
    errors = []
    if len(bursts) >= 3:
        first, second = bursts[-3].at, bursts[-2].at
        errors.append(abs(last - (2.0 * second - first)))
    before = [e for e in ends if e < last]
    if len(before) >= 2:
        errors.append(abs(before[-1] - before[-2] - period))
    return max(errors) if errors else None


def _extremes(
    samples: Sequence[Sample], now: float, span: float
) -> tuple[float | None, float | None]:
    """(lowest, highest) arrival rate among the samples of the last `span` seconds, jobs/s."""
    if not samples:
        return None, None
    low = high = samples[-1].arrival_rate
    for sample in reversed(samples):
        if now - sample.at > span:
            break
        rate = sample.arrival_rate  # min() and max() without the calls: every tick
        low = rate if rate < low else low
        high = rate if rate > high else high
    return low, high


def _last_sample(samples: Sequence[Sample], on_level: Callable[[float], bool]) -> float | None:
    """When the last sample whose rate is `on_level` was taken, epoch s (None: none)."""
    for sample in reversed(samples):
        if on_level(sample.arrival_rate):
            return sample.at
    return None
