"""The default policy on the bench's scenario cells: steady traffic without oscillating, a
drain's surplus let go, and the bursty, steady and ramp cells against their goals (at least as
cheap as the least static fleet meeting the target, 20 % cheaper on bursty)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from queue_autoscale.core import DEFAULT_POLICY
from queue_autoscale.core.models import Action, Decision, Winner
from queue_autoscale.sim.arrivals import scenario
from queue_autoscale.sim.bench import SweepOptions, bench_spec
from queue_autoscale.sim.runner import RunSpec, compare


def test_no_oscillation_on_steady_traffic() -> None:
    # GIVEN an hour of steady 20 jobs/s that the sizing terms already serve within the SLA
    counts = scenario("steady").counts(seed=3, length_seconds=3600)
    # WHEN the default policy runs it with every decision recorded
    run = compare("steady", counts, [DEFAULT_POLICY], RunSpec(seed=3), record_decisions=True)
    decisions = run.decisions[DEFAULT_POLICY]
    scored = [d for d in decisions if d.at - decisions[0].at >= 600]
    # THEN the records read 100 % realized compliance, and the fleet stays within a worker or
    # two of the load (20 or 21 workers: no limit cycle)
    assert scored[-1].realized_compliance == 1.0
    targets = [d.target for d in scored]
    assert max(targets) - min(targets) <= 3
    assert run.scores[0].sla_compliance == 1.0


def _bursty_miss(compliance: str, worker_s: str, limit: str, late: str) -> pytest.MarkDecorator:
    """Strict xfail: `compliance` ('measured against target') at `worker_s` (the goal's
    `limit`), with the onsets' `late` jobs."""
    return pytest.mark.xfail(
        strict=True,
        reason=(
            f"{compliance} within SLA, {worker_s} worker-s (limit {limit}): bursts 2 and 3 "
            f"pay their onsets ({late}) before the recurrence passes its back-test at burst "
            "3's onset; no later burst has a late job"
        ),
    )


@pytest.mark.parametrize(
    ("sla", "percentile", "static"),
    [
        pytest.param(
            10.0,
            0.95,
            41,
            id="10s-p95",
            marks=_bursty_miss(
                "94.817 % against 95 %",
                "262,260",
                "236,160",
                "2,753 + 2,751 late jobs, budget 5,309",
            ),
        ),
        pytest.param(30.0, 0.95, 40, id="30s-p95"),
        pytest.param(60.0, 0.95, 39, id="60s-p95"),
        pytest.param(
            60.0,
            0.99,
            39,
            id="60s-p99",
            marks=_bursty_miss(
                "98.765 % against 99 %", "195,740", "224,640", "615 + 696 late jobs, budget 1,062"
            ),
        ),
        pytest.param(
            60.0,
            0.999,
            39,
            id="60s-p99.9",
            marks=_bursty_miss(
                "98.811 % against 99.9 %", "199,970", "224,640", "593 + 670 late jobs, budget 106"
            ),
        ),
    ],
)
def test_bursty_meets_its_target_for_less_than_the_least_static_less_20_percent(
    sla: float, percentile: float, static: int
) -> None:
    # GIVEN the bench's bursty cell: `static` is the least static size meeting the target, so
    # the goal is at most 80 % of its 7,200 s (static 41 / 40 / 39: 236,160 / 230,400 /
    # 224,640 worker-s)
    counts = scenario("bursty").counts(seed=0, length_seconds=None)
    spec = replace(bench_spec(SweepOptions(), 0), sla_seconds=sla, percentile=percentile)
    score = compare("bursty", counts, [DEFAULT_POLICY], spec).scores[0]
    # THEN it meets both: 96.28 % at 222,900 (30 s p95) and 98.69 % at 193,370 (60 s p95)
    assert score.sla_compliance >= percentile
    assert score.worker_seconds <= 0.8 * static * 7200


def test_a_drains_surplus_is_let_go_once_the_backlog_is_gone() -> None:
    # GIVEN a flash crowd (5 jobs/s, then 100 jobs/s for 5 minutes) at a 10 s SLA, where the
    # drain orders several times the surge's sustained need to clear what piled up in the lead
    counts = scenario("flash-crowd").counts(seed=0)
    spec = RunSpec(seed=0, sla_seconds=10.0, interval_seconds=10, provision_jitter_seconds=10.0)
    run = compare("flash", counts, [DEFAULT_POLICY, "reaction-bound"], spec, record_decisions=True)
    ours, bound = run.scores
    decisions = run.decisions[DEFAULT_POLICY]
    peak = max(d.target for d in decisions)
    # the drain's last tick: the 1,000-worker cap for 80 s while the crowd's backlog clears
    drained = [d for d in decisions if d.winner == Winner.DRAIN][-1]
    after = [d for d in decisions if 0 < d.at - drained.at <= 120 and d.action.value == "down"]
    # THEN once the drain's workers have cleared the backlog, the cap goes in one action (not by
    # 25 % a minute): 1,000 -> 143 the next tick. 143 is what the delayed off remembers of the
    # crowd's last L + I = 70 s (its rise, kept until a re-order could land); the crowd's own
    # sustained need is 112 (the steady state at 100 jobs/s)...
    sustained = max(max(d.terms.steady, d.terms.trend) for d in decisions)
    assert after and after[0].at - drained.at == 10.0
    assert sustained < after[0].target < peak / 6
    # ...keeping the reaction bound's compliance at less than half its worker-seconds (85.10 %
    # against 85.14 %, at 45 %)
    assert ours.sla_compliance >= bound.sla_compliance - 0.005
    assert ours.worker_seconds <= 0.5 * bound.worker_seconds


