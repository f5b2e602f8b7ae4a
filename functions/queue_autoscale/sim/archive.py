"""Read one queue's recorded jobs and decisions from the stack's archive, for a replay.

The archive is a folder (or an S3 copy of one) holding raw `events/dt=D/hour=H/*.jsonl.gz`
and `decisions/dt=D/*.jsonl.gz`, or the report's compacted `compacted_events/dt=D/hour=H/
*.parquet`. Events are read file by file in folder order (never the archive whole), each
checked against the event contract (`events.Event`), de-duplicated as compaction does (a
redelivery repeats an event whole: equal events are kept once) and paired per attempt as the
report pairs them (`glue_jobs/transforms/events.pair_attempts`): the earliest `queued` and
`started`, and of the finishing events a `failed` over a `completed`, then the later one.
An attempt with no `queued` event arrives at its start minus the pickup its worker measured
(a redelivered message's later attempt); an attempt that never started, of a job whose later
attempt is in the archive, is that same message and is not replayed twice.
An attempt is closed, and its events dropped, once it has finished and the archive has moved an
hour past it, so memory follows the jobs in flight, not the archive's size.
A damaged archive (unreadable files, lines that are not events, a missing day, duplicates) is
counted with reasons and skipped, never a crash.
"""

from __future__ import annotations

import gzip
import json
import math
import zlib
from array import array
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from queue_autoscale.core import DEFAULT_POLICY, POLICIES
from queue_autoscale.events import Event
from queue_autoscale.sim.jobs import JobTrace
from queue_autoscale.sim.workload import Floats
from queue_autoscale.validation import describe_error

HOUR_MS = 3_600_000
CLOSE_AFTER_MS = HOUR_MS
"""An attempt that has finished is closed once the archive has read this far past its last
event (SQS redelivers within the visibility timeout; a later copy is counted as late)."""
FAILED_BIT = 1 << 62
"""Orders the finishing events as the report does: failed above completed, then the later."""
RAW_SUFFIXES = (".jsonl.gz", ".jsonl")
"""The raw archive's event files (the ingest function writes .jsonl.gz)."""
MAX_REASONS = 20
"""Distinct skip reasons kept; any further ones are counted under 'other'."""


@dataclass(frozen=True, slots=True)
class Tick:
    """One decision of the recorded controller: epoch s, the workers billed (running, else
    current), the desired count it set and the policy that decided (None: not logged)."""

    at: float
    workers: int
    target: int
    policy: str | None = None


@dataclass
class Recorded:
    """What the archive says happened to one queue in a window."""

    trace: JobTrace
    """Every attempt with a queued event, its duration (drawn where none was recorded)."""
    pickups: Floats
    """Per attempt of `trace` (same order): realized pickup, s (NaN: never started)."""
    drawn: int = 0
    """Attempts without a completed/failed event, their duration drawn from the recorded ones."""
    ticks: list[Tick] = field(default_factory=list)
    events: int = 0
    """Events of this queue read (after de-duplication)."""
    skipped: Counter[str] = field(default_factory=Counter)
    """Lines, files or attempts left out, by reason."""
    end_epoch: float = 0.0
    """The latest event time read, epoch s."""

    @property
    def policy(self) -> str:
        """The policy that made most of the recorded decisions, as the decision log names it
        (the controller's default where it names none)."""
        named = Counter(tick.policy for tick in self.ticks if tick.policy)
        return named.most_common(1)[0][0] if named else DEFAULT_POLICY


@dataclass(slots=True)
class _Attempt:
    queued: int = -1
    started: int = -1
    pickup_ms: int = -1
    finish: int = -1
    duration_ms: int = -1
    last: int = 0
    seen: set[tuple[Any, ...]] = field(default_factory=set)


