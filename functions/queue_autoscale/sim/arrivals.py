"""Arrival processes for the simulator: recorded per-second traces and seeded generators.

Everything here works in *per-second counts* (an int64 array, one entry per second); the
engine spreads each second's arrivals uniformly inside it and draws service times.
"""

from __future__ import annotations

import bz2
import gzip
import math
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal

import numpy as np
import numpy.typing as npt

Counts = npt.NDArray[np.int64]
"""Jobs arriving in each second."""


class ArrivalError(ValueError):
    """A trace or scenario that cannot be used; the message names the file or field and value."""


# --------------------------------------------------------------------------- traces


TarMode = Literal["r:bz2", "r:gz", "r:xz", "r:"]

TAR_MODES: dict[str, TarMode] = {
    ".tbz2": "r:bz2",
    ".tar.bz2": "r:bz2",
    ".tar.gz": "r:gz",
    ".tgz": "r:gz",
    ".tar.xz": "r:xz",
    ".txz": "r:xz",
    ".tar": "r:",
}
"""Each archive suffix's tarfile mode: one compression tried, so a bad file is one reason."""


def _read_bytes(path: Path) -> bytes:
    name = path.name.lower()
    mode = next((m for suffix, m in TAR_MODES.items() if name.endswith(suffix)), None)
    if mode is not None:
        with tarfile.open(path, mode) as archive:
            members = [member for member in archive.getmembers() if member.isfile()]
            if not members:
                raise ArrivalError(f"{path}: the archive holds no file")
            handle = archive.extractfile(members[0])
            if handle is None:  # pragma: no cover - isfile() members always extract
                raise ArrivalError(f"{path}: cannot read {members[0].name} from the archive")
            return handle.read()
    if name.endswith(".gz"):
        return gzip.decompress(path.read_bytes())
    if name.endswith(".bz2"):
        return bz2.decompress(path.read_bytes())
    return path.read_bytes()


MAX_JOBS_PER_SECOND = 10**9
"""The most jobs one second of a trace may hold, after scaling (int64 and the engine's sanity)."""
MAX_SCENARIO_SECONDS = 31 * 86_400
"""The longest synthetic workload, a month: its counts are drawn in memory for every second
(a day at 20 jobs/s is 1.7M jobs to simulate per policy), where a trace is cut to its file."""


def check_length(length: int | None, most: int | None = None) -> None:
    """ArrivalError unless `length` (seconds; None: the default) is at least 1 and at most
    `most`."""
    if length is not None and length < 1:
        raise ArrivalError(f"length = {length}: must be >= 1 second")
    if length is not None and most is not None and length > most:
        raise ArrivalError(
            f"length = {length:,}: a scenario runs at most {most:,} s ({most / 86_400:g} days)"
        )


@lru_cache(maxsize=4)
def _parse_trace(path_text: str, mtime_ns: int) -> Counts:
    path = Path(path_text)
    try:
        tokens = _read_bytes(path).split()
    except (OSError, tarfile.TarError, EOFError) as error:
        raise ArrivalError(f"{path}: cannot read trace: {error}") from None
    try:
        counts = np.array([int(token) for token in tokens], dtype=np.int64)
        if counts.size and int(counts.max()) > MAX_JOBS_PER_SECOND:
            raise OverflowError
    except (ValueError, OverflowError):
        for position, token in enumerate(tokens):
            shown = token.decode(errors="replace")[:40]
            try:
                value = int(token)
            except ValueError:
                raise ArrivalError(
                    f"{path}: value #{position + 1} = {shown!r} is not a whole count of jobs"
                ) from None
            if value > MAX_JOBS_PER_SECOND:
                raise ArrivalError(
                    f"{path}: value #{position + 1} = {shown} is above "
                    f"{MAX_JOBS_PER_SECOND:,} jobs in a second"
                ) from None
        raise  # pragma: no cover - the loop finds the bad token
    if counts.size == 0:
        raise ArrivalError(f"{path}: the trace holds no counts")
    negative = np.flatnonzero(counts < 0)
    if negative.size:
        first = int(negative[0])
        raise ArrivalError(f"{path}: value #{first + 1} = {counts[first]} is negative")
    counts.setflags(write=False)
    return counts