def _steady_run(sla: float, percentile: float) -> tuple[Any, Any, list[Decision]]:
    """The bench's steady cell (two hours at 20 jobs/s of 1 s jobs) at `sla` s and
    `percentile`: our score, static's, and our decisions after the warm-up."""
    counts = scenario("steady").counts(seed=0)
    spec = replace(bench_spec(SweepOptions(), 0), sla_seconds=sla, percentile=percentile)
    run = compare("steady", counts, [DEFAULT_POLICY, "static"], spec, record_decisions=True)
    decisions = run.decisions[DEFAULT_POLICY]
    start = decisions[0].at + run.workload.warmup_seconds
    return *run.scores, [d for d in decisions if d.at >= start]


def test_on_steady_traffic_the_fleet_holds_without_oscillating() -> None:
    # GIVEN the bench's steady cell at SLA 30 s, p99.9
    ours, static, scored = _steady_run(30.0, 0.999)
    # THEN the fleet holds 21 workers on most ticks (680 of 721), 20-22 on all, and orders no
    # worker in two hours: the delayed off keeps the 21st, which 20 workers' walk R + W ahead
    # asks back
    targets = [d.target for d in scored]
    assert set(targets) <= {20, 21, 22}
    assert sum(t == 21 for t in targets) > 0.9 * len(targets)
    assert sum(1 for d in scored if d.action is Action.UP) <= 1
    assert ours.flaps == 0
    # AND every job is picked up within the SLA
    assert ours.sla_compliance == 1.0
    assert static.sla_compliance == 1.0


@pytest.mark.xfail(
    strict=True,
    reason=(
        "151,673 worker-s against static 21's 151,242 (100 % within SLA both; static 20 also "
        "meets it): the delayed off holds 21, since 20 workers' walk R + W = 370 s ahead at the "
        "rate's upper bounds (z of p99.9) passes the 600 jobs the SLA allows"
    ),
)
def test_at_a_30_s_sla_steady_traffic_runs_below_static_21() -> None:
    # GIVEN the bench's steady cell at SLA 30 s, p99.9
    ours, static, _ = _steady_run(30.0, 0.999)
    # THEN every job is picked up within the SLA for fewer worker-seconds than a static fleet of
    # 21 (`static` here is sized for the busiest minute, 22)
    assert ours.sla_compliance == 1.0
    assert ours.worker_seconds < static.worker_seconds / static.peak_workers * 21


@pytest.mark.xfail(
    strict=True,
    reason=(
        "153,353 worker-s against static 21's 151,242 (100 % within SLA both): with S < L + I "
        "it sizes Erlang C with its noise margin, 22-23 workers on 25 % of the ticks"
    ),
)
def test_at_a_10_s_sla_steady_traffic_runs_below_static_21() -> None:
    # GIVEN the bench's steady cell at SLA 10 s, p99
    ours, static, _ = _steady_run(10.0, 0.99)
    # THEN every job is picked up within the SLA, for fewer worker-seconds than a static fleet
    # of 21, the least that meets it (151,263 in the bench), and with no more than 2 flaps
    assert ours.sla_compliance == 1.0
    assert ours.flaps <= 2
    assert ours.worker_seconds < static.worker_seconds / static.peak_workers * 21


@pytest.mark.parametrize(
    ("percentile", "compliance"),
    [
        (0.99, 0.99),
        (0.999, 0.9958),
    ],
)
def test_a_ramp_keeps_its_compliance_for_less_than_kedas_cheapest(
    percentile: float, compliance: float
) -> None:
    # GIVEN the bench's ramp at SLA 10 s: 5 jobs/s rising to 50 over 90 minutes, Poisson-like
    counts = scenario("ramp").counts(seed=0)
    spec = replace(bench_spec(SweepOptions(), 0), sla_seconds=10.0, percentile=percentile)
    (score,) = compare("ramp", counts, [DEFAULT_POLICY], spec).scores
    # THEN compliance meets the target at p99 (100 %) and, at p99.9, the reaction bound's
    # 99.58 % (no reacting policy meets 99.9 % on this ramp), for fewer worker-seconds than
    # KEDA's cheapest meeting setting (332,820): 252,940 and 255,010 (99.656 %)
    assert score.sla_compliance >= compliance
    assert score.worker_seconds < 332_820
