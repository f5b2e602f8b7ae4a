"""Running hot (core/hot.py, queueing.hot_workers): below Erlang C while the SLA has budget to
spare, with the arrivals' measured dispersion, never under the load the windows can tell."""

from __future__ import annotations

import math
import random
from dataclasses import replace

import pytest

from queue_autoscale.core import ControllerState, Sample, decide, hot, sla_loop
from queue_autoscale.core.counters import CounterRow, window_rates
from queue_autoscale.core.measures import measure
from queue_autoscale.core.models import Burst, QueueSettings, QueueSnapshot, Settled
from queue_autoscale.core.queueing import hot_workers, walk_quantile, workers_for_sla
from queue_autoscale.core.recurrence import Recurrence
from queue_autoscale.core.state import state_from_dict, state_to_dict
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
    # AND at D = 10 it moves by sqrt((10 x 20 + 20) / 10) = 4.69 jobs/s: 3.09 x 4.69 = 14.49
    d_snap = replace(m_snap, arrival_dispersion=10.0)
    assert not hot.surging(34.4, m, d_snap, CFG)
    assert hot.surging(34.6, m, d_snap, CFG)


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
    # AND too few jobs counted keep Erlang C too
    assert decide(snap, CFG, _comfortable(started=500.0), NOW).decision.terms.steady == 21
    # AND bursty arrivals (D = 12, the NASA day's) run hot with the walk's and the load's D:
    # least load 20.1 (1 - 1.645 sqrt(13 / 6,030)) = 18.56 jobs/s, so from 19 workers; at 19 the
    # walk reaches 1.1 x 70 + 3.090 sqrt((12 x 20.1 + 19) x 70) = 77 + 424.6 = 501.6 <= 570
    bursty = decide(replace(snap, arrival_dispersion=12.0), CFG, _comfortable(), NOW)
    assert bursty.decision.terms.steady == 19
    # AND an unknown dispersion keeps Erlang C
    unknown = decide(replace(snap, arrival_dispersion=None), CFG, _comfortable(), NOW)
    assert unknown.decision.terms.steady == 21


def test_no_hot_sizing_within_the_reaction_time_of_a_burst_onset() -> None:
    # GIVEN a comfortable loop over a whole window and bursty arrivals (D = 12)
    loop = sla_loop.LoopReading(40_000.0, 0.0, NOW - 20.0, 0.0, 1.0)
    snap = _steady_snapshot(arrival_dispersion=12.0)
    reaction = sla_loop.reaction_seconds(CFG)  # 60 s lead + 30 s SLA + 2 x 10 s = 110 s
    assert reaction == 110.0

    def rec(onset_ago: float) -> Recurrence:
        return Recurrence((Burst(NOW - onset_ago, 40),), False, None, 0, None, None, False, ())

    # THEN inside the reaction time the fleet is still the burst's reaction: Erlang C
    assert not hot.allowed(loop, rec(109.0), snap, CFG, NOW)
    # AND from its end on, long before the loop's window W (1,800 s), it may run hot
    assert hot.allowed(loop, rec(110.0), snap, CFG, NOW)
    assert sla_loop.after_onset(NOW - 110.0, CFG, NOW)
    # AND with an SLA of a whole lead (60 s) no onset gate: a backlog that builds is picked up
    # within the SLA by workers ordered when it shows
    assert hot.allowed(loop, rec(10.0), snap, replace(CFG, sla_seconds=60.0), NOW)
    assert not hot.allowed(loop, rec(10.0), snap, replace(CFG, sla_seconds=59.0), NOW)


def test_a_short_reading_runs_hot_only_where_the_sla_covers_a_lead() -> None:
    # GIVEN a comfortable loop that has counted 2,000 jobs (p99.9: at least 1 / b = 1,000), no
    # late one, on bursty arrivals (D = 12) at 21 jobs/s, no onset
    loop = sla_loop.LoopReading(2_000.0, 0.0, NOW - 20.0, 0.0, 1.0)
    snap = _steady_snapshot(arrival_dispersion=12.0)
    rec = Recurrence((), False, None, 0, None, None, False, ())
    # WHEN the SLA (59 s) is under the 60 s lead: half of W = 20 x 119 s reads
    # (1 - e^-0.5) x 21 x 2,380 = 19,666 jobs, so 2,000 are too few: Erlang C
    assert not hot.allowed(loop, rec, snap, replace(CFG, sla_seconds=59.0), NOW)
    # THEN with an SLA of a whole lead (60 s) the fleet may run hot at once
    assert hot.allowed(loop, rec, snap, replace(CFG, sla_seconds=60.0), NOW)


