"""The pickup model's miss share against a job-by-job FIFO replay of the same fleet."""

from __future__ import annotations

from itertools import pairwise

import pytest

from queue_autoscale.core import pickup
from queue_autoscale.core.pickup import (
    Fleet,
    Outlook,
    Plans,
    cohorts,
    starts_by,
)

FLEET = Fleet(running=10)


def _outlook(backlog: int, oldest: float, rate: float) -> Outlook:
    """SLA 30 s, 1 job/s per worker, lead 60 s, no spread (dispersion 0), every cohort sized
    for (reach 0), horizon 100 s."""
    return Outlook(float(backlog), oldest, rate, 0.0, 300.0, 1.0, 30.0, 60.0, 0.0, 100.0)


def _started_at(plan: int, outlook: Outlook, position: int) -> float:
    """When the fleet under `plan` has started `position` jobs, s from now (bisection)."""
    low, high = 0.0, 1e6
    for _ in range(80):
        mid = (low + high) / 2
        if starts_by(plan, FLEET, outlook.service_rate, outlook.landing_seconds, mid) >= position:
            high = mid
        else:
            low = mid
    return high


def _replayed_share(plan: int, o: Outlook) -> float:
    """Job by job: the backlog's ages evenly spread up to the oldest one's, then one arrival
    every 1 / lambda s; each starts in FIFO order when the fleet has started its position; the
    share late among those due within the horizon."""
    backlog = int(o.backlog)
    enqueued = [-o.oldest_age_seconds * (1 - (i + 0.5) / backlog) for i in range(backlog)]
    t = 0.5 / o.rate
    while t <= o.horizon_seconds - o.sla_seconds:
        enqueued.append(t)
        t += 1 / o.rate
    late = due = 0
    for position, at in enumerate(enqueued, start=1):
        if not 0 < at + o.sla_seconds <= o.horizon_seconds:
            continue
        due += 1
        late += max(_started_at(plan, o, position), at) - at > o.sla_seconds
    return late / due


@pytest.mark.parametrize(
    ("backlog", "oldest", "rate", "plan"),
    [
        pytest.param(300, 20.0, 12.0, 10, id="backlog-and-growth-held"),
        pytest.param(300, 20.0, 12.0, 20, id="backlog-doubled-fleet"),
        pytest.param(800, 25.0, 15.0, 30, id="deep-backlog"),
        pytest.param(0, 0.0, 20.0, 15, id="no-backlog-overload"),
        pytest.param(500, 10.0, 9.0, 5, id="scale-in-under-a-backlog"),
    ],
)
def test_miss_share_matches_a_job_by_job_replay(
    backlog: int, oldest: float, rate: float, plan: int
) -> None:
    # GIVEN a fleet of 10, a backlog and steady arrivals, and a plan
    o = _outlook(backlog, oldest, rate)
    due = cohorts(o, 12)
    # WHEN the twelve cohorts' share is set against the replay of every job
    model = Plans(FLEET, o, due).share(plan)
    replayed = _replayed_share(plan, o)
    # THEN they agree within the cohorts' resolution, the model never the more optimistic
    assert replayed - 0.005 <= model <= replayed + 0.03


def test_miss_share_never_rises_with_the_plan() -> None:
    o = _outlook(600, 20.0, 15.0)
    due = cohorts(o, 12)
    plans = Plans(FLEET, o, due)
    # GIVEN 600 jobs waiting (the oldest 20 s) and 15 jobs/s on 10 workers, SLA 30 s, lead 60
    shares = [plans.share(c) for c in range(0, 200)]
    # THEN more workers never leave more jobs late, and jobs due before the lead stay late
    assert all(a >= b for a, b in pairwise(shares))
    assert shares[0] == 1.0 and 0.5 < shares[-1] < 0.7


def test_a_forecast_surge_raises_the_smallest_plan() -> None:
    # GIVEN 2 jobs/s, 1 s jobs, SLA 10 s, lead 60 s, and a surge to 40 jobs/s due in 50 s
    base = pickup.Outlook(
        backlog=0.0,
        oldest_age_seconds=0.0,
        rate=2.0,
        dispersion=1.0,
        rate_window_seconds=300.0,
        service_rate=1.0,
        sla_seconds=10.0,
        landing_seconds=60.0,
        reach_seconds=70.0,
        horizon_seconds=80.0,
    )
    surged = base._replace(surge_in=50.0, surge_rate=40.0)
    fleet = pickup.Fleet(running=3)

    def plan(outlook: pickup.Outlook) -> int:
        plans = pickup.Plans(fleet, outlook, pickup.cohorts(outlook, 12))
        return plans.smallest(0.01, 1_000, 1)[0]

    # THEN the arrivals from the surge on are planned for: the burst's fleet, not the quiet one
    assert surged.arrived(60.0) == pytest.approx(2.0 * 60.0 + 38.0 * 10.0)
    assert plan(base) <= 3
    assert plan(surged) >= 35
