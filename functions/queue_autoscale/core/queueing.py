"""Queueing formulas: load ratio, Erlang C, SLA sizing, urgency.

A worker runs `concurrency` jobs at once, so it is modelled as that many servers of rate
1 / mean job seconds each; per-worker service rate mu = concurrency / mean job seconds.
"""

from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist

from queue_autoscale.core.models import Urgency

_EPSILON = 1e-12


def service_rate(mean_job_seconds: float, concurrency: int = 1) -> float:
    """mu, jobs/s one worker serves at full load."""
    if mean_job_seconds <= 0:
        raise ValueError(f"mean_job_seconds must be > 0, got {mean_job_seconds}")
    return concurrency / mean_job_seconds


def load_ratio(arrival_rate: float, workers: int, service_rate_per_worker: float | None) -> float:
    """rho = lambda / (c * mu), with seed 002's zero rules.

    0 when nothing arrived; 1 when jobs arrived but mu is unknown (nothing completed).
    With no running worker and arrivals, the fleet is overloaded: rho = max(1, lambda / mu),
    the number of workers the arrivals alone would saturate.
    """
    if arrival_rate <= 0:
        return 0.0
    if service_rate_per_worker is None or service_rate_per_worker <= 0:
        return 1.0
    if workers <= 0:
        return max(1.0, arrival_rate / service_rate_per_worker)
    return arrival_rate / (workers * service_rate_per_worker)


def load_states(ratio: float, threshold: float) -> tuple[bool, bool]:
    """(overloading, overloaded): overloading = threshold <= rho < 1; overloaded = rho >= 1."""
    overloaded = ratio >= 1.0
    return (ratio >= threshold and not overloaded), overloaded


_WARM_START_SIGMAS = 7.0
"""Start the Erlang B recursion this many sqrt(A) below A (see erlang_b)."""


def _erlang_b_start(offered_load: float) -> tuple[int, float]:
    """Where the Erlang B recursion starts: (n0, B(n0)).

    Far below saturation B(n) ~ 1 - n / A, and the recursion contracts errors by about n / A a
    step, so starting 7 sqrt(A) below A with that value is exact to ~exp(-24) by the time n
    reaches A: O(sqrt(A)) steps instead of O(A), which keeps a decision in microseconds for
    fleets of hundreds.
    """
    n0 = math.floor(offered_load - _WARM_START_SIGMAS * math.sqrt(offered_load))
    if n0 < 16:
        return 0, 1.0
    return n0, 1.0 - n0 / offered_load


def erlang_b(servers: int, offered_load: float) -> float:
    """Erlang B blocking probability by the stable recursion B(n) = A B(n-1) / (n + A B(n-1))."""
    if servers < 0:
        raise ValueError(f"servers must be >= 0, got {servers}")
    n0, blocking = _erlang_b_start(offered_load)
    if servers < n0:
        n0, blocking = 0, 1.0
    for n in range(n0 + 1, servers + 1):
        carried = offered_load * blocking  # A B(n-1), once per step: the walk's inner loop
        blocking = carried / (n + carried)
    return blocking


def erlang_c(servers: int, offered_load: float) -> float:
    """Probability an arriving job waits in an M/M/n queue with offered load A = lambda * S.

    1 when the queue is unstable (A >= n); 0 when nothing is offered.
    """
    if offered_load <= 0:
        return 0.0
    if servers <= offered_load:
        return 1.0
    blocking = erlang_b(servers, offered_load)
    return servers * blocking / (servers - offered_load * (1.0 - blocking))


def wait_exceeds_probability(
    servers: int, arrival_rate: float, mean_job_seconds: float, wait_seconds: float
) -> float:
    """P(wait > t) in M/M/n: C(n, A) * exp(-(n / S - lambda) * t)."""
    offered = arrival_rate * mean_job_seconds
    if offered <= 0:
        return 0.0
    if servers <= offered:
        return 1.0
    decay = servers / mean_job_seconds - arrival_rate
    return erlang_c(servers, offered) * math.exp(-decay * wait_seconds)


def servers_for_sla(
    arrival_rate: float,
    mean_job_seconds: float,
    sla_seconds: float,
    percentile: float,
    max_servers: int | None = None,
) -> int:
    """Smallest n > A with P(wait > sla) <= 1 - percentile (0 when nothing arrives).

    Walks n up past floor(A) carrying the Erlang B recursion (warm-started, see _erlang_b_start),
    so no factorial is ever formed. With `max_servers` the walk stops there: any answer above it
    is returned as `max_servers + 1` ("more than the cap"), and an offered load A beyond the cap
    returns at once. Worst case with a cap M: O(min(M, 7 sqrt(A)) + M - A) float steps, at most
    about 8 M; a decision capped at 10,000 workers stays in milliseconds for any finite input.
    Without a cap the cost is O(sqrt(A)) and unbounded in A (only offline tools omit it).
    """
    offered = arrival_rate * mean_job_seconds
    if not offered > 0:  # also NaN
        return 0
    if max_servers is not None and not offered < max_servers:  # also inf: A alone needs more
        return max_servers + 1
    allowed = 1.0 - percentile
    start = math.floor(offered) + 1
    if sla_seconds > 0:
        # C <= 1, so exp(-(n/S - lambda) * sla) <= allowed already suffices: when that bound is
        # no higher than the first stable n (long SLAs), no Erlang B is needed at all.
        bound = mean_job_seconds * (arrival_rate + math.log(1 / allowed) / sla_seconds)
        if bound <= start:
            return start
    # Erlang B up to the last unstable n (below the cap: offered < max_servers), then the walk
    n = start - 1
    blocking = erlang_b(n, offered)
    while True:
        n += 1
        if max_servers is not None and n > max_servers:
            return max_servers + 1
        carried = offered * blocking
        blocking = carried / (n + carried)
        waiting = n * blocking / (n - offered * (1.0 - blocking))
        decay = n / mean_job_seconds - arrival_rate
        if waiting * math.exp(-decay * sla_seconds) <= allowed + _EPSILON:
            return n


