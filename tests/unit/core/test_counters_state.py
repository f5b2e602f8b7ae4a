"""Rates and oldest age from the counters; the stored forms of state and model."""

from __future__ import annotations

import json
import random
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from queue_autoscale.core import (
    ControllerState,
    CounterRow,
    Sample,
    TrendModel,
    model_from_dict,
    model_to_dict,
    oldest_age,
    state_from_dict,
    state_to_dict,
    window_rates,
)
from queue_autoscale.core.counters import robust_mean_job_seconds

NOW = 10_000.0


def test_window_rates_by_hand() -> None:
    rows = [
        CounterRow(second=9_990, queued=30, started=20, completed=18, failed=2, busy_ms=40_000,
                   pickup_ms=10_000),
        CounterRow(second=9_800, queued=60, completed=10, busy_ms=10_000),
        CounterRow(second=9_000, queued=999),  # outside the 300 s window
    ]  # fmt: skip
    rates = window_rates(rows, NOW, 300.0, 60.0)
    assert rates.arrival_rate == pytest.approx(90 / 300)
    assert rates.arrival_rate_short == pytest.approx(30 / 60)
    assert rates.completion_rate == pytest.approx(28 / 300)
    assert rates.mean_job_seconds == pytest.approx(50.0 / 30)  # 50 s busy over 30 finished
    assert rates.failure_rate == pytest.approx(2 / 30)
    assert rates.mean_pickup_seconds == pytest.approx(0.5)
    empty = window_rates([], NOW)
    assert (empty.arrival_rate, empty.mean_job_seconds, empty.failure_rate) == (0.0, None, 0.0)


def finished_rows(durations_ms: dict[int, list[int]]) -> list[CounterRow]:
    """Counter rows of completed jobs: {seconds back from NOW: [duration ms, ...]}."""
    return [
        CounterRow(second=int(NOW) - back, completed=len(jobs), busy_ms=sum(jobs))
        for back, jobs in durations_ms.items()
    ]


def _per_second(queued: list[int]) -> list[CounterRow]:
    return [CounterRow(second=int(NOW) - 300 + i, queued=q) for i, q in enumerate(queued)]


def test_dispersion_is_measured_from_the_per_second_arrivals() -> None:
    rng = random.Random(1)
    poisson = [sum(1 for _ in range(200) if rng.random() < 0.1) for _ in range(300)]  # ~Poisson 20
    regular = [20] * 300
    bursty = [200 if i % 10 == 0 else 0 for i in range(300)]  # 20 jobs/s in bursts of 200
    d_poisson = window_rates(_per_second(poisson), NOW).arrival_dispersion
    assert d_poisson is not None and 0.75 < d_poisson < 1.1  # binomial: 0.9
    assert window_rates(_per_second(regular), NOW).arrival_dispersion == pytest.approx(0.0)
    dispersion = window_rates(_per_second(bursty), NOW).arrival_dispersion
    assert dispersion == pytest.approx(180.0, rel=0.01)
    assert window_rates([], NOW).arrival_dispersion is None


def test_the_short_windows_dispersion_reads_its_own_seconds_only() -> None:
    # GIVEN 300 s of arrivals: a burst of 40 jobs/s for the first 60 s, then 2 jobs/s flat for
    # 180 s, then 60 s alternating 1 and 3 jobs (mean 2, variance 1)
    queued = [40] * 60 + [2] * 180 + [1, 3] * 30
    rates = window_rates(_per_second(queued), NOW, 300.0, 60.0)
    # THEN the long window's index carries the burst: mean 9.6, mean square
    # (60 x 1600 + 180 x 4 + 30 x 1 + 30 x 9) / 300 = 323.4, D = (323.4 - 92.16) / 9.6 = 24.09
    assert rates.arrival_dispersion == pytest.approx((323.4 - 9.6**2) / 9.6)
    # AND the short window's is its own seconds' variance over their mean, 1 / 2
    assert rates.arrival_dispersion_short == pytest.approx(0.5)
    # AND neither is known where nothing arrived within it
    quiet = window_rates(_per_second([5] * 240 + [0] * 60), NOW, 300.0, 60.0)
    assert quiet.arrival_dispersion is not None and quiet.arrival_dispersion_short is None


