"""SLA backlog drain (seeds 000 and 001, with arrivals during the remaining time counted)."""

from __future__ import annotations

import math

from queue_autoscale.core.models import MIN_RECOVERY_HORIZON_SECONDS, QueueSettings
from queue_autoscale.core.queueing import bounded_workers

WARNING_USAGE = 0.8
"""SLA usage at which the safety margin starts (seed 000's 80% warning threshold)."""


def safety_margin(sla_usage: float) -> float:
    """1 + (usage - 0.8) * 2 from 80% SLA usage (1.2 at 90%), capped where usage reaches 1."""
    usage = min(max(sla_usage, WARNING_USAGE), 1.0)
    return 1.0 + (usage - WARNING_USAGE) * 2.0


def carried_wait_seconds(settings: QueueSettings) -> float:
    """The wait a loose SLA lets the backlog carry, seconds (0: the SLA is not loose).

    W = SLA - recovery horizon - H, with H = provisioning lead + interval: a job that has waited
    W, delayed one more reaction time H (a correction ordered now lands after H), still has the
    recovery horizon left, so the drain term still sizes for it. The SLA is loose when W >= H:
    the carried-backlog loop's gain H / W is then at most 1, so a correction that lands after H
    does not overshoot (lead 60 s, interval 10 s: SLA 300 s carries 130 s; 60 s and 120 s none).
    """
    horizon = settings.forecast_horizon_seconds
    carried = settings.sla_seconds - settings.recovery_horizon - horizon
    return carried if carried >= horizon else 0.0


def budget_horizon_seconds(
    *,
    started: float,
    percentile: float,
    arrival_rate: float,
    default_seconds: float,
    longest_seconds: float,
) -> float:
    """The recovery horizon the percentile's miss budget leaves, seconds.

    The drain writes off the jobs that will have less than H of their SLA left when new workers
    land: at the drain's arrival rate lambda (jobs/s), about lambda x H of them. The SLA loop has
    counted `started` jobs over its window, of which the percentile allows (1 - p) x started to
    be late, so H = (1 - p) x started / lambda writes off no more than that budget. A step far
    above the window's traffic (a flash crowd at 20 x the rate) gets a twentieth of the budget's
    seconds and the drain sizes for jobs nearer their deadline; a burst small against the
    window's traffic gets a longer horizon than the default, up to `longest_seconds`
    (`longest_horizon_seconds`). Never below MIN_RECOVERY_HORIZON_SECONDS (the drain's fleet
    grows as 1 / H). With fewer than 1 / (1 - p) jobs counted (too few to read a budget) or
    nothing arriving, `default_seconds`.
    """
    budget = 1.0 - percentile
    if arrival_rate <= 0 or budget <= 0 or started * budget < 1.0:
        return default_seconds
    horizon = budget * started / arrival_rate
    return min(longest_seconds, max(MIN_RECOVERY_HORIZON_SECONDS, horizon))


def longest_horizon_seconds(settings: QueueSettings) -> float:
    """The longest recovery horizon a budget may set, seconds: SLA - T, T the landing's spread
    (`landing_clear_seconds`, one interval or the SLA if shorter), and never below the default.

    Workers ordered now may land up to T after the lead, so the jobs that arrive within T of
    the nominal landing wait for them whatever the budget: the drain aims at least at those
    (age <= T at landing, H <= SLA - T). Up to there the budget alone decides; the default
    (SLA / 3) is a guess made before any budget can be read, and capping the budget's horizon
    at it sized workers for jobs the budget lets go (NASA x10 at SLA 30 s, p95: H 10 -> up to
    20 s). At an SLA no longer than the interval plus the default (SLA 10 s at a 10 s
    interval) it is the default, as before.
    """
    return max(settings.recovery_horizon, settings.sla_seconds - landing_clear_seconds(settings))


def landing_clear_seconds(settings: QueueSettings) -> float:
    """The shortest time the drain plans to empty the backlog it expects at landing, seconds:
    one evaluation interval, or the SLA when that is shorter (see `landing_clear_workers`)."""
    interval, sla = settings.evaluation_interval_seconds, settings.sla_seconds
    return sla if sla < interval else interval  # min() without the builtin's call: hot path


