"""The verdict of sim/verdict.py on hand-made cells: each clause passing and failing."""

from __future__ import annotations

from dataclasses import replace

import pytest

from queue_autoscale.core import DEFAULT_POLICY
from queue_autoscale.sim.verdict import Cell, Run, beats, is_bound, judge, tally


def run(label: str, compliance: float, worker_s: float, flaps: int = 0, util: float = 0.5) -> Run:
    return Run(label, compliance, worker_s, flaps, hours=2.0, utilization=util)


def cell(ours: Run, **changes: object) -> Cell:
    base = Cell(
        row="spike seed 1", steady=False, sla_seconds=30.0, target=0.99, ours=ours,
        bound=run("reaction-bound", 0.999, 300_000), keda=(), target_tracking=(), static=(),
    )  # fmt: skip
    return replace(base, **changes)  # type: ignore[arg-type]


def test_a_policy_meeting_the_target_cheaper_than_every_yardstick_passes() -> None:
    verdict = judge(
        cell(
            run(DEFAULT_POLICY, 0.995, 100_000, flaps=2),
            keda=(run("keda(a)", 0.991, 120_000, flaps=3), run("keda(b)", 0.98, 90_000)),
            target_tracking=(run("tt(a)", 0.992, 101_000),),
            static=(run("static(size=20)", 0.993, 98_000),),
        )
    )
    assert verdict.passed and verdict.words == "pass"


def test_more_worker_seconds_than_the_cheapest_meeting_tuned_peer_fails() -> None:
    """Only a meeting setting counts: keda(b) is cheaper but misses, keda(a) meets at 99,000."""
    verdict = judge(
        cell(
            run(DEFAULT_POLICY, 0.995, 100_000),
            keda=(run("keda(a)", 0.991, 99_000), run("keda(b)", 0.98, 50_000)),
        )
    )
    assert not verdict.passed
    assert verdict.failures == ("100,000 worker-s > tuned keda(a)'s 99,000",)


@pytest.mark.parametrize(("static_ws", "passed"), [(97_088, True), (97_000, False)])
def test_hindsight_static_allows_3_percent(static_ws: float, passed: bool) -> None:
    verdict = judge(
        cell(run(DEFAULT_POLICY, 0.995, 100_000), static=(run("static", 0.99, static_ws),))
    )
    assert verdict.passed is passed


def test_missing_where_the_bound_meets_fails() -> None:
    verdict = judge(cell(run(DEFAULT_POLICY, 0.985, 50_000)))
    assert verdict.failures == ("misses 99.0% (98.500%); the bound meets it",)


def test_where_the_bound_misses_close_to_it_at_half_its_cost_passes() -> None:
    bound = run("reaction-bound", 0.90, 300_000)
    assert judge(cell(run(DEFAULT_POLICY, 0.897, 150_000), bound=bound)).passed
    too_far = judge(cell(run(DEFAULT_POLICY, 0.894, 150_000), bound=bound))
    assert too_far.failures == ("0.60 points below the bound's 90.000%",)
    too_dear = judge(cell(run(DEFAULT_POLICY, 0.899, 150_001), bound=bound))
    assert too_dear.failures == ("50% of the bound's worker-s (at most 50%)",)


def test_non_monotone_case_a_miss_where_a_tuned_peer_meets_fails_despite_the_bound() -> None:
    """The issue's case: NASA 10 s at 95 %, the bound at 84 %. A policy at 94 % is far above
    the bound and cheap, so the bound clause alone would pass it; a tuned KEDA setting meets
    95 %, so it fails. Without that peer it passes through the bound clause."""
    ours = run(DEFAULT_POLICY, 0.94, 100_000)
    bound = run("reaction-bound", 0.84, 400_000)
    peer = run("keda(queue_length=3)", 0.951, 180_000)
    alone = cell(ours, row="nasa day 57", sla_seconds=10.0, target=0.95, bound=bound)
    assert judge(alone).passed
    verdict = judge(replace(alone, keda=(peer,)))
    assert not verdict.passed
    assert verdict.failures[0] == "misses 95.0% (94.000%) where tuned keda(queue_length=3) meets it"


def test_where_the_bound_is_no_bound_the_target_applies() -> None:
    verdict = judge(cell(run(DEFAULT_POLICY, 0.98, 50_000), bound=None))
    assert verdict.failures == ("misses 99.0% (98.000%); no bound on this row",)


def test_is_bound_unless_a_reacting_run_keeps_over_half_a_point_more() -> None:
    bound = run("reaction-bound", 0.95, 1.0)
    assert is_bound(bound, [run("keda", 0.955, 1.0), run("tt", 0.9, 1.0)])
    assert not is_bound(bound, [run("keda", 0.9551, 1.0)])


def test_flaps_on_steady_at_most_one_an_hour() -> None:
    steady = cell(run(DEFAULT_POLICY, 0.995, 100_000, flaps=2), steady=True)  # 2 flaps in 2 h
    assert judge(steady).passed
    verdict = judge(replace(steady, ours=run(DEFAULT_POLICY, 0.995, 100_000, flaps=3)))
    assert verdict.failures == ("3 flaps (1.5/h) on steady traffic (at most 1/h)",)


def test_flaps_elsewhere_no_more_than_the_cheapest_meeting_keda() -> None:
    keda = (run("keda(a)", 0.991, 120_000, flaps=4), run("keda(b)", 0.992, 150_000, flaps=9))
    assert judge(cell(run(DEFAULT_POLICY, 0.995, 100_000, flaps=4), keda=keda)).passed
    verdict = judge(cell(run(DEFAULT_POLICY, 0.995, 100_000, flaps=5), keda=keda))
    assert verdict.failures == ("5 flaps > tuned keda(a)'s 4",)


def test_loose_sla_utilization_rule() -> None:
    peer = run("tt(a)", 0.999, 200_000, util=0.93)
    loose = cell(run(DEFAULT_POLICY, 0.995, 100_000, util=0.85), sla_seconds=300.0,
                 target_tracking=(peer,))  # fmt: skip
    assert judge(loose).failures == ("utilization 0.850 < 0.9 where tuned tt(a) meets at 0.930",)
    assert judge(replace(loose, ours=run(DEFAULT_POLICY, 0.995, 100_000, util=0.9))).passed
    assert judge(replace(loose, sla_seconds=60.0)).passed  # the rule is the 300 s SLA's
    slack_peer = replace(loose, target_tracking=(run("tt(b)", 0.999, 200_000, util=0.88),))
    assert judge(slack_peer).passed  # no peer meets at 0.9


def test_beats_needs_more_passes_and_fewer_worker_seconds_on_the_shared_cells() -> None:
    ours = run(DEFAULT_POLICY, 0.995, 100_000)
    dear = run(DEFAULT_POLICY, 0.995, 130_000)
    a = tally([("c1", cell(ours), judge(cell(ours))), ("c2", cell(ours), judge(cell(ours)))])
    b = tally([("c1", cell(dear), judge(cell(dear))),
               ("c2", cell(dear), judge(cell(run(DEFAULT_POLICY, 0.9, 1.0))))])  # fmt: skip
    assert (a.passed, b.passed) == (2, 1)
    assert beats(a, b) and not beats(b, a)
