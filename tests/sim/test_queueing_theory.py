"""The engine against queueing theory: M/M/c with a static fleet.

GIVEN Poisson arrivals at 8 jobs/s, exponential 1 s jobs and 10 workers ready from the start
(offered load A = 8, rho = 0.8), THEN
- the share of jobs that wait matches Erlang C, C(10, 8) = 0.409, within 0.025 absolute;
- the mean wait matches C / (c mu - lambda) = 0.205 s within 10 %;
- P(wait > 1 s) matches C exp(-(c mu - lambda)) = 0.055 within 0.01 absolute;
- Little's law: the time-average queue length equals lambda x mean wait within 2 %.
Tolerances: ~230,000 jobs, but successive waits are correlated; over seeds 0..4 the waiting
share strayed at most 0.011, the mean wait 6 %, the tail 0.005 and Little's law 0.2 %.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from queue_autoscale.core import erlang_c
from queue_autoscale.sim.engine import run_policy
from queue_autoscale.sim.workload import FleetSpec, build_workload
from tests.sim.conftest import FixedFleet

RATE = 8.0
SERVERS = 10
SECONDS = 8 * 3600


def _independent_erlang_c(servers: int, offered: float) -> float:
    """Erlang C by its textbook sum (independent of the core's recursion)."""
    top = offered**servers / math.factorial(servers) * servers / (servers - offered)
    bottom = sum(offered**k / math.factorial(k) for k in range(servers)) + top
    return top / bottom


@pytest.fixture(scope="module")
def mmc_run() -> tuple[np.ndarray, np.ndarray, list[int], int]:
    fleet = FleetSpec(service_mean_seconds=1.0, service_cv=1.0, provision_delay_seconds=0)
    counts = np.random.default_rng(7).poisson(RATE, SECONDS).astype(np.int64)
    workload = build_workload("mmc", counts, fleet, seed=7, warmup_seconds=600)
    result = run_policy(workload, FixedFleet(SERVERS), fleet, initial_workers=SERVERS)
    first = int(workload.counts[:600].sum())
    waits = result.starts[first:] - workload.arrivals[first:]
    return waits, workload.arrivals[first:], result.series.visible[600:], result.end_seconds


def test_erlang_c_formulas_agree() -> None:
    assert erlang_c(SERVERS, RATE) == pytest.approx(_independent_erlang_c(SERVERS, RATE), rel=1e-9)
    assert erlang_c(SERVERS, RATE) == pytest.approx(0.4092, abs=1e-4)


def test_share_of_jobs_that_wait_matches_erlang_c(mmc_run) -> None:
    waits, _, _, _ = mmc_run
    assert not np.isnan(waits).any()
    share = float(np.mean(waits > 1e-9))
    assert share == pytest.approx(_independent_erlang_c(SERVERS, RATE), abs=0.025)


def test_mean_wait_matches_mmc(mmc_run) -> None:
    waits, _, _, _ = mmc_run
    expected = _independent_erlang_c(SERVERS, RATE) / (SERVERS * 1.0 - RATE)
    assert float(waits.mean()) == pytest.approx(expected, rel=0.10)


def test_wait_tail_matches_mmc(mmc_run) -> None:
    waits, _, _, _ = mmc_run
    # P(W > t) = C exp(-(c mu - lambda) t): at t = 1 s, 0.409 * e^-2 = 0.0554
    expected = _independent_erlang_c(SERVERS, RATE) * math.exp(-(SERVERS - RATE) * 1.0)
    assert float(np.mean(waits > 1.0)) == pytest.approx(expected, abs=0.01)


def test_littles_law_holds(mmc_run) -> None:
    waits, arrivals, visible, _ = mmc_run
    queue_length = float(np.mean(visible[:SECONDS]))
    measured_rate = arrivals.size / SECONDS
    assert queue_length == pytest.approx(measured_rate * float(waits.mean()), rel=0.02)
