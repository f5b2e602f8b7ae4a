"""The yardstick's rows, grids, bisection and run cache (sim/tuning.py)."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest

from queue_autoscale.core import DEFAULT_POLICY
from queue_autoscale.sim.arrivals import read_trace
from queue_autoscale.sim.runner import RunSpec
from queue_autoscale.sim.scores import Score
from queue_autoscale.sim.tuning import (
    Bisection,
    Row,
    RunCache,
    Runs,
    Search,
    cell_keys,
    code_fingerprint,
    floors,
    knob_grid,
    our_keys,
    peer_searches,
    set_rows,
)
from queue_autoscale.sim.workload import build_workload


def test_the_split_is_the_issues() -> None:
    tuning = [r.label for r in set_rows("tuning")]
    validation = [r.label for r in set_rows("validation")]
    assert {r for r in tuning if r.startswith("nasa")} == {
        "nasa day 8", "nasa day 12", "nasa day 19"}  # fmt: skip
    assert {r for r in validation if r.startswith("nasa")} == {
        "nasa day 46", "nasa day 37", "nasa day 57"}  # fmt: skip
    assert {r.split(" seed ")[1] for r in tuning if " seed " in r} == {"0"}
    assert {r.split(" seed ")[1] for r in validation if " seed " in r} == {"1", "2", "3"}
    assert len(validation) == 6 * 3 + 3 and not set(tuning) & set(validation)
    assert not any(r.startswith("nasa") for r in (x.label for x in set_rows("tuning", False)))


def test_scenarios_run_whole() -> None:
    assert Row("diurnal", 1).counts(Path("/nonexistent")).size == 86_400
    assert Row("flash-crowd", 2).counts(Path("/nonexistent")).size == 3_600


def test_a_nasa_day_is_its_86400_second_block_times_10(nasa_trace: Path) -> None:
    day = Row("nasa", 1, 57).counts(nasa_trace)
    whole = read_trace(nasa_trace)
    assert day.size == 86_400
    assert int(day.sum()) == 10 * int(whole[57 * 86_400 : 58 * 86_400].sum()) == 916_530


@pytest.mark.parametrize("top", [1, 10, 30, 60, 300])
def test_grid_steps_at_most_25_percent_from_1_to_the_documented_value(top: int) -> None:
    grid = knob_grid(top)
    assert grid[0] == 1 and grid[-1] == top
    assert all(b == a + 1 or b <= 1.25 * a for a, b in pairwise(grid))
    assert grid == sorted(set(grid))


@pytest.mark.parametrize("falling", [True, False])
@pytest.mark.parametrize("turn", [-1, 0, 7, 25, 26])
def test_bisection_finds_the_turn_in_log_steps(falling: bool, turn: int) -> None:
    """26 values; meeting holds up to `turn` (falling) or from `turn` (rising)."""
    values = list(range(100, 126))
    search = Bisection(values, falling)
    while not search.done:
        index = values.index(search.wanted())
        search.feed(index <= turn if falling else index >= turn)
    assert len(search.seen) <= 5
    if falling:  # the last meeting index (-1: none meets)
        assert search.lo == min(turn, 25)
    else:  # the first meeting index (26: none meets)
        assert search.hi == min(max(turn, 0), 26)


def test_floors_are_0_1_and_the_erlang_size_of_the_mean_rate() -> None:
    spec = RunSpec()
    assert floors(20.0, spec, 30.0, 0.999)[:2] == [0, 1]
    assert 21 <= floors(20.0, spec, 30.0, 0.999)[-1] <= 30


def test_a_cell_chooses_among_its_own_floors_only() -> None:
    counts = np.full(3600, 20, dtype=np.int64)
    searches = peer_searches(counts, RunSpec(), 30.0, 0.99)
    for s in searches:
        s.bisection.feed(True)
    keda = cell_keys(searches, "keda", "min_replicas", [0, 1])
    assert keda and all("min_replicas=0" in k[0] or "min_replicas=1" in k[0] for k in keda)
    assert all(k[0].startswith("keda(") and k[1:] == (None, None) for k in keda)


def test_a_peer_is_run_once_and_scored_at_every_sla() -> None:
    counts = np.full(1800, 5, dtype=np.int64)
    spec = RunSpec(provision_jitter_seconds=10.0, interval_seconds=10)
    workload = build_workload("flat", counts, spec.fleet(), seed=1)
    runs = Runs(workload, counts, spec, (10.0, 300.0))
    search = Search(10.0, 0.99, "keda", "queue_length", (("min_replicas", 0.0),),
                    Bisection([4], True))  # fmt: skip
    key = search.key(4)
    runs.ensure([key, key])
    assert list(runs.scores) == [key]
    at_10, at_300 = runs.score(key, 10.0), runs.score(key, 300.0)
    assert at_10.worker_seconds == at_300.worker_seconds  # the same run
    assert at_10.sla_compliance <= at_300.sla_compliance
    runs.ensure([key])
    assert len(runs.scores) == 1  # cached


def test_each_judged_policy_is_run_for_its_cells_seed_hybrid_per_sla() -> None:
    slower = f"{DEFAULT_POLICY}(interval=30)"
    keys = our_keys([DEFAULT_POLICY, slower, "seed-hybrid"], [10.0, 300.0], [0.95, 0.99])
    assert (DEFAULT_POLICY, 10.0, 0.95) in keys and (slower, 300.0, 0.99) in keys
    assert ("seed-hybrid", 10.0, None) in keys and ("seed-hybrid", 10.0, 0.95) not in keys
    assert ("reaction-bound", 300.0, None) in keys
    assert len(keys) == len(set(keys)) == 2 * 2 * 2 + 2 + 2


def test_a_fingerprint_changes_with_the_code_it_covers_only(tmp_path: Path) -> None:
    (tmp_path / "sim" / "peers").mkdir(parents=True)
    (tmp_path / "core").mkdir()
    (tmp_path / "sim" / "engine.py").write_text("x = 1\n")
    (tmp_path / "sim" / "peers" / "keda.py").write_text("y = 1\n")
    (tmp_path / "core" / "predictive.py").write_text("z = 1\n")
    peers_before = code_fingerprint(["sim/engine.py", "sim/peers"], tmp_path)
    all_before = code_fingerprint(["."], tmp_path)
    (tmp_path / "core" / "predictive.py").write_text("z = 2\n")
    assert code_fingerprint(["sim/engine.py", "sim/peers"], tmp_path) == peers_before
    assert code_fingerprint(["."], tmp_path) != all_before
    (tmp_path / "sim" / "peers" / "keda.py").write_text("y = 2\n")
    assert code_fingerprint(["sim/engine.py", "sim/peers"], tmp_path) != peers_before


def test_the_cache_keeps_peers_across_a_change_of_ours_but_never_our_runs(tmp_path: Path) -> None:
    row = Row("spike", 1)
    score = Score(
        policy="p", workload="w", jobs=100, served=100, in_service=0, waiting=0,
        sla_seconds=30.0, sla_compliance=0.991, p50_pickup_seconds=0.0,
        p99_pickup_seconds=1.0, max_pickup_seconds=2.0, worker_seconds=1000.0,
        busy_seconds=800.0, utilization=0.8, scaling_actions=3, cost_usd=1.0,
        mean_workers=1.0, peak_workers=2, duration_seconds=100, wall_seconds=0.1,
    )  # fmt: skip
    peer = ("keda(queue_length=4,min_replicas=0)", None, None)
    ours = (DEFAULT_POLICY, 30.0, 0.99)
    # a core policy with a knob and an ablation are ours too: kept only for the same code
    slower = (f"{DEFAULT_POLICY}(interval=30)", 30.0, 0.99)
    ablation = ("predictive-no-orders", 30.0, 0.99)
    bound = ("reaction-bound", 30.0, None)
    runs = {peer: {30.0: score}, bound: {30.0: score}}
    runs |= {key: {30.0: score} for key in (ours, slower, ablation)}
    RunCache(tmp_path, ours="code-a", peers="peers-1").save(row, runs)
    assert RunCache(tmp_path, ours="code-a", peers="peers-1").load(row) == runs
    changed = RunCache(tmp_path, ours="code-b", peers="peers-1").load(row)
    assert changed == {peer: {30.0: score}, bound: {30.0: score}}  # ours re-run
    assert RunCache(tmp_path, ours="code-a", peers="peers-2").load(row) == {
        key: {30.0: score} for key in (ours, slower, ablation)
    }
    more = {(DEFAULT_POLICY, 30.0, 0.95): {30.0: score}}
    RunCache(tmp_path, ours="code-a", peers="peers-1").save(row, more)
    assert RunCache(tmp_path, ours="code-a", peers="peers-1").load(row) == {**runs, **more}
