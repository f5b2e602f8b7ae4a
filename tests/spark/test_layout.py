"""The report's layout and manifest: which paths are the job's, and which manifests are usable."""

from __future__ import annotations

import json

import pytest

from glue_jobs.layout import (
    MANIFEST_VERSION,
    ManifestError,
    is_output,
    manifest_json,
    parse_manifest,
)

URI = "s3://bucket/reports/_manifest.json"


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        pytest.param("sla_daily/dt=2026-11-02/part-0.parquet", True, id="a-table-file"),
        pytest.param("compacted_events/dt=2026-11-02/hour=9/part-0.parquet", True, id="hour"),
        pytest.param("report.html", True, id="the-report"),
        pytest.param("_state.json", True, id="the-state"),
        pytest.param("notes.txt", False, id="another-object-at-the-root"),
        pytest.param("team/sla_daily/x.parquet", False, id="a-table-name-deeper-down"),
        pytest.param("sla_daily/../../notes.txt", False, id="dot-dot"),
        pytest.param("/sla_daily/x.parquet", False, id="absolute"),
        pytest.param("sla_daily//x.parquet", False, id="empty-part"),
        pytest.param("sla_daily/dt=2026-11-02/.part-0.parquet.crc", False, id="local-checksum"),
        pytest.param("_manifest.json", False, id="the-manifest-itself"),
    ],
)
def test_only_paths_under_the_layouts_names_are_outputs(path: str, expected: bool) -> None:
    assert is_output(path) is expected


def test_a_written_manifest_reads_back_sorted() -> None:
    files = ["report.html", "sla_daily/dt=2026-11-02/part-0.parquet", "_state.json"]

    manifest = parse_manifest(manifest_json(files), URI)

    assert manifest.files == (
        "_state.json",
        "report.html",
        "sla_daily/dt=2026-11-02/part-0.parquet",
    )
    assert manifest.version == MANIFEST_VERSION


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("{not json", f"{URI}: document: Invalid JSON", id="not-json"),
        pytest.param(
            json.dumps({"version": 1, "files": [3]}),
            f"{URI}: files.0: Input should be a valid string",
            id="not-a-path",
        ),
        pytest.param(
            json.dumps({"version": 2, "files": []}),
            f"{URI}: version 2, this report writes 1",
            id="another-version",
        ),
        pytest.param(
            json.dumps({"version": 1, "files": ["report.html", "../other/secret.csv"]}),
            f"{URI}: '../other/secret.csv' is not one of the report's outputs",
            id="a-path-outside-the-layout",
        ),
    ],
)
def test_an_unusable_manifest_is_named_in_one_line(text: str, message: str) -> None:
    with pytest.raises(ManifestError) as caught:
        parse_manifest(text, URI)

    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)
