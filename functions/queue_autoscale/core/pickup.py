"""The predictive policy's model of the coming pickups: which jobs a fleet plan leaves late.

A plan is one worker count c, ordered now. The physics: workers still starting (pending) land
at their own orders' times, new ones at the landing (the provisioning lead); a smaller plan cancels
pending orders first and then stops running workers, which drain (finish the job in hand,
start no other), so it takes start capacity away at once.

Jobs are picked up in FIFO order. The fleet starts jobs at K(t) jobs by t seconds from now
(`starts_by`, piecewise linear), so a job with n jobs ahead of it (itself included) is picked up
by its deadline d if n <= K(d). The jobs are grouped into deadline cohorts (`cohorts`): the
backlog, spread over its ages up to the oldest one's, and the arrivals, whose count by t is
Gaussian with mean lambda t and variance D lambda t (1 + t / W): D the measured index of
dispersion, the second term the rate's own uncertainty from a window of W seconds. A cohort's
expected late jobs are then closed-form, and the plan's miss share (`miss_share`) is their sum
over every job due within the horizon. Pure.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

_ROOT2 = math.sqrt(2.0)


class Fleet(NamedTuple):
    """The fleet a plan starts from (workers)."""

    running: int
    landing: tuple[tuple[int, float], ...] = ()
    """The pending workers, ordered and not yet taking jobs: (workers, seconds until they
    take jobs, 0..landing), soonest first (core/orders.py landings)."""

    @property
    def pending(self) -> int:
        """Workers ordered, not yet taking jobs."""
        return sum(workers for workers, _ in self.landing)

    @property
    def current(self) -> int:
        """The desired count now: running plus pending."""
        return self.running + self.pending


class Outlook(NamedTuple):
    """What the next horizon holds, as measured and forecast now."""

    backlog: float
    """Jobs waiting now."""
    oldest_age_seconds: float
    rate: float
    """Arrivals forecast over the horizon, jobs/s."""
    dispersion: float
    """Index of dispersion of the per-second arrivals (1: Poisson)."""
    rate_window_seconds: float
    """W: the window the rate was measured over."""
    service_rate: float
    """mu: jobs/s one worker starts while busy."""
    sla_seconds: float
    landing_seconds: float
    """When workers ordered now take jobs: the provisioning lead."""
    reach_seconds: float
    """Jobs due before this (the landing plus an interval) are the reaction bound's: workers
    ordered now cannot pick them up, and the controller cannot see within an interval when its
    orders land, so it does not size for jobs that only a landing to the second would save."""
    horizon_seconds: float
    surge_in: float = math.inf
    """Seconds from now the arrivals are forecast at `surge_rate` instead (core/onsets.py: a
    recurring burst whose model passed its back-test; inf: none)."""
    surge_rate: float = 0.0
    """Jobs/s from `surge_in` on, when above `rate`."""

    def arrived(self, t: float) -> float:
        """Expected arrivals from now until `t` seconds, jobs."""
        extra = self.surge_rate - self.rate
        if extra > 0 and t > self.surge_in:
            return self.rate * t + extra * (t - self.surge_in)
        return self.rate * t


class Cohort(NamedTuple):
    """Jobs due at one deadline (seconds from now)."""

    deadline: float
    low: float
    """Jobs ahead of the cohort's first backlog job (the backlog part: positions low..high)."""
    high: float
    arrivals: float
    """Expected jobs of the cohort that arrive from now on."""
    ahead: float
    """Mean position of the arriving jobs (the backlog and earlier arrivals ahead, jobs)."""
    spread: float
    """Standard deviation of that position, jobs."""

    @property
    def jobs(self) -> float:
        """Every job of the cohort."""
        return self.high - self.low + self.arrivals


def starts_by(plan: int, fleet: Fleet, mu: float, landing: float, t: float) -> float:
    """K(t): jobs the fleet can start from now until `t` seconds under `plan` workers.

    Below the running count the surplus stops now (it drains, starting nothing new); above it
    the pending workers are kept soonest-landing first (a smaller plan cancels the newest
    orders) and each starts taking jobs when it lands; workers past the current count are
    ordered now and land at `landing`."""
    running = fleet.running
    if plan <= running:
        return plan * mu * t
    worked = running * t  # worker-seconds taking jobs by t
    keep = plan - running
    for workers, lands in fleet.landing:
        if keep <= 0:
            break
        kept = workers if workers < keep else keep
        keep -= kept
        if t > lands:
            worked += kept * (t - lands)
    if keep > 0 and t > landing:
        worked += keep * (t - landing)
    return worked * mu


def cohorts(outlook: Outlook, points: int) -> tuple[Cohort, ...]:
    """The jobs due within the horizon, in `points` cohorts of equal deadline span.

    A cohort due at d holds the jobs enqueued at d - SLA: from the backlog when that is in the
    past (its ages spread evenly up to the oldest's: a job of age a has B (A - a) / A ahead),
    from the arrivals when it is to come (B + A(t) ahead at the mean, A(t) the expected arrivals
    by t: lambda t, raised past a forecast surge's start)."""
    o = outlook
    step = o.horizon_seconds / points
    oldest = max(o.oldest_age_seconds, 1e-9)
    out = []
    for j in range(points):
        deadline = (j + 0.5) * step
        enq_first = deadline - step / 2 - o.sla_seconds  # enqueued at (s from now)
        enq_last = enq_first + step
        low = high = 0.0
        if enq_first < 0 and o.backlog > 0:  # ages -enq_last .. -enq_first
            young, old = max(0.0, -enq_last), min(oldest, -enq_first)
            if old > young:
                high = o.backlog * (oldest - young) / oldest
                low = o.backlog * (oldest - old) / oldest
        arrivals = ahead = spread = 0.0
        if enq_last > 0 and (o.rate > 0 or o.surge_rate > 0):
            start = max(0.0, enq_first)
            mid = (start + enq_last) / 2
            before = o.arrived(mid)
            arrivals = o.arrived(enq_last) - o.arrived(start)
            ahead = o.backlog + before
            spread = math.sqrt(o.dispersion * before * (1.0 + mid / o.rate_window_seconds))
        out.append(Cohort(deadline, low, high, arrivals, ahead, spread))
    return tuple(out)


