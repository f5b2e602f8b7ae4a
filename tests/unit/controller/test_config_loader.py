"""The queue config loader: last good config kept, bad documents rejected whole and counted,
a clear failure when no good config was ever read."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

import pytest

from queue_autoscale.adapters.config_store import ConfigDocument
from queue_autoscale.adapters.errors import AccessDenied
from queue_autoscale.config import ConfigError, parse_json
from queue_autoscale.controller.config_loader import (
    ConfigUnavailable,
    FixedDocument,
    QueueConfigLoader,
    build_loader,
)
from queue_autoscale.settings import EvaluateSettings, SettingsError

GOOD = json.dumps([{"queue": "orders", "sla_seconds": 30}, {"queue": "emails"}])
CHANGED = json.dumps([{"queue": "orders", "sla_seconds": 12}, {"queue": "emails"}])
BAD_DOCUMENTS = [
    pytest.param('[{"queue": "orders"', id="bad-json"),
    pytest.param('{"queues": {"queue": "orders"}}', id="schema-error"),
    pytest.param(
        json.dumps(
            [{"queue": "orders", "sla_seconds": 12}, {"queue": "emails", "max_workers": -1}]
        ),
        id="one-bad-queue",
    ),
    pytest.param("[]", id="no-queues"),
]


@dataclass
class Store:
    """A store whose document (or read error) the test sets."""

    text: str
    failure: Exception | None = None
    reads: int = 0
    source: str = "/stack/queues"

    def read(self) -> ConfigDocument:
        self.reads += 1
        if self.failure is not None:
            raise self.failure
        return ConfigDocument(self.text, self.source)


@dataclass
class Metrics:
    published: list[tuple[str, dict[str, float]]] = field(default_factory=list)

    def __call__(self, source: str, values: Mapping[str, float]) -> None:
        self.published.append((source, dict(values)))


def loader_for(text: str) -> tuple[QueueConfigLoader, Store, Metrics]:
    store, metrics = Store(text), Metrics()
    return QueueConfigLoader(store, metrics), store, metrics


def test_a_good_document_is_loaded_and_a_change_is_used_on_the_next_load() -> None:
    # GIVEN a loader on a store holding two queues
    loader, store, metrics = loader_for(GOOD)
    # WHEN it loads, and the store changes, and it loads again
    first = loader.load(100.0)
    store.text = CHANGED
    second = loader.load(115.0)
    # THEN each load returns what the store held then, and nothing was counted as an error
    assert [(q.queue, q.sla_seconds) for q in first] == [("orders", 30.0), ("emails", 30.0)]
    assert [(q.queue, q.sla_seconds) for q in second] == [("orders", 12.0), ("emails", 30.0)]
    status = loader.status
    assert (status.queue_count, status.loaded_at, status.checked_at) == (2, 115.0, 115.0)
    assert (status.errors, status.consecutive_errors, metrics.published) == (0, 0, [])


def test_an_unchanged_document_is_not_parsed_again() -> None:
    loader, _, _ = loader_for(GOOD)
    first = loader.load(1.0)
    # the same objects come back: the text matched, so it was not validated again
    assert loader.load(2.0) is first
    assert loader.status.loaded_at == 1.0


@pytest.mark.parametrize("bad", BAD_DOCUMENTS)
def test_a_bad_document_never_reaches_the_controller(bad: str) -> None:
    # GIVEN a loader that has read a good document
    loader, store, metrics = loader_for(GOOD)
    good = loader.load(100.0)
    digest = loader.status.digest
    # WHEN a bad document is published and read twice
    store.text = bad
    kept = [loader.load(115.0), loader.load(130.0)]
    # THEN the last good config is used, whole (no queue of the bad document leaks in)
    assert kept == [good, good]
    assert [q.sla_seconds for q in kept[0]] == [30.0, 30.0]
    # AND each rejected load is counted and published as ConfigErrors under the store's name
    assert metrics.published == [("/stack/queues", {"ConfigErrors": 1.0})] * 2
    status = loader.status
    assert (status.errors, status.consecutive_errors, status.digest) == (2, 2, digest)
    # AND the reason is validate-config's own message for that document
    with pytest.raises(ConfigError) as expected:
        parse_json(bad, "/stack/queues")
    assert status.last_error == str(expected.value)


def test_the_same_problem_is_counted_once_per_repeat_interval() -> None:
    # GIVEN a loader (repeat interval 5 s) on a store holding a bad document
    loader, store, metrics = loader_for(GOOD)
    loader.load(0.0)
    store.text = "{"
    # WHEN it loads twice within one tick (the shard plan, then the tick), then a tick later,
    # then a different bad document at once
    for now in (10.0, 10.2, 14.9, 15.0):
        loader.load(now)
    store.text = "[1]"
    loader.load(15.1)
    # THEN each tick counts the problem once, and a new problem counts at once
    assert len(metrics.published) == loader.status.errors == 3
    assert "queue #0: expected a JSON object" in str(loader.status.last_error)


def test_a_good_document_after_a_bad_one_is_used_and_resets_the_streak() -> None:
    loader, store, metrics = loader_for(GOOD)
    loader.load(1.0)
    store.text = "{"
    loader.load(2.0)
    store.text = CHANGED
    assert [q.sla_seconds for q in loader.load(3.0)] == [12.0, 30.0]
    assert (loader.status.errors, loader.status.consecutive_errors) == (1, 0)
    assert len(metrics.published) == 1


def test_an_unreadable_store_keeps_the_last_good_config_and_counts_it() -> None:
    loader, store, metrics = loader_for(GOOD)
    good = loader.load(1.0)
    store.failure = AccessDenied("ssm:GetParameter", "no", code="AccessDenied", resource="/x")
    assert loader.load(2.0) == good
    assert metrics.published == [("/stack/queues", {"ConfigErrors": 1.0})]
    assert "cannot read /stack/queues: ssm:GetParameter on /x failed (AccessDenied)" in str(
        loader.status.last_error
    )


@pytest.mark.parametrize("bad", [*BAD_DOCUMENTS, pytest.param(None, id="unreadable")])
def test_a_cold_start_without_a_good_document_fails_naming_the_store_and_why(
    bad: str | None,
) -> None:
    # GIVEN a store that never held a good document
    loader, store, metrics = loader_for(bad or GOOD)
    if bad is None:
        store.failure = AccessDenied("ssm:GetParameter", "denied", code="AccessDenied")
    # WHEN the controller asks for its queues THEN it fails, saying where and why
    with pytest.raises(ConfigUnavailable) as caught:
        loader.load(1.0)
    message = str(caught.value)
    assert message.startswith("no valid queue config was ever read from /stack/queues: ")
    assert str(loader.status.last_error) in message
    # AND the failure is counted like any other
    assert metrics.published == [("/stack/queues", {"ConfigErrors": 1.0})]


def test_the_environment_document_is_read_through_the_same_loader() -> None:
    settings = EvaluateSettings.from_environ(
        {"QUEUES_CONFIG": GOOD, "LOAD_TABLE": "table", "ARCHIVE_BUCKET": "bucket"}
    )
    loader = build_loader(settings)
    assert isinstance(loader.reader, FixedDocument)
    assert [q.queue for q in loader.load(0.0)] == ["orders", "emails"]
    assert loader.status.source == "$QUEUES_CONFIG"


BASE = {"LOAD_TABLE": "table", "ARCHIVE_BUCKET": "bucket"}


@pytest.mark.parametrize(
    ("environment", "message"),
    [
        pytest.param(
            {},
            "set exactly one of $QUEUES_CONFIG_PARAMETER (the config store) and $QUEUES_CONFIG",
            id="neither",
        ),
        pytest.param(
            {"QUEUES_CONFIG": GOOD, "QUEUES_CONFIG_PARAMETER": "/stack/queues"},
            "set exactly one of",
            id="both",
        ),
        pytest.param(
            {"QUEUES_CONFIG_PARAMETER": "not a name"},
            '$QUEUES_CONFIG_PARAMETER = "not a name": String should match pattern',
            id="bad-parameter-name",
        ),
        pytest.param(
            {
                "QUEUES_CONFIG_PARAMETER": "/q",
                "CONFIG_MAX_AGE_SECONDS": "20",
                "EVALUATION_INTERVAL_SECONDS": "15",
            },
            "$CONFIG_MAX_AGE_SECONDS = 20 is above $EVALUATION_INTERVAL_SECONDS = 15",
            id="cache-longer-than-a-tick",
        ),
    ],
)
def test_settings_name_the_config_source_problem(environment: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError) as caught:
        EvaluateSettings.from_environ({**BASE, **environment})
    assert message in str(caught.value)


def test_settings_for_the_store() -> None:
    settings = EvaluateSettings.from_environ(
        {**BASE, "QUEUES_CONFIG_PARAMETER": "/stack/queues", "CONFIG_MAX_AGE_SECONDS": "10"}
    )
    assert (settings.config_parameter, settings.queues_config) == ("/stack/queues", None)
    assert settings.config_max_age_seconds == 10
