"""Running hot: the hybrid's sizing terms below Erlang C while the SLA has budget to spare.

Erlang C sizes for the stationary queue at a known rate. On Poisson traffic at an integer load
(20 jobs/s of 1 s jobs) it asks for 21 workers whenever the measured rate is a little above 20,
which the 60 s and 300 s windows are half the time, and the stabilization window keeps the
highest of its readings: the fleet sat at 21-23 while a fixed fleet of 21 met the SLA. At
rho ~1 the queue is a random walk, and with an SLA of 10-60 s a walk that is watched every
interval can be corrected before any job is late. So while the SLA loop reads the realized
compliance comfortably within its budget (`sla_loop.comfortable`), the steady, trend and drain
terms use `workers` instead: the fewest workers that

- keep c mu at or above the lowest load the windows cannot tell from the measured one
  (`least_load`: the load less `LOAD_Z` standard errors, one-sided 95 %), so the fleet never
  sits knowingly under the load, yet the windows' noise alone adds no worker; and
- keep the backlog one reaction time from now (lead + interval), at the percentile's quantile
  of the random walk (`queueing.hot_workers`, variance (lambda D + c mu) per second with the
  measured index of dispersion D), pickable within the SLA.

On over-dispersed traffic (the NASA day reads D = 10-17) the walk's variance, the load's
standard error and the backlog growth's noise all carry the measured D, so the hot terms apply
there too. Where the SLA is shorter than a lead, only once the reaction time
(`sla_loop.reaction_seconds`) after a burst onset has passed: misses inside it are the reaction
bound's (they spend no budget), after it the loop reads the fleet's own; where it covers a lead
(`sla_loop.covers_lead`), at once (`allowed`). Never on a loose SLA (its carried backlog
already runs the fleet at rho ~1), nor with the dispersion unknown. The drain is held to the hot
size only when the backlog's growth shows no surge (`surging`).

On Poisson-like traffic (`poisson_like`: the measured dispersion within `DISPERSION_SIGMAS`
standard errors of 1) the terms size on the settled load (`settle`) rather than the windows: an
exponential average of the long window's load over the SLA loop's window W, restarted whenever a
window's reading or the trend's slope says the level moved, and used only once it has held a
whole long window since (a level that just moved may still be moving), or at once when it is at
least `early_min_load` workers and the trend reads flat (`early`). The windows' noise (the
load's standard error over 300 s is 0.37 workers at 20 jobs/s) crosses Erlang C's integer
boundaries and, times the reaction time, moves the walk's drift by more than the room a 10 s SLA
leaves; the average has a third of it. The hot size's floor still reads the measured rate's least
load: a fleet never sits below what the short window can tell.

Why it does not oscillate: the hot size moves only when the backlog or the load moves by more
than their noise; a backlog that builds past the walk's quantile orders one worker, the
stabilization window keeps it a window, the backlog drains at (c mu - lambda), and the hot size
returns. On the bench's steady run (SLA 30 s) the fleet alternates 20/21 with 3-4 flaps in two
hours; on a miss share above the comfort band the loop stops running hot at once, and headroom
rises on misses as before (core/sla_loop.py). docs/simulator.md has the numbers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

from queue_autoscale.core import recurrence, sla_loop, trend
from queue_autoscale.core.drain import carried_wait_seconds
from queue_autoscale.core.measures import Measures
from queue_autoscale.core.models import (
    ControllerState,
    QueueSettings,
    QueueSnapshot,
    Sample,
    Settled,
)
from queue_autoscale.core.queueing import bounded_workers, hot_workers, walk_quantile
from queue_autoscale.core.snapshot import SHORT_WINDOW_SECONDS
from queue_autoscale.core.text import n_workers

LOAD_Z = NormalDist().inv_cdf(0.95)
"""Standard errors of the measured load the hot size may sit below it (one-sided 95 %)."""
MIN_READING_WINDOWS = 0.5
"""The least span of the loop's reading, in windows W, before it may run hot: half a window
(15 minutes at a 60 s lead and a 30 s SLA). A chosen floor, measured both ways: a whole window
kept the fleet at Erlang C for the first 30 minutes of the bench's two-hour steady run (151,433
worker-s at 30 s p99.9, above static 21's 151,263), none let a warm-up's Poisson traffic run
the NASA day's fleet hot into its first bursts (30 s p95: 625,180 against the goal's 622,080).
Only where the SLA is shorter than a lead (`allowed`)."""
DISPERSION_SIGMAS = 3.0
"""Standard errors of the dispersion estimate above 1 before traffic stops counting as Poisson.
A false alarm drops the settled load (and lets `core/constraints.py` confirm re-orders), so the
test must almost never fire on Poisson traffic: 3 sigma is one tick in about 750."""
RESTART_SIGMAS = 3.0
"""Standard errors by which a window's load, or the trend's slope, must leave the settled load
before it restarts. Measured: with the short window's restart at 1.645 the restarts on Poisson
noise give the average's gain back (steady 10 s p99 154,154 worker-s, 150,813 at 3;
docs/simulator.md)."""
EARLY_SLOPE_SIGMAS = 1.0
"""The trend's slope, in standard errors of a flat rate's (`trend.slope_sigmas`), under which a
settled load that has not held a long window may size (`early`). Without it the ramp at SLA 30-60 s
(12-60 workers) sized on each fresh restart and ran behind (ramp 30 s p99.9 242,200 -> 365,970)."""


def settled_early(settled: Settled | None, settings: QueueSettings) -> bool:
    """True when a settled load exists and is at least `early_min_load` workers: the fleet may
    run hot without the loop's half window (`allowed`)."""
    return settled is not None and settled.load >= early_min_load(settings)


