"""The bench's cells for chosen workloads (benchmarks/frontier_cells.py, issue 15)."""

from dataclasses import replace

import numpy as np
import pytest

from benchmarks.frontier_cells import cell_frontier, chosen_workloads
from queue_autoscale.sim.bench import SweepOptions, bench_spec
from queue_autoscale.sim.frontier import TARGETS, hybrid_for


def test_workloads_are_picked_by_name_and_an_unknown_one_names_the_known() -> None:
    labels = [label for label, _ in chosen_workloads("steady,flash", 0)]
    assert labels == ["steady", "flash-crowd"]
    with pytest.raises(SystemExit, match=r"no workload matches 'bogus'; known: steady, spike"):
        chosen_workloads("bogus", 0)


def test_hybrid_only_runs_hybrid_at_each_target_and_the_bound() -> None:
    # GIVEN 20 minutes at 5 jobs/s (one job a second per worker: 5 workers of load)
    counts = np.full(1_200, 5, dtype=np.int64)
    spec = replace(bench_spec(SweepOptions(), 0), sla_seconds=30.0)
    # WHEN the cell runs without the peers
    frontier = cell_frontier("flat", counts, spec, hybrid_only=True)
    # THEN every point is hybrid's, one per target, and the bound was run on the same jobs
    assert {p.setting.policy for p in frontier.points} == {"hybrid"}
    assert all(hybrid_for(frontier.points, t) is not None for t in TARGETS)
    assert frontier.bound is not None and frontier.bound.jobs == frontier.points[0].score.jobs
    # AND flat traffic, sized for from its first tick, keeps every job within the SLA
    assert all(p.score.sla_compliance == 1.0 for p in frontier.points)
