"""The seeds' worked examples: seed-hybrid reproduces them, hybrid differs for stated reasons.

Seed 000's examples give pending jobs, oldest age, SLA and per-worker processing rate, but no
arrival rate; `seed-hybrid` ignores arrivals during the remaining time anyway. For `hybrid` each
case adds a stated arrival rate, because counting those arrivals is the point of the difference.
"""

from __future__ import annotations

import math

import pytest

from queue_autoscale.core import ControllerState, Sample, decide, decide_seed_hybrid
from queue_autoscale.core.models import Action, Urgency
from tests.unit.core.builders import NOW, settings, snapshot


def seed000(pending: int, age: float, rate_per_worker: float, arrival: float = 0.0, **kw: object):
    """A seed 000 scenario: SLA 60 s, current fleet of 1, job time = 1 / rate.

    The seed has no provisioning lead; a 5 s recovery horizon keeps its "time remaining"
    visible in our formula (see test_lead_time_changes_the_drain for the defaults). A 30 s
    interval keeps its 60 s SLA tight, as it is with a real lead: with no lead and a 15 s
    interval the SLA would be loose (core/drain.py carried_wait_seconds: 60 - 5 - 15 >= 15),
    and the drain would let the carried-backlog term hold the fleet at the load."""
    params: dict[str, object] = {
        "provisioning_lead_seconds": 0.0,
        "recovery_horizon_seconds": 5.0,
        "evaluation_interval_seconds": 30.0,
    }
    params.update(kw)
    params.setdefault("max_workers", 20)
    cfg = settings(sla_seconds=60.0, min_workers=0, **params)
    snap = snapshot(
        visible=pending,
        oldest_age_seconds=age,
        mean_job_seconds=1.0 / rate_per_worker,
        arrival_rate=arrival,
        running=1,
        desired=1,
    )
    return cfg, snap


def test_example_1_normal_operation_uses_littles_law() -> None:
    # 100 pending, 10 s old, 60 s SLA, 5 jobs/s per worker, 4 jobs/s arriving: usage 16.7%.
    cfg, snap = seed000(100, 10.0, 5.0, arrival=4.0)
    d = decide_seed_hybrid(snap, cfg, ControllerState("jobs"), NOW).decision
    assert d.urgency is Urgency.NORMAL
    assert d.sla_usage == pytest.approx(10 / 60)
    assert d.terms.steady == 1  # Little's Law: 4 jobs/s * 0.2 s = 0.8 -> 1
    assert d.terms.drain == 1  # 100 / 50 s / 5 = 0.4 -> 1, no safety margin below 80%
    assert d.target == 1


def test_example_2_approaching_sla() -> None:
    # 200 pending, 48 s of 60: 200 / 12 = 16.67 jobs/s over 10/s per worker = 2 (margin 1.0x).
    cfg, snap = seed000(200, 48.0, 10.0)
    d = decide_seed_hybrid(snap, cfg, ControllerState("jobs"), NOW).decision
    assert d.urgency is Urgency.WARNING
    assert d.terms.drain == 2
    assert d.target == 2

    # Ours, with 10 jobs/s still arriving, also says 2: the queue is FIFO, so the jobs arriving
    # meanwhile wait behind the 200, not before them. 2 workers start the 200 within
    # 200 / 20 = 10 s of the 12 left, and then outpace the 10 jobs/s arriving.
    cfg, snap = seed000(200, 48.0, 10.0, arrival=10.0)
    ours = decide(snap, cfg, ControllerState("jobs"), NOW).decision
    assert ours.terms.drain == 2
    assert ours.target == 2

    # Where the seed's drain falls short: with 40 jobs/s arriving its 2 workers (20 jobs/s)
    # start the 200 in time and then fall behind for good. Ours never sizes below lambda / mu:
    # 40 / 10 = 4 workers.
    cfg, snap = seed000(200, 48.0, 10.0, arrival=40.0)
    assert decide_seed_hybrid(snap, cfg, ControllerState("jobs"), NOW).decision.terms.drain == 2
    assert decide(snap, cfg, ControllerState("jobs"), NOW).decision.terms.drain == 4


def test_example_3_imminent_breach() -> None:
    # 500 pending, 55 s of 60, 8/s per worker: 100 jobs/s -> 12.5 -> 13 workers; margin
    # 1 + (0.917 - 0.8) * 2 printed as 1.23x; 13 * 1.23 = 15.99 -> 16, the seed's number.
    # (The unrounded margin 1.2333 would give ceil(16.03) = 17: the seed rounds it.)
    cfg, snap = seed000(500, 55.0, 8.0)
    d = decide_seed_hybrid(snap, cfg, ControllerState("jobs"), NOW).decision
    assert d.urgency is Urgency.CRITICAL
    assert d.terms.drain == 16
    assert d.target == 16

    # Ours with 40 jobs/s arriving: the 500 must start within the 5 s left, 100 jobs/s or
    # 12.5 workers (the arrivals queue behind them), times the unrounded margin 1.2333 = 15.4
    # -> 16: the seed's number, reached without its double rounding.
    cfg, snap = seed000(500, 55.0, 8.0, arrival=40.0)
    ours = decide(snap, cfg, ControllerState("jobs"), NOW).decision
    assert ours.terms.drain == 16
    assert ours.target == 16

    # With 200 jobs/s arriving the queue must not grow either: 200 / 8 = 25 workers, margin
    # 1.2333 -> 30.8 -> 31, which the example's max_workers of 20 caps, and the record says so.
    cfg, snap = seed000(500, 55.0, 8.0, arrival=200.0)
    ours = decide(snap, cfg, ControllerState("jobs"), NOW).decision
    assert ours.terms.drain == 31
    assert ours.target == 20
    assert "max_workers" in ours.constraints


