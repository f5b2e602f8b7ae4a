"""The queue config store: an SSM parameter holding the JSON document, or a pointer
`s3://bucket/key` to an S3 object holding it (documents over SSM's 4 KB / 8 KB limits).

Both are read through Powertools Parameters with a cache TTL (`max_age_seconds`): SSM with
its `SSMProvider`, S3 with `S3ObjectProvider`, a `BaseProvider` of our own. An S3 object
is re-read with `If-None-Match`, so an unchanged document costs a 304, not its bytes.
Errors come out as `ConfigStoreError` naming the parameter or object. docs/config.md.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Any

from aws_lambda_powertools.utilities.parameters import SSMProvider
from aws_lambda_powertools.utilities.parameters.base import BaseProvider
from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError
from botocore.exceptions import BotoCoreError, ClientError

from queue_autoscale.adapters.errors import AdapterError, translate

S3_POINTER = re.compile(r"^s3://(?P<bucket>[a-z0-9][a-z0-9.-]{1,61}[a-z0-9])/(?P<key>\S{1,1024})$")
"""A parameter value that names the S3 object holding the document instead of being it."""

MAX_DOCUMENT_BYTES = 16 * 1024 * 1024
"""Largest config object read from S3 (10,000 queues take about 1.2 MB)."""


class ConfigStoreError(AdapterError):
    """The store answered with something that is not a usable document (too large, not
    UTF-8, not text); AWS errors come out as the other AdapterErrors."""


@dataclass(frozen=True)
class ConfigDocument:
    """A config document's text and where it was read (named in every error about it)."""

    text: str
    source: str


def parse_pointer(value: str) -> tuple[str, str] | None:
    """(bucket, key) when `value` is an `s3://bucket/key` pointer, else None."""
    match = S3_POINTER.match(value.strip())
    return (match["bucket"], match["key"]) if match else None


class S3ObjectProvider(BaseProvider):
    """Powertools provider for S3 objects named `s3://bucket/key`, as UTF-8 text.

    Keeps the last body and ETag per object and asks with If-None-Match, so a refresh of an
    unchanged object transfers nothing. Objects over `max_bytes` are refused unread.
    """

    def __init__(self, boto3_client: Any, max_bytes: int = MAX_DOCUMENT_BYTES) -> None:
        self.client = boto3_client
        self.max_bytes = max_bytes
        self._bodies: dict[str, tuple[str, str]] = {}
        super().__init__(client=boto3_client)  # type: ignore[no-untyped-call]

    def _get(self, name: str, **sdk_options: Any) -> str:
        pointer = parse_pointer(name)
        if pointer is None:
            raise ValueError(f"{name!r} is not an s3://bucket/key URI")
        bucket, key = pointer
        known = self._bodies.get(name)
        if known is not None:
            sdk_options["IfNoneMatch"] = known[0]
        try:
            answer = self.client.get_object(Bucket=bucket, Key=key, **sdk_options)
        except ClientError as error:
            status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if known is not None and status == 304:
                return known[1]
            raise
        size = int(answer.get("ContentLength") or 0)
        if size > self.max_bytes:
            answer["Body"].close()
            raise ValueError(f"{size} bytes, above the {self.max_bytes}-byte limit")
        body = answer["Body"].read(self.max_bytes + 1)
        if len(body) > self.max_bytes:
            raise ValueError(f"more than the {self.max_bytes}-byte limit")
        try:
            text: str = body.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ValueError(f"not UTF-8 text (byte offset {error.start})") from None
        self._bodies[name] = (str(answer.get("ETag", "")), text)
        return text

    def _get_multiple(self, path: str, **sdk_options: Any) -> dict[str, str]:
        raise NotImplementedError("S3ObjectProvider reads single objects")


def _cause(error: GetParameterError) -> BaseException:
    """Powertools wraps every failure in GetParameterError; the original is its context."""
    return error.__context__ or error


class ConfigStore:
    """Reads the queue config document from SSM parameter `parameter_name`, following an
    `s3://` pointer, each cached for `max_age_seconds` (Powertools' TTL cache)."""

    def __init__(
        self, ssm_client: Any, s3_client: Any, parameter_name: str, max_age_seconds: int
    ) -> None:
        self.parameter_name = parameter_name
        self.max_age_seconds = max_age_seconds
        self._ssm = SSMProvider(boto3_client=ssm_client)
        self._s3 = S3ObjectProvider(s3_client)
        self._lock = threading.Lock()  # Powertools' cache is a plain dict

    @property
    def source(self) -> str:
        """The parameter's name (logs, errors, the ConfigErrors metric's dimension)."""
        return self.parameter_name

    def read(self) -> ConfigDocument:
        """The current document (cached up to the TTL); ConfigStoreError when unreadable."""
        with self._lock:
            value = self._read(self._ssm, "ssm:GetParameter", self.parameter_name)
            pointer = parse_pointer(value)
            if pointer is None:
                return ConfigDocument(value, self.source)
            uri = value.strip()
            return ConfigDocument(
                self._read(self._s3, "s3:GetObject", uri), f"{uri} (named by {self.source})"
            )

    def _read(self, provider: BaseProvider, operation: str, name: str) -> str:
        try:
            value = provider.get(name, max_age=self.max_age_seconds)
        except GetParameterError as error:
            cause = _cause(error)
            if isinstance(cause, ClientError | BotoCoreError):
                raise translate(cause, operation, name) from None
            raise ConfigStoreError(operation, str(cause)[:300], resource=name) from None
        if not isinstance(value, str):
            raise ConfigStoreError(operation, f"not text: {type(value).__name__}", resource=name)
        return value
