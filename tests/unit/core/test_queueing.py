"""Erlang C, SLA sizing, running hot, the load ratio and urgency against independent
computations."""

from __future__ import annotations

import math

import pytest

from queue_autoscale.core.models import Urgency
from queue_autoscale.core.queueing import (
    erlang_c,
    hot_workers,
    load_ratio,
    load_states,
    servers_for_sla,
    urgency_for,
    wait_exceeds_probability,
    walk_quantile,
    workers_for_sla,
)


def square_root_staffing(offered_load: float, percentile: float) -> float:
    """Halfin-Whitt's c ~ A + beta * sqrt(A), beta from P(wait) = 1 - percentile (bisection on
    the Halfin-Whitt delay probability): an independent bound on servers_for_sla."""
    target = 1.0 - percentile
    low, high = 0.0, 10.0
    for _ in range(80):
        beta = (low + high) / 2
        phi = math.exp(-beta * beta / 2) / math.sqrt(2 * math.pi)
        big_phi = 0.5 * (1 + math.erf(beta / math.sqrt(2)))
        delay = 1.0 / (1.0 + beta * big_phi / phi)
        if delay > target:
            low = beta
        else:
            high = beta
    return offered_load + high * math.sqrt(offered_load)


def erlang_c_by_summation(n: int, a: float) -> float:
    """Textbook closed form with factorials: fine at small n, independent of the recursion."""
    top = a**n / math.factorial(n) * n / (n - a)
    return top / (sum(a**k / math.factorial(k) for k in range(n)) + top)


@pytest.mark.parametrize(
    ("servers", "load"),
    [
        pytest.param(1, 0.5, id="M/M/1 rho 0.5"),
        pytest.param(2, 1.0, id="two servers A=1"),
        pytest.param(5, 4.2, id="heavy five"),
        pytest.param(12, 7.5, id="twelve"),
        pytest.param(30, 27.9, id="thirty near saturation"),
    ],
)
def test_erlang_c_matches_direct_summation(servers: int, load: float) -> None:
    assert erlang_c(servers, load) == pytest.approx(erlang_c_by_summation(servers, load), rel=1e-9)


def test_erlang_c_known_value_and_mm1() -> None:
    # GIVEN two servers offered one Erlang, WHEN computed by hand: (1/2 * 2) / (1 + 1 + 1) = 1/3
    assert erlang_c(2, 1.0) == pytest.approx(1 / 3)
    # M/M/1: the wait probability is rho itself
    assert erlang_c(1, 0.73) == pytest.approx(0.73)


def test_erlang_c_edges() -> None:
    assert erlang_c(3, 0.0) == 0.0
    assert erlang_c(3, 3.0) == 1.0  # unstable: every job waits
    assert erlang_c(3, 7.0) == 1.0


def test_erlang_c_stable_for_hundreds_of_servers() -> None:
    # 500! overflows a float; the recursion must not.
    value = erlang_c(500, 480.0)
    assert 0.0 < value < 1.0
    assert erlang_c(2000, 1950.0) < 1.0


def test_servers_for_sla_is_the_smallest_meeting_the_percentile() -> None:
    # GIVEN 40 jobs/s of 0.5 s jobs (A = 20) and a 2 s SLA at p95
    n = servers_for_sla(40.0, 0.5, 2.0, 0.95)
    # THEN n meets it and n - 1 does not
    assert wait_exceeds_probability(n, 40.0, 0.5, 2.0) <= 0.05
    assert wait_exceeds_probability(n - 1, 40.0, 0.5, 2.0) > 0.05
    assert n > 20


def test_servers_for_sla_always_above_offered_load() -> None:
    # Little's Law alone (c = R = 100) runs at rho = 1; Erlang C needs strictly more.
    assert servers_for_sla(50.0, 2.0, 30.0, 0.95) == 101
    assert servers_for_sla(0.0, 2.0, 30.0, 0.95) == 0


@pytest.mark.parametrize("load", [100.0, 400.0, 900.0])
def test_square_root_staffing_bounds_large_fleets(load: float) -> None:
    # With SLA = 0 the criterion is P(wait) <= 1 - p, which square-root staffing approximates.
    n = servers_for_sla(load, 1.0, 0.0, 0.8)
    approx = square_root_staffing(load, 0.8)
    assert abs(n - approx) <= 0.1 * math.sqrt(load) + 2
    # A positive SLA can only need fewer servers than P(wait) alone.
    assert servers_for_sla(load, 1.0, 5.0, 0.8) <= n


def test_workers_for_sla_divides_servers_by_concurrency() -> None:
    servers = servers_for_sla(30.0, 2.0, 10.0, 0.99)
    assert workers_for_sla(30.0, 2.0, 4, 10.0, 0.99) == math.ceil(servers / 4)


