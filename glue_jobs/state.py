"""The incremental run's state: what was compacted and reported, and which days to redo.

One small JSON document, `<output_uri>/_state.json`, written last by a successful run of
`sla_report` (so a failed run leaves the previous state, and the next run redoes its work:
every step overwrites whole day partitions, so redoing is harmless). It records, per raw
`dt=` folder of the archive, a fingerprint (files, bytes, newest modification time) and
the lines read from it, the settings the tables were built with, and where the data ends.
Everything here is pure: day arithmetic on epoch milliseconds and 'YYYY-MM-DD' strings.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from glue_jobs.transforms.periods import HOUR_MS

STATE_VERSION = 1


class StateError(ValueError):
    """The state file cannot be used; the message names the file and the field."""


class FolderPrint(BaseModel):
    """Fingerprint of one raw `dt=` folder, and the lines the last run read from it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    files: int = Field(ge=0)
    bytes: int = Field(ge=0)
    modified_ms: int = Field(ge=0)
    """Newest modification time among its files, epoch ms."""
    valid_lines: int = Field(default=0, ge=0)
    rejected_lines: int = Field(default=0, ge=0)

    def same_files(self, other: FolderPrint) -> bool:
        """The same files as `other` (counts of lines aside)."""
        return (self.files, self.bytes, self.modified_ms) == (
            other.files,
            other.bytes,
            other.modified_ms,
        )


class RunState(BaseModel):
    """What the last successful run saw and built."""

    model_config = ConfigDict(extra="forbid")

    version: int = STATE_VERSION
    settings: dict[str, str] = Field(default_factory=dict)
    """The options the tables depend on; a change forces a full rebuild."""
    raw_events: dict[str, FolderPrint] = Field(default_factory=dict)
    raw_decisions: dict[str, FolderPrint] = Field(default_factory=dict)
    event_days: dict[str, int] = Field(default_factory=dict)
    """Compacted events kept (after de-duplication) per event day."""
    data_end_ms: int | None = None
    """The latest event time in the archive, epoch ms."""
    updated_at: str = ""


def parse_state(text: str | None, uri: str) -> RunState | None:
    """The state in `text` (None when there is no file); StateError naming `uri` otherwise."""
    if text is None:
        return None
    try:
        state = RunState.model_validate_json(text)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "document"
        raise StateError(
            f"{uri}: {where}: {first['msg']} (delete the file or pass --full_rebuild true)"
        ) from None
    if state.version != STATE_VERSION:
        raise StateError(f"{uri}: version {state.version}, this job writes {STATE_VERSION}")
    return state


def folders_to_list(
    folders: Iterable[str], known: Mapping[str, FolderPrint], late_days: int
) -> list[str]:
    """Days (of `dt=` folder names) whose files must be listed: every day the state does not
    know, the newest day it knows and the `late_days` days before that (they may still be
    receiving objects). Older known days are taken as closed: an object landing there waits
    for a full rebuild."""
    days = sorted(folder.removeprefix("dt=") for folder in folders)
    if not known:
        return days
    newest = max(known)
    open_from = shift_day(newest, -late_days)
    return [day for day in days if day not in known or day >= open_from]


def changed_days(listed: Mapping[str, FolderPrint], known: Mapping[str, FolderPrint]) -> list[str]:
    """Days whose files differ from the state's fingerprint (new days included), sorted."""
    return sorted(
        day for day, found in listed.items() if day not in known or not found.same_files(known[day])
    )


def day_of(epoch_ms: int) -> str:
    """'YYYY-MM-DD' (UTC) of an epoch-ms time."""
    return datetime.fromtimestamp(epoch_ms / 1000, UTC).strftime("%Y-%m-%d")


def day_start_ms(day: str) -> int:
    """Epoch ms of 00:00 UTC of 'YYYY-MM-DD'."""
    return int(datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=UTC).timestamp() * 1000)


def shift_day(day: str, days: int) -> str:
    """'YYYY-MM-DD' `days` later (earlier when negative)."""
    moved = datetime.strptime(day, "%Y-%m-%d") + timedelta(days=days)
    return moved.strftime("%Y-%m-%d")


def first_day_to_redo(
    touched_hours: Iterable[int],
    touched_decision_days: Iterable[str],
    previous_end_ms: int | None,
    pairing_ms: int,
) -> str | None:
    """The first output day a run must rebuild (it rebuilds from there to the end), or None
    when nothing changed.

    An event at time t changes only attempts begun in [t - pairing, t] (an attempt's events
    lie within `pairing_ms` of its first), and those attempts change outputs from t - pairing
    on. New decision ticks on day d change the last tick of day d - 1 (its gap runs to the
    next tick). When the data's end moves, never-started attempts queued after
    previous_end - pairing wait longer.
    `touched_hours` are epoch-hour indices (at // 3,600,000) holding new or changed events.
    """
    starts = [hour * HOUR_MS - pairing_ms for hour in touched_hours]
    starts += [day_start_ms(shift_day(day, -1)) for day in touched_decision_days]
    if not starts:
        return None
    if previous_end_ms is not None:
        starts.append(previous_end_ms - pairing_ms)
    return day_of(max(0, min(starts)))
