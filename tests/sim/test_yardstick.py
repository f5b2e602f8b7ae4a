"""One row through the yardstick: tuned peers, the verdict per cell, the results file."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from queue_autoscale.core import DEFAULT_POLICY
from queue_autoscale.sim.runner import RunSpec
from queue_autoscale.sim.tuning import Row, knob_grid, our_key, tune_row
from queue_autoscale.sim.verdict import cheapest, judge
from queue_autoscale.sim.yardstick import Judged, judge_row, results_markdown


def test_flash_crowd_at_300_s_tuned_peers_and_verdict() -> None:
    """flash-crowd seed 1, SLA 300 s, 99 %: each tuned peer meets the target and is no dearer
    than any other meeting run of its kind; every keda run the searches made lies on the
    grid up to the documented queueLength (300); each judged policy's verdict is `judge`'s on
    the same yardsticks with its own run."""
    spec = RunSpec(provision_jitter_seconds=10.0, interval_seconds=10)
    policies = (DEFAULT_POLICY, "seed-hybrid")
    rr = tune_row(
        Row("flash-crowd", 1), Path("/nonexistent"), spec, (300.0,), (0.99,), None, policies
    )
    (judged,) = judge_row(rr, (300.0,), (0.99,), policies)
    cell = judged.cell
    assert cell.row == "flash-crowd seed 1" and not cell.steady
    grid = {f"queue_length={v}," for v in knob_grid(300)}
    assert cell.keda and all(any(g in r.label for g in grid) for r in cell.keda)
    for runs in (cell.keda, cell.target_tracking):
        best = cheapest(runs, 0.99)
        assert best is not None and best.compliance >= 0.99
        assert all(r.worker_seconds >= best.worker_seconds for r in runs if r.meets(0.99))
    static = cheapest(cell.static, 0.99)
    assert static is not None
    size = int(static.label.split("=")[1].rstrip(")"))
    smaller = [r for r in cell.static if int(r.label.split("=")[1].rstrip(")")) == size - 1]
    assert smaller and not smaller[0].meets(0.99)  # the least meeting size, by bisection
    for policy in policies:
        run = rr.runs.score(our_key(policy, 300.0, 0.99), 300.0)
        mine = judged.cells[policies.index(policy)]
        assert mine.ours.worker_seconds == run.worker_seconds and mine.ours.label == policy
        assert replace(mine, ours=cell.ours) == cell  # the same yardsticks
        assert judged.verdict_of(policy) == judge(mine)
    text = results_markdown([(cell.row, [judged])], "validation", "cmd", "base", [], 1.0, "m")
    words = ["pass" if judged.verdict_of(p).passed else "not met" for p in policies]
    assert f"| flash-crowd seed 1 | 300 | {words[0]} | {words[1]} |" in text
    assert f"{DEFAULT_POLICY} beats seed-hybrid: **" in text
    assert "NASA days 46, 37, 57" in text and "NASA days 8, 12, 19" in text


def test_only_peers_with_a_floor_of_0_or_1_are_reacting() -> None:
    """A floor at the Erlang-C size holds workers before a surge: no reaction bound covers it,
    so such a run never shows the bound is no bound."""
    from queue_autoscale.sim.verdict import Run
    from queue_autoscale.sim.yardstick import _reacting

    def run(label: str) -> Run:
        return Run(label, 0.9, 1.0, 0, 1.0, 0.5)

    assert _reacting(run("keda(queue_length=3,scale_down_stabilization=0,min_replicas=1)"))
    assert _reacting(run("target-tracking(target_value=3,scale_in_cooldown=60,min_capacity=0)"))
    assert not _reacting(run("keda(queue_length=3,scale_down_stabilization=0,min_replicas=21)"))
    assert not _reacting(run("static(size=1)"))


def _judged(key_row: str, passes: dict[str, bool], worker_seconds: dict[str, float]) -> Judged:
    """A hand-made cell where each policy passes or not as given."""
    from queue_autoscale.sim.verdict import Cell, Run, Verdict

    policies = tuple(passes)
    runs = [Run(p, 0.99, worker_seconds[p], 0, 1.0, 0.9) for p in policies]
    base = Cell(key_row, False, 30.0, 0.99, runs[0], None, (), (), ())
    cells = tuple(replace(base, ours=r) for r in runs)
    verdicts = tuple(Verdict(passes[p], () if passes[p] else ("x",)) for p in policies)
    return Judged(policies, cells, verdicts, runs[0])


def test_the_ablation_counts_cells_gained_and_lost_and_keeps_only_a_clean_gain() -> None:
    """`a` gains cell 1 and loses none: it stays; `b` gains cell 1 but loses cell 2: it goes;
    `c` changes nothing: it goes (gains none)."""
    from queue_autoscale.sim.yardstick import ablation_lines

    full, a, b, c = "predictive", "p-no-a", "p-no-b", "p-no-c"
    ws = {full: 100.0, a: 120.0, b: 90.0, c: 100.0}
    rows = [
        ("r", [
            _judged("r1", {full: True, a: False, b: False, c: True}, ws),
            _judged("r2", {full: False, a: False, b: True, c: False}, ws),
            _judged("r3", {full: True, a: True, b: True, c: True}, ws),
        ]),
    ]  # fmt: skip
    lines = ablation_lines(rows, full, {a: "a", b: "b", c: "c"})
    assert lines[2] == "| `a` (`p-no-a`) | 2 | 1 | 1 | 0 | 300 | 360 | yes |"
    assert lines[3] == "| `b` (`p-no-b`) | 2 | 2 | 1 | 1 | 300 | 270 | no: loses a cell |"
    assert lines[4] == "| `c` (`p-no-c`) | 2 | 2 | 0 | 0 | 300 | 300 | no: gains none |"
    assert "- `b` gains r1 / 30 s / 99.0%; loses r2 / 30 s / 99.0%." in lines
