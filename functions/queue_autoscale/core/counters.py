"""Rates and the oldest-job age from the per-second counters the ingest function writes."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from operator import attrgetter

from queue_autoscale.core.models import (
    JOB_TIME_RESOLUTION_SECONDS,
    RATE_WINDOW_SECONDS,
    SHORT_WINDOW_SECONDS,
    AgeSource,
)

JOB_TIME_GROUPS = 7
"""Groups of the median-of-means job time: up to 3 seconds of counters holding any values at
all cannot move it beyond the other groups' means (see robust_mean_job_seconds)."""


@dataclass(frozen=True, slots=True)
class CounterRow:
    """One (queue, epoch second) counter item of the load table."""

    second: int
    queued: int = 0
    started: int = 0
    completed: int = 0
    failed: int = 0
    busy_ms: int = 0
    """Sum of completed and failed job durations, ms."""
    pickup_ms: int = 0
    """Sum of started-at minus enqueued-at over started jobs, ms."""


_SECOND = attrgetter("second")


@dataclass(frozen=True, slots=True)
class Rates:
    """Window aggregates, jobs/s unless named otherwise."""

    arrival_rate: float
    arrival_rate_short: float
    completion_rate: float
    mean_job_seconds: float | None
    """Robust mean duration of the jobs that finished in the long window (median of means, see
    robust_mean_job_seconds), seconds; None if none finished."""
    failure_rate: float
    """Failed / finished in the long window, 0..1."""
    mean_pickup_seconds: float | None
    arrival_dispersion: float | None = None
    """Index of dispersion of the per-second arrivals over the long window (variance / mean;
    1 for Poisson traffic, more for bursty); None when nothing arrived."""
    arrival_dispersion_short: float | None = None
    """The same over the short window alone: the noise of its own mean, which a burst earlier
    in the long window does not inflate; None when nothing arrived within it."""
    arrival_dispersion_steps: float | None = None
    """The short window's index read around the rate's own level: half the mean square of
    successive per-second differences over the mean, over its seconds from the oldest counter
    second on (von Neumann's). A move of the level within the window adds one difference to it,
    where it adds its square times the window's share to the plain variance. None when nothing
    arrived or fewer than 2 seconds are spanned."""
    first_second: int | None = None
    """The oldest counter second within the long window (None: no rows): before it the queue
    had no counters, or nothing happened."""


def window_rates(
    rows: Iterable[CounterRow],
    now: float,
    long_window_seconds: float = RATE_WINDOW_SECONDS,
    short_window_seconds: float = SHORT_WINDOW_SECONDS,
) -> Rates:
    """Aggregate the counters of the last `long_window_seconds` (and the short window).

    One pass over the rows (a tick reads hundreds): the finished jobs' per-second durations are
    collected as plain ints for the job time, sorted by second only when the rows were not
    already in time order (the load table and the simulator return them oldest first).
    """
    queued = queued_short = queued_squares = squares_short = 0
    started = completed = failed = pickup_ms = 0
    seconds: list[int] = []
    busy: list[int] = []
    jobs: list[int] = []
    in_order = True
    last = None
    first: int | None = None
    counts: dict[int, int] = {}
    for row in rows:
        second = row.second
        age = now - second
        if age < 0 or age > long_window_seconds:
            continue
        if first is None or second < first:
            first = second
        count = row.queued
        queued += count
        queued_squares += count * count
        if age <= short_window_seconds:
            if count:
                counts[second] = counts.get(second, 0) + count
            queued_short += count
            squares_short += count * count
        started += row.started
        pickup_ms += row.pickup_ms
        done, fail = row.completed, row.failed
        completed += done
        failed += fail
        if done + fail > 0:
            if last is not None and second < last:
                in_order = False
            last = second
            seconds.append(second)
            busy.append(row.busy_ms)
            jobs.append(done + fail)
    if not in_order:  # a stable sort by second: the estimator deals seconds in time order
        order = sorted(range(len(seconds)), key=seconds.__getitem__)
        busy = [busy[i] for i in order]
        jobs = [jobs[i] for i in order]
    finished = completed + failed
    return Rates(
        arrival_rate=queued / long_window_seconds,
        arrival_rate_short=queued_short / short_window_seconds,
        completion_rate=completed / long_window_seconds,
        mean_job_seconds=robust_mean_job_seconds(busy, jobs),
        failure_rate=failed / finished if finished else 0.0,
        mean_pickup_seconds=pickup_ms / 1000.0 / started if started else None,
        arrival_dispersion=_dispersion(queued, queued_squares, long_window_seconds),
        arrival_dispersion_short=_dispersion(queued_short, squares_short, short_window_seconds),
        arrival_dispersion_steps=_differenced(counts, first, now, short_window_seconds),
        first_second=first,
    )