def early_min_load(settings: QueueSettings) -> float:
    """The least settled load, workers, that may run hot or size early: (lead + interval) / SLA.
    One worker short lets the backlog grow by mu (L + I) jobs before a correction lands; c
    workers clear c mu S jobs within the SLA, so from this load one worker's shortfall fits in
    one SLA of the fleet's work (7 workers at a 60 s lead, 10 s interval and 10 s SLA)."""
    return settings.forecast_horizon_seconds / settings.sla_seconds


def early(settled: Settled | None, slope_sigmas: float, settings: QueueSettings) -> bool:
    """True when the settled load may size at once after a restart (`settled_rate`): it is
    `settled_early` and the trend's slope (`slope_sigmas`, from `slope`) reads under
    `EARLY_SLOPE_SIGMAS`."""
    return settled_early(settled, settings) and slope_sigmas < EARLY_SLOPE_SIGMAS


def slope(
    samples: Sequence[Sample],
    m: Measures,
    snapshot: QueueSnapshot,
    settings: QueueSettings,
    now: float,
) -> float:
    """The trend's slope over the samples' windowed rates and this tick's window rate, in
    standard errors of a flat rate's at the measured dispersion (`trend.slope_sigmas`)."""
    window = settings.trend_window_seconds
    return trend.slope_sigmas(samples, m.window_rate, now, window, dispersion(snapshot))


def allowed(
    loop: sla_loop.LoopReading,
    rec: recurrence.Recurrence,
    snapshot: QueueSnapshot,
    settings: QueueSettings,
    now: float,
    settled: Settled | None = None,
) -> bool:
    """True when the sizing terms may run hot this tick: the realized compliance comfortably
    within its budget, a measured dispersion, a tight SLA; and, where the SLA is shorter than
    a lead, a reading over at least half a window (a `settled_early` settled load waives it)
    and no burst onset within the reaction time (`sla_loop.reaction_seconds`: the fleet is
    still the burst's reaction). Where the SLA covers a lead (`sla_loop.covers_lead`) those two
    guard against nothing: a backlog the hot fleet lets build shows and is picked up within
    the SLA by workers ordered then, and the loop reads any miss as the fleet's own (NASA x10
    60 s p99 539,390 -> 535,860 worker-s without the onset gate, p95 532,310 -> 528,500
    without the half window).

    Over-dispersed arrivals run hot too: `workers` sizes the walk and the load's error with the
    measured D (on the NASA day at SLA 60 s, p95, 564,010 -> 535,420 worker-s at 99.73 %).
    The onset gate was the loop's whole window W (40 minutes at SLA 60 s), which on the NASA
    day's recurring bursts kept the fleet at Erlang C most of the time."""
    if carried_wait_seconds(settings) > 0 or not sla_loop.comfortable(loop, settings):
        return False
    if measured_dispersion(snapshot) is None:
        return False
    if sla_loop.covers_lead(settings):  # a mistake shows, and is corrected, within the SLA
        return True
    if not settled_early(settled, settings) and not covers_a_window(loop, snapshot, settings):
        return False
    onset = recurrence.last_onset(rec.bursts)
    return onset is None or now - onset >= sla_loop.reaction_seconds(settings)


