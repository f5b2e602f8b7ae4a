"""The hindsight yardstick's exact choice (benchmarks/nasa_hindsight.py, issue 15)."""

import numpy as np
import pytest

from benchmarks.nasa_hindsight import _least_sizes, results_name

SIZES = np.array([1, 2, 3], dtype=np.int64)
# On-time jobs per size (rows 1, 2, 3 workers) and segment (columns); 10 jobs arrive in each.
GOT = np.array([[0, 0], [5, 8], [10, 10]], dtype=np.int64)


@pytest.mark.parametrize(
    ("need", "sizes"),
    [
        (0, [1, 1]),
        (13, [2, 2]),  # 4 workers: 5 + 8 on time; 1 + 3 gets only 10
        (18, [3, 2]),  # 5 workers: 10 + 8; 2 + 3 gets only 15
        (20, [3, 3]),
    ],
)
def test_least_summed_size_meeting_the_need(need: int, sizes: list[int]) -> None:
    pick = _least_sizes(SIZES, GOT, need)
    assert pick is not None
    assert [int(SIZES[k]) for k in pick] == sizes
    assert int(GOT[pick, np.arange(2)].sum()) >= need


def test_no_choice_meets_more_than_every_job() -> None:
    assert _least_sizes(SIZES, GOT, 21) is None


def test_results_file_names_the_target_off_the_default() -> None:
    assert results_name(10, 0.95) == "nasa_hindsight_sla10.md"
    assert results_name(30, 0.99) == "nasa_hindsight_sla30_p99.md"
    assert results_name(30, 0.999) == "nasa_hindsight_sla30_p99.9.md"