def landing_clear_workers(
    *,
    at_landing: float,
    arrival_rate: float,
    service_rate: float,
    clear_seconds: float,
    max_workers: int,
) -> int:
    """The most workers the drain orders: those that empty the `at_landing` jobs within
    `clear_seconds` while serving the arrivals, (lambda + B / T) / mu. The drain passes the
    queue expected at the latest landing it cannot rule out, one interval T after the lead.

    The recovery horizon H sets how fast the jobs ahead of the youngest aimed one must go: when
    more than a lead's arrivals wait at landing, the drain clears those older jobs within H, and
    its fleet grows as 1 / H (the 1 s floor of a p99.9 budget orders the 1,000-worker cap for a
    5x step). The controller reads the queue once per evaluation interval and cannot see within
    it when its workers land (ECS start-ups spread; the spread is unknown to it), so a fleet that
    would empty the whole landing backlog between two readings is sized on a moment it cannot
    observe: the last workers save only jobs within seconds of their deadline. With T one
    interval (or the SLA, if shorter), this is H >= T x (jobs past the aim) / B: the floor
    derived from the landing's spread. For the same reason the workers may land up to T after
    the lead, so B is the queue then (B_L plus an interval of growth): sized on the queue at the
    lead, a flash crowd's fleet emptied it only if every worker landed at once. It never cuts
    below max(lambda, B_L / SLA) / mu, the drain's own floor (T <= SLA). With `clear_seconds`
    <= 0 there is no such limit.
    """
    if clear_seconds <= 0:
        return max_workers + 1
    return bounded_workers((arrival_rate + at_landing / clear_seconds) / service_rate, max_workers)


def carried_backlog_workers(
    *,
    backlog: float,
    arrival_rate: float,
    service_rate: float,
    running: int,
    carry_seconds: float,
    horizon_seconds: float,
    max_workers: int,
) -> int:
    """Workers that keep the wait of a job joining the backlog within `carry_seconds` over the
    reaction horizon H (lead + interval): the backlog, not spare workers, carries the noise.

    A fleet c set now (a scale-in acts at once) and held for H leaves
    B_H = B + (lambda - c mu) H waiting; the job that joins then waits B_H / (c mu) <= W when
    c >= (B + lambda H) / (mu (W + H)). A larger fleet than runs now lands only after H, so
    then B_H is the running fleet's and c >= B_H / (mu W). In equilibrium the queue carries
    lambda W jobs and c = lambda / mu exactly: the fleet dithers around the load, below it
    while the backlog is short, above it to drain (KEDA's integrator, aimed at the SLA).
    """
    lam, mu, w = arrival_rate, service_rate, carry_seconds
    if lam <= 0 and backlog <= 0:
        return 0
    workers = (backlog + lam * horizon_seconds) / (mu * (w + horizon_seconds))
    if workers > running:
        at_landing = max(0.0, backlog + (lam - running * mu) * horizon_seconds)
        workers = max(workers, at_landing / (mu * w))
    return bounded_workers(workers, max_workers)


def backlog_at_landing(
    *,
    backlog: float,
    arrival_rate: float,
    service_rate: float,
    lead_seconds: float,
    running: int,
    ordered: int = 0,
    ordered_lands_in: float | None = None,
) -> float:
    """Jobs still waiting when workers ordered now land, L seconds from now.

    The running fleet serves throughout; `ordered` workers (asked for earlier, not yet running)
    join it after `ordered_lands_in` seconds (None or beyond the lead: not counted). The queue
    never goes below zero in either stretch.
    """
    first = lead_seconds
    if ordered > 0 and ordered_lands_in is not None and ordered_lands_in < lead_seconds:
        first = max(0.0, ordered_lands_in)
    # max(0.0, x) as conditionals: this runs two to four times a tick
    waiting = backlog + (arrival_rate - running * service_rate) * first
    waiting = waiting if waiting > 0.0 else 0.0
    joined = running + (ordered if first < lead_seconds else 0)
    rest = lead_seconds - first
    left = waiting + (arrival_rate - joined * service_rate) * rest
    return left if left > 0.0 else 0.0