def late_jobs(cohort: Cohort, starts: float) -> float:
    """Expected late jobs of a cohort when the fleet starts `starts` jobs by its deadline."""
    late = cohort.high - starts
    late = 0.0 if late <= 0 else min(late, cohort.high - cohort.low)
    if cohort.arrivals > 0:
        gap = starts - cohort.ahead
        if cohort.spread > 0:
            tail = 0.5 * math.erfc(gap / (cohort.spread * _ROOT2))
        else:
            tail = 1.0 if gap < 0 else 0.0
        late += cohort.arrivals * (1.0 if math.isnan(tail) else tail)  # inf - inf: late
    return late


def miss_share(
    plan: int, fleet: Fleet, outlook: Outlook, due: Sequence[Cohort], hold_late: Sequence[float]
) -> float:
    """The share of the jobs due within the horizon that `plan` leaves late, among those an
    order placed now can still reach: in a cohort due before the reach a larger order does not
    help, so only a smaller plan changes its fate, and it counts only the jobs
    holding the fleet would serve in time (`hold_late`: its late jobs at the current count) and
    the ones of those the plan makes late. 0 with no job due."""
    total = _reachable(due, hold_late, outlook.reach_seconds)
    return _late(plan, fleet, outlook, due, hold_late) / total if total > 0 else 0.0


def _reachable(due: Sequence[Cohort], hold_late: Sequence[float], reach: float) -> float:
    """`miss_share`'s denominator, jobs: the same for every plan."""
    total = 0.0
    for cohort, held in zip(due, hold_late, strict=True):
        if cohort.deadline < reach:
            total += cohort.jobs - held
        else:
            total += cohort.jobs
    return total


def _late(
    plan: int, fleet: Fleet, outlook: Outlook, due: Sequence[Cohort], hold_late: Sequence[float]
) -> float:
    """`miss_share`'s numerator, jobs: the late jobs `plan` adds to what no order can help."""
    mu, landing, reach = outlook.service_rate, outlook.landing_seconds, outlook.reach_seconds
    late = 0.0
    for cohort, held in zip(due, hold_late, strict=True):
        lost = late_jobs(cohort, starts_by(plan, fleet, mu, landing, cohort.deadline))
        if cohort.deadline < reach:
            lost -= held
        if lost > 0:
            late += lost
    return late


def hold_late(fleet: Fleet, outlook: Outlook, due: Sequence[Cohort]) -> tuple[float, ...]:
    """Each cohort's expected late jobs if the fleet is held at its current count."""
    mu, landing, current = outlook.service_rate, outlook.landing_seconds, fleet.current
    return tuple(late_jobs(c, starts_by(current, fleet, mu, landing, c.deadline)) for c in due)


def smallest_plan(
    fleet: Fleet,
    outlook: Outlook,
    due: Sequence[Cohort],
    hold: Sequence[float],
    level: float,
    cap: int,
    guess: int,
) -> tuple[int, float]:
    """(c, its miss share): the fewest workers whose predicted miss share is within `level`,
    and cap + 1 ("more than the cap", with the cap's share) when none up to `cap` is. Never
    below the current fleet while holding it already leaves a job due before the reach late
    (`missing_anyway`). Bisection from `guess` on a share that never rises with c: O(log cap)
    evaluations of `miss_share` over the cohorts holding any job (with an SLA past the reach
    most of the horizon's are empty); `hold` is `hold_late`'s."""
    floor = 0
    if missing_anyway(due, hold, outlook.reach_seconds):
        floor = min(fleet.current, cap)
    # a cohort with no job, late under no plan, adds exactly 0.0 to both sums of miss_share
    kept = [(c, h) for c, h in zip(due, hold, strict=True) if c.high or c.low or c.arrivals or h]
    live, live_hold = [c for c, _ in kept], [h for _, h in kept]
    total = _reachable(live, live_hold, outlook.reach_seconds)  # the same for every plan

    def share(c: int) -> float:
        return _late(c, fleet, outlook, live, live_hold) / total if total > 0 else 0.0

    guess = min(max(guess, floor), cap)
    at_guess = share(guess)
    if at_guess <= level:  # share(low) > level (below the floor: not considered)
        low, high, at_high = floor - 1, guess, at_guess
    else:
        at_cap = share(cap)
        if at_cap > level:
            return cap + 1, at_cap
        low, high, at_high = guess, cap, at_cap
    while high - low > 1:
        mid = (low + high) // 2
        at_mid = share(mid)
        if at_mid <= level:
            high, at_high = mid, at_mid
        else:
            low = mid
    return high, at_high


def missing_anyway(due: Sequence[Cohort], hold: Sequence[float], reach: float) -> bool:
    """True when holding the fleet leaves at least one job due before the reach (s) late: a
    smaller plan then only adds to misses no order can prevent, and is not considered."""
    lost = 0.0
    for cohort, held in zip(due, hold, strict=True):
        if cohort.deadline < reach:
            lost += held
    return lost >= 1.0
