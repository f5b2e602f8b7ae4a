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
from queue_autoscale.core.models import ControllerState, Sample
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
