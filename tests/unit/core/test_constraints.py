"""Each constraint the controller applies (core/constraints.py `bounds` and `movement`), one
named case at a time, through the default policy."""

from __future__ import annotations

from dataclasses import replace

import pytest

from queue_autoscale.core import ControllerState, Sample, TrendModel
from queue_autoscale.core.models import Action, Decision
from queue_autoscale.core.predictive import ablated
from queue_autoscale.core.predictive_knobs import ABLATED_DOWN_COOLDOWN_SECONDS
from queue_autoscale.core.trend import hour_of_week
from tests.unit.core.builders import NOW, decide_default, settings, snapshot


def history(target: int, span: float = 400.0, step: float = 30.0) -> tuple[Sample, ...]:
    """Samples covering `span` seconds that all recommended `target`."""
    count = int(span // step)
    return tuple(
        Sample(at=NOW - span + i * step, arrival_rate=0.0, visible=0, raw_target=target)
        for i in range(count)
    )


def test_idle_queue_at_min_holds() -> None:
    d = decide_default(snapshot(), settings(), ControllerState("jobs"), NOW).decision
    assert (d.target, d.action, d.winner) == (1, Action.HOLD, "none")


def test_max_workers_caps_and_says_so() -> None:
    snap = snapshot(visible=5000, oldest_age_seconds=20.0, arrival_rate=50.0)
    d = decide_default(snap, settings(max_workers=12), ControllerState("jobs"), NOW).decision
    assert d.target == 12
    assert "max_workers" in d.constraints and "capped at max_workers 12" in d.reason


def test_capacity_cap_below_max() -> None:
    snap = snapshot(visible=5000, oldest_age_seconds=20.0, arrival_rate=50.0)
    d = decide_default(snap, settings(capacity_cap=8), ControllerState("jobs"), NOW).decision
    assert d.target == 8 and "capacity_cap" in d.constraints


def test_scale_down_waits_for_a_full_stabilization_window() -> None:
    # GIVEN a fleet of 10 that now needs 1, but the state remembers only 60 s of the window
    # (the default policy's is its delayed off, lead + interval = 60 + 30 = 90 s)
    snap = snapshot(running=10, desired=10)
    young = ControllerState("jobs", samples=history(1, span=60.0))
    d = decide_default(snap, settings(), young, NOW).decision
    assert d.action is Action.HOLD and "stabilization" in d.constraints
    assert "less than 90 s of history" in d.reason


def test_scale_down_to_the_highest_recommendation_in_the_window() -> None:
    # GIVEN a window (lead + interval = 90 s) that recommended 7 once, 60 s ago
    samples = (
        *history(2, span=400.0),
        Sample(at=NOW - 60, arrival_rate=1, visible=0, raw_target=7),
    )
    snap = snapshot(running=10, desired=10)
    d = decide_default(snap, settings(), ControllerState("jobs", samples=samples), NOW)
    # THEN the fleet comes down to 7, not to the 1 the idle queue asks for now
    assert d.decision.target == 7 and d.decision.action is Action.DOWN
    assert "down only to 7, the highest in the last 90 s" in d.decision.reason


def test_a_release_goes_at_once() -> None:
    # GIVEN 20 workers, an idle queue, and a window that needed 1 throughout
    snap = snapshot(running=20, desired=20)
    state = ControllerState("jobs", samples=history(1))
    d = decide_default(snap, settings(), state, NOW).decision
    # THEN the release goes at once, not a step at a time (docs/decision.md, section 4):
    # scale-in drains, and the plan has already counted what a release makes late
    assert (d.target, d.action) == (1, Action.DOWN) and d.constraints == ("min_workers",)


def test_down_cooldown_holds_a_second_scale_down_only_with_release_now_off() -> None:
    # GIVEN a fleet of 10 scaled down 20 s ago
    snap = snapshot(running=10, desired=10)
    state = ControllerState("jobs", samples=history(1), last_scale_down_at=NOW - 20)
    cfg = settings()
    # WHEN the default policy decides THEN the release goes on ("release-now": the delayed off
    # already kept what the last lead + interval asked for)
    assert decide_default(snap, cfg, state, NOW).decision.action is Action.DOWN
    # AND with "release-now" switched off the ablation's 60 s cooldown holds the second one
    assert ABLATED_DOWN_COOLDOWN_SECONDS == 60.0
    d = ablated("release-now")(snap, cfg, state, NOW).decision
    assert d.action is Action.HOLD and "down_cooldown" in d.constraints
    assert "down-cooldown: 40 s left" in d.reason


def test_cancelling_orders_still_starting_starts_no_down_cooldown() -> None:
    # GIVEN 40 workers ordered, 10 of them running, and a window that needed 12 throughout
    ordered = snapshot(running=10, desired=40)
    state = ControllerState("jobs", samples=history(12), last_scale_up_at=NOW - 30)
    # WHEN the scale-down to the window's 12 cancels only orders (12 >= the 10 running)
    evaluation = decide_default(ordered, settings(max_workers=200), state, NOW)
    assert (evaluation.decision.target, evaluation.decision.action) == (12, Action.DOWN)
    # THEN no running worker was stopped, so the next scale-down need not wait a cooldown
    assert evaluation.state.last_scale_down_at is None
    # AND one that stops running workers (20 -> 12) starts it
    running = decide_default(snapshot(running=20, desired=20), settings(), state, NOW)
    assert running.decision.target == 12 and running.state.last_scale_down_at == NOW


def test_up_cooldown_holds_but_down_cooldown_never_blocks_up() -> None:
    snap = snapshot(visible=300, oldest_age_seconds=10.0, arrival_rate=10.0, running=2, desired=2)
    blocked = ControllerState("jobs", last_scale_up_at=NOW - 5)
    d = decide_default(snap, settings(scale_up_cooldown_seconds=30), blocked, NOW).decision
    assert d.action is Action.HOLD and "up_cooldown" in d.constraints
    just_scaled_down = ControllerState("jobs", last_scale_down_at=NOW - 1)
    d = ablated("release-now")(snap, settings(), just_scaled_down, NOW).decision
    assert d.action is Action.UP


def test_in_flight_floor() -> None:
    # 12 jobs running on workers of concurrency 2 keep 6 workers even when nothing waits.
    snap = snapshot(in_flight=12, running=10, desired=10, completion_rate=1.0)
    state = ControllerState("jobs", samples=history(1))
    d = decide_default(snap, settings(worker_concurrency=2), state, NOW).decision
    assert d.target == 6 and "in_flight" in d.constraints


def test_no_scale_down_while_a_deployment_rolls_but_up_is_allowed() -> None:
    state = ControllerState("jobs", samples=history(1))
    down = snapshot(running=10, desired=10, deployment_in_progress=True)
    assert decide_default(down, settings(), state, NOW).decision.action is Action.HOLD
    up = snapshot(
        visible=500,
        oldest_age_seconds=20.0,
        arrival_rate=10.0,
        running=2,
        desired=2,
        deployment_in_progress=True,
    )
    assert decide_default(up, settings(), state, NOW).decision.action is Action.UP


@pytest.mark.parametrize(
    "poison",
    [
        pytest.param({"failure_rate": 0.9, "in_flight": 4}, id="most jobs fail"),
        pytest.param({"completion_rate": 0.0, "in_flight": 4}, id="nothing completes"),
    ],
)
def test_poison_guard_does_not_climb_to_max(poison: dict[str, float]) -> None:
    snap = snapshot(
        visible=2000, oldest_age_seconds=25.0, arrival_rate=5.0, running=4, desired=4, **poison
    )
    d = decide_default(snap, settings(max_workers=100), ControllerState("jobs"), NOW).decision
    assert d.target == 4 and "poison_guard" in d.constraints


def test_poison_guard_on_a_growing_dlq() -> None:
    state = ControllerState("jobs", samples=(Sample(NOW - 30, 5.0, 100, 4, dlq_depth=10),))
    snap = snapshot(
        visible=2000,
        oldest_age_seconds=25.0,
        arrival_rate=5.0,
        running=4,
        desired=4,
        in_flight=4,
        completion_rate=2.0,
        dlq_depth=60,
    )
    d = decide_default(snap, settings(), state, NOW).decision
    assert d.target == 4 and "poison_guard" in d.constraints


@pytest.mark.parametrize(
    ("missing", "words"),
    [
        pytest.param({"visible": None}, "visible unknown", id="SQS read failed"),
        pytest.param({"running": None}, "running unknown", id="ECS read failed"),
        pytest.param({"arrival_rate": None}, "arrival_rate unknown", id="counters failed"),
        pytest.param({"visible": -4}, "visible = -4 is negative", id="negative count"),
        pytest.param({"taken_at": NOW - 600}, "600 s old", id="stale snapshot"),
        pytest.param({"taken_at": NOW + 600}, "in the future", id="future snapshot"),
        pytest.param({"failure_rate": 3.0}, "failure_rate = 3.0", id="absurd failure rate"),
    ],
)
def test_unusable_inputs_hold_and_remember_nothing(missing: dict[str, object], words: str) -> None:
    snap = snapshot(**{"running": 8, "desired": 8, **missing})
    state = ControllerState("jobs", samples=history(1))
    evaluation = decide_default(snap, settings(), state, NOW)
    d = evaluation.decision
    assert (d.target, d.action, d.inputs_ok) == (8, Action.HOLD, False)
    assert words in d.reason
    assert evaluation.state == state


def test_scale_from_zero_needs_the_activation_threshold() -> None:
    # GIVEN an SLA long enough that a job can wait a tick and a provisioning lead (5 + 30 + 60)
    cfg = settings(min_workers=0, activation_threshold=5, sla_seconds=300.0)
    below = snapshot(visible=3, oldest_age_seconds=5.0, running=0, desired=0)
    d = decide_default(below, cfg, ControllerState("jobs"), NOW).decision
    assert d.target == 0 and "activation" in d.constraints
    above = snapshot(visible=5, oldest_age_seconds=5.0, running=0, desired=0)
    d = decide_default(above, cfg, ControllerState("jobs"), NOW).decision
    assert d.target >= 1 and d.action is Action.UP


@pytest.mark.parametrize(
    ("sla", "age", "target"),
    [
        pytest.param(300.0, 200.0, 0, id="age + interval + lead below the SLA: wait"),
        pytest.param(300.0, 210.0, 1, id="the next tick's worker would land at the SLA: go"),
        pytest.param(30.0, 0.0, 1, id="an SLA shorter than interval + lead: go at once"),
    ],
)
def test_activation_never_strands_a_job_past_its_sla(sla: float, age: float, target: int) -> None:
    # GIVEN 2 jobs at zero workers, below an activation threshold of 5 (interval 30, lead 60)
    cfg = settings(min_workers=0, activation_threshold=5, sla_seconds=sla)
    snap = snapshot(visible=2, oldest_age_seconds=age, running=0, desired=0)
    # WHEN the controller decides
    d = decide_default(snap, cfg, ControllerState("jobs"), NOW).decision
    # THEN it scales from zero exactly when waiting one more tick would breach the SLA
    assert d.target == target and "activation" in d.constraints
    if target:
        assert "scale from zero" in d.reason


@pytest.mark.parametrize(
    ("fleet", "overrides", "target", "words"),
    [
        pytest.param(
            {"running": 12, "desired": 12},
            {"max_workers": 8},
            8,
            "except the lowered max_workers 8, which is still enforced",
            id="lowered max still enforced",
        ),
        pytest.param(
            {"running": 12, "desired": 12},
            {"capacity_cap": 6},
            6,
            "except the lowered capacity_cap 6, which is still enforced",
            id="lowered capacity cap still enforced",
        ),
        pytest.param(
            {"running": 12, "desired": 12},
            {"partition_cap": 6, "capacity_cap": 6},
            6,
            "except the lowered partition_cap 6, which is still enforced",
            id="a partition cap tied with a capacity cap says partition_cap, as in a tick",
        ),
        pytest.param(
            {"running": 1, "desired": 1},
            {"min_workers": 3},
            3,
            "except min_workers 3, which is still enforced",
            id="raised min still enforced",
        ),
        pytest.param(
            {"running": None, "desired": None},
            {"min_workers": 3},
            0,
            "holding the current count",
            id="unknown fleet: nothing asked of ECS",
        ),
    ],
)
def test_a_hold_on_bad_inputs_says_what_it_still_enforces(
    fleet: dict[str, object], overrides: dict[str, object], target: int, words: str
) -> None:
    # GIVEN inputs the core cannot use (visible unknown) and a config the fleet is outside of
    snap = snapshot(visible=None, **fleet)
    # WHEN the controller decides
    d = decide_default(snap, settings(**overrides), ControllerState("jobs"), NOW).decision
    # THEN it holds except for the configured bounds, and the reason says which one bit
    assert d.target == target and not d.inputs_ok and words in d.reason
    assert (d.action is Action.HOLD) == (target == d.current)
    if d.action is Action.DOWN:
        assert d.reason.startswith(f"scale down {d.current} -> {target}")


def test_scale_to_zero_when_idle_and_min_is_zero() -> None:
    state = ControllerState("jobs", samples=history(0))
    d = decide_default(snapshot(running=2, desired=2), settings(min_workers=0), state, NOW).decision
    assert (d.target, d.action) == (0, Action.DOWN)


def test_job_time_prior_until_a_job_completes() -> None:
    snap = snapshot(arrival_rate=4.0, mean_job_seconds=None, running=1, desired=1)
    d = decide_default(
        snap, settings(expected_job_seconds=2.0), ControllerState("jobs"), NOW
    ).decision
    # A = 4 x 2 = 8 busy workers: Erlang C asks 9, but 8 run hot (docs/decision.md, section 3):
    # over the reach (lead + interval, 90 s) at the rate's upper bound 4 + 1.645 sqrt(4 / 300)
    # = 4.19 jobs/s their backlog walks to 0.19 x 90 + 1.645 sqrt(8.19 x 90) = 62 jobs, within
    # the 8 x 0.5 x 30 = 120 they pick up in the SLA; 8 is also the load's lower bound, 4 -
    # 1.645 sqrt(2 x 4 / 300) = 3.73 jobs/s, rounded up (7.46 workers)
    assert d.terms.steady == 8
    assert "prior 2 s" in d.reason
    assert d.load_ratio == 1.0  # queued but nothing completed: mu unknown reads 1


def test_trend_term_leads_a_ramp() -> None:
    samples = tuple(
        Sample(at=NOW - 300 + 30 * i, arrival_rate=2.0 + 0.5 * i, visible=0, raw_target=5)
        for i in range(10)
    )  # +1 job/s per minute
    snap = snapshot(arrival_rate=7.0, running=8, desired=8)
    d = decide_default(snap, settings(), ControllerState("jobs", samples=samples), NOW).decision
    assert d.forecast_rate == pytest.approx(7.0 + 90 / 60, rel=0.01)  # 90 s horizon
    assert d.winner == "trend" and d.terms.trend > d.terms.steady


def test_seasonal_model_blends_into_the_forecast() -> None:
    seasonal = [1.0] * 168
    seasonal[hour_of_week(NOW + 90)] = 3.0
    model = TrendModel(
        "jobs",
        fitted_at=NOW - 3600,
        level=10.0,
        slope_per_hour=0.0,
        seasonal=tuple(seasonal),
        mase=0.1,
        naive_mase=0.2,
    )
    snap = snapshot(arrival_rate=10.0, running=12, desired=12)
    d = decide_default(snap, settings(), ControllerState("jobs"), NOW, model).decision
    # weight = 1 - 0.1 / 0.2 = 0.5: 0.5 * 10 (live) + 0.5 * 30 (model) = 20 jobs/s
    assert d.forecast_rate == pytest.approx(20.0)
    useless = TrendModel("jobs", NOW, 10.0, 0.0, tuple(seasonal), mase=0.3, naive_mase=0.2)
    assert (
        decide_default(
            snap, settings(), ControllerState("jobs"), NOW, useless
        ).decision.forecast_rate
        == 10.0
    )


@pytest.mark.parametrize(
    ("mase", "naive_mase", "expected"),
    [
        (0.9, 1.0, 10.0 + 0.1 * 20.0),  # skill 0.10: weight 0.1 -> 12 jobs/s
        (0.95, 1.0, 10.0 + 0.05 * 20.0),  # skill 0.05: a little better, counts a little
        (1.0, 1.0, 10.0),  # no better than repeating last week: the live forecast alone
        (1.2, 1.0, 10.0),  # worse than naive: no weight, not a negative one
        (None, 1.0, 10.0),  # no back-test (an item of the older MAPE form parses so)
        (0.0, 1.0, 30.0),  # perfect: the model's rate, which the live one could still exceed
    ],
)
def test_seasonal_model_counts_by_its_skill(
    mase: float | None, naive_mase: float, expected: float
) -> None:
    # GIVEN a model forecasting 30 jobs/s in 90 s (the lead) against a live 10 jobs/s
    seasonal = [1.0] * 168
    seasonal[hour_of_week(NOW + 90)] = 3.0
    model = TrendModel("jobs", NOW, 10.0, 0.0, tuple(seasonal), mase=mase, naive_mase=naive_mase)
    snap = snapshot(arrival_rate=10.0, running=12, desired=12)
    # WHEN deciding THEN the model counts by its skill, and not at all without one
    d = decide_default(snap, settings(), ControllerState("jobs"), NOW, model).decision
    assert d.forecast_rate == pytest.approx(expected)


def test_seasonal_model_never_lowers_the_forecast() -> None:
    # GIVEN a skilled model (half the naive error) that expects a quiet hour: 10 x 0.2 = 2 jobs/s
    seasonal = [1.0] * 168
    seasonal[hour_of_week(NOW + 90)] = 0.2
    model = TrendModel("jobs", NOW, 10.0, 0.0, tuple(seasonal), mase=0.4, naive_mase=0.8)
    snap = snapshot(arrival_rate=10.0, running=12, desired=12)
    # WHEN deciding THEN the live 10 jobs/s stands: the model only ever raises capacity
    d = decide_default(snap, settings(), ControllerState("jobs"), NOW, model).decision
    assert d.forecast_rate == pytest.approx(10.0)


def test_state_remembers_scale_actions() -> None:
    snap = snapshot(visible=300, oldest_age_seconds=10.0, arrival_rate=10.0, running=2, desired=2)
    evaluation = decide_default(snap, settings(), ControllerState("jobs"), NOW)
    assert evaluation.decision.action is Action.UP
    assert evaluation.state.last_scale_up_at == NOW
    assert evaluation.state.last_set_desired == evaluation.decision.target
    # the window remembers the sustained need (steady/trend), not the drain's backlog workers
    d = evaluation.decision
    assert d.winner == "drain" and d.terms.drain > max(d.terms.steady, d.terms.trend)
    assert evaluation.state.samples[-1].raw_target == max(d.terms.steady, d.terms.trend)


def test_predicted_pickup_and_breach() -> None:
    # 100 waiting, 5 workers at 1 job/s each: a job enqueued now waits 100 / 5 = 20 s;
    # arrivals of 6/s outrun the fleet, so the 30 s SLA breaches in 30 - 12 = 18 s.
    snap = snapshot(visible=100, oldest_age_seconds=12.0, arrival_rate=6.0, running=5, desired=5)
    d = decide_default(snap, settings(), ControllerState("jobs"), NOW).decision
    assert d.predicted_pickup_seconds == pytest.approx(20.0)
    assert d.predicted_breach_seconds == pytest.approx(18.0)
    assert d.backlog_per_instance == pytest.approx(20.0)


def test_state_keeps_only_the_longest_window_and_replaces_a_replayed_tick() -> None:
    # GIVEN samples from 20 minutes ago to 30 s ago (the longest window read: the burst
    # model's W + 2R = 300 + 2 x (60 + 30) = 480 s, longer than the 300 s trend window, + a
    # 30 s interval: 510 s)
    old = tuple(
        Sample(at=NOW - 1200 + 30 * i, arrival_rate=0, visible=0, raw_target=1) for i in range(40)
    )
    state = ControllerState("jobs", samples=old)
    after = decide_default(snapshot(), settings(), state, NOW).state
    ages = [NOW - s.at for s in after.samples]
    # the 17 samples 510..30 s old and this tick's
    assert max(ages) == 510 and ages[-1] == 0 and len(after.samples) == 18
    # WHEN the same tick is evaluated again, it replaces its own sample instead of adding one
    again = decide_default(snapshot(), settings(), after, NOW).state
    assert len(again.samples) == len(after.samples)


def test_a_fleet_that_does_not_start_stops_climbing() -> None:
    # GIVEN desired 10 but only 4 tasks running, and a backlog that wants more
    snap = snapshot(visible=3000, oldest_age_seconds=20.0, arrival_rate=20.0, running=4, desired=10)
    cfg = settings(provisioning_lead_seconds=60, evaluation_interval_seconds=30)  # stuck: 210 s
    first = decide_default(snap, cfg, ControllerState("jobs"), NOW)
    assert first.decision.action is Action.UP  # not stuck yet: asks for more
    assert first.state.unmet_since == NOW
    # WHEN tasks are still short 210 s later
    later = decide_default(replace(snap, taken_at=NOW + 210), cfg, first.state, NOW + 210)
    # THEN it holds and says why (the state keeps the start of the shortfall)
    assert later.decision.action is Action.HOLD and "fleet_stuck" in later.decision.constraints
    assert later.state.unmet_since == NOW
    # AND once the tasks run, the shortfall clears and scaling resumes
    caught_up = replace(snap, taken_at=NOW + 240, running=10)
    resumed = decide_default(caught_up, cfg, later.state, NOW + 240)
    assert resumed.state.unmet_since is None and resumed.decision.action is Action.UP


def test_workers_already_ordered_count_and_running_ones_are_kept() -> None:
    # A surge: 2,000 waiting, 15 s old, 50 jobs/s arriving, 10 running of the 60 asked for.
    # The 50 ordered earlier land a lead + half an interval (65 s) after the last scale-up.
    cfg = settings(
        max_workers=1000, provisioning_lead_seconds=60.0, evaluation_interval_seconds=10.0
    )
    snap = snapshot(
        visible=2000, oldest_age_seconds=15.0, arrival_rate=50.0, running=10, desired=60
    )

    def plan(up: float | None) -> tuple[int, str]:
        d = decide_default(snap, cfg, ControllerState("jobs", last_scale_up_at=up), NOW).decision
        return d.terms.drain, d.reason

    unknown, soon, landed = plan(None), plan(NOW - 20), plan(NOW - 70)
    # THEN the sooner the 50 ordered earlier serve, the fewer workers the plan orders now:
    # landing in 65 s (no scale-up time known), in 45 s (ordered 20 s ago), or now (overdue)
    assert "ordered earlier and landing: 50 in 45 s" in soon[1]
    assert "ordered earlier and landing: 50 in 0 s" in landed[1]
    assert unknown[0] > soon[0] > landed[0]

    # Later: 600 waiting, 20 s old, 20 jobs/s (the steady state needs 21: Erlang C at 20 jobs/s
    # of 1 s jobs), and 50 ordered landing in 15 s. Holding the 60 already leaves some of the
    # oldest jobs late (500 ahead of the oldest, 10 workers for 10 s). The 50 landing in 15 s
    # count: the plan keeps fewer of them than it orders afresh with none pending (new orders
    # land in 65 s), withdraws the rest (docs/decision.md, section 3, reach) and keeps the 10
    # running.
    quiet = ControllerState("jobs", samples=history(5), last_scale_up_at=NOW - 50)

    def decide(running: int, desired: int, waiting: int, age: float) -> Decision:
        s = snapshot(
            visible=waiting,
            oldest_age_seconds=age,
            arrival_rate=20.0,
            running=running,
            desired=desired,
        )
        return decide_default(s, cfg, quiet, NOW).decision

    pending, afresh = decide(10, 60, 600, 20.0), decide(10, 10, 600, 20.0)
    assert pending.terms.steady == 21
    assert "ordered earlier and landing: 50 in 15 s" in pending.reason
    assert afresh.target > 60 > pending.target > 10
    assert pending.action is Action.DOWN

    # 2,000 waiting, 28 s old: with 60 running none stops while holding them leaves a job late
    # anyway; with 50 of them running the plan withdraws only workers still starting.
    assert decide(60, 60, 2000, 28.0).target == 60
    assert 50 <= decide(50, 60, 2000, 28.0).target < 60


def test_a_step_is_not_extrapolated_once_the_rate_levels() -> None:
    # The windowed rate climbed 10 -> 50 over a minute three minutes ago and has been flat
    # since: a line through the whole window still slopes up, the recent fifth does not.
    rates = [10.0] * 4 + [20.0, 30.0, 40.0, 50.0] + [50.0] * 18
    samples = tuple(
        Sample(at=NOW - 10 * (len(rates) - i), arrival_rate=r, visible=0, raw_target=50)
        for i, r in enumerate(rates)
    )
    cfg = settings(max_workers=1000, evaluation_interval_seconds=10)
    snap = snapshot(arrival_rate=50.0, running=55, desired=55)
    d = decide_default(snap, cfg, ControllerState("jobs", samples=samples), NOW).decision
    assert d.forecast_rate == pytest.approx(50.0)
    assert d.terms.trend == d.terms.steady


def test_an_implausible_mean_job_time_is_capped_and_said() -> None:
    # GIVEN a measured mean job time of 10 days and a 12 h plausibility limit (the default)
    snap = snapshot(arrival_rate=0.001, mean_job_seconds=864_000.0, running=2, desired=2)
    # WHEN the controller decides
    d = decide_default(snap, settings(), ControllerState("jobs"), NOW).decision
    # THEN it sizes with 12 h jobs and the reason says so
    assert d.service_rate == pytest.approx(1 / 43_200)
    assert "capped at max_job_seconds 43200 s" in d.reason


def test_sub_millisecond_jobs_read_as_completed() -> None:
    # GIVEN 100 jobs/s of jobs shorter than the 1 ms resolution, on 1 worker
    snap = snapshot(arrival_rate=100.0, mean_job_seconds=0.0, running=1, desired=1)
    # WHEN the controller decides
    d = decide_default(snap, settings(), ControllerState("jobs"), NOW).decision
    # THEN mu is measured (1000 jobs/s at 1 ms), rho = 0.1, not the "nothing completed" 1.0
    assert d.load_ratio == pytest.approx(0.1) and "prior" not in d.reason
    assert d.target == 1
