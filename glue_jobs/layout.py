"""What `sla_report` writes under its `--output_uri`: the one definition of its layout.

Every name the job writes directly under the output (`OUTPUTS`) is here, and the job lists
what it wrote under those names into `_manifest.json`, last. `queue-autoscale report --out
s3://...` trusts only that manifest: it brings down the files it names before a run and
never reads, or deletes, anything else under the prefix (which may be a bucket's root).
Pure: no Spark, no I/O.
"""

from __future__ import annotations

from collections.abc import Collection

from pydantic import BaseModel, ConfigDict, ValidationError

COMPACTED = "compacted_events"
REJECTED = "rejected_events"
CARRY = "backlog_carry"
TABLES = ("sla_hourly", "sla_daily", "cost_hourly", "cost_daily", "backlog")
"""The report's day-partitioned tables (besides the compacted and rejected events)."""
STATE_FILE = "_state.json"
REPORT_FILE = "report.html"
OUTPUTS = (COMPACTED, REJECTED, *TABLES, CARRY, STATE_FILE, REPORT_FILE)
"""Every folder and file the job writes directly under its output."""
MANIFEST_FILE = "_manifest.json"
MANIFEST_VERSION = 1


class ManifestError(ValueError):
    """The manifest cannot be used; the message names the file and what is wrong."""


class Manifest(BaseModel):
    """The files (paths relative to the output, '/'-separated) a run left there."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: int = MANIFEST_VERSION
    files: tuple[str, ...] = ()


def is_output(relative: str) -> bool:
    """Whether a path relative to the output is one of the job's: under (or one of) OUTPUTS,
    with no empty, '.' or '..' part, and not a checksum (`.crc`, local Spark's own)."""
    parts = relative.split("/")
    return (
        parts[0] in OUTPUTS
        and all(part not in ("", ".", "..") for part in parts)
        and not parts[-1].endswith(".crc")
    )


def manifest_json(files: Collection[str]) -> str:
    """The manifest of `files` (sorted), as the job writes it."""
    return Manifest(files=tuple(sorted(files))).model_dump_json(indent=1)


def parse_manifest(text: str, uri: str) -> Manifest:
    """The manifest in `text`; ManifestError naming `uri` when it is not JSON of this shape,
    of this version, or names a path outside the layout."""
    try:
        manifest = Manifest.model_validate_json(text)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "document"
        raise ManifestError(f"{uri}: {where}: {first['msg']}") from None
    if manifest.version != MANIFEST_VERSION:
        raise ManifestError(
            f"{uri}: version {manifest.version}, this report writes {MANIFEST_VERSION}"
        )
    outside = [path for path in manifest.files if not is_output(path)]
    if outside:
        raise ManifestError(f"{uri}: {outside[0]!r} is not one of the report's outputs")
    return manifest
