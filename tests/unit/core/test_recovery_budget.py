"""The recovery horizon from the percentile's miss budget (core/drain.py budget_horizon_seconds).

GIVEN the SLA loop's count of jobs started over its window and the drain's arrival rate, WHEN the
drain sizes a backlog, THEN it writes off (sizes no worker for) no more jobs than the percentile
allows late over that window: a flash crowd far above the window's traffic gets a short horizon,
a burst the budget covers keeps the default SLA / 3.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from queue_autoscale.core.drain import budget_horizon_seconds
from queue_autoscale.core.drain_plan import drain_plan
from queue_autoscale.core.measures import measure
from queue_autoscale.core.models import MIN_RECOVERY_HORIZON_SECONDS, ControllerState
from tests.unit.core.builders import NOW, settings, snapshot
from tests.unit.core.test_drain import drain_workers, replay_waits


@pytest.mark.parametrize(
    ("started", "percentile", "rate", "expected"),
    [
        # 5 jobs/s over a 1,800 s window at p95: 450 jobs may be late; a 100 jobs/s flash crowd
        # writes off 100 x H of them, so H = 4.5 s
        pytest.param(9_000.0, 0.95, 100.0, 4.5, id="flash-crowd-p95"),
        pytest.param(9_000.0, 0.99, 100.0, 1.0, id="flash-crowd-p99-at-the-floor"),
        # a 2x burst on the same traffic: 45 s of budget, the default SLA / 3 (10 s) binds
        pytest.param(9_000.0, 0.95, 10.0, 10.0, id="small-burst-keeps-the-default"),
        pytest.param(30_000.0, 0.99, 40.0, 7.5, id="busy-window-p99"),
        # fewer than 1 / (1 - p) = 20 jobs counted: too few to read a budget
        pytest.param(19.0, 0.95, 100.0, 10.0, id="too-few-jobs-counted"),
        pytest.param(9_000.0, 0.95, 0.0, 10.0, id="nothing-arriving"),
    ],
)
def test_budget_horizon_values(
    started: float, percentile: float, rate: float, expected: float
) -> None:
    horizon = budget_horizon_seconds(
        started=started, percentile=percentile, arrival_rate=rate, ceiling_seconds=10.0
    )
    assert horizon == pytest.approx(expected)


@given(
    started=st.floats(0.0, 1e7),
    percentile=st.floats(0.5, 0.9999),
    rate=st.floats(0.01, 1e4),
    ceiling=st.floats(1.0, 1_000.0),
)
def test_budget_horizon_is_bounded_and_shrinks_with_the_rate(
    started: float, percentile: float, rate: float, ceiling: float
) -> None:
    def horizon(r: float) -> float:
        return budget_horizon_seconds(
            started=started, percentile=percentile, arrival_rate=r, ceiling_seconds=ceiling
        )

    assert MIN_RECOVERY_HORIZON_SECONDS <= horizon(rate) <= ceiling
    assert horizon(2.0 * rate) <= horizon(rate)


def test_the_budget_horizon_writes_off_no_more_than_the_budget() -> None:
    """A flash crowd at SLA 30 s: 100 jobs/s, 10 s in, 1,000 waiting, 10 workers, lead 60 s;
    the window counted 9,000 starts at p95 (450 may be late). Replayed job by job, the fleet the
    drain sizes with the budget's horizon leaves at most 450 late among the jobs that can still
    make the SLA when it lands; with the default SLA / 3 it leaves about twice that."""
    lam, mu, sla, lead, running, backlog, age = 100.0, 1.0, 30.0, 60.0, 10, 1_000, 10.0
    allowed = 0.05 * 9_000.0
    horizon = budget_horizon_seconds(
        started=9_000.0, percentile=0.95, arrival_rate=lam, ceiling_seconds=sla / 3.0
    )

    def late_savable(h: float) -> int:
        fleet = drain_workers(backlog, age, lam, mu, sla, h, lead, running)
        waits = replay_waits(backlog, age, lam, mu, lead, running, 0, None, fleet, lead + 2 * sla)
        return sum(1 for t, w in waits if lead - t <= sla and w > sla)

    assert horizon == pytest.approx(4.5)
    assert late_savable(horizon) <= allowed
    assert late_savable(sla / 3.0) > allowed


def test_drain_plan_sizes_with_the_budget_horizon_unless_one_is_set() -> None:
    """The same flash-crowd backlog through drain_plan: the budget's 4.5 s horizon asks for more
    workers than the default 10 s; a configured horizon is used as given."""
    snap = snapshot(
        visible=1_000, oldest_age_seconds=10.0, arrival_rate=100.0, running=10, desired=10
    )
    s = settings(max_workers=1_000)
    m = measure(snap, s)
    state = ControllerState(queue="jobs")
    budget = drain_plan(m, state, s, NOW, 1_001, started=9_000.0)
    default = drain_plan(m, state, s, NOW, 1_001, started=0.0)
    configured = drain_plan(
        m, state, settings(max_workers=1_000, recovery_horizon_seconds=10.0), NOW, 1_001, 9_000.0
    )
    assert budget.horizon == pytest.approx(4.5)
    assert default.horizon == configured.horizon == pytest.approx(10.0)
    assert configured.workers == default.workers < budget.workers
