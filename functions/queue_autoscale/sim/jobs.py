"""Job traces: one row per job (attempt), an arrival time and its own duration.

`simulate --jobs FILE` reads any such trace as CSV or Parquet, the column names given by flags;
`simulate --archive` builds one from the recorded events (`sim/archive.py`). Times are epoch
seconds (ISO 8601 text or numbers in the file), durations seconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from queue_autoscale.sim.arrivals import ArrivalError
from queue_autoscale.sim.workload import Floats, Workload, check_jobs, jobs_workload

CSV_BLOCK_BYTES = 8 << 20
"""A CSV is read in blocks of this many bytes (pyarrow's streaming reader), not whole."""


@dataclass(frozen=True, slots=True)
class JobTrace:
    """Recorded jobs: arrival (epoch s) and duration (s) per attempt, in file order."""

    name: str
    arrivals: Floats
    durations: Floats

    def __post_init__(self) -> None:
        check_jobs(self.arrivals, self.durations)

    @property
    def start_epoch(self) -> int:
        """The epoch second of the first arrival (the replay's time 0); 0 without jobs."""
        return int(np.floor(self.arrivals.min())) if self.arrivals.size else 0

    def workload(self, start_epoch: int | None = None) -> Workload:
        """The engine's workload, time 0 at `start_epoch` (default: the first arrival's second)."""
        base = self.start_epoch if start_epoch is None else start_epoch
        return jobs_workload(self.name, self.arrivals - base, self.durations)


def parse_time(text: str, option: str) -> float:
    """Epoch seconds from epoch seconds ('1767225600', '1767225600.5') or ISO 8601
    ('2026-01-01T00:00:00Z'; no zone means UTC). Raises ArrivalError naming `option`."""
    value = text.strip()
    try:
        return float(value)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise ArrivalError(
            f"{option} {text!r}: not epoch seconds or an ISO 8601 time (2026-01-01T00:00:00Z)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def _times(column: Any, name: str, source: str) -> Floats:
    """A pyarrow column of arrival times -> epoch seconds (numbers, timestamps or ISO text)."""
    import pyarrow as pa  # noqa: PLC0415 - pyarrow loads slowly; only a replay needs it
    import pyarrow.compute as pc  # noqa: PLC0415

    kind = column.type
    if pa.types.is_timestamp(kind):
        micros = pc.cast(column, pa.timestamp("us", tz=kind.tz)).cast(pa.int64())
        return np.asarray(micros.to_numpy(zero_copy_only=False), dtype=np.float64) / 1e6
    if pa.types.is_integer(kind) or pa.types.is_floating(kind):
        return np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.float64)
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        texts = column.to_pylist()
        out = np.empty(len(texts), dtype=np.float64)
        for row, text in enumerate(texts):
            out[row] = parse_time(str(text), f"{source}: column {name!r} row {row}")
        return out
    raise ArrivalError(f"{source}: column {name!r} is {kind}: not a time")


def _numbers(column: Any, name: str, source: str) -> Floats:
    import pyarrow as pa  # noqa: PLC0415 - see _times

    if not (pa.types.is_integer(column.type) or pa.types.is_floating(column.type)):
        raise ArrivalError(f"{source}: column {name!r} is {column.type}: not seconds")
    return np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.float64)


def _batches(path: Path, columns: list[str]) -> Any:
    """Record batches of `columns` from a CSV or Parquet file, streamed."""
    import pyarrow.csv as pacsv  # noqa: PLC0415 - see _times
    import pyarrow.parquet as pq  # noqa: PLC0415

    if path.suffix.lower() in (".parquet", ".pq"):
        file = pq.ParquetFile(path)
        missing = [name for name in columns if name not in file.schema_arrow.names]
        if missing:
            raise ArrivalError(
                f"{path}: no column {missing[0]!r} (columns: {', '.join(file.schema_arrow.names)})"
            )
        return file.iter_batches(columns=columns)
    options = pacsv.ConvertOptions(include_columns=columns)
    reader = pacsv.open_csv(
        path, read_options=pacsv.ReadOptions(block_size=CSV_BLOCK_BYTES), convert_options=options
    )
    return reader


def read_jobs(path: Path, arrival_column: str, duration_column: str) -> JobTrace:
    """A job trace from CSV or Parquet: `arrival_column` (epoch seconds, ISO 8601 text or a
    timestamp) and `duration_column` (seconds) per row. Raises ArrivalError naming the file,
    column and row of the first problem."""
    import pyarrow as pa  # noqa: PLC0415 - see _times

    if not path.is_file():
        raise ArrivalError(f"--jobs {path}: no such file")
    arrivals: list[Floats] = []
    durations: list[Floats] = []
    source = f"--jobs {path}"
    try:
        for batch in _batches(path, [arrival_column, duration_column]):
            names = batch.schema.names
            for name in (arrival_column, duration_column):
                if name not in names:
                    raise ArrivalError(f"{source}: no column {name!r}")
            arrivals.append(_times(batch.column(arrival_column), arrival_column, source))
            durations.append(_numbers(batch.column(duration_column), duration_column, source))
    except (pa.ArrowInvalid, pa.ArrowKeyError, OSError) as error:
        raise ArrivalError(f"{source}: {str(error).splitlines()[0]}") from None
    try:
        return JobTrace(
            path.name,
            np.concatenate(arrivals) if arrivals else np.empty(0),
            np.concatenate(durations) if durations else np.empty(0),
        )
    except ArrivalError as error:
        raise ArrivalError(f"{source}: {error} (job 0 is the first data row)") from None


def window(trace: JobTrace, start: float | None, end: float | None) -> JobTrace:
    """The jobs arriving in [start, end) (either bound may be None)."""
    keep = np.ones(trace.arrivals.size, dtype=bool)
    if start is not None:
        keep &= trace.arrivals >= start
    if end is not None:
        keep &= trace.arrivals < end
    return JobTrace(trace.name, trace.arrivals[keep], trace.durations[keep])
