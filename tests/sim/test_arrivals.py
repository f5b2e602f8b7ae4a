"""Arrival processes: trace reading (plain and archived), scale and window; the scenarios."""

from __future__ import annotations

import bz2
import gzip
import io
import tarfile
from pathlib import Path

import numpy as np
import pytest

from queue_autoscale.sim.arrivals import (
    SCENARIOS,
    ArrivalError,
    arrival_times,
    read_trace,
    scenario,
    service_times,
)

TEXT = b"1 0 2\n3 0 0 4 1\n"
VALUES = [1, 0, 2, 3, 0, 0, 4, 1]


def _write(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    if name.endswith(".tbz2"):
        with tarfile.open(path, "w:bz2") as archive:
            info = tarfile.TarInfo("workload.txt")
            info.size = len(TEXT)
            archive.addfile(info, io.BytesIO(TEXT))
    elif name.endswith(".gz"):
        path.write_bytes(gzip.compress(TEXT))
    elif name.endswith(".bz2"):
        path.write_bytes(bz2.compress(TEXT))
    else:
        path.write_bytes(TEXT)
    return path


@pytest.mark.parametrize("name", ["plain.txt", "counts.gz", "counts.bz2", "trace.tbz2"])
def test_reads_every_format_in_place(tmp_path: Path, name: str) -> None:
    assert read_trace(_write(tmp_path, name)).tolist() == VALUES


def test_scale_and_window(tmp_path: Path) -> None:
    path = _write(tmp_path, "plain.txt")
    assert read_trace(path, scale=3, start=2, length=3).tolist() == [6, 9, 0]
    assert read_trace(path, start=6).tolist() == [4, 1]  # window runs past the end: truncated


@pytest.mark.parametrize(
    ("content", "kwargs", "message"),
    [
        pytest.param(b"1 2 x 4", {}, "value #3 = 'x' is not a whole count", id="not-a-number"),
        pytest.param(b"1 -2 3", {}, "value #2 = -2 is negative", id="negative"),
        pytest.param(b"  \n", {}, "holds no counts", id="empty"),
        pytest.param(b"1 2", {"scale": 0}, "scale = 0", id="scale"),
        pytest.param(b"1 2", {"start": 5}, "start = 5: the trace", id="start-past-end"),
        pytest.param(b"1 2", {"length": 0}, "length = 0", id="length"),
        pytest.param(
            b"1 99999999999999999999999 3",
            {},
            "value #2 = 99999999999999999999999 is above 1,000,000,000 jobs",
            id="beyond 64 bits",
        ),
        pytest.param(
            b"1 3",
            {"scale": 10**30},
            "scale = 1000000000000000000000000000000: the busiest",
            id="scale overflows",
        ),
    ],
)
def test_bad_traces_name_the_value(
    tmp_path: Path, content: bytes, kwargs: dict[str, int], message: str
) -> None:
    path = tmp_path / "bad.txt"
    path.write_bytes(content)
    with pytest.raises(ArrivalError, match=message):
        read_trace(path, **kwargs)


def test_missing_trace_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ArrivalError, match="trace file not found"):
        read_trace(tmp_path / "nope.tbz2")


def test_nasa_trace_reads_from_the_archive(nasa_trace: Path) -> None:
    counts = read_trace(nasa_trace, scale=10, start=0, length=10)
    assert counts.tolist() == [10, 0, 0, 0, 0, 10, 0, 0, 10, 0]
    assert read_trace(nasa_trace).size == 5_059_950


@pytest.mark.parametrize(
    ("name", "windows", "ratio"),
    [
        pytest.param("spike", ((0, 1800), (1800, 3600)), 5.0, id="spike-5x"),
        pytest.param("flash-crowd", ((0, 1800), (1800, 2100)), 20.0, id="flash-crowd-20x"),
        pytest.param("bursty", ((300, 900), (0, 300)), 20.0, id="bursty-on-off"),
        pytest.param("ramp", ((0, 300), (5400, 7200)), 50.0 / 6.25, id="ramp"),
        pytest.param("diurnal", ((0, 3600 * 6), (3600 * 14, 3600 * 18)), 35.0 / 6.3, id="diurnal"),
    ],
)
def test_scenario_shapes(name: str, windows: tuple[tuple[int, int], ...], ratio: float) -> None:
    counts = scenario(name).counts(seed=11)
    (a0, a1), (b0, b1) = windows
    assert counts[b0:b1].mean() / counts[a0:a1].mean() == pytest.approx(ratio, rel=0.08)


def test_scenarios_are_seeded_and_documented() -> None:
    for name, s in SCENARIOS.items():
        first = s.counts(seed=5, length_seconds=600)
        assert np.array_equal(first, s.counts(seed=5, length_seconds=600)), name
        assert not np.array_equal(first, s.counts(seed=6, length_seconds=600)), name
        assert s.description and s.default_length_seconds >= 3600
    assert scenario("steady").counts(seed=1).mean() == pytest.approx(20.0, rel=0.01)


def test_unknown_scenario_lists_the_known_ones() -> None:
    with pytest.raises(ArrivalError, match=r"unknown scenario .storm.*steady"):
        scenario("storm")


def test_arrival_times_spread_inside_their_second() -> None:
    counts = np.array([2, 0, 3], dtype=np.int64)
    times = arrival_times(counts, np.random.default_rng(0))
    assert times.size == 5
    assert np.all(np.diff(times) >= 0)
    assert np.floor(times).astype(int).tolist() == [0, 0, 2, 2, 2]


@pytest.mark.parametrize("distribution", ["gamma", "lognormal"])
@pytest.mark.parametrize("cv", [0.5, 1.0, 2.0])
def test_service_times_have_the_asked_mean_and_cv(distribution: str, cv: float) -> None:
    durations = service_times(400_000, 2.0, cv, np.random.default_rng(1), distribution)
    assert durations.mean() == pytest.approx(2.0, rel=0.02)
    assert durations.std() / durations.mean() == pytest.approx(cv, rel=0.05)


def test_constant_service_times_and_bad_parameters() -> None:
    assert service_times(3, 1.5, 0.0, np.random.default_rng(0)).tolist() == [1.5, 1.5, 1.5]
    with pytest.raises(ArrivalError, match="service time = 0"):
        service_times(3, 0.0, 1.0, np.random.default_rng(0))
    with pytest.raises(ArrivalError, match="service cv = -1"):
        service_times(3, 1.0, -1.0, np.random.default_rng(0))
    with pytest.raises(ArrivalError, match="weibull"):
        service_times(3, 1.0, 1.0, np.random.default_rng(0), "weibull")