def _differenced(
    counts: dict[int, int], first: int | None, now: float, window: float
) -> float | None:
    """`Rates.arrival_dispersion_steps` of the per-second `counts` over the last `window` s,
    from the oldest counter second `first` to the last second counted (later ones may lag)."""
    if first is None or not counts:
        return None
    end = min(math.floor(now), max(counts))
    start = max(first, math.ceil(now - window))
    n = end - start + 1
    if n < 2:
        return None
    previous = counts.get(start, 0)
    total = previous
    squares = 0
    for second in range(start + 1, end + 1):
        count = counts.get(second, 0)
        total += count
        squares += (count - previous) ** 2
        previous = count
    if not total:
        return None
    return squares / (2.0 * (n - 1)) / (total / n)


def _dispersion(arrived: int, squares: int, seconds: float) -> float | None:
    """Variance / mean of per-second counts summing to `arrived` (their squares to `squares`)
    over `seconds`, a second without a row counting 0; None when nothing arrived."""
    if not arrived:
        return None
    mean = arrived / seconds
    return (squares / seconds - mean * mean) / mean


def robust_mean_job_seconds(busy: list[int], jobs: list[int]) -> float | None:
    """Mean job time that a few extreme durations cannot move: a median of means, seconds.

    The counters keep, per second, only the jobs finished and the sum of their durations, so
    the estimator works on seconds: the seconds with finished jobs, in time order, are dealt
    round-robin into k = min(7, seconds) groups (k made odd), each group's mean is its summed
    duration over its jobs, and the estimate is the median of the k means. Breakdown point:
    (k - 1) / 2 groups, i.e. up to 3 seconds of counters holding arbitrary durations leave the
    estimate between the means of the clean groups. With fewer than 3 such seconds (k = 1) it
    is the plain mean; the ingest plausibility limit (max_job_seconds) still bounds each job.
    A completion always counts: sub-millisecond jobs (summed as 0 ms) read as the 1 ms
    resolution, never as "nothing completed". None only when nothing finished.

    Input: per second with finished jobs, in time order, `busy[i]` ms summed over `jobs[i]` > 0
    jobs (integer sums, so the grouping is exact).
    """
    if not busy:
        return None
    groups = min(JOB_TIME_GROUPS, len(busy))
    if groups % 2 == 0:
        groups -= 1
    means = sorted(sum(busy[g::groups]) / sum(jobs[g::groups]) for g in range(groups))
    return max(JOB_TIME_RESOLUTION_SECONDS, means[groups // 2] / 1000.0)


def pickup_seconds(rows: Iterable[CounterRow]) -> tuple[tuple[int, int, int], ...]:
    """(second, started, pickup ms) of every row with starts, in time order: the snapshot's
    `pickups` (the SLA loop selects the seconds it counts by bisection)."""
    return tuple(sorted([(r.second, r.started, r.pickup_ms) for r in rows if r.started > 0]))


def counters_oldest_age(now: float, visible: int, rows: Sequence[CounterRow]) -> float | None:
    """Age implied by the counters (FIFO): walking back from now, the second at which the queued
    counts add up to the visible backlog. A lower bound when the rows run out first; None with
    no rows."""
    if visible <= 0:
        return 0.0
    if not rows:
        return None
    total = 0
    oldest = now
    for row in sorted(rows, key=_SECOND, reverse=True):
        if row.second > now:
            continue
        oldest = row.second
        total += row.queued
        if total >= visible:
            break
    return max(0.0, now - oldest)


def oldest_age(
    now: float,
    visible: int,
    cloudwatch_age_seconds: float | None,
    cloudwatch_lag_seconds: float,
    rows: Sequence[CounterRow],
) -> tuple[float | None, AgeSource]:
    """The oldest waiting job's age, seconds, and which source gave it (None: unknown).

    DESIGN.md's rule is the max of CloudWatch's ApproximateAgeOfOldestMessage plus its
    publication lag and the counters' FIFO estimate. Adding the lag assumes the message the
    datapoint saw is still waiting; when the counters show more jobs queued since that message
    was enqueued than are visible now, it has (FIFO) been picked up, and the lag-shifted age is
    a phantom that would read as a breach on a queue that keeps up: then only the datapoint's
    own age counts (the max with the counters' estimate, as before).
    """
    if visible <= 0:
        return 0.0, AgeSource.EMPTY
    from_counters = counters_oldest_age(now, visible, rows)
    if cloudwatch_age_seconds is None:
        if from_counters is None:
            return None, AgeSource.UNKNOWN
        return from_counters, AgeSource.COUNTERS
    from_cloudwatch = cloudwatch_age_seconds + cloudwatch_lag_seconds
    if from_counters is None:
        return from_cloudwatch, AgeSource.CLOUDWATCH
    enqueued = now - from_cloudwatch
    queued_since = sum(row.queued for row in rows if enqueued < row.second <= now)
    if queued_since >= visible:  # picked up since: the datapoint's own age, not the lag on top
        from_cloudwatch = cloudwatch_age_seconds
    if from_cloudwatch > from_counters:
        return from_cloudwatch, AgeSource.CLOUDWATCH
    return from_counters, AgeSource.COUNTERS
