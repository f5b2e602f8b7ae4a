"""How far inside the goal the default policy sits in one cell; the tally of verdicts."""

from __future__ import annotations

import pytest

from queue_autoscale.core import DEFAULT_POLICY
from queue_autoscale.sim.frontier import count_met, goal_slack, goal_verdict
from tests.sim.test_frontier import _frontier, _point


def test_count_met_counts_only_met_verdicts() -> None:
    verdicts = ["met", "not met: static size 21 meets it", "met", "not run"]
    assert count_met(verdicts) == (2, 4)
    assert count_met([]) == (0, 0)


def test_the_tightest_peer_binds_when_ours_meets_the_target() -> None:
    # GIVEN the default policy at 99.5 % for 100 worker-s, static meeting 99 % at 130, keda at 104
    points = [
        _point(DEFAULT_POLICY, 0.99, 0.995, 100.0),
        _point("static", 12, 0.995, 130.0),
        _point("keda", 3, 0.991, 104.0),
    ]
    # WHEN the slack at 99 % is taken (the target leaves (0.995 - 0.99) / 0.01 = 0.5)
    slack = goal_slack(_frontier(points, 0.999, 500.0), 0.99)
    # THEN keda binds: (104 - 100) / 104
    assert slack is not None and slack.unit == "worker-s"
    assert slack.share == pytest.approx(4 / 104)
    assert (slack.ours, slack.allowed) == (100.0, 104.0)
    assert slack.limit.startswith("keda")
    # without keda, static binds: (130 - 100) / 130
    alone = goal_slack(_frontier(points[:2], 0.999, 500.0), 0.99)
    assert alone is not None and alone.share == pytest.approx(30 / 130)


def test_bursty_peer_limits_take_the_goals_twenty_percent_off() -> None:
    points = [_point(DEFAULT_POLICY, 0.99, 0.995, 100.0), _point("static", 12, 0.995, 130.0)]
    # 0.8 x 130 = 104: (104 - 100) / 104
    slack = goal_slack(_frontier(points, 0.999, 500.0, "bursty"), 0.99)
    assert slack is not None and slack.share == pytest.approx(4 / 104)
    assert slack.allowed == pytest.approx(104.0) and "less 20%" in slack.limit
    # static at 120: limit 96 < 100, 4 / 96 beyond it, and the verdict says not met
    over = [points[0], _point("static", 11, 0.995, 120.0)]
    frontier = _frontier(over, 0.999, 500.0, "bursty")
    beyond = goal_slack(frontier, 0.99)
    assert beyond is not None and beyond.share == pytest.approx(-4 / 96)
    assert goal_verdict(frontier, 0.99).startswith("not met")


def test_where_the_bound_misses_the_gap_and_the_cost_bind() -> None:
    ours = [_point(DEFAULT_POLICY, 0.999, 0.9000, 100.0)]
    # gap 0.4 points of 0.5 allowed: 0.2 room; cost 100 of 150 allowed: 1/3 room
    near = _frontier(ours, 0.9040, 300.0)
    slack = goal_slack(near, 0.999)
    assert slack is not None and slack.unit == "share"
    assert slack.share == pytest.approx(0.2)
    assert (slack.ours, slack.allowed) == (pytest.approx(0.004), 0.005)
    assert goal_verdict(near, 0.999) == "met"
    # a bound at half the worker-s: 100 of 75 allowed, -25 / 75
    costly = goal_slack(_frontier(ours, 0.9040, 150.0), 0.999)
    assert costly is not None and costly.share == pytest.approx(-1 / 3)
    # a gap of 1 point: (0.5 - 1) / 0.5
    far = _frontier(ours, 0.9100, 300.0)
    gap = goal_slack(far, 0.999)
    assert gap is not None and gap.share == pytest.approx(-1.0)
    assert goal_verdict(far, 0.999).startswith("not met")


def test_a_miss_where_the_bound_meets_is_measured_in_miss_budgets() -> None:
    # 90 % against 99.9 %: (0.9 - 0.999) / 0.001 = -99 miss budgets
    frontier = _frontier([_point(DEFAULT_POLICY, 0.999, 0.9000, 100.0)], 0.9995, 300.0)
    slack = goal_slack(frontier, 0.999)
    assert slack is not None and slack.share == pytest.approx(-99.0)
    assert slack.limit == "target 99.9%"
    assert goal_verdict(frontier, 0.999).startswith("not met")


def test_no_slack_without_the_default_policy_at_the_target() -> None:
    assert goal_slack(_frontier([_point("static", 12, 0.995, 130.0)], 0.999, 500.0), 0.99) is None
