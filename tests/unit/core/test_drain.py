"""The FIFO-aware backlog drain, checked against a job-by-job replay of the queue it sizes."""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from queue_autoscale.core.drain import (
    backlog_at_landing,
    growth_arrival_rate,
    workers_at_landing,
)


def _at_landing(
    backlog: int,
    lam: float,
    mu: float,
    lead: float,
    running: int,
    ordered: int = 0,
    lands_in: float | None = None,
) -> float:
    """backlog_at_landing with the tables' short positional names."""
    return backlog_at_landing(
        backlog=backlog,
        arrival_rate=lam,
        service_rate=mu,
        lead_seconds=lead,
        running=running,
        ordered=ordered,
        ordered_lands_in=lands_in,
    )


def _growth(visible: int, previous: int, seconds: float, running: int, mu: float) -> float | None:
    """growth_arrival_rate with the tables' short positional names."""
    return growth_arrival_rate(
        visible=visible,
        previous_visible=previous,
        seconds=seconds,
        running=running,
        service_rate=mu,
    )


def drain_workers(
    backlog: int,
    age: float,
    lam: float,
    mu: float,
    sla: float,
    horizon: float,
    lead: float = 0.0,
    running: int = 0,
    ordered: int = 0,
    lands_in: float | None = None,
) -> int:
    """The drain term as the hybrid computes it for a waiting backlog."""
    at_landing = _at_landing(backlog, lam, mu, lead, running, ordered, lands_in)
    return workers_at_landing(
        at_landing=at_landing,
        oldest_age_seconds=age,
        arrival_rate=lam,
        service_rate=mu,
        sla_seconds=sla,
        recovery_horizon_seconds=horizon,
        lead_seconds=lead,
    )


def replay_waits(
    backlog: int,
    age: float,
    lam: float,
    mu: float,
    lead: float,
    running: int,
    ordered: int,
    lands_in: float | None,
    fleet: float,
    until: float,
    others_age: float | None = None,
) -> list[tuple[float, float]]:
    """(arrival time, wait) of every job, FIFO, with a pool that starts a job every 1/capacity
    seconds: running workers now, `ordered` more from `lands_in`, `fleet` from the lead on.

    The oldest job waiting now arrived `age` seconds ago, the others `others_age` ago (default:
    with it); later jobs arrive evenly at `lam` per second. Fleet sizes may be fractional: the
    replay checks rates.
    """

    def capacity(t: float) -> float:
        if t >= lead:
            return fleet * mu
        if lands_in is not None and t >= lands_in:
            return (running + ordered) * mu
        return running * mu

    changes = sorted({lead, *([lands_in] if lands_in is not None else [])})
    rest = age if others_age is None else others_age
    arrivals = [-age] + [-rest] * (backlog - 1) + [i / lam for i in range(1, int(until * lam) + 1)]

    def next_start(t: float) -> float:
        """When one more start's worth of capacity has accrued after t."""
        need = 1.0
        while True:
            end = next((c for c in changes if c > t), math.inf)
            rate = capacity(t)
            if rate > 0 and t + need / rate <= end:
                return t + need / rate
            need -= rate * (end - t)
            t = end

    free_at = 0.0
    waits = []
    for arrived in arrivals:
        start = max(arrived, free_at)
        while capacity(start) <= 0:
            start = next(c for c in changes if c > start)
        waits.append((arrived, start - arrived))
        free_at = next_start(start)
    return waits


def required_rate(
    backlog: int,
    age: float,
    lam: float,
    mu: float,
    sla: float,
    horizon: float,
    lead: float,
    running: int,
    ordered: int = 0,
    lands_in: float | None = None,
) -> float:
    """The drain's fleet rate before rounding and margin, jobs/s (restated from its docstring)."""
    at_landing = _at_landing(backlog, lam, mu, lead, running, ordered, lands_in)
    aim = sla - horizon
    part = min(lead, aim)
    rate = max(lam, at_landing / sla, (at_landing - lam * part) / (sla - part))
    if lead < aim:
        rate = max(rate, (at_landing - lam * lead) / (sla - min(lead + age, aim)))
    return rate


def test_backlog_at_landing_counts_earlier_orders_from_when_they_land() -> None:
    # 100 waiting, 10 jobs/s in, 2 workers at 1 job/s: +8/s. 6 more land after 20 s: then -0/s
    # ... 8 running serve 8 of 10: +2/s for the remaining 40 s of the 60 s lead.
    assert _at_landing(100, 10.0, 1.0, 60.0, 2, 6, 20.0) == pytest.approx(100 + 8 * 20 + 2 * 40)
    # not counted when unknown or due after the lead
    assert _at_landing(100, 10.0, 1.0, 60.0, 2, 6, None) == pytest.approx(100 + 8 * 60)
    assert _at_landing(100, 10.0, 1.0, 60.0, 2, 6, 75.0) == pytest.approx(100 + 8 * 60)
    # never below zero in the first stretch: 30 waiting, 20 workers drain it in 3 s, then idle
    assert _at_landing(30, 10.0, 1.0, 60.0, 20, 0, None) == 0.0
    assert _at_landing(30, 10.0, 1.0, 60.0, 5, 20, 10.0) == 0.0


def test_growth_shows_a_surge_within_one_interval() -> None:
    # 0 -> 1,000 waiting in 10 s with 6 workers at 1 job/s: 100 + 6 = 106 jobs/s arrive
    assert _growth(1000, 0, 10.0, 6, 1.0) == pytest.approx(106.0)
    # a steady queue's jitter (20 -> 65 in 10 s at 21 workers) is no surge
    assert _growth(65, 20, 10.0, 21, 1.0) is None
    # shrinking, unchanged, or no time elapsed: nothing to say
    assert _growth(50, 80, 10.0, 5, 1.0) is None
    assert _growth(80, 80, 10.0, 5, 1.0) is None
    assert _growth(500, 0, 0.0, 5, 1.0) is None