# The settled load: W = 20 x (60 s lead + 30 s SLA) = 1,800 s; the long window 300 s, mu = 1.
SETTLED = Settled(load=20.0, since=NOW - 600.0, at=NOW - 10.0)


def _steady_snapshot(**overrides: float | None) -> QueueSnapshot:
    base: dict[str, float | None] = {
        "arrival_rate": 21.0,
        "arrival_rate_short": 21.0,
        "arrival_dispersion": 1.0,
    }
    base.update(overrides)
    return snapshot(**base)


def _settle(
    snap: QueueSnapshot, previous: Settled | None = SETTLED, cfg: QueueSettings = CFG
) -> Settled | None:
    return hot.settle(previous, 0.0, snap, measure(snap, cfg), cfg, NOW)


def test_the_settled_load_is_an_exponential_average_over_the_loops_window() -> None:
    # GIVEN a settled 20 workers and a long window reading 21 (1.0 away, within 3 standard
    # errors: 3 x 21 sqrt(2 / (21 x 300)) = 1.12) and a short one not rising past it by 3 of
    # its own (3 x 21 sqrt(2 / (21 x 60)) = 2.51)
    settled = _settle(_steady_snapshot())
    # THEN it moves 1 - exp(-10 / 1800) = 0.5540 % of the way, keeping its restart time
    assert settled is not None
    assert settled.load == pytest.approx(20.0 + (1.0 - math.exp(-10.0 / 1800.0)), abs=1e-9)
    assert settled.load == pytest.approx(20.00554, abs=1e-5)
    assert (settled.since, settled.at) == (NOW - 600.0, NOW)


@pytest.mark.parametrize(
    ("snap", "previous"),
    [
        # the long window 2.0 away (3 standard errors: 3 x 22 sqrt(2 / 6600) = 1.149)
        pytest.param(
            _steady_snapshot(arrival_rate=22.0, arrival_rate_short=22.0), SETTLED, id="long"
        ),
        # the short window 3.0 up (3 x 23 sqrt(2 / 1380) = 2.627) while the long reads 20.5
        pytest.param(
            _steady_snapshot(arrival_rate=20.5, arrival_rate_short=23.0), SETTLED, id="short"
        ),
        # a tick missed: the last update more than a long window ago
        pytest.param(_steady_snapshot(), SETTLED._replace(at=NOW - 301.0), id="gap"),
        pytest.param(_steady_snapshot(), None, id="first"),
    ],
)
def test_the_settled_load_restarts_at_the_long_window_when_the_level_moved(
    snap: QueueSnapshot, previous: Settled | None
) -> None:
    rate = snap.arrival_rate
    assert rate is not None
    assert _settle(snap, previous) == Settled(load=rate, since=NOW, at=NOW)


def test_a_significant_slope_of_the_trend_restarts_the_settled_load() -> None:
    # GIVEN samples rising 0.01 jobs/s per second for 300 s to 20 jobs/s, and windows at 20:
    # 3.35 standard errors of a flat rate's slope, sqrt(12 x 20 / 300^3) = 0.00298
    rising = tuple(
        Sample(at=NOW + x, arrival_rate=20.0 + 0.01 * x, visible=0, raw_target=20)
        for x in range(-300, 0, 10)
    )
    snap = _steady_snapshot(arrival_rate=20.0, arrival_rate_short=20.0)
    m = measure(snap, CFG)
    # THEN the average restarts; half that slope (1.68 standard errors) does not restart it
    assert hot.slope(rising, m, snap, CFG, NOW) == pytest.approx(3.35, abs=0.01)
    assert hot.settle(SETTLED, hot.slope(rising, m, snap, CFG, NOW), snap, m, CFG, NOW) == Settled(
        20.0, NOW, NOW
    )
    gentle = tuple(replace(s_, arrival_rate=20.0 + 0.005 * (s_.at - NOW)) for s_ in rising)
    kept = hot.settle(SETTLED, hot.slope(gentle, m, snap, CFG, NOW), snap, m, CFG, NOW)
    assert kept is not None
    assert kept.since == SETTLED.since


def test_no_settled_load_on_bursty_arrivals_or_a_loose_sla() -> None:
    assert _settle(_steady_snapshot(arrival_dispersion=2.0)) is None
    assert (
        _settle(_steady_snapshot(), cfg=replace(CFG, sla_seconds=300.0)) is None
    )  # the backlog carries it
    assert _settle(_steady_snapshot(arrival_rate=0.0)) is None


