"""The bench's cells for chosen workloads (benchmarks/frontier_cells.py, issue 15)."""

import sys
from dataclasses import replace

import numpy as np
import pytest

from benchmarks import frontier_cells
from benchmarks.frontier_cells import cell_frontier, chosen_workloads
from queue_autoscale.core import DEFAULT_POLICY
from queue_autoscale.sim.bench import SweepOptions, bench_spec
from queue_autoscale.sim.frontier import TARGETS, ours_for


def test_workloads_are_picked_by_name_and_an_unknown_one_names_the_known() -> None:
    labels = [label for label, _ in chosen_workloads("steady,flash", 0)]
    assert labels == ["steady", "flash-crowd"]
    with pytest.raises(SystemExit, match=r"no workload matches 'bogus'; known: steady, spike"):
        chosen_workloads("bogus", 0)


def test_ours_only_runs_the_default_policy_at_each_target_and_the_bound() -> None:
    # GIVEN 20 minutes at 5 jobs/s (one job a second per worker: 5 workers of load)
    counts = np.full(1_200, 5, dtype=np.int64)
    spec = replace(bench_spec(SweepOptions(), 0), sla_seconds=30.0)
    # WHEN the cell runs without the peers
    frontier = cell_frontier("flat", counts, spec, ours_only=True)
    # THEN every point is the default policy's, one per target, and the bound ran on the same jobs
    assert {p.setting.policy for p in frontier.points} == {DEFAULT_POLICY}
    assert all(ours_for(frontier.points, t) is not None for t in TARGETS)
    assert frontier.bound is not None and frontier.bound.jobs == frontier.points[0].score.jobs
    # AND flat traffic, sized for from its first tick, keeps every job within the SLA
    assert all(p.score.sla_compliance == 1.0 for p in frontier.points)


@pytest.mark.parametrize(
    ("slas", "message"),
    [
        pytest.param("abc", "slas = 'abc': give seconds, comma-separated", id="not-a-number"),
        pytest.param("0", "slas = '0': give SLAs > 0 seconds, comma-separated", id="zero"),
    ],
)
def test_bad_slas_stop_before_any_cell_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], slas: str, message: str
) -> None:
    # GIVEN --slas the bench would refuse (a ValueError or ArrivalError traceback, after the
    # workloads were loaded); no workload may be loaded before the check
    def no_workloads(*_: object) -> None:
        raise AssertionError("workloads loaded before --slas was checked")

    monkeypatch.setattr(frontier_cells, "chosen_workloads", no_workloads)
    monkeypatch.setattr(sys, "argv", ["frontier_cells.py", "steady", "--slas", slas])

    with pytest.raises(SystemExit) as exited:
        frontier_cells.main()

    # THEN argparse's usage error: exit 2, the bench's words for what is wrong
    assert exited.value.code == 2
    assert capsys.readouterr().err.strip().endswith(f"frontier_cells.py: error: {message}")
