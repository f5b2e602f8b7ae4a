"""The SLA loop: realized compliance from the counters' pickups, and the headroom law."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from queue_autoscale.core import ControllerState, Sample, decide
from queue_autoscale.core.models import Burst
from queue_autoscale.core.sla_loop import (
    MAX_HEADROOM,
    LoopReading,
    comfortable,
    late_starts,
    reaction_seconds,
    rise_rate,
    update,
    window_seconds,
)
from queue_autoscale.core.state import state_from_dict, state_to_dict
from tests.unit.core.builders import NOW, settings, snapshot

CFG = settings(
    sla_seconds=30.0,
    percentile=0.99,
    provisioning_lead_seconds=60.0,
    evaluation_interval_seconds=10.0,
)
W = window_seconds(CFG)  # 20 x (60 + 30) = 1,800 s


def _pickups(seconds: range, per_second: int, pickup_s: float) -> list[tuple[int, int, int]]:
    return [(s, per_second, round(per_second * pickup_s * 1000)) for s in seconds]


def _tick(jobs: int, late: int) -> list[tuple[int, int, int]]:
    """The 10 seconds a tick at NOW counts, (NOW - 20, NOW - 10]: `jobs` starts, the last
    second's `late` of them at 40 s pickups (over the 30 s SLA), the others at 1 s."""
    first = int(NOW) - 19
    on_time = jobs - late
    counts = [on_time // 9] * 9
    counts[-1] += on_time - sum(counts)
    rows = [(first + i, c, c * 1000) for i, c in enumerate(counts)]
    return [*rows, (first + 9, late, late * 40_000)]


def _state(headroom: float = 0.0, started: float = 0.0, late: float = 0.0) -> ControllerState:
    return ControllerState(
        "jobs",
        samples=(Sample(NOW - 10.0, 20.0, 0, 20),),
        realized_started=started,
        realized_late=late,
        realized_through=NOW - 20.0,
        headroom=headroom,
    )


def test_a_second_is_late_when_its_mean_pickup_exceeds_the_sla() -> None:
    rows = [(100, 10, 10 * 31_000), (101, 5, 5 * 29_000), (102, 0, 0), (103, 4, 4 * 40_000)]
    assert late_starts(rows, None, 103, 30.0) == (19, 14)
    assert late_starts(rows, 100, 102, 30.0) == (5, 0)  # only (100, 102]


def test_window_is_derived_from_lead_and_sla() -> None:
    assert W == 1800.0
    assert window_seconds(settings(sla_seconds=300.0, provisioning_lead_seconds=60.0)) == 7200.0


def test_misses_over_budget_raise_headroom_within_a_lead_plus_an_sla() -> None:
    # 10 s of new starts, all late (40 s pickups), over 1,000 earlier on-time ones
    rows = _pickups(range(int(NOW) - 19, int(NOW) - 9), 20, 40.0)
    reading = update(_state(started=1000.0), rows, CFG, NOW)
    assert reading.started == pytest.approx(1000.0 * math.exp(-10 / W) + 200.0)
    assert reading.late == 200.0
    assert reading.headroom == pytest.approx(MAX_HEADROOM / 90.0 * 10.0)
    assert reading.compliance == pytest.approx(1.0 - 200.0 / reading.started)


@pytest.mark.parametrize(
    ("late", "headroom"),
    [
        pytest.param(107.0, 0.07 * 0.5 / 90.0 * 10.0, id="7 % over the budget: 7 % of the pace"),
        pytest.param(150.0, 0.5 * 0.5 / 90.0 * 10.0, id="half the budget over: half the pace"),
        pytest.param(200.0, 0.5 / 90.0 * 10.0, id="twice the budget: the full pace"),
        pytest.param(600.0, 0.5 / 90.0 * 10.0, id="six times the budget: still the full pace"),
    ],
)
def test_headroom_rises_in_proportion_to_the_overspent_budget(late: float, headroom: float) -> None:
    # GIVEN a tick whose 10 new seconds bring 10,000 jobs, `late` of them the fleet's own misses
    # (all in its last second, 40 s pickups), against a 1 % budget: the share is late / 10,000
    reading = update(_state(), _tick(10_000, int(late)), CFG, NOW)
    assert reading.started == 10_000.0 and reading.late == late
    # THEN the headroom rises for 10 s at 0.5 / (60 + 30) per second times (m - b) / b, at
    # most 1: a window 7 % over budget (seed 3's diurnal 10 s p99 at 1.07 %) adds 0.4 %, not
    # the 5.6 % that reached +50 % within 70 s and held it for 50 minutes
    assert reading.headroom == pytest.approx(headroom)
    assert rise_rate(late / 10_000.0, CFG) * 10.0 == pytest.approx(headroom)
    assert rise_rate(0.009, CFG) == 0.0  # within budget: no rise


def test_headroom_holds_once_the_misses_stop() -> None:
    # GIVEN 300 of 10,000 counted jobs late (3 %, against a 1 % budget) and headroom 0.2
    # WHEN the next 10 s start 200 jobs within the SLA
    rows = _pickups(range(int(NOW) - 19, int(NOW) - 9), 20, 1.0)
    reading = update(_state(headroom=0.2, started=10_000.0, late=300.0), rows, CFG, NOW)
    # THEN the share stays over budget, 300 x e^(-10/1800) / (10,000 x e^(-10/1800) + 200) =
    # 2.94 %, but no new miss was counted: the headroom holds (it rose by 0.5 / 90 x 10 = 0.056
    # on the decayed share alone)
    assert reading.late / reading.started == pytest.approx(0.0294, abs=1e-4)
    assert reading.headroom == 0.2


def test_headroom_goes_back_slowly_when_comfortably_within_budget() -> None:
    rows = _pickups(range(int(NOW) - 19, int(NOW) - 9), 20, 1.0)
    reading = update(_state(headroom=0.3, started=5000.0), rows, CFG, NOW)
    assert reading.headroom == pytest.approx(0.3 - MAX_HEADROOM / W * 10.0)
    assert reading.compliance == 1.0


def test_inside_the_band_or_with_too_few_jobs_headroom_holds() -> None:
    # a miss share of 0.5 % against a 1 % budget: between a quarter of it and all of it
    rows = _pickups(range(int(NOW) - 19, int(NOW) - 9), 20, 1.0)
    band = update(_state(headroom=0.2, started=10_000.0, late=51.0), rows, CFG, NOW)
    assert band.headroom == 0.2
    few = update(_state(headroom=0.2, started=10.0, late=10.0), [], CFG, NOW)
    assert few.headroom == 0.2  # 10 jobs say nothing about a 1 % budget


def test_seconds_are_counted_once_and_only_once_settled() -> None:
    rows = _pickups(range(int(NOW) - 30, int(NOW) + 1), 1, 1.0)
    reading = update(_state(), rows, CFG, NOW)
    # (NOW - 20, NOW - 10]: 10 seconds; the last 10 s have not settled
    assert reading.started == 10.0 and reading.through == NOW - 10.0


def test_hybrid_sizes_for_the_headroom_and_publishes_compliance() -> None:
    snap = snapshot(arrival_rate=20.0, mean_job_seconds=1.0, running=22, desired=22)
    plain = decide(snap, CFG, _state(), NOW).decision
    loaded = decide(snap, CFG, _state(headroom=0.5, started=1000.0, late=500.0), NOW)
    assert loaded.decision.terms.steady > plain.terms.steady
    assert loaded.decision.terms.steady >= 30  # sized for 30 jobs/s
    assert loaded.decision.headroom > 0.5 - 1e-9
    assert loaded.decision.realized_compliance == pytest.approx(0.5, abs=0.01)
    assert "SLA loop" in loaded.decision.reason
    assert loaded.state.headroom == loaded.decision.headroom
    assert plain.headroom == 0.0


def test_spare_is_the_unspent_miss_budget_in_jobs() -> None:
    # 10,000 jobs with 30 late against a 1 % budget: 100 - 30 = 70 jobs may still miss
    reading = update(_state(started=10_000.0, late=30.0), [], CFG, NOW)
    decay = math.exp(-10 / W)
    assert reading.spare == pytest.approx((0.01 * 10_000.0 - 30.0) * decay)
    overspent = update(_state(started=10_000.0, late=150.0), [], CFG, NOW)
    assert overspent.spare == 0.0
    few = update(_state(started=50.0), [], CFG, NOW)
    assert few.spare == 0.0  # 50 jobs cannot tell a 1 % budget


def test_misses_within_a_window_of_a_burst_onset_do_not_raise_headroom() -> None:
    rows = _pickups(range(int(NOW) - 19, int(NOW) - 9), 20, 40.0)  # 200 late of ~1,190
    after_onset = update(_state(started=1000.0), rows, CFG, NOW, onset_at=NOW - 300.0)
    assert after_onset.headroom == 0.0 and after_onset.late == 200.0  # counted, not acted on
    long_after = update(_state(started=1000.0), rows, CFG, NOW, onset_at=NOW - W - 1.0)
    assert long_after.headroom == pytest.approx(MAX_HEADROOM / 90.0 * 10.0)


def test_misses_in_the_reaction_time_of_an_onset_spend_no_budget() -> None:
    # an onset 25 s ago; 200 late starts 10..19 s ago, within its lead + SLA + 2 intervals
    assert reaction_seconds(CFG) == 110.0
    rows = _pickups(range(int(NOW) - 19, int(NOW) - 9), 20, 40.0)
    surge = update(_state(started=10_000.0), rows, CFG, NOW, onset_at=NOW - 25.0)
    assert surge.late == 200.0 and surge.excused == 200.0  # counted in the compliance...
    assert surge.compliance == pytest.approx(1.0 - 200.0 / surge.started)
    assert surge.spare == pytest.approx(0.01 * surge.started)  # ...the budget is untouched
    # the same misses 200 s after the onset are the fleet's: they spend the budget
    late = update(_state(started=30_000.0), rows, CFG, NOW, onset_at=NOW - 200.0)
    assert late.excused == 0.0
    assert late.spare == pytest.approx(0.01 * late.started - 200.0)


def test_a_surges_misses_raise_no_headroom_once_its_window_has_passed() -> None:
    # a window after the onset, 3 % of the counted jobs are still the surge's late starts
    # (over the 1 % budget); no new miss since: the fleet serves within its SLA
    carried = replace(_state(started=10_000.0, late=300.0), realized_excused=300.0)
    reading = update(carried, [], CFG, NOW, onset_at=NOW - W - 1.0)
    assert reading.compliance == pytest.approx(0.97)
    assert reading.headroom == 0.0
    assert reading.spare == pytest.approx(0.01 * reading.started)
    # the fleet's own misses, with a new one counted this tick (20 starts at 40 s), raise it at
    # the full pace: (300 e^(-10/1800) + 20) / (10,000 e^(-10/1800) + 20) = 3.2 % >= 2 budgets
    rows = _pickups(range(int(NOW) - 15, int(NOW) - 14), 20, 40.0)
    own = update(_state(started=10_000.0, late=300.0), rows, CFG, NOW, onset_at=NOW - W - 1.0)
    assert own.headroom == pytest.approx(MAX_HEADROOM / 90.0 * 10.0)


@pytest.mark.parametrize(
    ("sla", "late", "comfy"),
    [
        pytest.param(60.0, 60.0, True, id="sla-a-lead-own-10-of-25"),
        pytest.param(60.0, 80.0, False, id="sla-a-lead-own-30-of-25"),
        pytest.param(30.0, 60.0, False, id="sla-under-a-lead-all-60-of-25"),
        pytest.param(30.0, 20.0, True, id="sla-under-a-lead-all-20-of-25"),
    ],
)
def test_comfort_reads_the_fleets_own_misses_where_the_sla_covers_a_lead(
    sla: float, late: float, comfy: bool
) -> None:
    # GIVEN 10,000 jobs counted at p99 (budget 100, comfort b / 4 = 25), 50 of the late excused
    loop = LoopReading(10_000.0, late, NOW - 20.0, 0.0, 1.0 - late / 10_000.0, 0.0, 50.0)
    # THEN at SLA 60 s = the 60 s lead the own misses (late - 50) decide; at 30 s all of them
    assert comfortable(loop, replace(CFG, sla_seconds=sla)) is comfy


def _held_state(started: float, late: float, recent: int = 22) -> ControllerState:
    """30 workers recommended 400 and 200 s ago, `recent` (about the Erlang-C need of 20
    jobs/s) 10 s ago."""
    samples = (
        Sample(NOW - 400.0, 20.0, 0, 30),
        Sample(NOW - 200.0, 20.0, 0, 30),
        Sample(NOW - 10.0, 20.0, 0, recent),
    )
    return ControllerState(
        "jobs",
        samples=samples,
        realized_started=started,
        realized_late=late,
        realized_through=NOW - 20.0,
    )


def test_idle_capacity_goes_after_a_lead_when_the_miss_budget_pays_for_it() -> None:
    # GIVEN 30 workers, a need of about 22 at 20 jobs/s, 30 recommended 200 s ago
    snap = snapshot(arrival_rate=20.0, mean_job_seconds=1.0, running=30, desired=30)
    plain = decide(snap, CFG, _held_state(0.0, 0.0), NOW).decision
    need = plain.terms.steady
    idle_jobs = (30 - need) * 1.0 * 60.0  # what the idle workers serve in one lead
    assert need * 30.0 >= (30 - need) * 60.0  # the need fleet absorbs their backlog in an SLA
    # WHEN the window's unspent budget covers those jobs: held a lead plus an interval only
    rich = decide(snap, CFG, _held_state(100 * idle_jobs + 1000.0, 0.0), NOW).decision
    assert rich.target < 30
    # WHEN it does not (or too few jobs were counted): the 300 s stabilization window holds
    poor = decide(snap, CFG, _held_state(100 * idle_jobs, idle_jobs - 10.0), NOW).decision
    assert poor.target == 30 and plain.target == 30
    assert "stabilization" in poor.reason


def test_no_early_release_when_the_need_fleet_could_not_absorb_the_lead() -> None:
    # SLA 10 s: 8 idle workers' lead (480 jobs) would queue behind 22 for over 20 s
    tight = settings(
        sla_seconds=10.0,
        percentile=0.95,
        provisioning_lead_seconds=60.0,
        evaluation_interval_seconds=10.0,
    )
    snap = snapshot(arrival_rate=20.0, mean_job_seconds=1.0, running=30, desired=30)
    d = decide(snap, tight, _held_state(1_000_000.0, 0.0), NOW).decision
    assert d.terms.steady * 10.0 < (30 - d.terms.steady) * 60.0
    assert d.target == 30


def test_a_paid_release_steps_each_interval_when_the_sla_covers_a_lead() -> None:
    # the last step down 20 s ago: within the 60 s down-cooldown, past one 10 s interval
    snap = snapshot(arrival_rate=20.0, mean_job_seconds=1.0, running=30, desired=30)
    state = replace(_held_state(1_000_000.0, 0.0), last_scale_down_at=NOW - 20.0)
    sla60 = replace(CFG, sla_seconds=60.0)
    assert decide(snap, sla60, state, NOW).decision.target < 30
    held = decide(snap, CFG, state, NOW).decision  # SLA 30 s < the 60 s lead: cooldown kept
    assert held.target == 30 and "down-cooldown" in held.reason


def test_a_release_is_charged_only_for_the_reaction_time_past_the_sla() -> None:
    # a job queued for a released worker waits a lead + an interval (70 s) until it is back:
    # late for 70 - SLA s of it, at least an interval (the landing's spread)
    snap = snapshot(arrival_rate=20.0, mean_job_seconds=1.0, running=30, desired=30)
    sla60 = replace(CFG, sla_seconds=60.0)
    need = decide(snap, sla60, _held_state(0.0, 0.0), NOW).decision.terms.steady
    idle = 30 - need
    # a budget that covers the idle workers' jobs for 10 s (70 - 60) but not for a 60 s lead
    started = (idle * 10.0 + 5.0) / 0.01
    assert idle * 60.0 > 0.01 * started * math.exp(-10 / window_seconds(sla60))
    assert decide(snap, sla60, _held_state(started, 0.0), NOW).decision.target < 30
    # at SLA 30 s the same budget pays for 40 s of the jobs of only 2 of them
    spare = 0.01 * started * math.exp(-10 / W)
    assert math.floor(spare / 40.0) == 2
    assert decide(snap, CFG, _held_state(started, 0.0), NOW).decision.target == 28


def test_a_budget_that_pays_for_part_of_the_idle_fleet_releases_that_part() -> None:
    snap = snapshot(arrival_rate=20.0, mean_job_seconds=1.0, running=30, desired=30)
    need = decide(snap, CFG, _held_state(0.0, 0.0), NOW).decision.terms.steady
    assert 30 - need > 4
    # spare pays for 4 workers' jobs over 40 s (lead + interval - SLA 30 s), not for all idle
    started = (4 * 40.0 + 1.0) / 0.01 / math.exp(-10 / W)
    d = decide(snap, CFG, _held_state(started, 0.0), NOW).decision
    assert d.target == 26
    assert "early release: down by at most 4, the idle workers the miss budget" in d.reason
    # a budget for one worker's jobs releases nothing (one idle worker is noise)
    one = (1 * 40.0 + 1.0) / 0.01 / math.exp(-10 / W)
    assert decide(snap, CFG, _held_state(one, 0.0), NOW).decision.target == 30


def test_a_partly_paid_release_is_never_slower_than_the_drain_surplus_rule() -> None:
    # GIVEN 30 workers, 8 above a need of 22 that the drain ordered 100 s ago (a lead has passed:
    # the backlog they were ordered for is gone), and a budget that pays for only 4 of them
    snap = snapshot(arrival_rate=20.0, mean_job_seconds=1.0, running=30, desired=30)
    started = (4 * 40.0 + 1.0) / 0.01 / math.exp(-10 / W)
    state = replace(_held_state(started, 0.0), last_scale_up_at=NOW - 100.0)
    samples = tuple(replace(s, raw_target=22) for s in state.samples)
    d = decide(snap, CFG, replace(state, samples=samples), NOW).decision
    # THEN they go at once, as without the budget, not 4 at a time
    assert d.target == 22


def test_a_single_idle_worker_is_noise_and_keeps_the_window() -> None:
    probe = snapshot(arrival_rate=20.0, mean_job_seconds=1.0, running=30, desired=30)
    need = decide(probe, CFG, _held_state(0.0, 0.0), NOW).decision.terms.steady
    rich = _held_state(1_000_000.0, 0.0, recent=need)
    one = snapshot(arrival_rate=20.0, mean_job_seconds=1.0, running=need + 1, desired=need + 1)
    assert decide(one, CFG, rich, NOW).decision.target == need + 1  # the 300 s window holds
    two = snapshot(arrival_rate=20.0, mean_job_seconds=1.0, running=need + 2, desired=need + 2)
    assert decide(two, CFG, rich, NOW).decision.target == need  # released after a lead


def test_misses_in_the_reaction_time_of_an_ordered_surge_spend_no_budget() -> None:
    # a rush ordered for 25 s ago on the backlog's growth alone (no onset): its 200 late starts
    # 10..19 s ago are excused as an onset's...
    rows = _pickups(range(int(NOW) - 19, int(NOW) - 9), 20, 40.0)
    surge = update(_state(started=10_000.0), rows, CFG, NOW, surge_at=NOW - 25.0)
    assert surge.late == 200.0 and surge.excused == 200.0
    assert surge.spare == pytest.approx(0.01 * surge.started)
    # ...not 200 s after it (past lead + SLA + 2 intervals = 110 s)
    assert update(_state(started=10_000.0), rows, CFG, NOW, surge_at=NOW - 200.0).excused == 0.0
    # an onset 150 s ago covers none of them; the surge 25 s ago all
    both = update(_state(started=10_000.0), rows, CFG, NOW, NOW - 150.0, NOW - 25.0)
    assert both.excused == 200.0
    # an onset 25 s ago and a surge 15 s ago cover the same seconds: each counted once (the
    # surge alone covers the 6 seconds from 15 s ago, 120 late starts)
    assert update(_state(started=10_000.0), rows, CFG, NOW, surge_at=NOW - 15.0).excused == 120.0
    overlap = update(_state(started=10_000.0), rows, CFG, NOW, NOW - 25.0, NOW - 15.0)
    assert overlap.excused == 200.0


def _rush(state: ControllerState) -> ControllerState:
    """One tick of 20 workers at 20 jobs/s whose backlog grew 0 -> 400 in 10 s: the drain reads
    60 jobs/s arriving (20 served + 40 growth), a surge the windows do not show yet."""
    samples = tuple(Sample(NOW - age, 20.0, 0, 20) for age in range(300, 0, -10))
    before = replace(state, samples=samples, realized_through=NOW - 20.0)
    rush = snapshot(
        visible=400,
        in_flight=20,
        running=20,
        desired=20,
        arrival_rate=20.0,
        arrival_rate_short=20.0,
        oldest_age_seconds=10.0,
        completion_rate=20.0,
    )
    evaluation = decide(rush, CFG, before, NOW)
    assert evaluation.decision.target > 20 and evaluation.decision.winner == "drain"
    return evaluation.state


def test_the_drains_order_for_a_rush_is_remembered_once_per_refractory_time() -> None:
    assert _rush(ControllerState("jobs")).surge_at == NOW
    # within 2 (lead + interval) = 140 s of an earlier surge or onset it is the same rush's
    assert _rush(ControllerState("jobs", surge_at=NOW - 100.0)).surge_at == NOW - 100.0
    onset = ControllerState("jobs", bursts=(Burst(NOW - 100.0, 40),))
    assert _rush(onset).surge_at is None
    assert _rush(ControllerState("jobs", surge_at=NOW - 150.0)).surge_at == NOW
    # the state item keeps it
    kept = ControllerState("jobs", surge_at=NOW - 150.0)
    assert state_from_dict(state_to_dict(kept)).surge_at == NOW - 150.0
    assert state_from_dict(state_to_dict(ControllerState("jobs"))).surge_at is None
    older = {k: v for k, v in state_to_dict(kept).items() if k != "surge_at"}
    assert state_from_dict(older).surge_at is None
