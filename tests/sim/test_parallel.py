"""Independent simulator runs spread over processes give exactly the serial results."""

from __future__ import annotations

import os

import numpy as np
import pytest

from queue_autoscale.sim.arrivals import ArrivalError, scenario
from queue_autoscale.sim.runner import (
    PROCESSES_ENV,
    RunSpec,
    compare,
    parallel_map,
    sim_processes,
)


def _pid_and_square(x: int) -> tuple[int, int]:
    return os.getpid(), x * x


def test_parallel_map_keeps_order_and_uses_other_processes() -> None:
    seen: list[int] = []
    out = parallel_map(_pid_and_square, range(12), processes=2, done=seen.append)
    assert [square for _, square in out] == [x * x for x in range(12)]
    assert seen == list(range(12))  # done(index) in order, in this process
    assert os.getpid() not in {pid for pid, _ in out}


def test_a_closure_reaches_the_workers_without_pickling() -> None:
    big = np.arange(1_000_000)  # captured, not sent

    def total(k: int) -> int:
        return int(big[::k].sum())

    assert parallel_map(total, [1, 2, 3], processes=2) == [int(big[::k].sum()) for k in (1, 2, 3)]


def test_a_worker_runs_nested_maps_itself() -> None:
    def nested(x: int) -> list[tuple[int, int]]:
        return parallel_map(_pid_and_square, [x, x + 1], processes=2)

    out = parallel_map(nested, [1, 5], processes=2)
    for inner in out:
        assert len({pid for pid, _ in inner}) == 1  # no grandchildren: the worker ran both
    assert [[sq for _, sq in inner] for inner in out] == [[1, 4], [25, 36]]


def test_processes_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PROCESSES_ENV, "3")
    assert sim_processes() == 3
    monkeypatch.setenv(PROCESSES_ENV, "0")
    assert sim_processes() == 1
    monkeypatch.setenv(PROCESSES_ENV, "many")
    with pytest.raises(ArrivalError, match=PROCESSES_ENV):
        sim_processes()


def test_compare_in_parallel_equals_compare_in_one_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counts = scenario("spike").counts(seed=0, length_seconds=1_200)
    spec = RunSpec(provision_jitter_seconds=10.0, interval_seconds=10)
    names = ["predictive", "seed-hybrid", "keda", "target-tracking", "static"]
    monkeypatch.setenv(PROCESSES_ENV, "1")
    serial = compare("spike", counts, names, spec, record_decisions=True)
    monkeypatch.setenv(PROCESSES_ENV, "2")
    progress: list[tuple[str, int, int]] = []
    forked = compare(
        "spike",
        counts,
        names,
        spec,
        progress=lambda *args: progress.append(args),
        record_decisions=True,
    )
    strip = [{**s.to_dict(), "wall_seconds": 0} for s in serial.scores]
    assert [{**s.to_dict(), "wall_seconds": 0} for s in forked.scores] == strip
    for a, b in zip(serial.results, forked.results, strict=True):
        np.testing.assert_array_equal(a.starts, b.starts)
        assert a.series == b.series
        assert b.workload is forked.workload
    assert forked.decisions == serial.decisions
    horizon = forked.workload.horizon_seconds
    assert progress == [(name, horizon, horizon) for name in names]