def covers_a_window(
    loop: sla_loop.LoopReading, snapshot: QueueSnapshot, settings: QueueSettings
) -> bool:
    """True when the loop's reading spans at least `MIN_READING_WINDOWS` of its time constant W
    at the current rate: its decayed count has reached (1 - exp(-that)) lambda W. A reading
    much younger than W (a controller just started, a queue just woken) is too short to call
    the budget comfortable: running hot through the NASA day's 10-minute warm-up cost its 30 s
    p95 cell 5,000 worker-s."""
    rate = snapshot.arrival_rate or 0.0
    reach = 1.0 - math.exp(-MIN_READING_WINDOWS)
    return loop.started >= reach * rate * sla_loop.window_seconds(settings)


def workers(
    rate: float, m: Measures, snapshot: QueueSnapshot, settings: QueueSettings, cap: int
) -> int:
    """The hot size for `rate` jobs/s from the backlog waiting now (queueing.hot_workers).

    Its floor is the higher of the long window's least load and, over the short window, that of
    `rate` or the windows' rate (`Measures.window_rate`), whichever is higher: the first keeps
    the fleet at the load, the second keeps a surge's or a forecast's sizing at its own load
    (c mu below it would let the backlog grow past any one reaction time) and a settled load's
    at what the short window can tell."""
    d = dispersion(snapshot)
    least = max(
        least_load(snapshot.arrival_rate or 0.0, snapshot.rate_window_seconds, d),
        least_load(max(rate, m.window_rate), SHORT_WINDOW_SECONDS, d),
    )
    return hot_workers(
        arrival_rate=rate,
        least_rate=least,
        backlog=m.visible,
        service_rate_per_worker=m.service_rate,
        sla_seconds=settings.sla_seconds,
        reaction_seconds=settings.forecast_horizon_seconds,
        percentile=settings.percentile,
        max_workers=cap,
        dispersion=d,
    )


def least_load(rate: float, window_seconds: float, d: float = 1.0) -> float:
    """`rate` (jobs/s) less `LOAD_Z` standard errors of the load measured over the window.

    The load is lambda x mean job time, both counted over the window: with N = lambda T jobs,
    its relative variance is D / N from the arrivals (D their index of dispersion) plus about
    1 / N from the job times (exponential-like, cv 1)."""
    if not rate > 0 or not math.isfinite(rate) or not window_seconds > 0:
        return 0.0
    return max(0.0, rate * (1.0 - LOAD_Z * load_error(rate, window_seconds, d)))


def load_error(rate: float, window_seconds: float, d: float = 1.0) -> float:
    """The relative standard error of the load (rate x mean job time) measured over a window at
    `rate` jobs/s: sqrt((D + 1) / (lambda T)), D from the arrivals and 1 from exponential-like
    job times (inf without a rate)."""
    if not rate > 0 or not window_seconds > 0:
        return math.inf
    return math.sqrt((d + 1.0) / (rate * window_seconds))


def settled_measures(
    state: ControllerState,
    snapshot: QueueSnapshot,
    m: Measures,
    settings: QueueSettings,
    now: float,
) -> tuple[Measures, Settled | None]:
    """This tick's measures with the sizing rate at the settled load where it applies
    (`settled_rate`; `window_rate` keeps the windows'), and the settled load to remember."""
    if not poisson_like(snapshot):  # no settled load (`settle`), so no slope to read
        return m, None
    rising = slope(state.samples, m, snapshot, settings, now)
    settled = settle(state.settled, rising, snapshot, m, settings, now)
    at_once = early(settled, rising, settings)
    rate = settled_rate(settled, snapshot, m, now, at_once)
    return (m if rate is None else m._replace(arrival_rate=rate)), settled


