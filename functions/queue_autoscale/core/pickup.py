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
_erfc = math.erfc  # a module name: read once a cohort and a plan


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
        return _arrived(self.rate, self.surge_rate - self.rate, self.surge_in, t)


def _arrived(rate: float, extra: float, surge_in: float, t: float) -> float:
    """`Outlook.arrived` from its numbers: `rate` jobs/s, `extra` jobs/s more from `surge_in`
    s on where it is above 0 (`cohorts` reads them once, not three times a cohort)."""
    if extra > 0.0 and t > surge_in:
        return rate * t + extra * (t - surge_in)
    return rate * t


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
    return _starts(plan, fleet, mu, landing, (t,))[0]


def _starts(
    plan: int, fleet: Fleet, mu: float, landing: float, times: Sequence[float]
) -> list[float]:
    """K(t) (`starts_by`) at each of `times`, s: the workers the plan keeps of each order, and
    when they land, worked out once for all of them."""
    running = fleet.running
    if plan <= running:
        rate = plan * mu
        return [rate * t for t in times]
    keep = plan - running
    steps: list[tuple[int, float]] = []  # (workers kept, seconds until they take jobs)
    for workers, lands in fleet.landing:
        if keep <= 0:
            break
        kept = workers if workers < keep else keep
        keep -= kept
        steps.append((kept, lands))
    if keep > 0:
        steps.append((keep, landing))
    out = []
    for t in times:
        worked = running * t  # worker-seconds taking jobs by t
        for kept, lands in steps:
            if t > lands:
                worked += kept * (t - lands)
        out.append(worked * mu)
    return out


def cohorts(outlook: Outlook, points: int) -> tuple[Cohort, ...]:
    """The jobs due within the horizon, in `points` cohorts of equal deadline span.

    A cohort due at d holds the jobs enqueued at d - SLA: from the backlog when that is in the
    past (its ages spread evenly up to the oldest's: a job of age a has B (A - a) / A ahead),
    from the arrivals when it is to come (B + A(t) ahead at the mean, A(t) the expected arrivals
    by t: lambda t, raised past a forecast surge's start)."""
    o = outlook
    backlog, sla, dispersion, window = o.backlog, o.sla_seconds, o.dispersion, o.rate_window_seconds
    rate, extra, surge_in = o.rate, o.surge_rate - o.rate, o.surge_in
    arriving = o.rate > 0 or o.surge_rate > 0
    step = o.horizon_seconds / points
    half = step / 2
    oldest = max(o.oldest_age_seconds, 1e-9)
    out = []
    for j in range(points):  # float literals: a float-to-float comparison is the fast one
        deadline = (j + 0.5) * step
        enq_first = deadline - half - sla  # enqueued at (s from now)
        enq_last = enq_first + step
        low = high = 0.0
        if enq_first < 0.0 and backlog > 0.0:  # ages -enq_last .. -enq_first
            young = -enq_last if -enq_last > 0.0 else 0.0  # max(0, .) and min(.), no calls
            old = -enq_first if -enq_first < oldest else oldest
            if old > young:
                high = backlog * (oldest - young) / oldest
                low = backlog * (oldest - old) / oldest
        arrivals = ahead = spread = 0.0
        if enq_last > 0.0 and arriving:
            start = enq_first if enq_first > 0.0 else 0.0
            mid = (start + enq_last) / 2.0
            before = _arrived(rate, extra, surge_in, mid)
            arrivals = _arrived(rate, extra, surge_in, enq_last) - _arrived(
                rate, extra, surge_in, start
            )
            ahead = backlog + before
            spread = math.sqrt(dispersion * before * (1.0 + mid / window))
        out.append(Cohort(deadline, low, high, arrivals, ahead, spread))
    return tuple(out)


_Row = tuple[float, float, float, float, float]
"""A cohort as the plans' loop reads it: (high, high - low, arrivals, ahead, spread x sqrt 2),
worked out once a tick (`Plans`)."""


