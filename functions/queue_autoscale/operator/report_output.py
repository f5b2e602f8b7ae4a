"""`report --out s3://bucket[/prefix]`: the previous report is brought down before local Spark
runs and the new one put back after, so the job runs incrementally as in a local folder.

Only what the job's own manifest names (`_manifest.json`, glue_jobs/layout.py) is read or
written under the prefix, which may be a bucket's root: other objects there are never listed
for download, read, replaced or deleted. After the upload, the files the previous manifest
named and the new one does not (day partitions Spark rewrote under new part-file names) are
deleted, as Spark deletes them in a local folder; without that, every run would leave its
predecessor's part files beside the new ones, and a reader of the S3 tables would count
their rows twice.

An upload is not atomic. As the job writes its state last, after every table, the upload
puts a `_state.json` the previous manifest names up last, after the new manifest (one it
does not name goes up before, so that no manifest names a state that is not there): a
failure before it leaves the previous state, with which the next run redoes the days again,
never a state newer than the tables beside it, which would skip them. `PENDING_FILE`, put
before the first upload and deleted after the last delete, names what an unfinished upload
may have left that no manifest names (new part files); the next run deletes those after its
own upload.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from glue_jobs.layout import (
    MANIFEST_FILE,
    STATE_FILE,
    Manifest,
    ManifestError,
    manifest_json,
    parse_manifest,
)
from queue_autoscale.adapters.errors import NotFound
from queue_autoscale.adapters.s3 import Archive

PENDING_FILE = "_manifest.pending.json"
"""Under the prefix while an upload runs: the manifest of every file it may leave there (the
previous manifest's and the new one's)."""

MANIFEST_LIMIT = 64 * 1024 * 1024
"""Bytes of a manifest (or pending mark) read at most: about 700,000 files; a larger one is
refused, not read into memory whole."""

Say = Callable[[str], None]
"""Prints one line to the user (the progress bar's console)."""


@dataclass(frozen=True)
class Previous:
    """The report found under the prefix: the files its manifest names, each with its
    (size in bytes, modification time in ns) as brought down."""

    files: tuple[str, ...]
    stamps: Mapping[str, tuple[int, int]]


@dataclass(frozen=True)
class Pushed:
    """What the upload did: files uploaded, files left as they were, files deleted."""

    uploaded: int
    unchanged: int
    deleted: int


def _stamp(path: Path) -> tuple[int, int]:
    status = path.stat()
    return status.st_size, status.st_mtime_ns


def _read(data: bytes, uri: str) -> Manifest:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ManifestError(f"{uri}: not UTF-8 text") from None
    return parse_manifest(text, uri)


def _continued(data: bytes, uri: str, where: str) -> Manifest:
    """The manifest in `data` read from `uri`; ManifestError saying nothing was changed."""
    try:
        if len(data) > MANIFEST_LIMIT:
            raise ManifestError(f"{uri}: larger than {MANIFEST_LIMIT:,} bytes")
        return _read(data, uri)
    except ManifestError as error:
        raise ManifestError(
            f"{error}; not a report this version continues, nothing under {where} was "
            "changed (choose another --out)"
        ) from None


def pull(store: Archive, base: str, folder: Path, say: Say) -> Previous | None:
    """Bring the report under the key prefix `base` ('' or ending in '/') down into `folder`:
    the files its manifest names, nothing else. None when there is no manifest (a first run:
    `say` notes a report an older version left there). A manifest this version cannot use
    raises ManifestError, one line, before anything is changed. The files an unfinished upload
    may have left (`PENDING_FILE`) are among the files returned, not brought down, so that
    `push` deletes those the new manifest does not name."""
    where = f"s3://{store.bucket}/{base}"
    data = store.get_bytes(base + MANIFEST_FILE, MANIFEST_LIMIT)
    manifest = None if data is None else _continued(data, where + MANIFEST_FILE, where)
    pending = store.get_bytes(base + PENDING_FILE, MANIFEST_LIMIT)
    unfinished = () if pending is None else _continued(pending, where + PENDING_FILE, where).files
    if unfinished:
        say(
            f"note: {where}: an earlier upload there did not finish: the files it left that "
            "no manifest names are deleted after this one"
        )
    if manifest is None:
        if not unfinished and store.keys(base + STATE_FILE, limit=1) == [base + STATE_FILE]:
            say(
                f"note: {where} holds a report without a manifest (written by an older "
                "version): every table is rebuilt, and its earlier files are left as they are"
            )
        return Previous(tuple(sorted(unfinished)), {}) if unfinished else None
    stamps: dict[str, tuple[int, int]] = {}
    for relative in manifest.files:
        try:
            store.download(base + relative, folder / relative)
        except NotFound:
            raise ManifestError(
                f"{where}{relative}: named by {where}{MANIFEST_FILE} but not there: the report "
                "there is incomplete, and nothing was changed; to rebuild it there, delete the "
                "files the manifest names, then the manifest, or choose another --out"
            ) from None
        stamps[relative] = _stamp(folder / relative)
    return Previous(tuple(sorted({*manifest.files, *unfinished})), stamps)


def push(store: Archive, base: str, folder: Path, previous: Previous | None, say: Say) -> Pushed:
    """Mark the upload pending, upload the files the job's manifest in `folder` names (those
    brought down and left as they were excepted), the manifest, then the state; delete what
    only `previous` named, and the mark last; `say` how many of each."""
    manifest = _read((folder / MANIFEST_FILE).read_bytes(), str(folder / MANIFEST_FILE))
    before = previous.stamps if previous is not None else {}
    named = previous.files if previous is not None else ()
    changed = [path for path in manifest.files if before.get(path) != _stamp(folder / path)]
    mark = folder / PENDING_FILE
    mark.write_text(manifest_json({*named, *manifest.files}), encoding="utf-8")
    store.upload(mark, base + PENDING_FILE)
    # a state the previous manifest names is replaced after the new manifest; one it does
    # not name goes up before it, so that no manifest names a state not there
    late = [STATE_FILE] if STATE_FILE in changed and STATE_FILE in before else []
    for relative in changed:
        if relative not in late:
            store.upload(folder / relative, base + relative)
    store.upload(folder / MANIFEST_FILE, base + MANIFEST_FILE)
    for relative in late:
        store.upload(folder / relative, base + relative)
    gone = sorted(set(named) - set(manifest.files))
    pushed = Pushed(
        len(changed),
        len(manifest.files) - len(changed),
        store.delete([base + relative for relative in gone]),
    )
    store.delete([base + PENDING_FILE])
    say(
        f"s3://{store.bucket}/{base}: {pushed.uploaded:,} files uploaded, "
        f"{pushed.unchanged:,} unchanged, {pushed.deleted:,} superseded ones deleted"
    )
    return pushed
