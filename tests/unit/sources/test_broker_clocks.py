"""A broker's head_message_timestamp is the publisher's clock in the publisher's unit: the
rule that reads it as seconds or milliseconds, or refuses it (`stamp_epoch_seconds`), and the
message TTL it is checked against (`parse_queue`)."""

from __future__ import annotations

import pytest

from queue_autoscale.adapters.rabbitmq import parse_queue, stamp_epoch_seconds

NOW = 1_763_000_000.0
DAY = 86_400.0
SKEW = 300.0
COUNTS = {"messages_ready": 40, "messages_unacknowledged": 0, "consumers": 0}


@pytest.mark.parametrize(
    ("stamp", "max_age", "at", "note"),
    [
        pytest.param(NOW - 600, 14 * DAY, NOW - 600, None, id="seconds, ten minutes old"),
        pytest.param((NOW - 600) * 1000, 14 * DAY, NOW - 600, "read as milliseconds", id="ms"),
        pytest.param(NOW + 60, 14 * DAY, NOW + 60, None, id="a minute ahead: within the skew"),
        pytest.param(NOW + 3_600, 14 * DAY, None, "3600 s in the future", id="an hour ahead"),
        pytest.param(1.0, 14 * DAY, None, "s old, over the 1.2096e+06 s", id="stamped 1"),
        pytest.param(NOW - 2 * DAY, DAY, None, "over the 86400 s", id="older than the TTL"),
        pytest.param(NOW - DAY - 200, DAY, NOW - DAY - 200, None, id="TTL plus skew: kept"),
        pytest.param((NOW + 3_600) * 1000, 14 * DAY, None, "in the future", id="ms, an hour on"),
        pytest.param((NOW - 600) * 1e6, 14 * DAY, None, "in the future", id="microseconds"),
    ],
)
def test_a_stamp_is_read_in_the_one_unit_that_fits_or_refused(
    stamp: float, max_age: float, at: float | None, note: str | None
) -> None:
    read, said = stamp_epoch_seconds(stamp, NOW, max_age, SKEW)
    assert read == (pytest.approx(at) if at is not None else None)
    if note is None:
        assert said is None
    else:
        assert said is not None and note in said


@pytest.mark.parametrize(
    ("extra", "ttl"),
    [
        pytest.param({}, None, id="no TTL"),
        pytest.param({"arguments": {"x-message-ttl": 60_000}}, 60.0, id="x-message-ttl"),
        pytest.param({"effective_policy_definition": {"message-ttl": 30_000}}, 30.0, id="policy"),
        pytest.param(
            {
                "arguments": {"x-message-ttl": 60_000},
                "effective_policy_definition": {"message-ttl": 90_000},
            },
            60.0,
            id="both: the lower",
        ),
        pytest.param({"arguments": {"x-message-ttl": "60000"}}, None, id="not a number"),
        pytest.param({"arguments": {"x-message-ttl": -1}}, None, id="negative"),
        pytest.param({"arguments": [1]}, None, id="arguments not an object"),
    ],
)
def test_the_message_ttl_comes_from_the_argument_or_the_policy(
    extra: dict[str, object], ttl: float | None
) -> None:
    assert parse_queue({**COUNTS, **extra}, "q").ttl_seconds == ttl