class _Pairing:
    """Open attempts of one queue and the closed ones' columns."""

    def __init__(self, start_ms: float, end_ms: float) -> None:
        self.open: dict[tuple[str, int], _Attempt] = {}
        self.closed: dict[tuple[str, int], int] = {}  # key -> last event ms
        self.retried: dict[str, int] = {}  # job_id -> its highest attempt, for attempts > 1
        self.start_ms, self.end_ms = start_ms, end_ms
        self.queued, self.started = array("d"), array("d")
        self.pickup, self.duration = array("d"), array("d")
        self.skipped: Counter[str] = Counter()
        self.events = 0
        self.newest = 0

    def add(self, event: Event) -> None:
        key = (event.job_id, event.attempt)
        if key in self.closed:
            self.skip("late event of an attempt already closed")
            return
        attempt = self.open.get(key)
        if event.attempt > 1:
            self.retried[event.job_id] = max(event.attempt, self.retried.get(event.job_id, 0))
        if attempt is None:
            attempt = self.open[key] = _Attempt()
        row = (event.type, event.at, event.duration_ms, event.pickup_ms, event.event_id)
        if row in attempt.seen:
            self.skip("duplicate event (redelivered)")
            return
        attempt.seen.add(row)
        self.events += 1
        at = event.at
        attempt.last = max(attempt.last, at)
        self.newest = max(self.newest, at)
        if event.type == "queued":
            attempt.queued = at if attempt.queued < 0 else min(attempt.queued, at)
        elif event.type == "started":
            attempt.started = at if attempt.started < 0 else min(attempt.started, at)
            if event.pickup_ms is not None:
                known = attempt.pickup_ms
                attempt.pickup_ms = event.pickup_ms if known < 0 else min(known, event.pickup_ms)
        else:
            finish = at + (FAILED_BIT if event.type == "failed" else 0)
            if finish > attempt.finish:
                attempt.finish, attempt.duration_ms = finish, event.duration_ms or 0

    def skip(self, reason: str) -> None:
        if reason not in self.skipped and len(self.skipped) >= MAX_REASONS:
            reason = "other"
        self.skipped[reason] += 1

    def close(self, everything: bool = False) -> None:
        """Close finished attempts an hour behind the newest event (all when `everything`)."""
        horizon = self.newest - CLOSE_AFTER_MS
        done = [
            key
            for key, a in self.open.items()
            if everything or (a.finish >= 0 and a.queued >= 0 and a.last < horizon)
        ]
        for key in done:
            self._emit(key, self.open.pop(key))
            self.closed[key] = self.newest
        stale = [key for key, seen in self.closed.items() if seen < horizon - CLOSE_AFTER_MS]
        for key in stale:
            del self.closed[key]

    def _emit(self, key: tuple[str, int], a: _Attempt) -> None:
        if a.started < 0 and a.finish < 0 and self.retried.get(key[0], 0) > key[1]:
            self.skip("attempt never started, superseded by a later attempt (redelivered)")
            return
        if a.queued < 0 and a.started >= 0 and a.pickup_ms >= 0:
            a.queued = a.started - a.pickup_ms  # the worker measured it from the enqueue
        if a.queued < 0:
            self.skip("attempt without a queued event or a pickup (arrival unknown)")
            return
        if not self.start_ms <= a.queued < self.end_ms:
            return
        self.queued.append(a.queued / 1000.0)
        self.started.append(a.started / 1000.0 if a.started >= 0 else math.nan)
        if a.started >= 0:
            pickup = max(0.0, (a.started - a.queued) / 1000.0)
        else:
            pickup = a.pickup_ms / 1000.0 if a.pickup_ms >= 0 else math.nan
        self.pickup.append(pickup)
        self.duration.append(a.duration_ms / 1000.0 if a.finish >= 0 else math.nan)


def _lines(path: Path, skipped: _Pairing) -> Iterator[str]:
    """The lines of one .jsonl.gz (or .jsonl) file; a damaged file yields what it could."""
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as handle:
            yield from handle
    except (gzip.BadGzipFile, EOFError, zlib.error):
        skipped.skip("file not readable to its end (damaged or truncated gzip)")
    except UnicodeDecodeError:
        skipped.skip("file not readable to its end (not UTF-8)")
    except OSError as error:
        skipped.skip(f"file not readable ({type(error).__name__})")


