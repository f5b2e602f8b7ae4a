"""Compaction: raw JSON-lines events, once, into Parquet by event day and hour.

`compact()` lists the archive's raw `events/dt=...` folders, reads only those that are new
or changed since the state it is given (the last `late_days` known days are re-listed; older
ones are closed), validates the lines, and merges the valid events into
`<output_uri>/compacted_events/dt=YYYY-MM-DD/hour=H/` by the UTC day and hour of `at`:
for every hour that received an event, the hour's existing events and the new ones are
de-duplicated (a redelivery repeats an event whole) and the hour is rewritten, one file,
sorted by (queue, job_id, attempt, at) so an attempt's events sit together; the day's other
hours stay as they are (a late event rewrites its hour, not its day). Rejected lines go to
`<output_uri>/rejected_events/dt=<the raw folder's day>/` with their reason.
Compacting the same folders again gives the same partitions.

`sla_report` compacts first, then rebuilds the days the new events change, and records
the state (glue_jobs/state.py) only when both are done.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as sf

from glue_jobs.io import (
    join_uri,
    list_day_folders,
    list_files,
    read_days,
    read_events,
    read_partitions,
    read_text,
    write_days,
    write_text,
)
from glue_jobs.layout import COMPACTED, REJECTED, STATE_FILE
from glue_jobs.schemas import RAW_DAY_COLUMN
from glue_jobs.state import (
    FolderPrint,
    RunState,
    changed_days,
    folders_to_list,
    parse_state,
)
from glue_jobs.transforms.events import EVENT_COLUMNS, dedupe_events, split_events
from glue_jobs.transforms.periods import HOUR_MS

DEFAULT_LATE_DAYS = 2
SORT_KEY = ("queue", "job_id", "attempt", "at")


@dataclass
class Compaction:
    """What one compaction saw and wrote."""

    raw_events: dict[str, FolderPrint]
    """Fingerprints of every raw events folder known after this run."""
    event_days: dict[str, int]
    """Events kept per event day, after this run."""
    touched_hours: list[int] = field(default_factory=list)
    """Epoch-hour indices of the events read in this run."""
    data_end_ms: int | None = None
    rebuilt: bool = False
    """True when every folder was read and every table is to be replaced."""


def fingerprint(spark: SparkSession, folder_uri: str) -> FolderPrint:
    """Files, bytes and newest modification time of one raw folder."""
    files = list_files(spark, folder_uri)
    return FolderPrint(
        files=len(files),
        bytes=sum(item.size for item in files),
        modified_ms=max((item.modified_ms for item in files), default=0),
    )


def list_changes(
    spark: SparkSession, root_uri: str, known: Mapping[str, FolderPrint], late_days: int
) -> dict[str, FolderPrint]:
    """Fingerprints of the folders under `root_uri` that are new or changed against `known`."""
    days = folders_to_list(list_day_folders(spark, root_uri), known, late_days)
    listed = {day: fingerprint(spark, join_uri(root_uri, f"dt={day}")) for day in days}
    return {day: listed[day] for day in changed_days(listed, known)}


def event_partitions(events: DataFrame) -> DataFrame:
    """Add the partition columns of the compacted table: `dt` ('YYYY-MM-DD') and `hour`."""
    moment = sf.timestamp_millis(sf.col("at"))
    return events.withColumn("dt", sf.date_format(moment, "yyyy-MM-dd")).withColumn(
        "hour", sf.hour(moment)
    )


def hour_folder(hour: int) -> str:
    """The compacted table's partition folder of epoch hour `hour` (at // 3,600,000):
    'dt=YYYY-MM-DD/hour=H' (UTC, H without padding, as Spark writes an int)."""
    moment = datetime.fromtimestamp(hour * 3600, UTC)
    return f"dt={moment:%Y-%m-%d}/hour={moment.hour}"


def read_compacted(
    spark: SparkSession, output_uri: str, days: Sequence[str], from_ms: int | None = None
) -> DataFrame | None:
    """The compacted events (EVENT_COLUMNS) of the event `days` (None for none), those at or
    after `from_ms` when given."""
    events = read_days(spark, join_uri(output_uri, COMPACTED), days)
    if events is None:
        return None
    if from_ms is not None:
        events = events.where(sf.col("at") >= from_ms)
    return events.select(*EVENT_COLUMNS)


def write_compacted(events: DataFrame, uri: str, replace_all: bool) -> str:
    """De-duplicate `events` (EVENT_COLUMNS, dt, hour) and write them as the compacted table
    at `uri`: one file per hour, sorted by SORT_KEY; the days present replace what was there
    (every day when `replace_all`)."""
    # Partitioned by hour first: the de-duplication (every column is a key, the hour among
    # them) then needs no shuffle of its own, so every event crosses one exchange, not two.
    merged = dedupe_events(events.repartition("dt", "hour")).sortWithinPartitions(*SORT_KEY)
    return write_days(merged, uri, replace_all, by=("dt", "hour"))


def compact(
    spark: SparkSession,
    input_uri: str,
    output_uri: str,
    previous: RunState | None,
    late_days: int = DEFAULT_LATE_DAYS,
) -> Compaction:
    """Compact what is new in the archive at `input_uri` (everything when `previous` is
    None, replacing the compacted table); see the module doc."""
    if late_days < 0:
        raise ValueError(f"late_days must be >= 0, got {late_days!r}")
    rebuild = previous is None
    known = {} if previous is None else dict(previous.raw_events)
    event_days = {} if previous is None else dict(previous.event_days)
    data_end = None if previous is None else previous.data_end_ms
    changes = list_changes(spark, join_uri(input_uri, "events"), known, late_days)
    if not changes:
        return Compaction(known, event_days, [], data_end, rebuild)

    rejected_uri = join_uri(output_uri, REJECTED)
    # cached uncompressed, as every session of ours is (glue_jobs/session.py)
    raw = read_events(spark, input_uri, sorted(changes)).persist(StorageLevel.MEMORY_AND_DISK)
    valid, rejected = split_events(raw, [RAW_DAY_COLUMN])
    # the first action: it parses the lines once and fills the cache
    write_days(rejected.withColumnRenamed(RAW_DAY_COLUMN, "dt"), rejected_uri, rebuild)
    valid = event_partitions(valid)
    # One pass validates: valid lines per raw folder and epoch hour, and the hour's latest
    # event; the lines per folder need only the cached folder column.
    per_hour = (
        valid.groupBy(RAW_DAY_COLUMN, sf.floor(sf.col("at") / HOUR_MS).alias("h"))
        .agg(sf.count("*").alias("lines"), sf.max("at").alias("end"))
        .collect()
    )
    lines = {day: [0, 0] for day in changes}
    for row in raw.groupBy(RAW_DAY_COLUMN).count().collect():
        lines.setdefault(str(row[RAW_DAY_COLUMN]), [0, 0])[1] = int(row["count"])
    for row in per_hour:
        lines[str(row[RAW_DAY_COLUMN])][0] += int(row["lines"])
        lines[str(row[RAW_DAY_COLUMN])][1] -= int(row["lines"])
    touched = sorted({int(row["h"]) for row in per_hour})
    if per_hour:
        newest = max(int(row["end"]) for row in per_hour)
        data_end = newest if data_end is None else max(data_end, newest)
    hour_folders = [hour_folder(h) for h in touched]
    days = sorted({folder.split("/")[0].removeprefix("dt=") for folder in hour_folders})

    incoming = valid.select(*EVENT_COLUMNS, "dt", "hour")
    compacted_uri = join_uri(output_uri, COMPACTED)
    # only the hours that received events are merged and rewritten; the day's others stay
    present = [
        f"dt={day}/{hour}"
        for day in sorted(set(days) & set(event_days))
        for hour in list_day_folders(spark, join_uri(compacted_uri, f"dt={day}"), "hour")
    ]
    existing = (
        None
        if rebuild
        else read_partitions(spark, compacted_uri, sorted(set(present) & set(hour_folders)))
    )
    if existing is not None:
        incoming = existing.select(*EVENT_COLUMNS, "dt", "hour").unionByName(incoming)
    if days:
        write_compacted(incoming, compacted_uri, rebuild)
        written = read_days(spark, compacted_uri, days)
        assert written is not None
        counts = written.groupBy("dt").count().collect()
        event_days.update({str(row["dt"]): int(row["count"]) for row in counts})
    raw.unpersist()
    for day, found in changes.items():
        valid_lines, rejected_lines = lines[day]
        known[day] = found.model_copy(
            update={"valid_lines": valid_lines, "rejected_lines": rejected_lines}
        )
    return Compaction(known, event_days, touched, data_end, rebuild)


def load_state(spark: SparkSession, output_uri: str, full_rebuild: bool) -> RunState | None:
    """The previous run's state under `output_uri`, or None (none yet, or a full rebuild)."""
    if full_rebuild:
        return None
    uri = join_uri(output_uri, STATE_FILE)
    return parse_state(read_text(spark, uri), uri)


def save_state(spark: SparkSession, output_uri: str, state: RunState) -> str:
    """Write the state (last, after every table); return its URI."""
    state.updated_at = datetime.now(UTC).isoformat(timespec="seconds")
    return write_text(spark, join_uri(output_uri, STATE_FILE), state.model_dump_json(indent=1))
