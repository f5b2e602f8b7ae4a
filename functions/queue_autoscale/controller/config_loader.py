"""The queue list, read from the config store each tick, kept at the last good document.

`QueueConfigLoader.load(now)` returns the queues to evaluate. It reads the document through
a `DocumentReader` (the SSM/S3 store, cached up to its TTL, or the fixed `$QUEUES_CONFIG`
text), validates all of it with `config.parse_json` (the same check and messages as
`validate-config`) and only then swaps it in: a document with bad JSON, a schema error or
one bad queue never reaches the controller, which keeps the last good config. Each failed
read or rejected document is logged with the reason, counted in `status` and published as
the `ConfigErrors` metric (dimension `ConfigParameter`) that the stack's config-errors alarm
watches (the same problem at most once per `repeat_seconds`, the cache TTL). With no good
document ever read (a cold start on a bad or unreadable store) `load` raises
`ConfigUnavailable`, naming the source and the reason: the controller never runs
half-configured or on an empty list. docs/config.md.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol

from queue_autoscale.adapters.aws import AwsClients
from queue_autoscale.adapters.config_store import ConfigDocument, ConfigStore
from queue_autoscale.adapters.errors import AdapterError
from queue_autoscale.config import ENV_VAR, ConfigError, QueueConfig, parse_json
from queue_autoscale.settings import DEFAULT_CONFIG_MAX_AGE_SECONDS, HandlerSettings
from queue_autoscale.telemetry import emf_config_metrics, logger


class ConfigUnavailable(RuntimeError):  # noqa: N818 - reads as an outcome
    """No good queue config was ever read; the message names the source and the reason."""


class DocumentReader(Protocol):
    """Where the config document comes from (the store, or fixed text)."""

    @property
    def source(self) -> str:
        """What to call the store in logs, errors and the metric's dimension."""
        ...

    def read(self) -> ConfigDocument:
        """The current document; raises AdapterError when it cannot be read."""
        ...


@dataclass(frozen=True)
class FixedDocument:
    """A document that never changes: `$QUEUES_CONFIG` (tests, benchmarks, the old stacks)."""

    text: str
    source: str = f"${ENV_VAR}"

    def read(self) -> ConfigDocument:
        """The text itself."""
        return ConfigDocument(self.text, self.source)


@dataclass(frozen=True)
class ConfigStatus:
    """What the loader holds: the good document in use and the errors since."""

    source: str
    digest: str | None = None
    """sha256 (first 12 hex digits) of the document in use; None before the first good one."""
    queue_count: int = 0
    loaded_at: float | None = None
    """Epoch seconds the document in use was first read."""
    checked_at: float | None = None
    """Epoch seconds of the last read, good or bad."""
    errors: int = 0
    """Failed reads and rejected documents since this loader started."""
    consecutive_errors: int = 0
    """Failed reads and rejected documents since the last good read."""
    last_error: str | None = None


ErrorSink = Callable[[str, Mapping[str, float]], None]
"""Publishes the loader's metrics: (source, {metric name: value})."""


class QueueConfigLoader:
    """Validated queue configs from a `DocumentReader`, the last good one kept."""

    def __init__(
        self,
        reader: DocumentReader,
        publish: ErrorSink = emf_config_metrics,
        repeat_seconds: float = DEFAULT_CONFIG_MAX_AGE_SECONDS,
    ) -> None:
        self.reader = reader
        self.publish = publish
        self.repeat_seconds = repeat_seconds
        """The same problem is counted (and logged) at most once per this many seconds: one
        tick may load more than once (the shard plan, then the tick), and the store answers
        from its cache for its TTL anyway."""
        self._counted_at: float | None = None
        self._lock = threading.Lock()
        self._queues: tuple[QueueConfig, ...] | None = None
        self._good_text: str | None = None
        self._bad: tuple[str, str] | None = None
        """(text, why) of the last rejected document, so it is not parsed again each tick."""
        self._status = ConfigStatus(source=reader.source)

    @property
    def status(self) -> ConfigStatus:
        """The document in use and the error counts."""
        return self._status

    def load(self, now: float) -> tuple[QueueConfig, ...]:
        """The queues to evaluate at `now` (epoch seconds): the store's document when it is
        good, else the last good one; ConfigUnavailable when there never was one."""
        with self._lock:
            problem = self._refresh(now)
            if problem is None:
                self._counted_at = None
            elif self._counts(problem, now):
                self._counted_at = now
                self._status = replace(
                    self._status,
                    checked_at=now,
                    errors=self._status.errors + 1,
                    consecutive_errors=self._status.consecutive_errors + 1,
                    last_error=problem,
                )
                self.publish(self.reader.source, {"ConfigErrors": 1.0})
                kept = "keeping the last good config" if self._queues else "no good config yet"
                logger.error(
                    f"queue config rejected: {kept}",
                    config_source=self.reader.source,
                    reason=problem,
                    in_use=self._status.digest,
                    consecutive_errors=self._status.consecutive_errors,
                )
            if self._queues is None:
                raise ConfigUnavailable(
                    f"no valid queue config was ever read from {self.reader.source}: {problem}"
                )
            return self._queues

    def _counts(self, problem: str, now: float) -> bool:
        """Whether this failed load is a new error (not the last one again, too soon)."""
        last = self._counted_at
        return (
            problem != self._status.last_error
            or last is None
            or not 0 <= now - last < self.repeat_seconds
        )

    def _refresh(self, now: float) -> str | None:
        """Read and swap in the document; the reason it was not used, or None."""
        try:
            document = self.reader.read()
        except AdapterError as error:
            return f"cannot read {self.reader.source}: {error}"
        if document.text == self._good_text:
            self._status = replace(self._status, checked_at=now, consecutive_errors=0)
            return None
        if self._bad is not None and self._bad[0] == document.text:
            return self._bad[1]
        try:
            queues = tuple(parse_json(document.text, document.source))
        except ConfigError as error:
            self._bad = (document.text, str(error))
            return str(error)
        digest = hashlib.sha256(document.text.encode("utf-8")).hexdigest()[:12]
        previous = self._status.digest
        self._queues, self._good_text, self._bad = queues, document.text, None
        self._status = replace(
            self._status,
            digest=digest,
            queue_count=len(queues),
            loaded_at=now,
            checked_at=now,
            consecutive_errors=0,
        )
        logger.info(
            "queue config loaded",
            config_source=document.source,
            digest=digest,
            previous=previous,
            queues=len(queues),
        )
        return None


def store_reader(
    settings: HandlerSettings, ssm_client: Any = None, s3_client: Any = None
) -> DocumentReader:
    """The reader the settings name: the SSM parameter (`config_parameter`, read with these
    SSM and S3 clients) or the fixed `$QUEUES_CONFIG` text (`queues_config`)."""
    if settings.config_parameter:
        if ssm_client is None or s3_client is None:
            raise ValueError("reading the config store needs SSM and S3 clients")
        return ConfigStore(
            ssm_client, s3_client, settings.config_parameter, settings.config_max_age_seconds
        )
    return FixedDocument(settings.queues_config or "")


def build_loader(
    settings: HandlerSettings,
    clients: AwsClients | None = None,
    publish: ErrorSink = emf_config_metrics,
) -> QueueConfigLoader:
    """The loader for a handler's settings (EvaluateSettings or RecordSettings)."""
    reader = store_reader(settings, *((clients.ssm, clients.s3) if clients else ()))
    return QueueConfigLoader(reader, publish, repeat_seconds=settings.config_max_age_seconds)