@pytest.mark.parametrize(
    ("visible", "previous", "running", "dispersion", "expected"),
    [
        # the NASA day x10 at SLA 10 s, t = 830 s: 46 -> 240 waiting in 10 s at 36 workers.
        # Poisson noise 3 sqrt((55.4 + 36) x 10) = 90.7 < 194 grown: 19.4 + 36 = 55.4 jobs/s
        pytest.param(240, 46, 36, 1.0, 55.4, id="nasa-burst-read-as-poisson"),
        # with its arrivals' measured D = 32: 3 sqrt((32 x 55.4 + 36) x 10) = 403.5 > 194
        pytest.param(240, 46, 36, 32.0, None, id="nasa-burst-within-batch-noise"),
        # a flash crowd still reads at D = 32: 3 sqrt((32 x 106 + 6) x 10) = 553 < 1,000
        pytest.param(1000, 0, 6, 32.0, 106.0, id="flash-crowd-beyond-batch-noise"),
        # D = 0.5 would lower the bar to 3 sqrt((0.5 x 27 + 21) x 10) = 55.7 < 60; it reads as 1
        # (65.7 > 60)
        pytest.param(80, 20, 21, 0.5, None, id="under-dispersed-reads-as-poisson"),
    ],
)
def test_growth_noise_scales_with_the_arrivals_dispersion(
    visible: int, previous: int, running: int, dispersion: float, expected: float | None
) -> None:
    grown = growth_arrival_rate(
        visible=visible,
        previous_visible=previous,
        seconds=10.0,
        running=running,
        service_rate=1.0,
        dispersion=dispersion,
    )
    assert grown == (None if expected is None else pytest.approx(expected))


def test_fifo_arrivals_wait_behind_the_backlog_not_before_it() -> None:
    # No lead, 600 waiting for 20 s of a 60 s SLA, 10 jobs/s arriving, 1 job/s per worker:
    # 600 must start within 40 s (15 workers); arrivals queue behind and are not added to it.
    assert drain_workers(600, 20.0, 10.0, 1.0, 60.0, 20.0) == 15
    waits = replay_waits(600, 20.0, 10.0, 1.0, 0.0, 0, 0, None, 15, 120.0)
    assert max(w for _, w in waits) <= 60.0
    late = replay_waits(600, 20.0, 10.0, 1.0, 0.0, 0, 0, None, 14, 120.0)
    assert max(w for _, w in late) > 60.0


@settings(max_examples=60, deadline=None)
@given(
    sla=st.sampled_from([30.0, 60.0, 120.0]),
    lead=st.floats(0.0, 120.0),
    age_share=st.floats(0.0, 0.79),
    backlog=st.integers(1, 3000),
    lam=st.floats(2.0, 30.0),
    mu=st.floats(0.5, 4.0),
    running=st.integers(0, 30),
    ordered=st.integers(0, 30),
    lands_share=st.one_of(st.none(), st.floats(0.0, 1.0)),
)
def test_the_drain_picks_up_every_aimed_job_in_time_and_no_fewer_would(
    sla: float,
    lead: float,
    age_share: float,
    backlog: int,
    lam: float,
    mu: float,
    running: int,
    ordered: int,
    lands_share: float | None,
) -> None:
    """Replay the queue with the drain's fleet from the landing on: every job at most SLA - H old
    at landing (and every later one) starts within the SLA, however the waiting jobs' ages
    spread below the oldest's. With 10% less capacity some such job is late when the waiting
    jobs sit at the worst age for it (unless the binding need is only keeping up with arrivals).
    """
    age = age_share * sla  # below 80% usage: no safety margin, the sizing is exact
    horizon = sla / 3.0
    aim = sla - horizon
    lands_in = None if lands_share is None else lands_share * lead
    workers = drain_workers(backlog, age, lam, mu, sla, horizon, lead, running, ordered, lands_in)
    rate = required_rate(backlog, age, lam, mu, sla, horizon, lead, running, ordered, lands_in)
    assert workers == math.ceil(rate / mu - 1e-9)
    until = lead + 2 * sla
    worst_age = min(max(aim - lead, 0.0), age)  # waiting jobs just young enough to be aimed at

    def worst(fleet: float, others_age: float | None) -> float:
        waits = replay_waits(
            backlog, age, lam, mu, lead, running, ordered, lands_in, fleet, until, others_age
        )
        return max((w for t, w in waits if lead - t <= aim + 1e-9), default=0.0)

    slack = 1.0 / (workers * mu) + 1.0 / lam + 1e-6
    assert worst(workers, None) <= sla + slack
    assert worst(workers, worst_age) <= sla + slack
    assume(rate > 1.1 * lam)
    assert worst(0.9 * rate / mu, worst_age) > sla


def test_monotone_in_backlog_and_age() -> None:
    base = {"lam": 20.0, "mu": 1.0, "sla": 30.0}
    kw = {"horizon": 10.0, "lead": 60.0, "running": 10}
    sizes = [drain_workers(b, 5.0, **base, **kw) for b in (10, 100, 1000, 10_000)]
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1]
    ages = [drain_workers(500, a, **base, **kw) for a in (0.0, 10.0, 25.0, 40.0, 90.0)]
    assert ages == sorted(ages) and ages[0] < ages[-1]
