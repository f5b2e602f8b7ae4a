"""`report --archive s3://...` copies the archive to a temporary folder: a key below the prefix
is kept as the relative path, and no key may name a path outside that folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from queue_autoscale.adapters.s3 import Archive

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(
    "key",
    ["a/events/../../escaped.txt", "a/events/dt=2026-11-01/../../../escaped.txt"],
    ids=["dot-dot", "dot-dot-deeper"],
)
def test_a_key_that_leaves_the_folder_is_refused_and_nothing_is_written_outside(
    clients: Any, suffix: str, tmp_path: Path, key: str
) -> None:
    # GIVEN an archive holding an event object and a key with '..' parts (S3 keys are text)
    bucket = f"archive-{suffix}"
    clients.s3.create_bucket(Bucket=bucket)
    clients.s3.put_object(Bucket=bucket, Key="a/events/dt=2026-11-01/x.jsonl.gz", Body=b"e")
    clients.s3.put_object(Bucket=bucket, Key=key, Body=b"not for your disk")
    folder = tmp_path / "scratch" / "archive" / "events"

    # WHEN it is copied down
    with pytest.raises(ValueError, match="not a path below s3://") as caught:
        Archive(clients.s3, bucket).download_tree("a/events/", folder)

    # THEN it stops naming the key, and no file lands outside the folder
    assert str(caught.value) == f"s3://{bucket}/{key}: not a path below s3://{bucket}/a/events/"
    written = [path for path in tmp_path.rglob("*") if path.is_file()]
    assert all(folder in path.parents for path in written)
