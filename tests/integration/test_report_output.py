"""`report --out s3://...`: what is brought down before the run and put back after, on the
endpoint (no Spark: the job's output folder is written by hand).

GIVEN a previous report under a prefix (or at a bucket's root) with its manifest, next to
objects that are not the report's (at the root, under the prefix, inside a table's folder),
WHEN the report is pulled, changed locally as a run changes it, and pushed,
THEN only the manifest's files come down, only the new run's changed files go up, only the
files the old manifest named and the new one does not are deleted, and every other object
keeps its bytes, ETag and modification time.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from glue_jobs.layout import MANIFEST_FILE, ManifestError, manifest_json
from queue_autoscale.adapters.s3 import Archive
from queue_autoscale.operator import report_output
from queue_autoscale.operator.report_output import pull, push

pytestmark = pytest.mark.integration

OLD_PART = "sla_daily/dt=2026-11-01/part-00000-aaaa.snappy.parquet"
NEW_PART = "sla_daily/dt=2026-11-02/part-00000-bbbb.snappy.parquet"
KEPT_PART = "compacted_events/dt=2026-11-01/hour=9/part-00000-cccc.snappy.parquet"
PREVIOUS = {OLD_PART: b"old day", KEPT_PART: b"events", "_state.json": b"{}", "report.html": b"v1"}
OTHERS = ("notes.txt", "team/data.csv", "sla_daily/stray.parquet")
"""Not the report's: at the prefix's level, below it, and inside a table's folder."""


def heads(s3: Any, bucket: str, keys: list[str]) -> dict[str, tuple[bytes, str, Any]]:
    found = {}
    for key in keys:
        answer = s3.get_object(Bucket=bucket, Key=key)
        found[key] = (answer["Body"].read(), answer["ETag"], answer["LastModified"])
    return found


@pytest.mark.parametrize("base", ["reports/", ""], ids=["under-a-prefix", "at-the-bucket-root"])
def test_only_the_manifests_files_come_down_and_only_superseded_ones_are_deleted(
    clients: Any, suffix: str, tmp_path: Path, base: str
) -> None:
    bucket = f"report-{suffix}"
    clients.s3.create_bucket(Bucket=bucket)
    for relative, body in PREVIOUS.items():
        clients.s3.put_object(Bucket=bucket, Key=base + relative, Body=body)
    manifest = manifest_json(PREVIOUS).encode()
    clients.s3.put_object(Bucket=bucket, Key=base + MANIFEST_FILE, Body=manifest)
    others = [*(base + other for other in OTHERS), "outside.txt"]
    for key in others:
        clients.s3.put_object(Bucket=bucket, Key=key, Body=f"not the report's: {key}".encode())
    before = heads(clients.s3, bucket, others)
    store, folder, said = Archive(clients.s3, bucket), tmp_path / "report", []

    previous = pull(store, base, folder, said.append)

    assert previous is not None
    found = sorted(path.relative_to(folder).as_posix() for path in folder.rglob("*"))
    assert [path for path in found if (folder / path).is_file()] == sorted(PREVIOUS)
    assert (folder / OLD_PART).read_bytes() == b"old day"
    # a run: day 2026-11-01 rewritten under a new part-file name, the report rewritten,
    # the compacted hour and the state left as they were; then the job's new manifest
    (folder / OLD_PART).unlink()
    (folder / NEW_PART).parent.mkdir(parents=True)
    (folder / NEW_PART).write_bytes(b"new day")
    (folder / "report.html").write_bytes(b"v2")
    (folder / ".report.html.crc").write_bytes(b"local Spark's")
    (folder / MANIFEST_FILE).write_text(
        manifest_json([NEW_PART, KEPT_PART, "_state.json", "report.html"])
    )

    pushed = push(store, base, folder, previous, said.append)

    assert (pushed.uploaded, pushed.unchanged, pushed.deleted) == (2, 2, 1)
    keys = set(store.keys(""))
    assert keys == {
        *(base + path for path in (NEW_PART, KEPT_PART, "_state.json", "report.html")),
        base + MANIFEST_FILE,
        *others,
    }
    assert heads(clients.s3, bucket, [base + "report.html"])[base + "report.html"][0] == b"v2"
    assert heads(clients.s3, bucket, others) == before
    assert said == [
        f"s3://{bucket}/{base}: 2 files uploaded, 2 unchanged, 1 superseded ones deleted"
    ]