def test_the_steps_index_reads_the_noise_around_a_moving_level() -> None:
    # GIVEN a queue counted for its last 60 s: 30 s at 2 jobs a second, then 30 s at 10
    step = [0] * 240 + [2] * 30 + [10] * 30
    rates = window_rates(_per_second(step), NOW, 300.0, 60.0)
    # THEN the short window's variance over its mean is the step: (30 x 4 + 30 x 100) / 60 =
    # 52, less 6^2, over 6 = 2.67 for counts with no noise at all
    assert rates.arrival_dispersion_short == pytest.approx((52.0 - 36.0) / 6.0)
    # AND the successive differences hold one step of 8 in 59: 64 / (2 x 59) / 6 = 0.090
    assert rates.arrival_dispersion_steps == pytest.approx(64.0 / 118.0 / 6.0)
    # AND noise reads as noise: alternating 1 and 3 (differences of 2, mean 2) read 4 / 2 / 2
    alternating = window_rates(_per_second([0] * 240 + [1, 3] * 30), NOW, 300.0, 60.0)
    assert alternating.arrival_dispersion_steps == pytest.approx(1.0)
    # AND it spans the seconds from the first counted one: 20 s of 1, 3, ... after 280 s without
    # counters read the same, where the empty seconds would add steps of their own
    young = [CounterRow(second=int(NOW) - 20 + i, queued=(1, 3)[i % 2]) for i in range(20)]
    assert window_rates(young, NOW, 300.0, 60.0).arrival_dispersion_steps == pytest.approx(1.0)
    # AND Poisson counts read about 1
    rng = random.Random(3)
    poisson = [sum(1 for _ in range(100) if rng.random() < 0.05) for _ in range(300)]
    steps = window_rates(_per_second(poisson), NOW, 300.0, 60.0).arrival_dispersion_steps
    assert steps is not None and 0.6 < steps < 1.4
    # AND nothing is read from one second, or from none with arrivals
    one = [CounterRow(second=int(NOW), queued=5)]
    assert window_rates(one, NOW, 300.0, 60.0).arrival_dispersion_steps is None
    assert window_rates(_per_second([0] * 300), NOW).arrival_dispersion_steps is None


def test_one_plausible_outlier_among_thousands_does_not_move_the_job_time() -> None:
    # GIVEN 10,000 one-second jobs over 250 s (40 a second) and one job that ran 10 hours
    jobs = {back: [1_000] * 40 for back in range(1, 251)}
    jobs[100] = [*jobs[100], 36_000_000]
    # WHEN the window's job time is estimated
    rates = window_rates(finished_rows(jobs), NOW)
    # THEN it is the ordinary jobs' 1 s (the plain mean would read 4.6 s and size 4.6x the fleet)
    assert rates.mean_job_seconds == pytest.approx(1.0)
    plain = (10_000 * 1_000 + 36_000_000) / 10_001 / 1000
    assert plain > 4.5


@pytest.mark.parametrize(
    ("spoiled", "moved"),
    [
        pytest.param(1, False, id="1 spoiled second"),
        pytest.param(3, False, id="3 spoiled seconds: the breakdown point"),
        pytest.param(4, True, id="4 spoiled seconds: beyond it"),
    ],
)
def test_the_breakdown_point_is_three_seconds_of_counters(spoiled: int, moved: bool) -> None:
    # GIVEN 2-second jobs in 70 seconds, and `spoiled` consecutive seconds reading 12 h jobs
    jobs = {back: [2_000] * 5 for back in range(1, 71)}
    for back in range(1, spoiled + 1):
        jobs[back] = [43_200_000] * 5
    # WHEN estimated, THEN up to 3 such seconds leave the estimate at 2 s and a 4th moves it
    estimate = window_rates(finished_rows(jobs), NOW).mean_job_seconds
    assert estimate is not None
    assert (estimate > 2.5) == moved


def test_few_seconds_of_completions_give_the_plain_mean() -> None:
    # Two seconds with completions: k = 1 group, the plain mean of the 30 jobs.
    rows = finished_rows({5: [1_000] * 20, 6: [4_000] * 10})
    assert window_rates(rows, NOW).mean_job_seconds == pytest.approx(60.0 / 30)


