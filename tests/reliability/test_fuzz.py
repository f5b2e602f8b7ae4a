"""Bad input, fuzzed: hypothesis over event bodies (raw text, JSON of any shape, valid
events with one field mutated, and the hostile cases: nesting thousands deep, integers far
beyond 64 bits and beyond Python's 4,300-digit limit, floats and exponents where integers
belong, NaN/Infinity literals, lone surrogates and non-UTF-8 text) through
`events.parse_body` and through the record_events handler with an in-memory AWS side that
refuses what DynamoDB refuses; and over whole config documents. Every input is accepted or
rejected with a reason naming the field and value; nothing crashes a batch; metric
dimensions stay within the queue allowlist plus "unknown".
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from queue_autoscale.adapters.dynamodb import counter_update
from queue_autoscale.adapters.errors import InvalidRequest
from queue_autoscale.adapters.sqs import SendFailure
from queue_autoscale.config import ConfigError, parse_config, parse_json
from queue_autoscale.demo import sqs_event
from queue_autoscale.events import MAX_BODY_BYTES, ValidationContext, parse_body
from queue_autoscale.handlers import record_events
from queue_autoscale.ingest.runtime import RecordRuntime
from queue_autoscale.settings import RecordSettings
from tests.integration.conftest import FakeLambdaContext

NOW = 1_763_000_000.0
NOW_MS = int(NOW * 1000)
QUEUES = ("orders", "emails")
CONTEXT = ValidationContext(queues=QUEUES, now_ms=NOW_MS)

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.integers(min_value=2**63, max_value=10**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5)
    ),
    max_leaves=20,
)
VALID = {
    "queued": {"type": "queued", "queue": "orders", "job_id": "j1", "at": NOW_MS - 1000},
    "started": {
        "type": "started",
        "queue": "emails",
        "job_id": "j2",
        "at": NOW_MS - 900,
        "pickup_ms": 120,
    },
    "completed": {
        "type": "completed",
        "queue": "orders",
        "job_id": "j3",
        "at": NOW_MS - 500,
        "duration_ms": 800,
        "attempt": 2,
        "event_id": "e-3",
    },
}


def _outcomes(body: str) -> int:
    parsed = parse_body(body, CONTEXT)
    for rejection in parsed.rejected:
        assert rejection.reason.strip()
        assert rejection.queue in {*QUEUES, "unknown"}
    return len(parsed.accepted) + len(parsed.rejected)


def _nested(depth: int, opener: str) -> str:
    closer = {"[": "]", '{"a":': "}"}[opener]
    return opener * depth + "1" + closer * depth


def _with_number(text: str) -> str:
    """A queued event whose `at` is written as this raw JSON number text."""
    return '{"type":"queued","queue":"orders","job_id":"j","at":' + text + "}"


hostile_bodies = st.one_of(
    st.builds(_nested, st.integers(1, 5_000), st.sampled_from(["[", '{"a":'])),
    st.builds(
        lambda digits: _with_number("9" * digits), st.integers(min_value=15, max_value=6_000)
    ),
    st.sampled_from(["NaN", "Infinity", "-Infinity", "1e3", "1.0", "1E+400", "-0", "0.5"]).map(
        _with_number
    ),
    st.binary(max_size=200).map(lambda b: b.decode("utf-8", errors="surrogateescape")),
    st.sampled_from(["\\ud800", "\\udfff", "\\u0000"]).map(
        lambda escape: '{"type":"queued","queue":"orders","job_id":"' + escape + '","at":1}'
    ),
)


@given(
    st.text(max_size=300)
    | st.binary(max_size=300).map(lambda b: b.decode("latin-1"))
    | hostile_bodies
)
def test_any_text_parses_or_is_rejected_whole(body: str) -> None:
    assert _outcomes(body) >= 1


@given(json_values)
def test_any_json_shape_gives_one_outcome_per_event(value: Any) -> None:
    body = json.dumps(value)
    count = _outcomes(body)
    if isinstance(value, list) and 0 < len(value) <= 100:
        assert count == len(value)
    else:
        assert count == 1


@given(
    st.sampled_from(sorted(VALID)),
    st.sampled_from(
        ["type", "queue", "job_id", "at", "duration_ms", "pickup_ms", "attempt", "event_id", "x"]
    ),
    st.one_of(st.just("<delete>"), json_values),
)
def test_one_mutated_field_is_named_with_its_value(base: str, name: str, value: Any) -> None:
    event = dict(VALID[base])
    if value == "<delete>":
        event.pop(name, None)
    else:
        event[name] = value
    parsed = parse_body(json.dumps(event), CONTEXT)
    if parsed.accepted:
        return  # the mutation happened to be valid (e.g. another job id)
    (rejection,) = parsed.rejected
    reason = rejection.reason
    if name == "type" and value in ("queued", "started", "completed", "failed"):
        # A valid type that does not fit the other fields names the field that no longer fits.
        assert "field 'duration_ms'" in reason or "field 'pickup_ms'" in reason
    elif value == "<delete>":
        assert f"field '{name}' is missing" in reason or "field 'duration_ms'" in reason
    elif f"field '{name}' is only for" in reason:
        pass  # a field of another event type: the type is the reason, whatever its value
    elif value is None and f"field '{name}' is required" in reason:
        pass  # a null reads as absent
    else:
        assert f"field '{name}' = " in reason, reason
        shown = json.dumps(value, default=str)
        assert shown[:100] in reason or shown[:117] in reason or len(shown) > 117


def test_an_oversized_body_and_an_unknown_queue_are_rejected() -> None:
    event = dict(VALID["queued"], job_id="x" * MAX_BODY_BYTES)
    (big,) = parse_body(json.dumps(event), CONTEXT).rejected
    assert big.reason.startswith("body = ") and "byte limit" in big.reason
    unknown = parse_body(json.dumps(dict(VALID["queued"], queue="payments")), CONTEXT)
    (rejection,) = unknown.rejected
    assert "field 'queue' = \"payments\"" in rejection.reason
    assert rejection.queue == "unknown"


@dataclass
class FakeAws:
    """The adapters record_events uses, in memory; every call succeeds."""

    counters: dict[tuple[str, int], dict[str, int]] = field(default_factory=dict)
    archived: list[dict[str, Any]] = field(default_factory=list)
    dead: list[tuple[str, str]] = field(default_factory=list)
    rejected_bodies: dict[str, str] = field(default_factory=dict)
    metrics: list[tuple[str, dict[str, float]]] = field(default_factory=list)

    def add_counters_once(
        self,
        queue: str,
        second: int,
        contributions: Mapping[str, Mapping[str, int]],
        *,
        expires_at: int,
    ) -> None:
        for counts in contributions.values():
            # What DynamoDB refuses (ValidationException): a number of more than 38 digits.
            _, _, values = counter_update(counts, expires_at)
            if any(len(value["N"].lstrip("-")) > 38 for value in values.values()):
                raise InvalidRequest("UpdateItem", "number overflow", code="ValidationException")
            slot = self.counters.setdefault((queue, second), {})
            for key, value in counts.items():
                slot[key] = slot.get(key, 0) + value

    def put_events(self, at: float, batch_id: str, records: Any) -> str:
        self.archived.extend(records)
        return f"events/{batch_id}"

    def put_rejected(self, at: float, rejection_id: str, body: str) -> str:
        self.rejected_bodies[rejection_id] = body
        return f"rejected/{rejection_id}"

    def reject_many(self, items: Any) -> list[SendFailure]:
        self.dead.extend(items)
        return []


def _runtime(fake: FakeAws) -> RecordRuntime:
    settings = RecordSettings.from_environ(
        {
            "QUEUES_CONFIG": json.dumps([{"queue": name} for name in QUEUES]),
            "LOAD_TABLE": "load",
            "ARCHIVE_BUCKET": "archive",
            "EVENTS_DLQ_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/dlq",
        }
    )
    return RecordRuntime(
        settings=settings,
        table=fake,  # type: ignore[arg-type]
        archive=fake,  # type: ignore[arg-type]
        dead_letters=fake,  # type: ignore[arg-type]
        clock=lambda: NOW,
        publish_metrics=lambda queue, values: fake.metrics.append((queue, dict(values))),
    )


bodies = st.one_of(
    st.text(max_size=100),
    hostile_bodies,
    st.sampled_from(list(VALID.values())).map(
        lambda e: json.dumps(dict(e, **{"duration_ms" if "duration_ms" in e else "at": 2**70}))
    ),
    json_values.map(json.dumps),
    st.lists(st.sampled_from(list(VALID.values())) | json_values, max_size=8).map(json.dumps),
    st.sampled_from(list(VALID.values())).map(lambda e: json.dumps(dict(e, queue="payments"))),
)


@pytest.fixture(autouse=True)
def _no_runtime() -> Any:
    yield
    record_events.set_runtime(None)


@settings(max_examples=60)
@given(st.lists(bodies, min_size=1, max_size=10))
def test_the_handler_accepts_or_dead_letters_every_event_of_a_fuzzed_batch(
    batch: list[str],
) -> None:
    # GIVEN a batch of arbitrary bodies and an AWS side that always succeeds
    fake = FakeAws()
    record_events.set_runtime(_runtime(fake))
    messages = [{"MessageId": f"m{i}", "Body": body} for i, body in enumerate(batch)]
    expected = sum(_outcomes(body) for body in batch)

    # WHEN the handler consumes it
    response = record_events.handler(
        sqs_event(messages, "arn:aws:sqs:us-east-1:123456789012:events"),
        FakeLambdaContext(),  # type: ignore[arg-type]
    )

    # THEN nothing is retried: every event was archived or dead-lettered with its reason
    assert response == {"batchItemFailures": []}
    assert len(fake.archived) + len(fake.dead) == expected
    assert all(json.loads(wrapper)["reason"] == reason and reason for wrapper, reason in fake.dead)
    assert sum(
        sum(v for k, v in c.items() if k in ("queued", "started", "completed", "failed"))
        for c in fake.counters.values()
    ) == len(fake.archived)
    # AND metrics carry only allowlisted queues or "unknown"
    assert {queue for queue, _ in fake.metrics} <= {*QUEUES, "unknown"}
    accepted = sum(values.get("AcceptedEvents", 0) for _, values in fake.metrics)
    rejected = sum(values.get("RejectedEvents", 0) for _, values in fake.metrics)
    assert (accepted, rejected) == (len(fake.archived), len(fake.dead))


@given(
    st.one_of(
        json_values,
        st.lists(
            st.dictionaries(
                st.sampled_from(["queue", "sla_seconds", "max_workers", "cluster", "dlq", "x"]),
                json_values,
                max_size=4,
            ),
            max_size=4,
        ),
    )
)
def test_any_config_document_parses_or_raises_a_named_config_error(document: Any) -> None:
    for text in (None, json.dumps(document)):
        try:
            queues = parse_config(document) if text is None else parse_json(text)
        except ConfigError as error:
            assert str(error).strip()
        else:
            assert all(config.queue for config in queues)


@given(st.text(max_size=200))
def test_any_config_text_parses_or_raises_a_config_error(text: str) -> None:
    try:
        parse_json(text)
    except ConfigError as error:
        assert str(error).strip()
