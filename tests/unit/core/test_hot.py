"""Running hot (core/hot.py, queueing.hot_workers): below Erlang C while the SLA has budget to
spare, on Poisson-like traffic, never under the load the windows can tell."""

from __future__ import annotations

import math
import random
from dataclasses import replace

import pytest

from queue_autoscale.core import ControllerState, Sample, decide, hot
from queue_autoscale.core.counters import CounterRow, window_rates
from queue_autoscale.core.measures import measure
from queue_autoscale.core.queueing import hot_workers, walk_quantile, workers_for_sla
from tests.unit.core.builders import NOW, settings, snapshot

CFG = settings(
    sla_seconds=30.0,
    percentile=0.999,
    provisioning_lead_seconds=60.0,
    evaluation_interval_seconds=10.0,
)


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


def test_least_load_is_the_load_less_a_one_sided_95_percent_error() -> None:
    # 20 jobs/s over 300 s: relative error sqrt(2 / 6000) = 1.83 %, 1.645 of them: 3.0 %
    assert hot.least_load(20.0, 300.0) == pytest.approx(20.0 * (1 - 1.6449 * 0.018257), rel=1e-4)
    assert hot.least_load(20.0, 300.0) == pytest.approx(19.399, abs=1e-3)
    assert hot.least_load(20.0, 60.0) < hot.least_load(20.0, 300.0)  # a shorter window knows less
    assert hot.least_load(0.0, 300.0) == 0.0
    assert hot.least_load(math.nan, 300.0) == 0.0


def _rows(per_second: list[int]) -> list[CounterRow]:
    return [CounterRow(second=int(NOW) - 300 + i, queued=q) for i, q in enumerate(per_second)]


def test_dispersion_is_measured_from_the_per_second_arrivals() -> None:
    rng = random.Random(1)
    poisson = [sum(1 for _ in range(200) if rng.random() < 0.1) for _ in range(300)]  # ~Poisson 20
    regular = [20] * 300
    bursty = [200 if i % 10 == 0 else 0 for i in range(300)]  # 20 jobs/s in bursts of 200
    d_poisson = window_rates(_rows(poisson), NOW).arrival_dispersion
    assert d_poisson is not None and 0.75 < d_poisson < 1.1  # binomial: 0.9
    assert window_rates(_rows(regular), NOW).arrival_dispersion == pytest.approx(0.0)
    assert window_rates(_rows(bursty), NOW).arrival_dispersion == pytest.approx(180.0, rel=0.01)
    assert window_rates([], NOW).arrival_dispersion is None
    # within 3 standard errors (sqrt(2 / 299) = 0.082) of 1 is Poisson-like; the NASA day's 10+ not
    assert hot.poisson_like(snapshot(arrival_dispersion=1.2))
    assert not hot.poisson_like(snapshot(arrival_dispersion=1.3))
    assert not hot.poisson_like(snapshot(arrival_dispersion=None))


def test_a_surge_is_growth_above_the_long_rate_by_more_than_its_noise() -> None:
    m_snap = snapshot(arrival_rate=20.0, running=20, desired=20)
    m = measure(m_snap, CFG)
    # over 10 s a steady queue's growth reads lambda +- sqrt((20 + 20) / 10) = 2 jobs/s
    assert not hot.surging(26.0, m, m_snap, CFG)  # 3 sigma: within 3.09
    assert hot.surging(26.5, m, m_snap, CFG)


def _comfortable(started: float = 40_000.0, late: float = 0.0) -> ControllerState:
    return ControllerState(
        "jobs",
        samples=(Sample(NOW - 10.0, 20.0, 0, 21),),
        realized_started=started,
        realized_late=late,
        realized_through=NOW - 20.0,
    )


def test_hybrid_runs_hot_only_while_the_loop_has_budget_to_spare() -> None:
    # GIVEN steady Poisson traffic at 20 jobs/s of 1 s jobs, nothing waiting
    snap = snapshot(
        arrival_rate=20.1,
        arrival_rate_short=20.4,
        mean_job_seconds=1.0,
        running=21,
        desired=21,
        in_flight=18,
        arrival_dispersion=1.02,
    )
    # WHEN the loop has counted 40,000 jobs with none late (p99.9: budget 40, comfort 10)
    hot_run = decide(snap, CFG, _comfortable(), NOW).decision
    # THEN the steady term is the hot size, below Erlang C's, and the words say why
    assert hot_run.terms.steady == 20
    assert "steady won, running hot: 20 workers (Erlang C: 21)" in hot_run.reason
    # WHEN 20 of them were late (half the budget: inside the band, not comfortable)
    spent = decide(snap, CFG, _comfortable(late=20.0), NOW).decision
    # THEN Erlang C sizes as before
    assert spent.terms.steady == 21
    # AND bursty arrivals (D = 12, the NASA day's) or too few jobs counted keep Erlang C too
    bursty = decide(replace(snap, arrival_dispersion=12.0), CFG, _comfortable(), NOW)
    assert bursty.decision.terms.steady == 21
    assert decide(snap, CFG, _comfortable(started=500.0), NOW).decision.terms.steady == 21
