"""When the missed cells lose their jobs (benchmarks/miss_episodes.py)."""

import numpy as np
import pytest

from benchmarks.cell_jitter import find_row
from benchmarks.frontier_verdict import DEFAULT_TRACE, JITTER_SECONDS
from benchmarks.miss_episodes import (
    Cell,
    Episode,
    Finding,
    Lateness,
    episodes,
    examine,
    missed_cells,
    summary,
    trace_warmup,
)
from queue_autoscale.sim.runner import RunSpec
from queue_autoscale.sim.tuning import row_runs

VERDICT = """# Policy frontier

## Verdict

| row | SLA s | predictive 95.0% |
| --- | ---: | --- |
| steady seed 1 | 10 | pass |

## spike seed 1

| SLA s | target | predictive | seed-hybrid |
| ---: | ---: | --- | --- |
| 10 | 99.0% | 97.688%, 154,070 worker-s, 1 flaps, util 0.930: pass | 98.0%, 1 worker-s |
| 60 | 99.0% | 99.670%, 161,340 worker-s, 1 flaps, util 0.889: pass | 98.0%, 1 worker-s |
| 60 | 99.9% | 99.707%, 161,010 worker-s: not met: misses 99.9% (99.707%) | 100.000%, 1 |

## nasa day 46

| SLA s | target | predictive | seed-hybrid |
| ---: | ---: | --- | --- |
| 10 | 95.0% | 95.715%, 812,270 worker-s: not met: 812,270 worker-s > 1.03 x static | 86%, 1 |
| 10 | 99.9% | 99.885%, 1,281,930 worker-s: not met: misses 99.9% (99.885%) | 86%, 1 |
"""


def test_the_cells_below_their_target_are_read_from_the_verdict_file() -> None:
    # GIVEN a verdict file with a summary table and two rows' cells, two of them below target
    # WHEN its missed cells are read
    cells = missed_cells(VERDICT)
    # THEN only the cells whose share is below the target are read, with their row, and whether
    # the verdict passes them all the same (through the reaction bound); a cell that fails on
    # cost alone (95.715 % at 95 %) and the summary table are not
    assert cells == [
        Cell("spike seed 1", 10.0, 0.99, passes=True),
        Cell("spike seed 1", 60.0, 0.999),
        Cell("nasa day 46", 10.0, 0.999),
    ]


def test_late_jobs_further_apart_than_the_gap_are_separate_episodes() -> None:
    # GIVEN six jobs, four late: two at 100-130 s, two at 900-905 s (gap 80 s)
    arrivals = np.array([100.0, 130.0, 500.0, 905.0, 900.0, 950.0])
    late = np.array([True, True, False, True, True, False])
    # WHEN they are grouped
    found = episodes(arrivals, late, gap=80.0)
    # THEN two episodes, in time order, each starting at its first late arrival
    assert found == (Episode(100.0, 2), Episode(900.0, 2))
    # AND a gap wider than the lull joins them; none late, none found
    assert episodes(arrivals, late, gap=800.0) == (Episode(100.0, 4),)
    assert episodes(arrivals, np.zeros(6, dtype=bool), gap=80.0) == ()


def test_a_cell_meets_without_its_first_episode_only_if_the_rest_fit_the_budget() -> None:
    first, second = Episode(900.0, 645), Episode(1807.0, 424)
    # 1,069 late where 1,059 are allowed: missed, but met without the first episode
    missed = Lateness(1069, 1058.5, (first, second))
    assert not missed.meets
    assert missed.meets_without_first
    # at 99.9 %, 106 allowed: the second episode alone misses too
    assert not Lateness(1069, 105.9, (first, second)).meets_without_first


def test_the_summary_counts_the_cells_the_verdict_fails() -> None:
    # GIVEN three missed cells: one the verdict passes through the bound, two it fails (one of
    # them a trace row whose own warm-up meets the target)
    one = (Episode(1800.0, 3000),)
    missed = Lateness(3000, 100.0, one)
    met = Lateness(90, 100.0, (Episode(50.0, 90),))
    findings = [
        Finding(Cell("spike seed 1", 10.0, 0.99, passes=True), missed, missed, None),
        Finding(Cell("bursty seed 2", 60.0, 0.99), missed, met, None),
        Finding(Cell("nasa day 46", 10.0, 0.999), missed, missed, met),
    ]
    # WHEN they are summed up
    text = summary(findings)
    # THEN the bound's pass is left out of the counts
    assert "in **3** cells; the verdict fails **2** of them" in text
    assert "**2** would meet the target without their first episode" in text
    assert "5 s later in each interval 1 meet it" in text
    assert "1 of the 1 NASA cells" in text


def test_a_flash_crowd_cell_loses_its_jobs_in_one_episode_at_the_crowd() -> None:
    # GIVEN the verdict's flash-crowd seed 1 row (5 jobs/s, 100 jobs/s from 1,800 s), 60 s p99
    cell = Cell("flash-crowd seed 1", 60.0, 0.99)
    # WHEN it is run as the verdict runs it, and with the ticks 5 s later
    found = examine(cell)
    # THEN every late job falls in one episode that starts at the crowd's first seconds, and
    # more are late than 99 % allows: without that episode the target is met
    run = found.verdict
    assert len(run.episodes) == 1
    assert 1800.0 <= run.episodes[0].start < 1810.0
    assert run.late == run.episodes[0].late > run.allowed > 400
    assert run.meets_without_first
    # AND a later tick phase does not save it (benchmarks/results/flash_crowd_bound.md); a
    # scenario row has no trace warm-up to replay
    assert not found.later_tick.meets
    assert found.trace_warmup is None


def test_the_trace_warmup_replaces_the_warmup_and_keeps_the_scored_jobs() -> None:
    if not DEFAULT_TRACE.is_file():
        pytest.skip(f"the NASA trace is not here: {DEFAULT_TRACE}")
    # GIVEN NASA day 46 as the verdict builds it (a Poisson warm-up of 600 s)
    row = find_row("nasa day 46")
    spec = RunSpec(provision_jitter_seconds=JITTER_SECONDS)
    runs = row_runs(row, DEFAULT_TRACE, spec, (10.0,))
    before = runs.workload
    # WHEN its warm-up is replaced by the trace's 600 s before the day
    after = trace_warmup(before, row, DEFAULT_TRACE, runs.spec)
    # THEN the warm-up's counts are the trace's (x10: every count a multiple of 10) and the
    # scored seconds, jobs and job times are the verdict's own
    warm = before.warmup_seconds
    assert after.warmup_seconds == warm
    assert np.all(after.counts[:warm] % 10 == 0) and after.counts[:warm].sum() > 0
    assert not np.all(before.counts[:warm] % 10 == 0)
    assert np.array_equal(after.counts[warm:], before.counts[warm:])
    scored = before.arrivals >= warm
    assert np.array_equal(after.arrivals[after.arrivals >= warm], before.arrivals[scored])
    assert np.array_equal(after.service[after.arrivals >= warm], before.service[scored])
    assert (after.arrivals < warm).sum() == after.counts[:warm].sum()