def test_load_ratio_seed_002_underloaded_fleet_reads_half() -> None:
    # 10 jobs/s of 1 s jobs on 20 workers: mu = 1/s, rho = 10 / 20 = 0.5 (not 1).
    assert load_ratio(10.0, 20, 1.0) == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("arrival", "workers", "mu", "expected"),
    [
        pytest.param(0.0, 5, 1.0, 0.0, id="nothing queued reads 0"),
        pytest.param(0.0, 0, None, 0.0, id="nothing queued, nothing known"),
        pytest.param(3.0, 5, None, 1.0, id="queued but nothing completed reads 1"),
        pytest.param(3.0, 0, 1.0, 3.0, id="no workers: the arrivals saturate 3"),
        pytest.param(0.5, 0, 1.0, 1.0, id="no workers and a trickle: still overloaded"),
    ],
)
def test_load_ratio_zero_rules(
    arrival: float, workers: int, mu: float | None, expected: float
) -> None:
    assert load_ratio(arrival, workers, mu) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("ratio", "overloading", "overloaded"),
    [
        (0.5, False, False),
        (0.8, True, False),
        (0.99, True, False),
        (1.0, False, True),
        (3, False, True),
    ],
)
def test_overloaded_excludes_overloading(ratio: float, overloading: bool, overloaded: bool) -> None:
    assert load_states(ratio, 0.8) == (overloading, overloaded)


@pytest.mark.parametrize(
    ("age", "expected"),
    [
        (0.0, Urgency.NORMAL),
        (17.9, Urgency.NORMAL),
        (18.0, Urgency.ELEVATED),
        (24.0, Urgency.WARNING),
        (27.0, Urgency.CRITICAL),
        (29.99, Urgency.CRITICAL),
        (30.0, Urgency.BREACH),
        (65.0, Urgency.BREACH),
    ],
)
def test_urgency_tiers_for_a_30s_sla(age: float, expected: Urgency) -> None:
    assert urgency_for(age, 30.0) is expected


def full_recursion(n: int, a: float) -> float:
    b = 1.0
    for k in range(1, n + 1):
        b = a * b / (k + a * b)
    return b


@pytest.mark.parametrize("load", [20.0, 100.0, 257.3, 1000.0, 5000.0])
def test_warm_started_erlang_b_equals_the_full_recursion(load: float) -> None:
    from queue_autoscale.core.queueing import erlang_b

    for n in (int(load * 0.5), int(load), int(load) + 1, int(load * 1.1) + 3):
        assert erlang_b(n, load) == pytest.approx(full_recursion(n, load), rel=1e-9, abs=1e-300)


@pytest.mark.parametrize("sla", [0.5, 2.0, 30.0, 300.0])
@pytest.mark.parametrize("rate", [0.3, 7.0, 95.0, 400.0])
@pytest.mark.parametrize("job", [0.1, 1.0, 4.0])
def test_servers_for_sla_equals_a_brute_force_search(sla: float, rate: float, job: float) -> None:
    offered = rate * job
    n = math.floor(offered) + 1
    while wait_exceeds_probability(n, rate, job, sla) > 0.01 + 1e-12:
        n += 1
    assert servers_for_sla(rate, job, sla, 0.99) == n


def _hot(backlog: float, sla: float, least: float = 19.7, dispersion: float = 1.0) -> int:
    return hot_workers(
        arrival_rate=20.0,
        least_rate=least,
        backlog=backlog,
        service_rate_per_worker=1.0,
        sla_seconds=sla,
        reaction_seconds=70.0,
        percentile=0.999,
        max_workers=100,
        dispersion=dispersion,
    )


def test_the_walk_one_reaction_time_ahead_must_still_make_the_sla() -> None:
    z = walk_quantile(0.999)
    assert z == pytest.approx(3.090, abs=1e-3)
    # at 20 jobs/s of 1 s jobs, 20 workers (rho = 1) walk z sqrt(40 x 70) = 163.5 jobs in 70 s
    assert _hot(0, 30.0) == 20  # 163.5 <= 20 x 30
    assert _hot(0, 10.0) == 20  # 163.5 <= 20 x 10
    # a backlog of 40 at SLA 10 s: 203.5 > 200 at 20; at 21, 40 - 70 + 165.6 = 135.6 <= 210
    assert _hot(40, 10.0) == 21
    # 500 waiting at SLA 30 s: 663.5 > 600 at 20; 500 - 70 + 165.6 = 595.6 <= 630 at 21
    assert _hot(500, 30.0) == 21
    # Erlang C asks for more at both (it sizes the stationary queue at the rate as measured)
    assert workers_for_sla(20.0, 1.0, 1, 30.0, 0.999) == 21
    assert workers_for_sla(20.0, 1.0, 1, 10.0, 0.999) == 21


def test_never_below_the_least_load_and_bursty_arrivals_walk_further() -> None:
    assert _hot(0, 30.0, least=20.01) == 21  # c mu >= the least load
    # with D = 10 the walk's variance is (10 lambda + c mu): at SLA 10 s 23 workers
    # (-210 + 3.09 sqrt((200 + 23) x 70) = 176 <= 230; at 22: 245 > 220)
    assert _hot(0, 10.0, dispersion=10.0) == 23
    # bounded: an offered load past the cap reads as cap + 1
    assert (
        hot_workers(
            arrival_rate=1e9,
            least_rate=1e9,
            backlog=0,
            service_rate_per_worker=1.0,
            sla_seconds=30.0,
            reaction_seconds=70.0,
            percentile=0.999,
            max_workers=100,
        )
        == 101
    )