def read_trace(
    path: str | Path, scale: int = 1, start: int = 0, length: int | None = None
) -> Counts:
    """Per-second counts from a whitespace-separated text file, plain or inside a .tbz2/.tar.gz
    archive (its first file) or a .gz/.bz2 file, read in place.

    `scale` multiplies every second's count (a busier queue with the same shape); `start` and
    `length` (seconds) cut a window out of the trace.
    """
    file = Path(path)
    if not file.exists():
        raise ArrivalError(f"trace file not found: {file}")
    if not file.is_file():  # a folder or a device (reading /dev/zero would never end)
        raise ArrivalError(f"trace {file}: not a file (a folder or a device)")
    if scale < 1:
        raise ArrivalError(f"scale = {scale}: must be a whole number >= 1")
    if start < 0:
        raise ArrivalError(f"start = {start}: must be >= 0 seconds")
    check_length(length)
    counts = _parse_trace(str(file.resolve()), file.stat().st_mtime_ns)
    if start >= counts.size:
        raise ArrivalError(f"start = {start}: the trace {file} has only {counts.size} seconds")
    end = counts.size if length is None else min(counts.size, start + length)
    window = counts[start:end]
    if int(window.max()) * scale > MAX_JOBS_PER_SECOND:
        raise ArrivalError(
            f"scale = {scale}: the busiest second ({int(window.max())} jobs) would exceed "
            f"{MAX_JOBS_PER_SECOND:,} jobs in a second"
        )
    return window * np.int64(scale)


def minute_rates(counts: Counts) -> npt.NDArray[np.float64]:
    """Mean arrival rate of each whole minute, jobs/s (a partial last minute is dropped; a
    window shorter than a minute gives its own mean)."""
    minutes = counts.size // 60
    if minutes == 0:
        return np.array([float(counts.mean()) if counts.size else 0.0])
    rates: npt.NDArray[np.float64] = counts[: minutes * 60].reshape(minutes, 60).mean(axis=1)
    return rates


# --------------------------------------------------------------------------- scenarios

RateFunction = Callable[[npt.NDArray[np.float64], np.random.Generator], npt.NDArray[np.float64]]


@dataclass(frozen=True, slots=True)
class Scenario:
    """A synthetic arrival pattern: the rate (jobs/s) at each second, drawn as Poisson counts."""

    name: str
    default_length_seconds: int
    description: str
    """The rates and timings, in words (shown by the CLI and docs/simulator.md)."""
    rate: RateFunction

    def counts(self, seed: int = 0, length_seconds: int | None = None) -> Counts:
        """Per-second Poisson counts with mean rate(t); the same seed gives the same counts."""
        length = self.default_length_seconds if length_seconds is None else length_seconds
        check_length(length, MAX_SCENARIO_SECONDS)
        rng = np.random.default_rng(seed)
        seconds = np.arange(length, dtype=np.float64)
        rate = np.clip(self.rate(seconds, rng), 0.0, None)
        return rng.poisson(rate).astype(np.int64)


def _steady(t: npt.NDArray[np.float64], _: np.random.Generator) -> npt.NDArray[np.float64]:
    return np.full_like(t, 20.0)


def _spike(t: npt.NDArray[np.float64], _: np.random.Generator) -> npt.NDArray[np.float64]:
    # 10 jobs/s, a 5x step to 50 jobs/s from minute 30 to minute 60, back to 10.
    return np.where((t >= 1800) & (t < 3600), 50.0, 10.0)


def _diurnal(t: npt.NDArray[np.float64], _: np.random.Generator) -> npt.NDArray[np.float64]:
    # A day: 20 jobs/s on average, trough 4 jobs/s at 04:00, peak 36 jobs/s at 16:00.
    wave: npt.NDArray[np.float64] = np.cos(2.0 * math.pi * (t - 4 * 3600.0) / 86_400.0)
    return 20.0 - 16.0 * wave


