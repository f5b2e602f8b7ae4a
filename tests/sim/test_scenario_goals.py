"""The default policy on the bench's scenario cells: steady traffic without oscillating, a
drain's surplus let go, and the bursty, steady and ramp cells against their goals (at least as
cheap as the least static fleet meeting the target, 20 % cheaper on bursty)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from queue_autoscale.core import DEFAULT_POLICY
from queue_autoscale.core.models import Winner
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


@pytest.mark.parametrize(
    ("sla", "percentile", "static"),
    [
        pytest.param(10.0, 0.95, 41, id="10s-p95"),
        pytest.param(30.0, 0.95, 40, id="30s-p95"),
        pytest.param(60.0, 0.95, 39, id="60s-p95"),
        pytest.param(60.0, 0.99, 39, id="60s-p99"),
        pytest.param(60.0, 0.999, 39, id="60s-p99.9"),
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
    # THEN it meets both, with the record path's jump ticks and the first lull held for the
    # next burst: every job within the SLA at 204,385 (10 s p95), 189,300 (30 s p95), 179,350
    # (60 s p95), 180,027 (60 s p99) and 182,650 worker-s (60 s p99.9)
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
    # the drain's last tick at the crowd: the 1,000-worker cap, ordered on the record path's
    # jump 3 s into the crowd, then what the backlog still asks (793) as it clears (a later,
    # smaller drain may follow the crowd's end)
    drained = [d for d in decisions if d.winner == Winner.DRAIN and d.target > peak / 2][-1]
    after = [d for d in decisions if 0 < d.at - drained.at <= 120 and d.action.value == "down"]
    # THEN once the drain's workers have cleared the backlog, the surplus goes in one action (not
    # by 25 % a minute): 793 -> 135 the next tick. 135 is what the delayed off remembers of the
    # crowd's last L + I = 70 s (its rise, kept until a re-order could land); the crowd's own
    # sustained need is at most 112 (the steady state at 100 jobs/s)...
    sustained = max(max(d.terms.steady, d.terms.trend) for d in decisions)
    assert peak == 1000
    assert after and after[0].at - drained.at == 10.0
    assert sustained < after[0].target < peak / 6
    # ...keeping the reaction bound's compliance at less than half its worker-seconds (86.68 %
    # against 86.82 %, at 43 %)
    assert ours.sla_compliance >= bound.sla_compliance - 0.005
    assert ours.worker_seconds <= 0.5 * bound.worker_seconds


def test_on_steady_traffic_the_fleet_runs_at_the_load_without_oscillating() -> None:
    # GIVEN the bench's steady cell: two hours at 20 jobs/s of 1 s jobs, SLA 30 s, p99.9
    counts = scenario("steady").counts(seed=0)
    spec = replace(bench_spec(SweepOptions(), 0), sla_seconds=30.0, percentile=0.999)
    run = compare("steady", counts, [DEFAULT_POLICY, "static"], spec, record_decisions=True)
    ours, static = run.scores
    decisions = run.decisions[DEFAULT_POLICY]
    scored = [d for d in decisions if d.at >= decisions[0].at + run.workload.warmup_seconds]
    # THEN the fleet runs at the load, below Erlang C's: 20 workers on most ticks (521 of 722:
    # the backlog's random walk over the reach stays within the SLA, and over R + W at the
    # measured rate too), 19-22 on all, at most 21 on 91 % (the one rise to 22 is held while a
    # rate within its noise still asks for it), with a handful of scale-ups in two hours (no
    # limit cycle: each costs a lead of billing; one here)
    targets = [d.target for d in scored]
    assert set(targets) <= {19, 20, 21, 22}
    assert sum(t == 20 for t in targets) > len(targets) // 2
    assert sum(t <= 21 for t in targets) > 0.9 * len(targets)
    assert sum(1 for d in scored if d.action.value == "up") <= 6
    # AND every job is picked up within the SLA, for fewer worker-seconds than a static fleet
    # of 21 (the smallest that meets it; `static` here is sized for the busiest minute, 22)
    # and than seed-hybrid's 151,248 at the same 100 % in the bench: 147,040
    assert ours.sla_compliance == 1.0
    assert static.sla_compliance == 1.0
    static_21 = static.worker_seconds / static.peak_workers * 21
    assert ours.worker_seconds < static_21
    assert ours.worker_seconds < 151_248


@pytest.mark.xfail(
    strict=True,
    reason=(
        "151,723 worker-s against static 21's 151,242 (100 % within SLA both): with S < L + I "
        "it sizes Erlang C with its noise margin, 22 or more workers on 10 % of the ticks"
    ),
)
def test_at_a_10_s_sla_steady_traffic_runs_below_static_21() -> None:
    # GIVEN the bench's steady cell at SLA 10 s, p99
    counts = scenario("steady").counts(seed=0)
    spec = replace(bench_spec(SweepOptions(), 0), sla_seconds=10.0, percentile=0.99)
    run = compare("steady", counts, [DEFAULT_POLICY, "static"], spec)
    ours, static = run.scores
    # THEN every job is picked up within the SLA, for fewer worker-seconds than a static fleet
    # of 21, the least that meets it (151,263 in the bench)
    assert ours.sla_compliance == 1.0
    static_21 = static.worker_seconds / static.peak_workers * 21
    assert ours.worker_seconds < static_21


@pytest.mark.parametrize(("percentile", "compliance"), [(0.99, 0.99), (0.999, 0.9958)])
def test_a_ramp_keeps_its_compliance_for_less_than_kedas_cheapest(
    percentile: float, compliance: float
) -> None:
    # GIVEN the bench's ramp at SLA 10 s: 5 jobs/s rising to 50 over 90 minutes, Poisson-like
    counts = scenario("ramp").counts(seed=0)
    spec = replace(bench_spec(SweepOptions(), 0), sla_seconds=10.0, percentile=percentile)
    (score,) = compare("ramp", counts, [DEFAULT_POLICY], spec).scores
    # THEN compliance meets the target at p99 (99.869 %) and, at p99.9, the reaction bound's
    # 99.58 % (no reacting policy meets 99.9 % on this ramp), for fewer worker-seconds than
    # KEDA's cheapest meeting setting (332,820): 252,241 and 260,120 (99.725 %). At p99 it
    # read the per-second dispersion alone at 98.609 %: the ramp's rise within a short window
    # is a spread the controller's own readings fall short by
    assert score.sla_compliance >= compliance
    assert score.worker_seconds < 332_820
