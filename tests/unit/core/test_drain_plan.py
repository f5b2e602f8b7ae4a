"""The drain's surge rate on batchy traffic (core/drain_plan.py `_drain_rate`).

GIVEN a tick of the NASA day x10 (arrivals in tens, measured index of dispersion D = 32) whose
backlog grew 46 -> 240 in one 10 s interval at 36 workers, WHEN the drain's default horizon
(SLA / 3) is shorter than the landing's spread (one 10 s interval: SLA 10 s), THEN the growth is
within the batches' noise and the drain sizes on the windowed rate (the burst's jobs are late
long before any worker ordered now lands, 60 s on); at SLA 30 s (horizon 10 s, not shorter)
the same growth is read as a surge, as on Poisson traffic.
"""

from __future__ import annotations

import pytest

from queue_autoscale.core.drain_plan import DrainPlan, drain_plan
from queue_autoscale.core.measures import measure
from queue_autoscale.core.models import ControllerState, Sample, Terms, Winner
from queue_autoscale.core.words import term_words
from tests.unit.core.builders import NOW, settings, snapshot


def _nasa_burst_tick(sla: float, dispersion: float) -> DrainPlan:
    """t = 830 s of the bench's NASA window: 240 waiting 5 s (46 ten seconds before), 19.8 jobs/s
    over the short window, 36 running at 1 job/s each, lead 60 s, interval 10 s."""
    snap = snapshot(
        visible=240,
        oldest_age_seconds=5.0,
        arrival_rate=7.6,
        arrival_rate_short=19.8,
        running=36,
        desired=36,
        arrival_dispersion=dispersion,
    )
    s = settings(
        max_workers=1_000,
        sla_seconds=sla,
        evaluation_interval_seconds=10.0,
        provisioning_lead_seconds=60.0,
    )
    state = ControllerState(
        "jobs", samples=(Sample(at=NOW - 10.0, arrival_rate=19.8, visible=46, raw_target=36),)
    )
    return drain_plan(measure(snap, s), state, s, NOW, 1_001, 10_872.0, dispersion)


def test_a_burst_within_batch_noise_is_no_surge_when_the_sla_is_shorter_than_the_lead() -> None:
    # Poisson reading: 194 grown in 10 s + 36 served = 55.4 jobs/s; at landing 60 s later
    # 240 + (55.4 - 36) x 60 = 1,404 would wait
    poisson = _nasa_burst_tick(10.0, 1.0)
    assert poisson.arrival_rate == pytest.approx(55.4)
    assert poisson.at_landing == pytest.approx(1_404.0)
    # D = 32: noise 3 sqrt((32 x 55.4 + 36) x 10) = 403 > 194, so the short window's 19.8 jobs/s;
    # 36 workers empty the 240 in 240 / (36 - 19.8) = 15 s, nothing waits at landing
    batchy = _nasa_burst_tick(10.0, 32.0)
    assert batchy.arrival_rate == pytest.approx(19.8)
    assert batchy.at_landing == 0.0
    assert batchy.workers < poisson.workers


def test_with_a_default_horizon_of_an_interval_the_first_sign_of_a_surge_counts() -> None:
    plan = _nasa_burst_tick(30.0, 32.0)
    assert plan.arrival_rate == pytest.approx(55.4)
    assert plan.at_landing == pytest.approx(1_404.0)


def _spike_onset_tick(visible: int, oldest: float, started: float) -> DrainPlan:
    """A step to 50 jobs/s seen one tick in: `visible` waiting, the oldest `oldest` s, 10
    running at 1 job/s each, SLA 60 s = the lead, 10 s interval, p99.9 with `started` jobs
    counted (50,000: the budget's horizon 0.001 x 50,000 / 50 = 1 s; 0: the default 20 s)."""
    snap = snapshot(
        visible=visible, oldest_age_seconds=oldest, arrival_rate=50.0, running=10, desired=10
    )
    s = settings(
        max_workers=1_000,
        sla_seconds=60.0,
        percentile=0.999,
        evaluation_interval_seconds=10.0,
        provisioning_lead_seconds=60.0,
    )
    return drain_plan(measure(snap, s), ControllerState("jobs"), s, NOW, 1_001, started)


