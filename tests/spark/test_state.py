"""The incremental run's state: which folders to list, which changed, which days to redo."""

from __future__ import annotations

import pytest

from glue_jobs.state import (
    FolderPrint,
    StateError,
    changed_days,
    day_start_ms,
    first_day_to_redo,
    folders_to_list,
    parse_state,
)
from glue_jobs.transforms.periods import HOUR_MS

SIX_HOURS = 6 * HOUR_MS


def folder(files: int = 3, size: int = 900, modified: int = 1_000) -> FolderPrint:
    return FolderPrint(files=files, bytes=size, modified_ms=modified)


KNOWN = {f"2026-11-{day:02d}": folder() for day in range(1, 11)}


@pytest.mark.parametrize(
    ("folders", "late_days", "want"),
    [
        pytest.param(
            [f"dt=2026-11-{day:02d}" for day in range(1, 12)],
            2,
            ["2026-11-08", "2026-11-09", "2026-11-10", "2026-11-11"],
            id="the-newest-known-day-the-two-before-it-and-the-new-one",
        ),
        pytest.param(
            [f"dt=2026-11-{day:02d}" for day in range(1, 11)],
            0,
            ["2026-11-10"],
            id="no-late-window-lists-only-the-newest-known-day",
        ),
        pytest.param(
            ["dt=2026-10-30", "dt=2026-11-10"],
            1,
            ["2026-10-30", "2026-11-10"],
            id="an-unknown-old-day-is-listed",
        ),
    ],
)
def test_folders_to_list(folders, late_days, want) -> None:
    assert folders_to_list(folders, KNOWN, late_days) == want


def test_without_a_state_every_folder_is_listed() -> None:
    assert folders_to_list(["dt=2026-11-02", "dt=2026-11-01"], {}, 2) == [
        "2026-11-01",
        "2026-11-02",
    ]


def test_changed_days_are_new_or_differ_in_files_bytes_or_time() -> None:
    listed = {
        "2026-11-09": folder(),
        "2026-11-10": folder(files=4, size=1_200, modified=2_000),
        "2026-11-11": folder(),
    }
    counted = {"2026-11-09": folder().model_copy(update={"valid_lines": 10})}
    assert changed_days(listed, {**KNOWN, **counted}) == ["2026-11-10", "2026-11-11"]


def test_new_events_redo_from_the_pairing_window_before_them() -> None:
    # GIVEN new events from 2026-11-10 03:00 on, the data ending 2026-11-10 02:00 before
    start = day_start_ms("2026-11-10")
    hours = [start // HOUR_MS + hour for hour in range(3, 24)]
    # THEN attempts begun six hours earlier (the day before) may change
    assert first_day_to_redo(hours, [], start + 2 * HOUR_MS, SIX_HOURS) == "2026-11-09"
    # and with the new events late in the day, only that day
    assert first_day_to_redo(hours[10:], [], start + 12 * HOUR_MS, SIX_HOURS) == "2026-11-10"


def test_new_decisions_redo_the_day_before_them() -> None:
    assert first_day_to_redo([], ["2026-11-10"], None, SIX_HOURS) == "2026-11-09"


def test_nothing_new_redoes_nothing() -> None:
    assert first_day_to_redo([], [], day_start_ms("2026-11-10"), SIX_HOURS) is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("{", r"_state.json: document: Invalid JSON", id="not-json"),
        pytest.param(
            '{"raw_events": {"2026-11-01": {"files": -1, "bytes": 0, "modified_ms": 0}}}',
            r"raw_events.2026-11-01.files: Input should be greater than or equal to 0",
            id="negative-count",
        ),
        pytest.param('{"version": 9}', r"version 9, this job writes 1", id="other-version"),
        pytest.param('{"surprise": 1}', r"surprise: Extra inputs", id="unknown-field"),
    ],
)
def test_a_bad_state_file_is_named_with_its_field(text, message) -> None:
    with pytest.raises(StateError, match=message):
        parse_state(text, "s3://bucket/reports/_state.json")


def test_no_state_file_means_no_state() -> None:
    assert parse_state(None, "s3://bucket/reports/_state.json") is None