def growth_arrival_rate(
    *,
    visible: int,
    previous_visible: int,
    seconds: float,
    running: int,
    service_rate: float,
    dispersion: float = 1.0,
) -> float | None:
    """Arrival rate implied by a backlog that grew between two ticks, jobs/s, or None.

    While jobs wait, every running worker is busy, so arrivals = growth + running * mu. The
    windowed rates lag a step by most of their window; this sees it within one interval. Only
    growth beyond three standard deviations of the noise of arrivals and departures in the
    interval counts, so a steady queue's jitter never reads as a surge. The arrivals' variance
    is `dispersion` (D, their index of dispersion, variance / mean of the per-second counts)
    times Poisson's: traffic that comes in batches (the NASA day x10 arrives in tens) moves the
    backlog by sqrt(D) times as much. D below 1 reads as 1.
    """
    if seconds <= 0 or visible <= max(previous_visible, 0):
        return None
    served = running * service_rate
    growth = visible - previous_visible
    d = max(1.0, dispersion)
    arrived = served + growth / seconds
    if growth <= 3.0 * math.sqrt((d * arrived + served) * seconds):
        return None
    return arrived


def workers_at_landing(  # noqa: PLR0913 - keyword-only: the drain's measured inputs
    *,
    at_landing: float,
    oldest_age_seconds: float,
    arrival_rate: float,
    service_rate: float,
    sla_seconds: float,
    recovery_horizon_seconds: float,
    lead_seconds: float,
    max_workers: int | None = None,
    carries_load: bool = False,
) -> int:
    """Workers the fleet needs when new ones land so that every job that can still be picked up
    in time is.

    The queue is FIFO: a job's wait is the work ahead of it divided by the fleet's rate c * mu.
    When workers ordered now land (after the lead L) the queue holds B_L = `at_landing`
    jobs (`backlog_at_landing`). The job that arrived v seconds before landing has
    B_L - n(v) jobs ahead of it, where n(v) counts the younger ones (lambda * v of them for
    v <= L; jobs already waiting now are all taken to be as old as the oldest, the cautious
    reading). It is picked up in time if (B_L - n(v)) / (c * mu) <= SLA - v. Every job of
    age v <= SLA - H at landing is aimed at, H being the recovery horizon: older ones have less
    than H left (or are already late) and are served first but not sized for. The ratio is
    monotone between the breakpoints v = 0, v = min(L, SLA - H) and v = min(L + age, SLA - H),
    so c is the largest of the three, and at least lambda / mu so the queue does not grow
    (unless `carries_load`: on a loose SLA the backlog may grow between ticks, the carried
    backlog term of `carried_backlog_workers` keeps the fleet at the load). From
    80% SLA usage the seed's safety margin applies. It never falls as age or backlog grow.
    With nothing waiting now the drain term is 0: callers size only a waiting backlog.
    With `max_workers`, a need that overflows a float reads as `max_workers + 1`.
    """
    lam, mu, sla = arrival_rate, service_rate, sla_seconds
    aim = max(0.0, sla - recovery_horizon_seconds)
    rate = max(0.0 if carries_load else lam, at_landing / sla)
    lead_part = min(lead_seconds, aim)
    rate = max(rate, (at_landing - lam * lead_part) / (sla - lead_part))
    if lead_seconds < aim:
        oldest = min(lead_seconds + oldest_age_seconds, aim)
        rate = max(rate, (at_landing - lam * lead_seconds) / (sla - oldest))
    workers = rate / mu
    usage = oldest_age_seconds / sla
    if usage >= WARNING_USAGE:
        workers *= safety_margin(usage)
    if max_workers is not None:
        return bounded_workers(workers, max_workers)
    return math.ceil(workers - 1e-9)


def predicted_pickup_seconds(
    *, visible: int, running: int, service_rate: float, arrival_rate: float
) -> float | None:
    """Expected wait of a job enqueued now: the running fleet must start everything ahead of it.

    visible / (c * mu) seconds; None when nothing runs and work is waiting or arriving.
    """
    if running <= 0:
        return None if (visible > 0 or arrival_rate > 0) else 0.0
    return visible / (running * service_rate)


def predicted_breach_seconds(
    *,
    visible: int,
    oldest_age_seconds: float,
    running: int,
    service_rate: float,
    arrival_rate: float,
    sla_seconds: float,
) -> float | None:
    """Seconds until the SLA breaches at the current fleet, or None if the backlog clears first.

    The seed used an observed drain rate and gave up when the backlog grew; here the net drain
    is capacity minus arrivals, and a growing backlog predicts the breach at T = SLA - age.
    """
    if visible <= 0:
        return None
    remaining = max(0.0, sla_seconds - oldest_age_seconds)
    net_drain = running * service_rate - arrival_rate
    if net_drain > 0 and visible / net_drain < remaining:
        return None
    return remaining