def workers_for_sla(
    arrival_rate: float,
    mean_job_seconds: float,
    concurrency: int,
    sla_seconds: float,
    percentile: float,
    max_workers: int | None = None,
) -> int:
    """Workers (each `concurrency` servers) so that P(pickup wait > SLA) <= 1 - percentile.

    With `max_workers` the search is bounded (see servers_for_sla): an answer above the cap is
    returned as `max_workers + 1`, meaning "more than the cap".
    """
    limit = None if max_workers is None else max_workers * concurrency
    servers = servers_for_sla(arrival_rate, mean_job_seconds, sla_seconds, percentile, limit)
    if limit is not None and servers > limit:
        return max_workers + 1 if max_workers is not None else servers
    return math.ceil(servers / concurrency)


@lru_cache(maxsize=64)
def walk_quantile(percentile: float) -> float:
    """The standard normal quantile of `percentile` (0 at or below the median): how many
    standard deviations of a random walk a fleet sized at that percentile must absorb.
    Cached: a pure function of a setting, asked for every tick (NormalDist's inverse is a
    rational approximation of some 40 float steps)."""
    return max(0.0, NormalDist().inv_cdf(min(max(percentile, 0.5), 1.0 - 1e-12)))


def hot_workers(  # noqa: PLR0913 - keyword-only: the random walk's measured inputs
    *,
    arrival_rate: float,
    least_rate: float,
    backlog: float,
    service_rate_per_worker: float,
    sla_seconds: float,
    reaction_seconds: float,
    percentile: float,
    max_workers: int,
    dispersion: float = 1.0,
) -> int:
    """The fewest workers that run hot without losing the SLA before a correction lands.

    Near rho = 1 the queue is a random walk: over t seconds it moves by (lambda - c mu) t on
    average, with variance (lambda D + c mu) t (D = `dispersion`, the arrivals' index of
    dispersion, 1 for Poisson; completions about as random as Poisson).
    The answer is the smallest c with c mu >= `least_rate` (never below the offered load) whose
    backlog one reaction time (`reaction_seconds`, the provisioning lead plus an interval) from
    now, at the percentile's normal quantile z of that walk, is still picked up within the SLA
    by the c workers: backlog + (lambda - c mu) R + z sqrt((lambda D + c mu) R) <= c mu SLA.
    A backlog that builds past that asks for more workers before any job can be late; rates in
    jobs/s, `backlog` in jobs, `service_rate_per_worker` mu in jobs/s. Returns max_workers + 1
    ("more than the cap") when no c up to the cap qualifies; O(c - least_rate / mu) steps,
    started at the closed-form size without the spread term.
    """
    mu = service_rate_per_worker
    if not arrival_rate > 0 or not mu > 0:
        return 0
    z = walk_quantile(percentile)
    horizon = reaction_seconds + sla_seconds
    fluid = (backlog + arrival_rate * reaction_seconds) / (mu * horizon)
    start = max(least_rate / mu, fluid, 1.0)
    if not math.isfinite(start) or start > max_workers:
        return max_workers + 1
    workers = max(1, math.ceil(start - 1e-9))
    while workers <= max_workers:
        capacity = workers * mu
        drift = (arrival_rate - capacity) * reaction_seconds
        spread = z * math.sqrt((arrival_rate * dispersion + capacity) * reaction_seconds)
        if backlog + drift + spread <= capacity * sla_seconds:
            return workers
        workers += 1
    return max_workers + 1


def bounded_workers(workers: float, max_workers: int) -> int:
    """ceil(workers) for a worker count computed in closed form (O(1) at any size); inf and NaN,
    which absurd but finite inputs can produce, read as `max_workers + 1` ("more than the cap")."""
    if not math.isfinite(workers):
        return max_workers + 1
    count = math.ceil(workers - 1e-9)
    return count if count > 0 else 0  # max(0, count) without the builtin's call: hot path


def urgency_for(oldest_age_seconds: float, sla_seconds: float) -> Urgency:
    """NORMAL < 0.6 <= ELEVATED < 0.8 <= WARNING < 0.9 <= CRITICAL < 1.0 <= BREACH."""
    usage = oldest_age_seconds / sla_seconds
    if usage >= 1.0:
        return Urgency.BREACH
    if usage >= 0.9:
        return Urgency.CRITICAL
    if usage >= 0.8:
        return Urgency.WARNING
    if usage >= 0.6:
        return Urgency.ELEVATED
    return Urgency.NORMAL