def test_sub_millisecond_jobs_still_count_as_completions() -> None:
    # GIVEN jobs summed as 0 ms (each ran under a millisecond)
    rows = [CounterRow(second=int(NOW) - 3, queued=500, completed=500, busy_ms=0)]
    # WHEN the window's rates are read
    rates = window_rates(rows, NOW)
    # THEN they completed: a 1 ms job time (the resolution), not None ("nothing completed")
    assert rates.mean_job_seconds == pytest.approx(0.001)
    assert rates.completion_rate == pytest.approx(500 / 300)


def per_second(counts: dict[int, int]) -> list[CounterRow]:
    return [CounterRow(second=int(NOW) - back, queued=n) for back, n in counts.items()]


def test_oldest_age_walks_back_to_the_visible_backlog() -> None:
    rows = per_second({0: 5, 10: 5, 40: 5, 100: 5})
    assert oldest_age(NOW, 12, None, 0.0, rows) == (40.0, "counters")
    assert oldest_age(NOW, 0, 50.0, 60.0, rows) == (0.0, "empty")
    # more visible than the counters know: a lower bound at the oldest row
    assert oldest_age(NOW, 100, None, 0.0, rows) == (100.0, "counters")
    assert oldest_age(NOW, 3, None, 0.0, []) == (None, "unknown")


def test_cloudwatch_plus_lag_wins_when_the_old_message_is_still_waiting() -> None:
    # GIVEN a datapoint 70 s old saying 50 s: the message was enqueued 120 s ago, and only 10
    # jobs were queued since while 12 are visible: (FIFO) it is still there, and older than the
    # counters can see (their rows run out at 10 s).
    rows = per_second({0: 5, 10: 5})
    assert oldest_age(NOW, 12, 50.0, 70.0, rows) == (120.0, "cloudwatch")
    # and without counters CloudWatch is all there is
    assert oldest_age(NOW, 12, 50.0, 70.0, []) == (120.0, "cloudwatch")


def test_no_lag_is_added_once_the_counters_show_the_message_was_picked_up() -> None:
    # GIVEN a queue that keeps up: 20 jobs/s, 3 visible right now, jobs wait a second or two
    rows = [CounterRow(second=int(NOW) - back, queued=20) for back in range(300)]
    # WHEN CloudWatch's max-of-minute datapoint (2 s) is 90 s old: 2 + 90 = 92 s would read as
    # a breach of a 30 s SLA although 1,800 jobs were queued after that message
    age, source = oldest_age(NOW, 3, 2.0, 90.0, rows)
    # THEN the lag is not added: the datapoint's own 2 s against the counters' 0 s
    assert (age, source) == (2.0, "cloudwatch")


def test_state_round_trips_through_json_and_decimals() -> None:
    from decimal import Decimal

    state = ControllerState(
        "jobs", version=4, last_scale_up_at=1.5, last_set_desired=7,
        unmet_since=3.0, samples=(Sample(1.0, 2.5, 3, 4, 5), Sample(2.0, 0.0, 0, 1, 0, 0.75)),
        high_usage_ticks=3, last_breach_at=1.25, realized_started=900.0, realized_late=12.0,
        realized_excused=9.0, realized_through=1.0, chance_gain=0.5,
        horizon_dispersion=3.25, horizon_weight=140.5,
    )  # fmt: skip
    assert state_from_dict(json.loads(json.dumps(state_to_dict(state)))) == state
    stored = state_to_dict(state)
    stored["samples"] = [
        [None if v is None else Decimal(str(v)) for v in row] for row in stored["samples"]
    ]
    stored["version"] = Decimal(4)
    assert state_from_dict(stored) == state
    # an item written before last_set_at was dropped (nothing read it) still loads
    assert state_from_dict({**stored, "last_set_at": Decimal(2)}) == state
    # one written before the loop's integral term was kept is at rest, and so is a term
    # outside (0, 1] (the level would leave its bounds)
    assert state_from_dict({k: v for k, v in stored.items() if k != "chance_gain"}).chance_gain == 1
    for bad in (Decimal(0), Decimal(-1), Decimal("1.5"), Decimal("NaN")):
        assert state_from_dict({**stored, "chance_gain": bad}).chance_gain == 1.0
    # one written before the horizon's dispersion was kept has none, nor a bad stored one
    before = state_from_dict({k: v for k, v in stored.items() if not k.startswith("horizon")})
    assert (before.horizon_dispersion, before.horizon_weight) == (0.0, 0.0)
    for bad in (Decimal(-1), Decimal("NaN"), Decimal("Infinity")):
        assert state_from_dict({**stored, "horizon_weight": bad}).horizon_weight == 0.0
    # and one written before the short rate was kept: its samples have five columns
    five = [row[:5] for row in stored["samples"]]
    assert [s.short_rate for s in state_from_dict({**stored, "samples": five}).samples] == [
        None,
        None,
    ]


