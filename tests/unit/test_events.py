"""The Event contract: what is accepted, and the exact reason for what is rejected."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from queue_autoscale.events import (
    EVENTS_RETENTION_SECONDS,
    MAX_BODY_BYTES,
    Event,
    ValidationContext,
    default_event_id,
    parse_body,
    validate_event,
)

NOW_MS = 1_763_000_000_000
CONTEXT = ValidationContext(queues={"orders", "emails"}, now_ms=NOW_MS, max_skew_seconds=300)


def event(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"type": "queued", "queue": "orders", "job_id": "j1", "at": NOW_MS}
    base.update(changes)
    return {key: value for key, value in base.items() if value is not None}


def test_a_valid_event_gets_a_deterministic_event_id() -> None:
    parsed = validate_event(event(), CONTEXT)
    assert parsed.event_id == default_event_id("queued", "orders", "j1", 1)
    assert parsed.event_id == validate_event(event(), CONTEXT).event_id
    retried = validate_event(event(attempt=2), CONTEXT)
    assert retried.event_id != parsed.event_id
    assert validate_event(event(event_id="given"), CONTEXT).event_id == "given"


def test_record_is_the_archived_form() -> None:
    parsed = validate_event(
        event(type="completed", duration_ms=1500, attempt=2, at=NOW_MS - 1), CONTEXT
    )
    assert parsed.record() == {
        "type": "completed",
        "queue": "orders",
        "job_id": "j1",
        "at": NOW_MS - 1,
        "duration_ms": 1500,
        "attempt": 2,
        "event_id": default_event_id("completed", "orders", "j1", 2),
    }
    assert parsed.second == 1_762_999_999


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        pytest.param(
            event(queue="payments"),
            "field 'queue' = \"payments\": unknown queue (not in the configured queues)",
            id="unknown-queue",
        ),
        pytest.param(event(job_id=None), "field 'job_id' is missing", id="missing-job-id"),
        pytest.param(
            {"queue": "orders"},
            "field 'type' is missing; field 'job_id' is missing; field 'at' is missing",
            id="missing-several",
        ),
        pytest.param(
            event(at="1763000000000"),
            "field 'at' = \"1763000000000\": Input should be a valid integer",
            id="at-as-string",
        ),
        pytest.param(
            event(at=1.5e12),
            "field 'at' = 1500000000000.0: Input should be a valid integer",
            id="at-as-float",
        ),
        pytest.param(
            event(attempt=True),
            "field 'attempt' = true: Input should be a valid integer",
            id="attempt-as-bool",
        ),
        pytest.param(
            event(job_id=7), "field 'job_id' = 7: Input should be a valid string", id="job-id-int"
        ),
        pytest.param(
            event(type="finished"),
            "field 'type' = \"finished\": "
            "Input should be 'queued', 'started', 'completed' or 'failed'",
            id="unknown-type",
        ),
        pytest.param(
            event(type="completed", duration_ms=-5),
            "field 'duration_ms' = -5: Input should be greater than or equal to 0",
            id="negative-duration",
        ),
        pytest.param(
            event(type="failed"),
            "field 'duration_ms' is required when type = 'failed'",
            id="failed-without-duration",
        ),
        pytest.param(
            event(duration_ms=5),
            "field 'duration_ms' is only for completed/failed, not 'queued'",
            id="duration-on-queued",
        ),
        pytest.param(
            event(type="completed", duration_ms=1, pickup_ms=5),
            "field 'pickup_ms' is only for started, not 'completed'",
            id="pickup-on-completed",
        ),
        pytest.param(
            event(at=NOW_MS + 301_000),
            "field 'at' = 1763000301000: 301 s in the future "
            "(more than the allowed 300 s clock skew)",
            id="future-beyond-skew",
        ),
        pytest.param(
            event(attempt=0),
            "field 'attempt' = 0: Input should be greater than or equal to 1",
            id="attempt-zero",
        ),
        pytest.param(
            event(duration=5),
            "field 'duration' = 5: Extra inputs are not permitted",
            id="misspelt-field",
        ),
        pytest.param([1], "event = [1]: expected a JSON object", id="not-an-object"),
    ],
)
def test_rejections_name_the_field_and_value(data: Any, reason: str) -> None:
    with pytest.raises(ValueError) as caught:
        validate_event(data, CONTEXT)
    assert str(caught.value) == reason


@pytest.mark.parametrize(
    ("at", "reason"),
    [
        pytest.param(
            NOW_MS // 1000,
            "field 'at' = 1763000000: 20384.7 days ago (epoch seconds instead of ms?): older than "
            "the events queue's 4-day retention, so no live event",
            id="seconds-not-ms",
        ),
        pytest.param(
            1_762_999,
            "field 'at' = 1762999: 20405.1 days ago (a clock or unit error?): older than "
            "the events queue's 4-day retention, so no live event",
            id="january-1970",
        ),
        pytest.param(
            NOW_MS - EVENTS_RETENTION_SECONDS * 1000 - 301_000,
            "field 'at' = 1762654099000: 4.0 days ago (a clock or unit error?): older than "
            "the events queue's 4-day retention, so no live event",
            id="just-past-retention",
        ),
        pytest.param(
            NOW_MS * 1000,
            "field 'at' = 1763000000000000: 1761237000000 s in the future (more than the allowed "
            "300 s clock skew) (microseconds instead of ms?)",
            id="microseconds-not-ms",
        ),
    ],
)
def test_an_impossible_time_is_rejected_naming_the_likely_mistake(at: int, reason: str) -> None:
    # GIVEN an `at` no live event can have: older than the events queue keeps a message (plus
    # the skew), or in the future beyond the skew; WHEN validated, THEN the reason says why
    with pytest.raises(ValueError) as caught:
        validate_event(event(at=at), CONTEXT)
    assert str(caught.value) == reason


def test_the_oldest_live_time_is_accepted() -> None:
    # GIVEN a message enqueued as its event happened, read at the end of the queue's retention
    # by a consumer whose clock runs the full skew ahead: it is still a live event
    oldest = NOW_MS - EVENTS_RETENTION_SECONDS * 1000 - 300_000
    assert validate_event(event(at=oldest), CONTEXT).at == oldest


def test_a_timestamp_within_the_skew_is_accepted() -> None:
    assert validate_event(event(at=NOW_MS + 299_000), CONTEXT).at == NOW_MS + 299_000


def test_an_array_body_accepts_the_good_and_rejects_the_bad_one_by_one() -> None:
    body = json.dumps([event(job_id="a"), event(queue="x"), event(job_id="b")])
    parsed = parse_body(body, CONTEXT)
    assert [e.job_id for e in parsed.accepted] == ["a", "b"]
    (rejection,) = parsed.rejected
    assert rejection.index == 1
    assert rejection.queue == "unknown"
    assert rejection.reason.startswith("event [1]: field 'queue' = \"x\"")
    assert json.loads(rejection.payload) == event(queue="x")


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        pytest.param(
            "{oops",
            "body is not JSON: Expecting property name enclosed in double "
            "quotes at line 1 column 2",
            id="not-json",
        ),
        pytest.param("[]", "body = []: an empty array holds no event", id="empty-array"),
        pytest.param(
            json.dumps([event()] * 101), "body holds 101 events: more than 100", id="over-100"
        ),
        pytest.param(
            json.dumps(event(job_id="x" * MAX_BODY_BYTES)),
            f"body = {MAX_BODY_BYTES + 72} bytes: over the {MAX_BODY_BYTES} byte limit",
            id="over-256-KiB",
        ),
    ],
)
def test_whole_body_rejections(body: str, reason: str) -> None:
    parsed = parse_body(body, CONTEXT)
    assert parsed.accepted == []
    (rejection,) = parsed.rejected
    assert (rejection.reason, rejection.payload) == (reason, body)


events_strategy = st.builds(
    lambda kind, queue, job, back, duration, attempt: event(
        type=kind,
        queue=queue,
        job_id=job,
        at=NOW_MS - back,
        duration_ms=duration if kind in ("completed", "failed") else None,
        attempt=attempt,
    ),
    st.sampled_from(["queued", "started", "completed", "failed"]),
    st.sampled_from(["orders", "emails"]),
    st.text(min_size=1, max_size=20),
    st.integers(min_value=0, max_value=EVENTS_RETENTION_SECONDS * 1000),
    st.integers(min_value=0, max_value=10**7),
    st.integers(min_value=1, max_value=5),
)


@given(st.lists(events_strategy, min_size=1, max_size=100))
def test_valid_arrays_are_accepted_whole_and_archive_round_trips(
    items: list[dict[str, Any]],
) -> None:
    parsed = parse_body(json.dumps(items), CONTEXT)
    assert parsed.rejected == []
    assert len(parsed.accepted) == len(items)
    for accepted in parsed.accepted:
        assert Event.model_validate(accepted.record(), context=CONTEXT) == accepted


GOOD = json.dumps(event())


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        pytest.param("[" * 5_000 + "]" * 5_000, "nests deeper than 8 levels", id="5,000 deep"),
        pytest.param('{"a":' * 9 + "1" + "}" * 9, "nests deeper than 8 levels", id="9 deep"),
        pytest.param(
            GOOD.replace(str(NOW_MS), "9" * 5_000),
            "a number that cannot be read",
            id="5,000-digit integer",
        ),
        pytest.param(GOOD.replace(str(NOW_MS), "NaN"), "NaN is not a JSON number", id="NaN"),
        pytest.param(
            GOOD.replace(str(NOW_MS), "-Infinity"), "-Infinity is not a JSON number", id="-inf"
        ),
    ],
)
def test_a_hostile_body_is_rejected_whole_with_a_reason(body: str, reason: str) -> None:
    # WHEN a body the parser cannot or must not read arrives, THEN it is one rejection, no raise
    parsed = parse_body(body, CONTEXT)
    assert not parsed.accepted
    (rejection,) = parsed.rejected
    assert reason in rejection.reason and rejection.payload == body


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        pytest.param({"at": 2**70}, "field 'at' = 1180591620717411303424", id="at beyond 64 bits"),
        pytest.param({"at": 1.763e12}, "field 'at' = 1763000000000.0", id="float where int"),
        pytest.param({"attempt": 10**30}, "field 'attempt' = ", id="attempt beyond 2^53"),
        pytest.param(
            {"type": "started", "pickup_ms": 2**64}, "field 'pickup_ms' = ", id="pickup > 64 bit"
        ),
        pytest.param(
            {"type": "completed", "duration_ms": 43_200_001},
            "longer than the queue's max_job_seconds 43200 s",
            id="duration beyond 12 h",
        ),
        pytest.param({"job_id": "\ud800"}, "field 'job_id' = ", id="lone surrogate"),
    ],
)
def test_a_hostile_event_is_rejected_alone_and_its_neighbours_are_accepted(
    changes: dict[str, Any], words: str
) -> None:
    # GIVEN a body of two good events around a hostile one
    body = json.dumps([event(job_id="a"), event(**changes), event(job_id="b")])
    # WHEN it is parsed
    parsed = parse_body(body, CONTEXT)
    # THEN the good ones are accepted and the bad one is rejected with its field named
    assert [e.job_id for e in parsed.accepted] == ["a", "b"]
    (rejection,) = parsed.rejected
    assert rejection.index == 1 and words in rejection.reason, rejection.reason


def test_the_duration_limit_is_each_queues_max_job_seconds() -> None:
    # GIVEN orders limited to 60 s jobs and emails at the default
    context = ValidationContext(
        queues={"orders", "emails"}, now_ms=NOW_MS, max_duration_ms={"orders": 60_000}
    )
    long_job = {"type": "completed", "duration_ms": 61_000}
    # THEN a 61 s job is rejected on orders and accepted on emails
    assert parse_body(json.dumps(event(**long_job)), context).rejected
    assert parse_body(json.dumps(event(queue="emails", **long_job)), context).accepted


@pytest.mark.parametrize(
    ("extra", "ending"),
    [
        pytest.param({f"x{i}": 0 for i in range(5_000)}, "; and 4990 more", id="5,000-fields"),
        pytest.param(
            {"y" * 100_000: 1}, "...' = 1: Extra inputs are not permitted", id="long-name"
        ),
    ],
)
def test_a_rejection_reason_is_bounded_whatever_the_event(
    extra: dict[str, Any], ending: str
) -> None:
    # GIVEN an event with thousands of unknown fields, or one unknown field of 100,000 chars
    with pytest.raises(ValueError) as caught:
        validate_event(event() | extra, CONTEXT)
    # THEN the reason names the first problems and how many more, in under a thousand chars
    reason = str(caught.value)
    assert reason.endswith(ending)
    assert len(reason) < 1_000