def test_example_4_active_breach() -> None:
    # 300 pending, 65 s old against 60 s: the seed goes straight to max_workers = 20.
    cfg, snap = seed000(300, 65.0, 5.0)
    d = decide_seed_hybrid(snap, cfg, ControllerState("jobs"), NOW).decision
    assert d.urgency is Urgency.BREACH
    assert d.terms.drain == 20
    assert d.target == 20

    # Ours sizes the recovery instead of jumping to max: the 300 late jobs are started within
    # the 5 s recovery horizon, 60 jobs/s or 12 workers (the 5 jobs/s arriving queue behind
    # them), times the breach margin 1.4 (usage capped at 1.0) = 16.8 -> 17.
    cfg, snap = seed000(300, 65.0, 5.0, arrival=5.0)
    ours = decide(snap, cfg, ControllerState("jobs"), NOW).decision
    assert ours.terms.drain == 17
    assert ours.target == 17
    assert "recovery horizon" in ours.reason


def test_lead_time_changes_the_drain() -> None:
    # Example 3 with a 60 s provisioning lead and the default horizon (60 / 3 = 20 s): the one
    # running worker serves 8 jobs/s while 40 arrive, so when new workers land the backlog is
    # 500 + (40 - 8) * 60 = 2,420. The 500 waiting now are late by then whatever we do; the
    # drain aims at every job with at least the 20 s horizon left, i.e. those that arrived in
    # the last 40 s of the lead. The oldest of them has 2420 - 40 * 40 = 820 jobs ahead and 20 s
    # left: 41 jobs/s, 5.125 workers, margin 1.2333 -> 6.3 -> 7. (The youngest has all 2,420
    # ahead and 60 s: 40.3 jobs/s, less.)
    cfg, snap = seed000(
        500,
        55.0,
        8.0,
        arrival=40.0,
        max_workers=100,
        provisioning_lead_seconds=60.0,
        recovery_horizon_seconds=None,
    )
    ours = decide(snap, cfg, ControllerState("jobs"), NOW).decision
    assert ours.terms.drain == 7
    assert "new workers land in 60 s" in ours.reason


def spike_state() -> ControllerState:
    # Arrivals 40 -> 45 -> 50 jobs/s over the last minute: a line through them reaches 60 jobs/s
    # one horizon (50 s lead + 10 s interval) ahead, the seed's "forecasted 60".
    samples = (
        Sample(at=NOW - 60, arrival_rate=40.0, visible=0, raw_target=80),
        Sample(at=NOW - 30, arrival_rate=45.0, visible=100, raw_target=90),
    )
    return ControllerState("jobs", samples=samples)


def spike(age: float):
    cfg = settings(
        sla_seconds=30.0,
        max_workers=500,
        provisioning_lead_seconds=50.0,
        evaluation_interval_seconds=10.0,
    )
    snap = snapshot(
        visible=200,
        oldest_age_seconds=age,
        arrival_rate=50.0,
        mean_job_seconds=2.0,
        running=20,
        desired=20,
    )
    return cfg, snap


def test_seed_001_sudden_spike_terms_at_10_02() -> None:
    cfg, snap = spike(15.0)
    d = decide_seed_hybrid(snap, cfg, spike_state(), NOW).decision
    assert d.forecast_rate == pytest.approx(60.0)
    assert (d.terms.steady, d.terms.trend, d.terms.drain) == (100, 120, 27)
    assert d.target == 120 and d.winner == "trend"


def test_seed_001_sudden_spike_at_10_03_sla_protection() -> None:
    # Oldest 28 s of 30: seed 001 prints 200 / ((30 - 28) / 2) = 200. seed-hybrid also applies
    # seed 000's buffer at 93% usage: margin 1 + (0.933 - 0.8) * 2 = 1.27 -> 254.
    cfg, snap = spike(28.0)
    d = decide_seed_hybrid(snap, cfg, spike_state(), NOW).decision
    assert d.terms.drain == math.ceil(200 * 1.27)


def test_hybrid_on_seed_001_spike_differs_for_stated_reasons() -> None:
    cfg, snap = spike(15.0)
    d = decide(snap, cfg, spike_state(), NOW).decision
    # steady: Erlang C needs c > R = 100 busy workers (Little's Law alone runs at rho = 1).
    assert d.terms.steady == 101
    # trend: the same 60 jobs/s forecast, sized like steady: R = 120 -> 121.
    assert d.terms.trend == 121
    # drain: new workers land after the 50 s lead, while the 20 running serve 10 of the 50
    # jobs/s: 200 + 40 * 50 = 2,200 wait then. Aimed at: every job with at least the 10 s
    # recovery horizon (a third of 30 s) left, so up to 20 s old at landing. The oldest of
    # those has 2200 - 50 * 20 = 1,200 ahead and 10 s: 120 jobs/s = 240 workers of 0.5 jobs/s.
    # The seed's 27 assumed the 200 jobs were all there is.
    assert d.terms.drain == 240
    assert d.target == 240 and d.winner == "drain" and d.action is Action.UP


def test_seed_002_load_ratio_through_the_decision() -> None:
    cfg = settings(max_workers=50)
    snap = snapshot(arrival_rate=10.0, mean_job_seconds=1.0, running=20, desired=20)
    d = decide(snap, cfg, ControllerState("jobs"), NOW).decision
    assert d.load_ratio == pytest.approx(0.5)
    assert not d.overloading and not d.overloaded