def test_the_settled_load_sizes_only_once_it_has_held_a_whole_long_window() -> None:
    snap = _steady_snapshot(mean_job_seconds=0.8)  # mu = 1.25 jobs/s per worker
    m = measure(snap, CFG)
    young = Settled(load=20.0, since=NOW - 290.0, at=NOW)
    assert hot.settled_rate(young, snap, m, NOW) is None
    assert hot.settled_rate(young._replace(since=NOW - 300.0), snap, m, NOW) == 25.0
    assert hot.settled_rate(None, snap, m, NOW) is None


def test_a_young_settled_load_sizes_at_once_only_when_large_and_flat() -> None:
    snap = _steady_snapshot(mean_job_seconds=0.8)  # mu = 1.25 jobs/s per worker
    m = measure(snap, CFG)
    young = Settled(load=20.0, since=NOW - 290.0, at=NOW)
    # GIVEN no trend samples (slope 0): 20 workers, at least 10, sizes at once
    assert hot.early(young, hot.slope((), m, snap, CFG, NOW), CFG)
    assert hot.settled_rate(young, snap, m, NOW, at_once=True) == 25.0
    # AND under (60 s lead + 10 s interval) / 30 s SLA = 2.33 workers it waits for its window
    assert hot.early_min_load(CFG) == pytest.approx(70.0 / 30.0)
    assert not hot.early(young._replace(load=2.3), 0.0, CFG)
    # AND a slope of 0.005 jobs/s per second over 300 s, 1.68 standard errors of a flat rate's
    # at 20 jobs/s (sqrt(12 x 20 / 300^3) = 0.00298), is not flat enough
    gentle = tuple(
        Sample(at=NOW + x, arrival_rate=20.0 + 0.005 * x, visible=0, raw_target=20)
        for x in range(-300, 0, 10)
    )
    flat = m._replace(window_rate=20.0)
    assert hot.slope(gentle, flat, snap, CFG, NOW) == pytest.approx(1.68, abs=0.01)
    assert not hot.early(young, hot.slope(gentle, flat, snap, CFG, NOW), CFG)
    assert not hot.early(None, 0.0, CFG)


def test_a_settled_load_above_reaction_over_sla_waives_the_loops_half_window() -> None:
    # GIVEN a comfortable loop of 5,000 jobs, none late: under half a window at 21 jobs/s,
    # (1 - exp(-0.5)) x 21 x 1,800 = 14,873 jobs
    loop = sla_loop.LoopReading(5_000.0, 0.0, NOW - 20.0, 0.0, 1.0)
    rec = Recurrence((), False, None, 0, None, None, False, ())
    snap = _steady_snapshot()
    assert not hot.allowed(loop, rec, snap, CFG, NOW)
    # THEN a settled load of 2.34 workers (over 70 s / 30 s = 2.33) lets it run hot; 2.33 not
    assert hot.allowed(loop, rec, snap, CFG, NOW, SETTLED._replace(load=2.34))
    assert not hot.allowed(loop, rec, snap, CFG, NOW, SETTLED._replace(load=2.33))


def test_the_hot_floor_still_reads_the_windows_rate_under_a_settled_load() -> None:
    # GIVEN sizing at a settled 19 jobs/s while the windows read 21.5
    snap = snapshot(arrival_rate=19.0, arrival_rate_short=19.0, arrival_dispersion=1.0)
    m = measure(snap, CFG)
    assert hot.workers(19.0, m, snap, CFG, 100) == 19  # least load 18.41; walk 159 <= 570
    # THEN the floor is the windows' least load over 60 s, 21.5 (1 - 1.645 sqrt(2 / 1290)) =
    # 20.11 jobs/s: 21 workers
    assert hot.workers(19.0, m._replace(window_rate=21.5), snap, CFG, 100) == 21


def test_the_settled_load_survives_save_and_load() -> None:
    state = ControllerState("jobs", settled=SETTLED)
    assert state_from_dict(state_to_dict(state)).settled == SETTLED
    assert state_from_dict(state_to_dict(ControllerState("jobs"))).settled is None
    older = {k: v for k, v in state_to_dict(state).items() if k != "settled"}
    assert state_from_dict(older).settled is None


