"""S3 archive: gzipped JSON-lines objects of raw events and decision records.

Keys (DESIGN section 3): `events/dt=YYYY-MM-DD/hour=HH/<batch-id>.jsonl.gz` and
`decisions/dt=YYYY-MM-DD/<tick-id>.jsonl.gz`, dates in UTC, so Spark reads them as
Hive-style partitions. Rejected bodies too large for a DLQ message go to
`rejected/dt=YYYY-MM-DD/<id>.txt.gz`.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from queue_autoscale.adapters.errors import AdapterError, NotFound, aws_call

JSONL_CONTENT_TYPE = "application/x-ndjson"


def _moment(at_epoch_seconds: float) -> datetime:
    return datetime.fromtimestamp(at_epoch_seconds, UTC)


def events_key(at_epoch_seconds: float, batch_id: str) -> str:
    """Archive key of one batch of raw events, partitioned by UTC day and hour."""
    moment = _moment(at_epoch_seconds)
    return f"events/dt={moment:%Y-%m-%d}/hour={moment:%H}/{batch_id}.jsonl.gz"


def decisions_key(at_epoch_seconds: float, tick_id: str) -> str:
    """Archive key of one tick's decision records, partitioned by UTC day."""
    return f"decisions/dt={_moment(at_epoch_seconds):%Y-%m-%d}/{tick_id}.jsonl.gz"


def rejected_key(at_epoch_seconds: float, rejection_id: str) -> str:
    """Archive key of a rejected body too large for the events DLQ."""
    return f"rejected/dt={_moment(at_epoch_seconds):%Y-%m-%d}/{rejection_id}.txt.gz"


GZIP_LEVEL = 3
"""gzip level of archive objects. gzip's default 9 spent ~20 ms of CPU per 1,000-event
batch (more than validating it); 3 takes ~1.5 ms for objects ~13% larger
(benchmarks/ingest_throughput.py)."""


def encode_lines(records: Iterable[Mapping[str, Any]]) -> list[bytes]:
    """Each record as one compact JSON line (sorted keys, newline-terminated, UTF-8)."""
    return [
        (json.dumps(record, separators=(",", ":"), sort_keys=True) + "\n").encode("utf-8")
        for record in records
    ]


def encode_jsonl_gz(records: Iterable[Mapping[str, Any]]) -> bytes:
    """Records -> gzipped JSON lines (mtime 0, so equal records give equal bytes)."""
    return gzip.compress(b"".join(encode_lines(records)), compresslevel=GZIP_LEVEL, mtime=0)


