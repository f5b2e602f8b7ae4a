"""One verdict cell, run as the verdict runs it (benchmarks/verdict_cell.py)."""

import re

import pytest

from benchmarks import verdict_cell
from benchmarks.cell_jitter import find_row
from benchmarks.frontier_verdict import DEFAULT_TRACE, run_spec
from queue_autoscale.sim.bound import NAME as BOUND_NAME
from queue_autoscale.sim.tuning import our_keys, row_runs

PEER = "keda(queue_length=20,scale_down_stabilization=60,min_replicas=0)"


@pytest.mark.parametrize(
    ("policy", "key"),
    [
        pytest.param("predictive", ("predictive", 60.0, 0.99), id="ours-per-cell"),
        pytest.param("seed-hybrid", ("seed-hybrid", 60.0, None), id="seeded-per-sla"),
        pytest.param(BOUND_NAME, (BOUND_NAME, 60.0, None), id="bound-per-sla"),
        pytest.param(PEER, (PEER, None, None), id="peer-once-a-row"),
    ],
)
def test_the_cell_runs_the_key_the_verdict_judges(policy: str, key: tuple[object, ...]) -> None:
    assert verdict_cell.cell_key(policy, 60.0, 0.99) == key
    if policy != PEER:  # ours and the bound: among the runs the verdict makes for the row
        assert key in our_keys(["predictive", "seed-hybrid"], [60.0], [0.99])


def test_the_printed_score_is_the_verdicts_run(capsys: pytest.CaptureFixture[str]) -> None:
    # GIVEN the verdict's own run of one cell (the row's jobs, jitter and jump ticks)
    row = find_row("flash-crowd seed 0")
    runs = row_runs(row, DEFAULT_TRACE, run_spec(), (300.0,))
    key = verdict_cell.cell_key("predictive", 300.0, 0.95)
    runs.ensure([key])
    score = runs.score(key, 300.0)

    # WHEN the tool runs the same cell with its desired-count changes
    assert verdict_cell.main(["flash-crowd seed 0", "300", "0.95", "--changes"]) == 0
    lines = capsys.readouterr().out.splitlines()

    # THEN its score line is the verdict's, and every change it lists is one
    assert lines[0] == verdict_cell.score_line("flash-crowd seed 0", 300.0, 0.95, score)
    assert f"{score.worker_seconds:,.0f} worker-s" in lines[0]
    changes = [re.match(r"^(\d+) (\d+) -> (\d+) running", line) for line in lines[1:]]
    assert changes and all(m is not None and m.group(2) != m.group(3) for m in changes)
    # AND the first change after the crowd's start (30:00 after a 600 s warm-up) is a rise
    # within 30 s of it
    second, before, after = next(
        (int(m.group(1)), int(m.group(2)), int(m.group(3)))
        for m in changes
        if m and int(m.group(1)) >= 2400
    )
    assert second <= 2430 and after > before


def test_a_bad_target_stops_before_any_run(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        verdict_cell.main(["steady seed 1", "10", "99"])
    assert exited.value.code == 2
    assert "give an SLA > 0 s and a target in (0, 1): 10, 99" in capsys.readouterr().err