def test_model_round_trip_and_bad_profile() -> None:
    model = TrendModel("jobs", 100.0, 3.0, 0.5, tuple(1.0 + i / 1000 for i in range(168)), 0.1, 0.2)
    assert model_from_dict(json.loads(json.dumps(model_to_dict(model)))) == model
    with pytest.raises(ValueError, match="168 hourly factors, got 3"):
        model_from_dict({**model_to_dict(model), "seasonal": [1, 1, 1]})


def test_job_time_deals_seconds_in_time_order_whatever_order_the_rows_come_in() -> None:
    # GIVEN 20 seconds of completions whose durations rise with time, and 3 spoiled seconds
    rows = [
        CounterRow(second=int(NOW) - back, completed=4, busy_ms=4 * (1_000 + 50 * back))
        for back in range(1, 21)
    ]
    rows += [
        CounterRow(second=int(NOW) - back, completed=1, busy_ms=43_200_000) for back in (21, 22, 23)
    ]
    in_order = sorted(rows, key=lambda row: row.second)
    expected = window_rates(in_order, NOW).mean_job_seconds
    # WHEN the same rows arrive newest first or shuffled (a store need not sort them)
    shuffled = in_order[7:] + in_order[:7]
    # THEN the estimate is the same: the groups are dealt by second, not by arrival order
    assert expected is not None and 1.0 < expected < 2.1
    assert window_rates(in_order[::-1], NOW).mean_job_seconds == expected
    assert window_rates(shuffled, NOW).mean_job_seconds == expected
    # and a different dealing (by list position) would have given a different value
    by_position = window_rates(
        [replace(row, second=int(NOW) - 30 + i) for i, row in enumerate(shuffled)], NOW
    ).mean_job_seconds
    assert by_position != expected


@settings(max_examples=300, deadline=None)
@given(
    rows=st.lists(
        st.builds(
            CounterRow,
            second=st.integers(9_500, 10_100),
            queued=st.integers(0, 50),
            started=st.integers(0, 50),
            completed=st.integers(0, 50),
            failed=st.integers(0, 5),
            busy_ms=st.integers(0, 10**6),
            pickup_ms=st.integers(0, 10**6),
        ),
        max_size=120,
    ),
    now=st.one_of(st.integers(9_600, 10_050).map(float), st.floats(9_600.0, 10_050.0)),
    windows=st.sampled_from([(300.0, 60.0), (120.0, 10.0), (60.0, 120.0)]),
)
def test_window_rates_equal_the_row_by_row_definition(
    rows: list[CounterRow], now: float, windows: tuple[float, float]
) -> None:
    # The definition: rows with 0 <= now - second <= long count, the short window's queued
    # those with now - second <= short; the job time deals the finished seconds in time order.
    long, short = windows
    kept = sorted((r for r in rows if 0 <= now - r.second <= long), key=lambda r: r.second)
    done = [r for r in kept if r.completed + r.failed > 0]
    rates = window_rates(rows, now, long, short)
    assert rates.arrival_rate == sum(r.queued for r in kept) / long
    assert (
        rates.arrival_rate_short == sum(r.queued for r in kept if now - r.second <= short) / short
    )
    assert rates.completion_rate == sum(r.completed for r in kept) / long
    finished = sum(r.completed + r.failed for r in kept)
    assert rates.failure_rate == (sum(r.failed for r in kept) / finished if finished else 0.0)
    assert rates.mean_job_seconds == robust_mean_job_seconds(
        [r.busy_ms for r in done], [r.completed + r.failed for r in done]
    )
    started = sum(r.started for r in kept)
    expected_pickup = sum(r.pickup_ms for r in kept) / 1000.0 / started if started else None
    assert rates.mean_pickup_seconds == expected_pickup
    # the generator and the list give the same
    assert window_rates(iter(rows), now, long, short) == rates