def test_a_first_run_finds_nothing_and_an_older_reports_state_is_noted(
    clients: Any, suffix: str, tmp_path: Path
) -> None:
    bucket = f"report-{suffix}"
    clients.s3.create_bucket(Bucket=bucket)
    store, said = Archive(clients.s3, bucket), []

    assert pull(store, "fresh/", tmp_path / "a", said.append) is None
    assert said == []

    clients.s3.put_object(Bucket=bucket, Key="old/_state.json", Body=b"{}")
    assert pull(store, "old/", tmp_path / "b", said.append) is None
    assert said == [
        f"note: s3://{bucket}/old/ holds a report without a manifest (written by an older "
        "version): every table is rebuilt, and its earlier files are left as they are"
    ]
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        pytest.param(json.dumps({"version": 9, "files": []}), "version 9, this report writes 1"),
        pytest.param(b"\xff\xfe", "not UTF-8 text"),
        pytest.param(json.dumps({"version": 1, "files": ["../x"]}), "'../x' is not one of"),
    ],
    ids=["another-version", "not-text", "outside-the-layout"],
)
def test_an_unusable_manifest_stops_before_anything_is_read_or_changed(
    clients: Any, suffix: str, tmp_path: Path, body: str | bytes, reason: str
) -> None:
    bucket = f"report-{suffix}"
    clients.s3.create_bucket(Bucket=bucket)
    clients.s3.put_object(Bucket=bucket, Key="r/_manifest.json", Body=body)
    clients.s3.put_object(Bucket=bucket, Key="r/report.html", Body=b"v1")

    with pytest.raises(ManifestError) as caught:
        pull(Archive(clients.s3, bucket), "r/", tmp_path / "out", print)

    assert str(caught.value).startswith(f"s3://{bucket}/r/_manifest.json: {reason}")
    assert str(caught.value).endswith(
        f"; not a report this version continues, nothing under s3://{bucket}/r/ was changed "
        "(choose another --out)"
    )
    assert not (tmp_path / "out").exists()
    assert sorted(Archive(clients.s3, bucket).keys("r/")) == ["r/_manifest.json", "r/report.html"]


class FailingUpload(Archive):
    """The endpoint's archive, but the upload of `failing` raises (a dropped connection)."""

    def __init__(self, client: Any, bucket: str, failing: str) -> None:
        super().__init__(client, bucket)
        self.failing = failing

    def upload(self, path: Path, key: str) -> None:
        if key == self.failing:
            raise OSError(f"connection reset uploading {key}")
        super().upload(path, key)


@pytest.mark.parametrize(
    "failing", [MANIFEST_FILE, "_state.json"], ids=["at-the-manifest", "at-the-state"]
)
def test_an_upload_that_fails_half_way_is_recovered_by_the_next_run(
    clients: Any, suffix: str, tmp_path: Path, failing: str
) -> None:
    # GIVEN a report under r/ whose day 2026-11-01 a run rewrote (new part file, new state)
    bucket, base = f"report-{suffix}", "r/"
    clients.s3.create_bucket(Bucket=bucket)
    for relative, body in PREVIOUS.items():
        clients.s3.put_object(Bucket=bucket, Key=base + relative, Body=body)
    clients.s3.put_object(Bucket=bucket, Key=base + MANIFEST_FILE, Body=manifest_json(PREVIOUS))
    clients.s3.put_object(Bucket=bucket, Key="r/notes.txt", Body=b"not the report's")
    store, said = Archive(clients.s3, bucket), []
    first = tmp_path / "first"
    previous = pull(store, base, first, said.append)
    (first / OLD_PART).unlink()
    (first / NEW_PART).parent.mkdir(parents=True)
    (first / NEW_PART).write_bytes(b"new day")
    (first / "_state.json").write_text('{"new": true}')
    (first / "report.html").write_bytes(b"v2")
    (first / MANIFEST_FILE).write_text(
        manifest_json([NEW_PART, KEPT_PART, "_state.json", "report.html"])
    )

    # WHEN its upload fails at the manifest, or at the state
    with pytest.raises(OSError, match="connection reset"):
        push(FailingUpload(clients.s3, bucket, base + failing), base, first, previous, print)

    # THEN the next run continues from the previous state, never from one newer than the
    # tables beside it (which would skip the day it redid), and says what it will delete
    second = tmp_path / "second"
    again = pull(store, base, second, said.append)
    assert (second / "_state.json").read_bytes() == b"{}"
    assert said[-1] == (
        f"note: s3://{bucket}/{base}: an earlier upload there did not finish: the files it "
        "left that no manifest names are deleted after this one"
    )
    # AND once that run is up, exactly its files, the manifest and the others are left (the
    # failed upload's part file, which no manifest named, deleted)
    (second / "_state.json").write_text('{"again": true}')
    redone = NEW_PART.replace("bbbb", "dddd")
    for relative in (OLD_PART, NEW_PART):
        (second / relative).unlink(missing_ok=True)
    (second / redone).parent.mkdir(parents=True, exist_ok=True)
    (second / redone).write_bytes(b"redone")
    files = [redone, KEPT_PART, "_state.json", "report.html"]
    (second / MANIFEST_FILE).write_text(manifest_json(files))
    push(store, base, second, again, said.append)
    assert sorted(store.keys(base)) == sorted(
        [*(base + path for path in files), base + MANIFEST_FILE, "r/notes.txt"]
    )
    assert store.get_bytes(base + "_state.json", 100) == b'{"again": true}'