def _records(line: str, queue: str, pairing: _Pairing) -> dict[str, Any] | None:
    """A decision line of `queue` as a dict (None: another queue's, or not a JSON object)."""
    try:
        data = json.loads(line)
    except ValueError:
        pairing.skip("line is not JSON")
        return None
    if not isinstance(data, dict):
        pairing.skip("line is not a JSON object")
        return None
    return data if data.get("queue") == queue else None


def _skip_invalid(error: ValidationError, pairing: _Pairing) -> None:
    kind = error.errors()[0]["type"] if error.error_count() else ""
    if kind == "json_invalid":
        pairing.skip("line is not JSON")
    elif kind == "model_type":
        pairing.skip("line is not a JSON object")
    else:
        pairing.skip(f"not an event: {describe_error(error).split(' = ')[0]}")


def _line_events(path: Path, queue: str, pairing: _Pairing) -> Iterator[Event]:
    """The events of `queue` in one JSON-lines file. A line that does not hold the queue's name
    as the archive writes it (json.dumps) cannot be one of its events and is passed over
    unparsed; the others are parsed and checked by the contract in one step."""
    needle = json.dumps(queue)
    validate = Event.model_validate_json
    for line in _lines(path, pairing):
        if needle not in line:
            continue
        try:
            event = validate(line)
        except ValidationError as error:
            _skip_invalid(error, pairing)
            continue
        if event.queue == queue:
            yield event


def _row_events(path: Path, queue: str, pairing: _Pairing) -> Iterator[Event]:
    """The events of `queue` in one compacted Parquet file (absent fields are nulls there)."""
    for data in _parquet_rows(path, pairing):
        if data.get("queue") != queue:
            continue
        try:
            yield Event.model_validate({k: v for k, v in data.items() if v is not None})
        except ValidationError as error:
            _skip_invalid(error, pairing)


def _day_folders(root: Path, start_ms: float, end_ms: float) -> list[Path]:
    """The dt=... folders under `root` that can hold the window's events (a day each side)."""
    lo = datetime.fromtimestamp(max(0.0, start_ms) / 1000, UTC).date() - timedelta(days=1)
    hi_ms = min(end_ms, 4e12)
    hi = datetime.fromtimestamp(hi_ms / 1000, UTC).date() + timedelta(days=1)
    days = sorted(p for p in root.glob("dt=*") if p.is_dir())
    return [p for p in days if lo.isoformat() <= p.name.removeprefix("dt=") <= hi.isoformat()]


def missing_days(folders: list[Path]) -> list[str]:
    """Days between the first and last day folder that have no folder."""
    names = sorted(p.name.removeprefix("dt=") for p in folders)
    if len(names) < 2:
        return []
    first, last = datetime.fromisoformat(names[0]), datetime.fromisoformat(names[-1])
    present = set(names)
    day, gaps = first, []
    while day < last:
        day += timedelta(days=1)
        if day.date().isoformat() not in present:
            gaps.append(day.date().isoformat())
    return gaps


def _parquet_rows(path: Path, pairing: _Pairing) -> Iterator[dict[str, Any]]:
    import pyarrow as pa  # noqa: PLC0415 - only a compacted archive needs pyarrow
    import pyarrow.parquet as pq  # noqa: PLC0415

    try:
        for batch in pq.ParquetFile(path).iter_batches(batch_size=65_536):
            yield from batch.to_pylist()
    except (OSError, pa.ArrowException) as error:
        pairing.skip(f"parquet file not readable ({type(error).__name__})")