def _ramp(t: npt.NDArray[np.float64], _: np.random.Generator) -> npt.NDArray[np.float64]:
    # 5 jobs/s rising linearly to 50 jobs/s over 90 minutes, then holding.
    return 5.0 + 45.0 * np.clip(t / 5400.0, 0.0, 1.0)


def _bursty(t: npt.NDArray[np.float64], _: np.random.Generator) -> npt.NDArray[np.float64]:
    # On/off: 5 minutes at 40 jobs/s, then 10 minutes at 2 jobs/s, repeating.
    return np.where((t % 900.0) < 300.0, 40.0, 2.0)


def _flash_crowd(t: npt.NDArray[np.float64], _: np.random.Generator) -> npt.NDArray[np.float64]:
    # 5 jobs/s, then 20x (100 jobs/s) for 5 minutes from minute 30.
    return np.where((t >= 1800) & (t < 2100), 100.0, 5.0)


SCENARIOS: dict[str, Scenario] = {
    scenario.name: scenario
    for scenario in (
        Scenario("steady", 7200, "20 jobs/s for 2 h", _steady),
        Scenario("spike", 7200, "10 jobs/s; a 5x step to 50 jobs/s from 0:30 to 1:00; 2 h", _spike),
        Scenario(
            "diurnal",
            86_400,
            "one day, 20 jobs/s mean: 4 jobs/s at 04:00 rising to 36 jobs/s at 16:00 (cosine)",
            _diurnal,
        ),
        Scenario("ramp", 7200, "5 jobs/s rising linearly to 50 jobs/s by 1:30, held; 2 h", _ramp),
        Scenario(
            "bursty",
            7200,
            "on/off: 5 min at 40 jobs/s then 10 min at 2 jobs/s, repeating; 2 h",
            _bursty,
        ),
        Scenario(
            "flash-crowd",
            3600,
            "5 jobs/s; 20x (100 jobs/s) for 5 min from 0:30; 1 h",
            _flash_crowd,
        ),
    )
}


def scenario(name: str) -> Scenario:
    """The named scenario; an unknown name lists the known ones."""
    try:
        return SCENARIOS[name]
    except KeyError:
        known = ", ".join(SCENARIOS)
        raise ArrivalError(f"unknown scenario {name!r}: choose one of {known}") from None


# --------------------------------------------------------------------------- jobs


def arrival_times(counts: Counts, rng: np.random.Generator) -> npt.NDArray[np.float64]:
    """Each second's arrivals spread uniformly inside it; sorted, seconds from the start."""
    seconds = np.repeat(np.arange(counts.size, dtype=np.float64), counts)
    times = seconds + rng.random(seconds.size)
    times.sort(kind="stable")
    return times


def service_times(
    jobs: int,
    mean_seconds: float,
    cv: float,
    rng: np.random.Generator,
    distribution: str = "gamma",
) -> npt.NDArray[np.float64]:
    """Job durations with the given mean (s) and coefficient of variation.

    gamma (shape 1/cv^2; cv = 1 is exponential) or lognormal; cv = 0 gives a constant.
    """
    if mean_seconds <= 0 or not math.isfinite(mean_seconds):
        raise ArrivalError(f"service time = {mean_seconds}: must be > 0 seconds")
    if cv < 0 or not math.isfinite(cv):
        raise ArrivalError(f"service cv = {cv}: must be >= 0")
    if cv == 0:
        return np.full(jobs, mean_seconds, dtype=np.float64)
    if distribution == "gamma":
        shape = 1.0 / (cv * cv)
        return rng.gamma(shape, mean_seconds / shape, size=jobs)
    if distribution == "lognormal":
        sigma2 = math.log1p(cv * cv)
        drawn: npt.NDArray[np.float64] = rng.lognormal(
            math.log(mean_seconds) - sigma2 / 2.0, math.sqrt(sigma2), size=jobs
        )
        return drawn
    raise ArrivalError(f"service distribution = {distribution!r}: choose gamma or lognormal")
