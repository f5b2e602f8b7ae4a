"""One verdict cell under other start-up jitter draws (benchmarks/cell_jitter.py)."""

from pathlib import Path

import pytest

from benchmarks.cell_jitter import OTHER_SEEDS, draws, find_row, table


def test_other_draws_move_the_landings_and_keep_the_jobs() -> None:
    # GIVEN the flash-crowd row of seed 1 (an hour: 5 jobs/s and a 20x step), at 60 s p99
    row = find_row("flash-crowd seed 1")
    # WHEN the cell runs under the verdict's jitter draws and one other
    made = draws(row, Path(), "predictive", 60.0, 0.99, 2)
    # THEN the first is the verdict's (seeded by the row's seed), the other seeded apart
    assert [d.seed for d in made] == [1, OTHER_SEEDS + 1]
    verdict, other = made[0].score, made[1].score
    # the same jobs arrive in both, and the workers land at other times: other worker-s
    assert verdict.jobs == other.jobs > 40_000
    assert verdict.worker_seconds != other.worker_seconds
    # AND the table says the target is missed on both: a crowd whose first jobs are due before
    # any order lands (benchmarks/results/flash_crowd_bound.md), whatever the landings
    assert max(verdict.sla_compliance, other.sla_compliance) < 0.99
    text = table(row.label, "predictive", 60.0, 0.99, made)
    assert "met on **0 of 2** jitter draws" in text
    assert text.count("| not met |") == 2
    assert text.count("| 1 (the verdict's) |") == 1


def test_an_unknown_row_names_the_sets_rows() -> None:
    with pytest.raises(SystemExit, match="nasa day 37"):
        find_row("nasa day 99")