def test_hybrid_sizes_on_the_settled_load_and_remembers_the_windows_rate() -> None:
    # GIVEN a settled 20 workers held for ten minutes and windows reading 21 (within noise)
    snap = _steady_snapshot()
    state = ControllerState("jobs", settled=SETTLED)
    evaluation = decide(snap, CFG, state, NOW)
    # THEN the rate sized on is the updated average (mu = 1), the sample keeps 21
    assert evaluation.decision.arrival_rate == pytest.approx(20.00554, abs=1e-5)
    settled = evaluation.state.settled
    assert settled is not None
    assert settled.load == pytest.approx(20.00554, abs=1e-5)
    assert (settled.since, settled.at) == (NOW - 600.0, NOW)
    assert evaluation.state.samples[-1].arrival_rate == 21.0


# A backlog standing when a burst begins (hot.onset_workers): SLA 60 s, lead 60 s, interval 10 s
# (a correction lands within R = 70 s), 5 workers of 1 s jobs at 4.6 jobs/s (the flash crowd's
# calm: 5 jobs/s).
ONSET_CFG = replace(CFG, sla_seconds=60.0, percentile=0.99)


def _onset_snapshot(visible: int, dispersion: float = 1.0) -> QueueSnapshot:
    return _steady_snapshot(
        arrival_rate=4.6,
        arrival_rate_short=4.6,
        arrival_dispersion=dispersion,
        visible=visible,
        running=5,
        desired=5,
        in_flight=5,
    )


@pytest.mark.parametrize(
    ("visible", "spare", "sla", "dispersion", "expected"),
    [
        # 150 waiting, 73 may stand (the budget; 5 x 1 x 10 = 50 picked up in an interval):
        # (4.6 + 77 / 70) / 1 = 5.7
        pytest.param(150, 73.0, 60.0, 1.0, 6, id="beyond-the-unspent-budget"),
        # a budget of 10: an interval's pickups, 50, may stand: (4.6 + 100 / 70) = 6.03
        pytest.param(150, 10.0, 60.0, 1.0, 7, id="beyond-an-intervals-pickups"),
        pytest.param(73, 73.0, 60.0, 1.0, 0, id="within-the-budget"),
        # at SLA 59 s a backlog is not let stand (under a lead: no hot size without gates)
        pytest.param(150, 73.0, 59.0, 1.0, 0, id="sla-under-the-lead"),
        # at SLA 70 s = L + I the burst's first jobs are picked up in time by its new workers
        pytest.param(150, 73.0, 70.0, 1.0, 0, id="sla-covers-the-correction"),
        # D = 2 > 1 + 3 sqrt(2 / 299) = 1.245: not Poisson-like
        pytest.param(150, 73.0, 60.0, 2.0, 0, id="batchy-arrivals"),
    ],
)
def test_a_backlog_beyond_what_an_onset_may_find_is_drained_within_a_correction(
    visible: int, spare: float, sla: float, dispersion: float, expected: int
) -> None:
    cfg = replace(ONSET_CFG, sla_seconds=sla)
    snap = _onset_snapshot(visible, dispersion)
    assert hot.onset_workers(measure(snap, cfg), snap, spare, cfg, 100) == expected


def test_only_an_sla_between_the_lead_and_the_correction_exposes_onsets() -> None:
    assert ONSET_CFG.forecast_horizon_seconds == 70.0
    assert hot.exposes_onsets(replace(ONSET_CFG, sla_seconds=60.0))
    assert hot.exposes_onsets(replace(ONSET_CFG, sla_seconds=69.0))
    assert not hot.exposes_onsets(replace(ONSET_CFG, sla_seconds=59.0))
    assert not hot.exposes_onsets(replace(ONSET_CFG, sla_seconds=70.0))


def test_hybrid_drains_a_standing_backlog_and_says_why() -> None:
    # GIVEN 150 waiting at the flash crowd's calm, the loop having counted 7,300 jobs with none
    # late (p99: an unspent budget of 73 jobs)
    # (also 150 at the last tick: no growth, no surge)
    snap = _onset_snapshot(150)
    state = replace(_comfortable(started=7_300.0), samples=(Sample(NOW - 10.0, 4.6, 150, 5),))
    decision = decide(snap, ONSET_CFG, state, NOW).decision
    # THEN the steady term drains the 77 beyond the budget within 70 s: 6 workers
    assert decision.terms.steady == 6
    assert decision.winner.value == "steady"
    assert "steady won: 6 workers serve 4.60 jobs/s and drain the 150 waiting to 73" in (
        decision.reason
    )