def _late_jobs(
    plan: int,
    fleet: Fleet,
    mu: float,
    landing: float,
    rows: Sequence[_Row],
    deadlines: Sequence[float],
) -> list[float]:
    """Each cohort's expected late jobs under `plan` workers (`rows`, `deadlines`: the
    cohorts'): of its backlog part, the jobs past the K(d) the fleet starts by its deadline d
    (`starts_by`; `mu` and `landing` the outlook's); of its arrivals, the Gaussian tail of their
    position past K(d)."""
    out = []
    for (high, width, arrivals, ahead, scale), starts in zip(
        rows, _starts(plan, fleet, mu, landing, deadlines), strict=True
    ):
        late = high - starts  # float literals below: a float-to-float comparison is the fast one
        if late <= 0.0:
            late = 0.0
        elif width < late:
            late = width
        if arrivals > 0.0:
            gap = starts - ahead
            tail = 0.5 * _erfc(gap / scale) if scale > 0.0 else (1.0 if gap < 0.0 else 0.0)
            late += arrivals * (tail if tail <= 1.0 else 1.0)  # NaN (inf - inf): late
        out.append(late)
    return out


class Plans:
    """One tick's plans judged on its cohorts `due`: what holding the fleet leaves late, and
    each plan's miss share, evaluated once a plan (the bisection and the record ask again)."""

    def __init__(self, fleet: Fleet, outlook: Outlook, due: Sequence[Cohort]) -> None:
        self.fleet = fleet
        current = fleet.current
        self._mu, self._landing = outlook.service_rate, outlook.landing_seconds
        reach = outlook.reach_seconds
        rows: list[_Row] = [
            (high, high - low, arrivals, ahead, spread * _ROOT2)
            for _, low, high, arrivals, ahead, spread in due
        ]
        deadlines = [c.deadline for c in due]
        self.hold = tuple(_late_jobs(current, fleet, self._mu, self._landing, rows, deadlines))
        """Each cohort's expected late jobs if the fleet is held at its current count."""
        lost = 0.0  # the late jobs due before the reach holding the fleet leaves
        total = 0.0  # the jobs an order placed now can still reach: the same for every plan
        self._rows: list[_Row] = []  # the cohorts holding any job
        self._deadlines: list[float] = []
        self._credits: list[float] = []
        held_live: list[float] = []  # the hold's late jobs of the cohorts holding any job
        for cohort, row, deadline, held in zip(due, rows, deadlines, self.hold, strict=True):
            before = deadline < reach
            if before:
                lost += held
            high, _, arrivals, _, _ = row
            # a cohort with no job, late under no plan, adds exactly 0.0 to both sums of the
            # share: left out
            if high or cohort.low or arrivals or held:
                # due before the reach a larger order does not help: only the jobs holding the
                # fleet serves in time count, and the ones of those a plan makes late
                credit = held if before else 0.0
                total += cohort.jobs - credit
                self._rows.append(row)
                self._deadlines.append(deadline)
                self._credits.append(credit)
                held_live.append(held)
        self._total = total
        self.missing_anyway = lost >= 1.0
        """True when holding the fleet leaves at least one job due before the reach late: a plan
        below the running workers then only adds to misses no order can prevent, and is not
        considered (`smallest`)."""
        # the plan at the current count is the hold: its share is known (a third of the ticks'
        # bisections ask for it)
        self._shares: dict[int, float] = {current: self._share(held_live)}

    def share(self, plan: int) -> float:
        """The share of the jobs due within the horizon that `plan` leaves late, among those
        an order placed now can still reach (0 with no job due)."""
        known = self._shares.get(plan)
        if known is not None:
            return known
        lates = _late_jobs(plan, self.fleet, self._mu, self._landing, self._rows, self._deadlines)
        share = self._shares[plan] = self._share(lates)
        return share

    def _share(self, lates: Sequence[float]) -> float:
        """The miss share of a plan that leaves `lates` jobs late in the cohorts holding any
        job (`share`)."""
        late = 0.0
        for jobs, credit in zip(lates, self._credits, strict=True):
            lost = jobs - credit
            if lost > 0.0:
                late += lost
        return late / self._total if self._total > 0.0 else 0.0

    def smallest(self, level: float, cap: int, guess: int) -> tuple[int, float]:
        """(c, its miss share): the fewest workers whose predicted miss share is within `level`,
        and cap + 1 ("more than the cap", with the cap's share) when none up to `cap` is. Never
        below the running workers while holding the fleet already leaves a job due before the
        reach late (`missing_anyway`): a worker already taking jobs stays, but workers still
        starting are withdrawn when the plan no longer needs them, a lead of billing saved (an
        order placed on one interval's false growth, 21 -> 115 at a steady 20 jobs/s, goes at the
        next tick instead of staying while the backlog it saw stays late). Bisection from
        `guess` on a share that never rises with c: O(log cap) evaluations of the share over
        the cohorts holding any job (with an SLA past the reach most of the horizon's are
        empty)."""
        floor = min(self.fleet.running, cap) if self.missing_anyway else 0
        share = self.share
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
