"""The flash crowd's standing-fleet bound (benchmarks/flash_crowd_bound.py): its queue model."""

import pytest

from benchmarks.flash_crowd_bound import late_jobs, least_standing


@pytest.mark.parametrize(
    ("standing", "late"),
    [
        (0, 2),  # every job starts at the landing, 70 s: the first two waited 70 and 65 s
        (1, 0),  # one worker free at the onset takes each 1 s job as it comes
    ],
)
def test_jobs_wait_for_the_landing_without_standing_workers(standing: int, late: int) -> None:
    arrivals, durations = [0.0, 5.0, 15.0, 65.0], [1.0] * 4
    assert late_jobs(arrivals, durations, 0.0, 70.0, standing, 60.0) == late


@pytest.mark.parametrize(("sla", "late"), [(20.0, 2), (40.0, 1)])
def test_standing_workers_serve_first_come_first_served(sla: float, late: int) -> None:
    # one worker: starts at 0, 30 and 60 s
    assert late_jobs([0.0, 0.0, 0.0], [30.0] * 3, 0.0, 70.0, 1, sla) == late


def test_a_job_no_standing_worker_reaches_before_the_landing_starts_then() -> None:
    # the one worker is busy until 100 s; the second job starts at the landing, 69 s late
    assert late_jobs([0.0, 1.0], [100.0, 1.0], 0.0, 70.0, 1, 60.0) == 1
    assert late_jobs([0.0, 1.0], [100.0, 1.0], 0.0, 70.0, 1, 69.5) == 0


def test_least_standing_fleet_meets_the_budget() -> None:
    arrivals, durations = [0.0, 0.0, 0.0], [30.0] * 3
    assert least_standing(arrivals, durations, 0.0, 70.0, 20.0, 0) == 3
    assert least_standing(arrivals, durations, 0.0, 70.0, 20.0, 1) == 2
    assert least_standing(arrivals, durations, 0.0, 70.0, 20.0, 3) == 0