def test_a_manifest_larger_than_the_bound_is_refused_without_reading_it_whole(
    clients: Any, suffix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bucket = f"report-{suffix}"
    clients.s3.create_bucket(Bucket=bucket)
    body = manifest_json(["report.html"]).encode()  # 49 bytes
    clients.s3.put_object(Bucket=bucket, Key="r/_manifest.json", Body=body)
    clients.s3.put_object(Bucket=bucket, Key="r/report.html", Body=b"v1")
    monkeypatch.setattr(report_output, "MANIFEST_LIMIT", len(body) - 1)

    with pytest.raises(ManifestError) as caught:
        pull(Archive(clients.s3, bucket), "r/", tmp_path / "out", print)

    assert str(caught.value).startswith(
        f"s3://{bucket}/r/_manifest.json: larger than {len(body) - 1:,} bytes; not a report"
    )
    assert not (tmp_path / "out").exists()


def test_a_first_upload_that_fails_at_the_state_leaves_no_manifest_naming_it(
    clients: Any, suffix: str, tmp_path: Path
) -> None:
    # GIVEN a first run's output (no report under r/ yet)
    bucket, base = f"report-{suffix}", "r/"
    clients.s3.create_bucket(Bucket=bucket)
    store, said = Archive(clients.s3, bucket), []
    first = tmp_path / "first"
    files = [NEW_PART, "_state.json", "report.html"]
    for relative in files:
        (first / relative).parent.mkdir(parents=True, exist_ok=True)
        (first / relative).write_bytes(b"first")
    (first / MANIFEST_FILE).write_text(manifest_json(files))

    # WHEN its upload fails at the state
    with pytest.raises(OSError, match="connection reset"):
        push(FailingUpload(clients.s3, bucket, base + "_state.json"), base, first, None, print)

    # THEN the next run does not stop on a manifest naming a state that is not there: it
    # starts afresh and its upload deletes what the failed one left
    again = pull(store, base, tmp_path / "second", said.append)
    assert again is not None and again.stamps == {}
    assert not (tmp_path / "second").exists()
    push(store, base, first, again, said.append)
    assert sorted(store.keys(base)) == sorted(
        [*(base + path for path in files), base + MANIFEST_FILE]
    )


def test_a_file_the_manifest_names_but_s3_lost_stops_the_run_saying_how_to_rebuild(
    clients: Any, suffix: str, tmp_path: Path
) -> None:
    # GIVEN a previous report whose manifest names a day that someone deleted by hand
    bucket = f"report-{suffix}"
    clients.s3.create_bucket(Bucket=bucket)
    for relative, body in PREVIOUS.items():
        clients.s3.put_object(Bucket=bucket, Key="reports/" + relative, Body=body)
    manifest = manifest_json(PREVIOUS).encode()
    clients.s3.put_object(Bucket=bucket, Key="reports/" + MANIFEST_FILE, Body=manifest)
    clients.s3.delete_object(Bucket=bucket, Key="reports/" + OLD_PART)
    store = Archive(clients.s3, bucket)

    # WHEN the report is pulled
    with pytest.raises(ManifestError) as raised:
        pull(store, "reports/", tmp_path / "report", [].append)

    # THEN one line names the lost file and the two ways on; nothing under the prefix changed
    where = f"s3://{bucket}/reports/"
    assert str(raised.value) == (
        f"{where}{OLD_PART}: named by {where}{MANIFEST_FILE} but not there: the report there "
        "is incomplete, and nothing was changed; to rebuild it there, delete the files the "
        "manifest names, then the manifest, or choose another --out"
    )
    left = {*PREVIOUS, MANIFEST_FILE} - {OLD_PART}
    assert set(store.keys("reports/")) == {"reports/" + relative for relative in left}