def _read_events(archive: Path, queue: str, pairing: _Pairing) -> list[Path]:
    """Feed every event of `queue` to `pairing`, hour folder by hour folder; returns the day
    folders read."""
    raw = archive / "events"
    compacted = archive / "compacted_events"
    root, suffixes = (raw, RAW_SUFFIXES) if raw.is_dir() else (compacted, (".parquet",))
    read = _line_events if root is raw else _row_events
    days = _day_folders(root, pairing.start_ms, pairing.end_ms)
    for day in days:
        for folder in sorted({p.parent for p in day.rglob("*") if p.is_file()}):
            for path in sorted(p for p in folder.iterdir() if p.is_file()):
                if path.name.startswith((".", "_")):  # Spark's .crc and _SUCCESS files
                    continue
                if not path.name.endswith(suffixes):
                    pairing.skip(f"file not of the archive (not {' or '.join(suffixes)})")
                    continue
                for event in read(path, queue, pairing):
                    pairing.add(event)
            pairing.close()
    return days


def read_ticks(
    archive: Path, queue: str, start: float, end: float
) -> tuple[list[Tick], Counter[str]]:
    """The recorded controller's decisions for `queue` in [start, end] (epoch s), by time, and
    the decision lines of the queue left out, by reason."""
    ticks: list[Tick] = []
    sink = _Pairing(0, 0)
    root = archive / "decisions"
    needle = json.dumps(queue)
    days = _day_folders(root, start * 1000, end * 1000) if root.is_dir() else []
    for day in days:
        for path in sorted(p for p in day.rglob("*") if p.is_file()):
            for line in _lines(path, sink):
                data = _records(line, queue, sink) if needle in line else None
                at = data.get("at") if data else None
                if data is None or not isinstance(at, int | float) or not start <= at <= end:
                    continue
                workers = data.get("running")
                if not isinstance(workers, int):
                    workers = data.get("current")
                target, policy = data.get("target"), data.get("policy")
                if isinstance(workers, int) and isinstance(target, int):
                    named = policy if isinstance(policy, str) and policy in POLICIES else None
                    ticks.append(Tick(float(at), workers, target, named))
                else:
                    sink.skip("no whole running/current and target")
    ticks.sort(key=lambda tick: tick.at)
    return ticks, Counter({f"decision log: {k}": v for k, v in sink.skipped.items()})


def read_archive(
    archive: Path, queue: str, start: float | None, end: float | None, seed: int = 0
) -> Recorded:
    """`queue`'s attempts queued in [start, end) (epoch s; None: unbounded) and the decisions
    over them. An attempt with no finishing event gets a duration drawn (seeded) from the
    recorded ones; with none recorded at all, the skip reasons say so and it is left out."""
    if not (archive / "events").is_dir() and not (archive / "compacted_events").is_dir():
        raise ValueError(f"--archive {archive}: no events/ or compacted_events/ folder in it")
    start_ms = -math.inf if start is None else start * 1000.0
    end_ms = math.inf if end is None else end * 1000.0
    pairing = _Pairing(start_ms, end_ms)
    days = _read_events(archive, queue, pairing)
    pairing.close(everything=True)
    for day in missing_days(days):
        pairing.skip(f"no events folder for day {day}")
    arrivals = np.frombuffer(pairing.queued, dtype=np.float64)
    durations = np.frombuffer(pairing.duration, dtype=np.float64).copy()
    pickups = np.frombuffer(pairing.pickup, dtype=np.float64).copy()
    unknown = np.isnan(durations)
    known = durations[~unknown]
    drawn = int(unknown.sum())
    if drawn and known.size:
        durations[unknown] = np.random.default_rng(seed).choice(known, size=drawn)
    elif drawn:
        pairing.skip("attempt without a duration, and none recorded to draw from")
        keep = ~unknown
        arrivals, durations, pickups = arrivals[keep], durations[keep], pickups[keep]
        drawn = 0
    newest = pairing.newest / 1000.0
    first = float(arrivals.min()) if arrivals.size else newest
    ticks, damaged = read_ticks(archive, queue, first, newest)
    return Recorded(
        trace=JobTrace(f"{queue} (archive)", arrivals, durations),
        pickups=pickups,
        drawn=drawn,
        ticks=ticks,
        events=pairing.events,
        skipped=pairing.skipped + damaged,
        end_epoch=newest,
    )