@pytest.mark.parametrize(
    ("visible", "oldest", "started", "horizon", "late", "workers"),
    [
        # at the lead 420 + (50 - 10) x 60 = 2,820 wait (56.4 s of arrivals: the head has 3.6 s
        # left); one interval later 3,220, 64.4 s of arrivals, so the head is past the 60 s SLA.
        # Sized at 70 s, aiming at every job up to 59 s old: the one aged 59 s has the 3,220 -
        # 50 x 59 = 270 older ones ahead and 1 s left, 270 workers (under the landing-clear
        # 50 + 3,220 / 10 = 372). At the lead it was max(50, 2,820 / 60, 2,820 - 2,950) = 50:
        # no slack for a landing up to 10 s late
        pytest.param(420, 8.4, 50_000.0, 1.0, True, 270, id="floor-horizon-head-late"),
        # the default 20 s horizon is longer than the interval: jobs aimed at (up to 40 s old at
        # the lead) are at most 50 s old 10 s later; max(50, 47, (2,820 - 2,000) / 20 = 41)
        pytest.param(420, 8.4, 0.0, 20.0, False, 50, id="default-horizon"),
        # 100 waiting: 2,900 at 70 s, 58 s of arrivals, none past the SLA; at the lead
        # max(50, 2,500 / 60, 2,500 - 2,950) = 50
        pytest.param(100, 2.0, 50_000.0, 1.0, False, 50, id="floor-horizon-head-in-time"),
        # 580 waiting 11.6 s: 2,980 at the lead, 59.6 s of arrivals, past the 59 s aim: the
        # on-time landing writes the head off already (the budget's horizon is being spent), so
        # the order stays the lead's, max(50, 2,980 / 60, 2,980 - 2,950) = 50
        pytest.param(580, 11.6, 50_000.0, 1.0, False, 50, id="floor-horizon-head-written-off"),
        # 700 waiting 14 s: 3,100 at the lead, more than the 3,000 arriving in it, so the head is
        # 74 s old then, late already; the on-time landing breaches the SLA too and the order
        # stays the lead's: max(50, 3,100 / 60, (3,100 - 2,950) / 1 = 150) = 150
        pytest.param(700, 14.0, 50_000.0, 1.0, False, 150, id="floor-horizon-head-late-at-lead"),
    ],
)
def test_a_horizon_shorter_than_the_interval_sizes_on_the_latest_landing_when_it_is_late(
    visible: int, oldest: float, started: float, horizon: float, late: bool, workers: int
) -> None:
    plan = _spike_onset_tick(visible, oldest, started)
    assert plan.horizon == pytest.approx(horizon)
    assert (plan.late, plan.workers, plan.capped) == (late, workers, False)
    # the queue at the lead is still what the plan reports
    assert plan.at_landing == pytest.approx(visible + 40.0 * 60.0)


def test_the_decision_words_say_the_order_was_sized_for_a_late_landing() -> None:
    plan = _spike_onset_tick(420, 8.4, 50_000.0)
    s = settings(sla_seconds=60.0, evaluation_interval_seconds=10.0)
    snap = snapshot(visible=420, oldest_age_seconds=8.4, arrival_rate=50.0, running=10)
    words = term_words(
        Winner.DRAIN,
        Terms(steady=50, trend=50, drain=plan.workers),
        measure(snap, s),
        50.0,
        s,
        plan,
    )
    assert "also sized for a landing 10 s later" in words
    in_time = _spike_onset_tick(100, 2.0, 50_000.0)
    assert "landing 10 s later" not in term_words(
        Winner.DRAIN,
        Terms(steady=50, trend=50, drain=in_time.workers),
        measure(snap, s),
        50.0,
        s,
        in_time,
    )