def decode_jsonl_gz(data: bytes) -> list[dict[str, Any]]:
    """Gzipped JSON lines -> records."""
    text = gzip.decompress(data).decode("utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


class Archive:
    """Writes archive objects to one bucket through one S3 client."""

    def __init__(self, client: Any, bucket: str) -> None:
        self._client = client
        self.bucket = bucket

    def _put(self, key: str, data: bytes, content_type: str) -> str:
        with aws_call("PutObject", f"s3://{self.bucket}/{key}"):
            self._client.put_object(
                Bucket=self.bucket, Key=key, Body=data, ContentType=content_type
            )
        return key

    def put_events(
        self, at_epoch_seconds: float, batch_id: str, records: Iterable[Mapping[str, Any]]
    ) -> str:
        """Store one batch of accepted events; return the key."""
        key = events_key(at_epoch_seconds, batch_id)
        return self._put(key, encode_jsonl_gz(records), JSONL_CONTENT_TYPE)

    def put_decisions(
        self, at_epoch_seconds: float, tick_id: str, records: Iterable[Mapping[str, Any]]
    ) -> str:
        """Store one tick's decision records; return the key."""
        key = decisions_key(at_epoch_seconds, tick_id)
        return self._put(key, encode_jsonl_gz(records), JSONL_CONTENT_TYPE)

    def put_rejected(self, at_epoch_seconds: float, rejection_id: str, body: str) -> str:
        """Store a rejected body verbatim (gzipped); return the key."""
        key = rejected_key(at_epoch_seconds, rejection_id)
        return self._put(key, gzip.compress(body.encode("utf-8"), mtime=0), "text/plain")

    def get_records(self, key: str) -> list[dict[str, Any]]:
        """Read back one JSON-lines object (for tools and tests)."""
        with aws_call("GetObject", f"s3://{self.bucket}/{key}"):
            response = self._client.get_object(Bucket=self.bucket, Key=key)
        return decode_jsonl_gz(response["Body"].read())

    def keys(self, prefix: str, *, start_after: str | None = None, limit: int = 1000) -> list[str]:
        """Keys under `prefix` in key order (after `start_after`), at most `limit` of them."""
        keys: list[str] = []
        kwargs: dict[str, Any] = {"Bucket": self.bucket, "Prefix": prefix}
        if start_after:
            kwargs["StartAfter"] = start_after
        while len(keys) < limit:
            kwargs["MaxKeys"] = min(1000, limit - len(keys))
            with aws_call("ListObjectsV2", f"s3://{self.bucket}/{prefix}"):
                response = self._client.list_objects_v2(**kwargs)
            keys.extend(str(item["Key"]) for item in response.get("Contents", []))
            token = response.get("NextContinuationToken")
            if not response.get("IsTruncated") or not token:
                break
            kwargs["ContinuationToken"] = token
        return keys[:limit]

    def recent_records(
        self, kind: str, since: float, until: float, *, max_objects: int = 200
    ) -> tuple[list[dict[str, Any]], bool]:
        """Records of `kind` ('events' or 'decisions') in objects filed from `since` to `until`
        (epoch seconds; by the partition of the day, and of the hour for events), newest objects
        first, at most `max_objects` read; and whether objects were left unread."""
        prefixes: list[str] = []
        step = 3600.0 if kind == "events" else 86_400.0
        moment = since - since % step
        while moment <= until:
            day = f"{kind}/dt={_moment(moment):%Y-%m-%d}/"
            prefixes.append(day + (f"hour={_moment(moment):%H}/" if kind == "events" else ""))
            moment += step
        found: list[str] = []
        for prefix in prefixes:
            found += self.keys(prefix, limit=10 * max_objects)
        chosen = sorted(found, reverse=True)[:max_objects]
        records: list[dict[str, Any]] = []
        for key in chosen:
            records.extend(self.get_records(key))
        return records, len(found) > len(chosen)

    def get_bytes(self, key: str, limit: int) -> bytes | None:
        """The object's first `limit` + 1 bytes at most (more than `limit`: it is larger), or
        None when the bucket has no such key (a missing bucket and every other failure raise)."""
        try:
            with aws_call("GetObject", f"s3://{self.bucket}/{key}"):
                response = self._client.get_object(Bucket=self.bucket, Key=key)
        except NotFound as error:
            if error.code == "NoSuchKey":
                return None
            raise
        with response["Body"] as body:
            return bytes(body.read(limit + 1))

    def download(self, key: str, target: Path) -> None:
        """Copy one object to the file `target` (its folders made)."""
        target.parent.mkdir(parents=True, exist_ok=True)
        with aws_call("GetObject", f"s3://{self.bucket}/{key}"):
            self._client.download_file(self.bucket, key, str(target))

    def upload(self, path: Path, key: str) -> None:
        """Copy the file at `path` to `key`."""
        with aws_call("PutObject", f"s3://{self.bucket}/{key}"):
            self._client.upload_file(str(path), self.bucket, key)

    def delete(self, keys: Sequence[str]) -> int:
        """Delete exactly these keys (1,000 a request); return how many. A key S3 refuses to
        delete raises, naming it."""
        for start in range(0, len(keys), 1000):
            batch = keys[start : start + 1000]
            with aws_call("DeleteObjects", f"s3://{self.bucket}/{batch[0]}"):
                response = self._client.delete_objects(
                    Bucket=self.bucket,
                    Delete={"Objects": [{"Key": key} for key in batch], "Quiet": True},
                )
            for failed in response.get("Errors", []):
                raise AdapterError(
                    "DeleteObjects",
                    str(failed.get("Message", "")),
                    code=str(failed.get("Code", "")),
                    resource=f"s3://{self.bucket}/{failed.get('Key', '')}",
                )
        return len(keys)

    def download_tree(self, prefix: str, folder: Path, *, limit: int = 1_000_000) -> int:
        """Copy every object under `prefix` to `folder`, keeping the key below the prefix as
        the relative path; return how many were copied. A key with a '.' or '..' part (S3
        keys are text: it would land outside `folder`) raises ValueError before any copy."""
        copies = []
        for key in self.keys(prefix, limit=limit):
            relative = key[len(prefix) :].lstrip("/")
            if not relative or relative.endswith("/"):
                continue
            if any(part in (".", "..") for part in relative.split("/")):
                raise ValueError(
                    f"s3://{self.bucket}/{key}: not a path below s3://{self.bucket}/{prefix}"
                )
            copies.append((key, folder / relative))
        for key, target in copies:
            self.download(key, target)
        return len(copies)