def settle(
    previous: Settled | None,
    slope_sigmas: float,
    snapshot: QueueSnapshot,
    m: Measures,
    settings: QueueSettings,
    now: float,
) -> Settled | None:
    """The settled load after this tick (None where it does not apply: a loose SLA, arrivals
    not Poisson-like, no rate yet).

    An exponential average, time constant the SLA loop's window W, of the long window's offered
    load (workers: rate / mu) at each tick; restarted at that load when there is none yet, a
    tick was missed, or the level moved (`moved`; `slope_sigmas` is the trend's, `slope`)."""
    rate, mu = snapshot.arrival_rate, m.service_rate
    if carried_wait_seconds(settings) > 0 or not poisson_like(snapshot):
        return None
    if rate is None or not math.isfinite(rate) or not rate > 0 or not mu > 0:
        return None
    load = rate / mu
    if previous is None or not 0 < now - previous.at <= snapshot.rate_window_seconds:
        return Settled(load, now, now)
    if moved(previous.load, slope_sigmas, snapshot, m):
        return Settled(load, now, now)
    weight = 1.0 - math.exp(-(now - previous.at) / sla_loop.window_seconds(settings))
    return Settled(previous.load + weight * (load - previous.load), previous.since, now)


def moved(settled_load: float, slope_sigmas: float, snapshot: QueueSnapshot, m: Measures) -> bool:
    """True when the level moved from the settled load (workers) by more than the noise: the
    long window's load leaves it by `RESTART_SIGMAS` of its standard errors, the short window's
    rises past it by as many of its own (a step shows within a minute), or the trend's slope
    (`slope_sigmas`, from `slope`) is that many standard errors up (a ramp, which stays within
    the window's errors of a lagging average for many minutes)."""
    d, mu = dispersion(snapshot), m.service_rate
    rate = snapshot.arrival_rate or 0.0
    error = rate / mu * load_error(rate, snapshot.rate_window_seconds, d)
    if abs(rate / mu - settled_load) > RESTART_SIGMAS * error:
        return True
    short = snapshot.arrival_rate_short
    if short is not None and math.isfinite(short) and short > 0:
        error = short / mu * load_error(short, SHORT_WINDOW_SECONDS, d)
        if short / mu - settled_load > RESTART_SIGMAS * error:
            return True
    return slope_sigmas > RESTART_SIGMAS


def settled_rate(
    settled: Settled | None,
    snapshot: QueueSnapshot,
    m: Measures,
    now: float,
    at_once: bool = False,
) -> float | None:
    """The arrival rate (jobs/s, at this tick's mu) the settled load stands for, once it has held
    a whole long window since its last restart or at once when `at_once` (`early`); None before
    (the windows size then)."""
    if settled is None:
        return None
    if not at_once and now - settled.since < snapshot.rate_window_seconds:
        return None
    return settled.load * m.service_rate


def measured_dispersion(snapshot: QueueSnapshot) -> float | None:
    """The snapshot's index of dispersion of the arrivals when it holds a finite one, else None
    (unknown: no hot sizing, no settled load)."""
    d = snapshot.arrival_dispersion
    return d if d is not None and math.isfinite(d) else None


def dispersion(snapshot: QueueSnapshot) -> float:
    """The measured index of dispersion of the arrivals, 1 (Poisson) when unknown or absurd."""
    d = measured_dispersion(snapshot)
    return 1.0 if d is None or d < 0 else d


def poisson_like(snapshot: QueueSnapshot) -> bool:
    """True when the per-second arrivals are about as random as Poisson: their index of
    dispersion over the long window of T seconds within `DISPERSION_SIGMAS` standard errors,
    sqrt(2 / (T - 1)), of 1 (unknown reads as not: no hot sizing on traffic it cannot read)."""
    d = measured_dispersion(snapshot)
    if d is None:
        return False
    seconds = max(snapshot.rate_window_seconds, 2.0)
    return d <= 1.0 + DISPERSION_SIGMAS * math.sqrt(2.0 / (seconds - 1.0))


def surging(rate: float, m: Measures, snapshot: QueueSnapshot, settings: QueueSettings) -> bool:
    """True when the drain's rate (a surge seen in the backlog's growth, or the windows) is above
    the long window's by more than the percentile's quantile of the growth's own noise: over an
    interval t the backlog of a steady queue moves by sqrt((lambda D + c mu) t) jobs (D the
    measured dispersion, as in the walk of `workers`), a rate error of sqrt((lambda D + c mu) /
    t). A surge's drain is not held to the hot size."""
    long = snapshot.arrival_rate or 0.0
    t = max(settings.evaluation_interval_seconds, 1.0)
    spread = long * dispersion(snapshot) + m.running * m.service_rate
    noise = math.sqrt(max(spread, 0.0) / t)
    return rate > long + walk_quantile(settings.percentile) * noise


def words(need: int, steady: int, m: Measures, settings: QueueSettings) -> str:
    """Why the steady term won when running hot put it below Erlang C's `need`."""
    reaction = settings.forecast_horizon_seconds
    rho = m.arrival_rate / (steady * m.service_rate) if steady > 0 and m.service_rate > 0 else 0.0
    return (
        f"steady won, running hot: {n_workers(steady)} (Erlang C: {need}) at "
        f"{m.arrival_rate:.2f} jobs/s, rho {rho:.2f}: realized compliance within its budget and "
        f"Poisson-like arrivals, so only the backlog one reaction time ({reaction:g} s) ahead "
        f"must make the {settings.sla_seconds:g} s SLA at its {settings.percentile:.1%} "
        f"quantile{m.prior_note}"
    )


def exposes_onsets(settings: QueueSettings) -> bool:
    """True where the SLA covers the provisioning lead but not the reaction to a burst onset,
    L <= S < L + I: a backlog may stand (it shows, and is picked up within the SLA by workers
    ordered then: `sla_loop.covers_lead`), yet a burst's first jobs wait past the SLA for the
    workers ordered when it shows (read at the next tick, up to an interval later, and landing a
    lead after that), so only the running fleet can pick them up in time."""
    return (
        sla_loop.covers_lead(settings) and settings.sla_seconds < settings.forecast_horizon_seconds
    )


def onset_backlog(m: Measures, spare: float, settings: QueueSettings) -> float:
    """The backlog that may stand where bursts find it (`exposes_onsets`), jobs: the larger of
    the unspent miss budget `spare` (`sla_loop.LoopReading.spare`) and what the running fleet
    picks up in one interval, c mu I (a wait within one reading of the controller)."""
    interval_pickups = m.running * m.service_rate * settings.evaluation_interval_seconds
    return max(spare, interval_pickups)


def onset_workers(
    m: Measures, snapshot: QueueSnapshot, spare: float, settings: QueueSettings, cap: int
) -> int:
    """The fewest workers that serve the load and drain the backlog beyond `onset_backlog`
    within the reaction time R = lead + interval (`QueueSettings.forecast_horizon_seconds`),
    (lambda + excess / R) / mu; 0 where nothing need drain, the SLA exposes no onset or the
    arrivals are not Poisson-like.

    A burst's first jobs are picked up by the running fleet after every job waiting when it
    begins (FIFO), and its new workers land past their SLA (`exposes_onsets`): each waiting job
    takes the place of one of them, a late start the reaction bound does not have. The flash
    crowd at SLA 60 s, p99 (seed 3) met its onset with 91 waiting at rho ~1 (Erlang C's 5
    workers at 4.9 workers of load), the bound (p99.9) with none at 6: 241 more late jobs, 0.52
    points. Only on Poisson-like arrivals (`poisson_like`): on the NASA day (D 10-17) at 60 s
    this drain cost p99 531,511 -> 547,080 worker-s for 0.014 points, its backlog being mostly a
    batch in passing. The interval's pickups as a floor: with the budget alone, at p99.9
    (b lambda W ~ 50 jobs at 20 jobs/s) the bench's steady run at 60 s took 148,500 -> 152,173
    worker-s (static 21: 151,263)."""
    if not exposes_onsets(settings) or not poisson_like(snapshot) or not m.service_rate > 0:
        return 0
    excess = m.visible - onset_backlog(m, spare, settings)
    if excess <= 0:
        return 0
    return bounded_workers(
        (m.arrival_rate + excess / settings.forecast_horizon_seconds) / m.service_rate, cap
    )


def steady_words(
    need: int, steady: int, onset: int, m: Measures, spare: float, settings: QueueSettings
) -> str:
    """Why the steady term won away from Erlang C's `need`: raised to `onset` by
    `onset_workers`, else run hot to `steady` (`words`)."""
    if onset <= steady:
        return words(need, steady, m, settings)
    reaction = settings.forecast_horizon_seconds
    return (
        f"steady won: {n_workers(onset, 'serve')} {m.arrival_rate:.2f} jobs/s and drain the "
        f"{m.visible} waiting to {onset_backlog(m, spare, settings):.0f} (the unspent miss budget "
        f"or one interval's pickups) within {reaction:g} s: a burst's first jobs wait past the "
        f"{settings.sla_seconds:g} s SLA for new workers, and each job waiting when it begins "
        f"costs one of them its SLA{m.prior_note}"
    )
