"""The adapters' pure parsers: tables of named cases, real AWS response shapes."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import pytest

from queue_autoscale.adapters.cloudwatch import OldestAge, build_queries, parse_metric_data
from queue_autoscale.adapters.dynamodb import (
    counter_update,
    item_bytes,
    parse_counter_item,
    parse_document,
    second_sk,
    serialize_item,
)
from queue_autoscale.adapters.ecs import ServiceStatus, deployment_rolling, parse_describe_services
from queue_autoscale.adapters.errors import MalformedResponse
from queue_autoscale.adapters.eventbridge import DecisionEvent, build_entries, parse_put_events
from queue_autoscale.adapters.s3 import decisions_key, decode_jsonl_gz, encode_jsonl_gz, events_key
from queue_autoscale.adapters.sqs import (
    DeadLetters,
    QueueDepth,
    SqsQueues,
    dead_letter_body,
    pack_batches,
    parse_queue_depth,
    parse_send_batch,
)
from queue_autoscale.core import CounterRow


def attrs(visible: Any = "3", in_flight: Any = "2", delayed: Any = "1") -> dict[str, Any]:
    values = {
        "ApproximateNumberOfMessages": visible,
        "ApproximateNumberOfMessagesNotVisible": in_flight,
        "ApproximateNumberOfMessagesDelayed": delayed,
    }
    return {"Attributes": {k: v for k, v in values.items() if v is not None}}


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        pytest.param(attrs(), QueueDepth(3, 2, 1), id="all-three"),
        pytest.param(attrs("0", "0", "0"), QueueDepth(0, 0, 0), id="empty-queue"),
        pytest.param(attrs("120000", "5", "0"), QueueDepth(120000, 5, 0), id="large-backlog"),
    ],
)
def test_parse_queue_depth_reads_counts(response: dict[str, Any], expected: QueueDepth) -> None:
    assert parse_queue_depth(response, "orders") == expected


@pytest.mark.parametrize(
    ("response", "message"),
    [
        pytest.param({}, "no 'Attributes'", id="no-attributes"),
        pytest.param(attrs(visible=None), "'ApproximateNumberOfMessages' missing", id="missing"),
        pytest.param(attrs(in_flight="many"), "= 'many' is not an integer", id="not-a-number"),
        pytest.param(attrs(delayed="-1"), "is negative", id="negative"),
    ],
)
def test_parse_queue_depth_rejects_malformed_answers(
    response: dict[str, Any], message: str
) -> None:
    with pytest.raises(MalformedResponse, match=message) as caught:
        parse_queue_depth(response, "orders")
    assert "orders" in str(caught.value)


@pytest.mark.parametrize(
    ("sizes", "batches"),
    [
        pytest.param([], [], id="nothing"),
        pytest.param([10] * 12, [list(range(10)), [10, 11]], id="ten-per-batch"),
        pytest.param([100_000, 100_000, 100_000], [[0, 1], [2]], id="bytes-limit"),
        pytest.param([300_000, 5], [[0], [1]], id="oversized-alone"),
    ],
)
def test_pack_batches_respects_entry_and_byte_limits(
    sizes: list[int], batches: list[list[int]]
) -> None:
    assert pack_batches(sizes) == batches


def test_parse_send_batch_maps_failed_ids_to_positions() -> None:
    response = {
        "Successful": [{"Id": "0", "MessageId": "m0"}],
        "Failed": [
            {"Id": "1", "Code": "InternalError", "Message": "try later", "SenderFault": False}
        ],
    }
    (failure,) = parse_send_batch(response)
    assert (failure.index, failure.code, failure.sender_fault) == (1, "InternalError", False)


def test_dead_letter_body_keeps_the_original_or_points_at_the_archive() -> None:
    inline = dead_letter_body('{"x":1}', "field 'at' is missing", "m-1")
    assert inline == '{"reason":"field \'at\' is missing","message_id":"m-1","body":"{\\"x\\":1}"}'
    moved = dead_letter_body("y" * 10, "too big", "m-2", overflow_key="rejected/k.txt.gz")
    assert '"body_s3_key":"rejected/k.txt.gz"' in moved
    assert '"body_bytes":10' in moved


NOW = datetime(2025, 11, 13, 2, 10, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("results", "expected"),
    [
        pytest.param(
            [
                {
                    "Id": "q0",
                    "Timestamps": [
                        datetime(2025, 11, 13, 2, 7, tzinfo=UTC),
                        datetime(2025, 11, 13, 2, 6, tzinfo=UTC),
                    ],
                    "Values": [42.0, 30.0],
                }
            ],
            {"orders": OldestAge(42.0, 120.0), "emails": None},
            id="newest-wins-lag-from-period-end",
        ),
        pytest.param(
            [
                {
                    "Id": "q1",
                    "Timestamps": [datetime(2025, 11, 13, 2, 9, tzinfo=UTC)],
                    "Values": [5.0],
                }
            ],
            {"orders": None, "emails": OldestAge(5.0, 0.0)},
            id="second-queue-current-period",
        ),
        pytest.param([], {"orders": None, "emails": None}, id="no-datapoints"),
    ],
)
def test_parse_metric_data_latest_age_and_lag(
    results: list[dict[str, Any]], expected: dict[str, OldestAge | None]
) -> None:
    assert parse_metric_data(results, ["orders", "emails"], NOW) == expected


def test_parse_metric_data_rejects_mismatched_series() -> None:
    results = [{"Id": "q0", "Timestamps": [NOW], "Values": []}]
    with pytest.raises(MalformedResponse, match="1 timestamps but 0 values"):
        parse_metric_data(results, ["orders"], NOW)


def test_build_queries_one_per_queue_with_valid_ids() -> None:
    queries = build_queries(["a", "b"])
    assert [q["Id"] for q in queries] == ["q0", "q1"]
    stat = queries[1]["MetricStat"]
    assert stat["Metric"]["Dimensions"] == [{"Name": "QueueName", "Value": "b"}]
    assert (stat["Stat"], stat["Period"]) == ("Maximum", 60)


def service(name: str = "orders", **changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "serviceName": name,
        "serviceArn": f"arn:aws:ecs:us-east-1:1:service/c/{name}",
        "runningCount": 4,
        "desiredCount": 5,
        "pendingCount": 1,
        "status": "ACTIVE",
        "deployments": [{"status": "PRIMARY", "rolloutState": "COMPLETED"}],
    }
    base.update(changes)
    return base


@pytest.mark.parametrize(
    ("deployments", "rolling"),
    [
        pytest.param([{"status": "PRIMARY", "rolloutState": "COMPLETED"}], False, id="steady"),
        pytest.param([{"status": "PRIMARY"}], False, id="no-rollout-state"),
        pytest.param([{"status": "PRIMARY", "rolloutState": "IN_PROGRESS"}], True, id="rolling"),
        pytest.param([{"status": "PRIMARY"}, {"status": "ACTIVE"}], True, id="old-draining"),
        pytest.param([], False, id="none"),
    ],
)
def test_deployment_rolling(deployments: list[dict[str, Any]], rolling: bool) -> None:
    assert deployment_rolling(deployments) is rolling


def test_parse_describe_services_counts_and_failures() -> None:
    response = {
        "services": [service(), service("emails", runningCount=0, desiredCount=0, pendingCount=0)],
        "failures": [{"arn": "arn:aws:ecs:us-east-1:1:service/c/ghost", "reason": "MISSING"}],
    }
    found, failures = parse_describe_services(response)
    assert found == {
        "orders": ServiceStatus(4, 5, 1, False, "ACTIVE"),
        "emails": ServiceStatus(0, 0, 0, False, "ACTIVE"),
    }
    assert failures == {"arn:aws:ecs:us-east-1:1:service/c/ghost": "MISSING"}


def test_parse_describe_services_rejects_a_missing_count() -> None:
    broken = service()
    del broken["runningCount"]
    with pytest.raises(MalformedResponse, match="'runningCount' = None"):
        parse_describe_services({"services": [broken]})


def test_counter_update_adds_each_field_and_sets_ttl() -> None:
    expression, names, values = counter_update({"queued": 3, "busy_ms": 1500}, 1_700_086_400)
    assert expression == "SET #exp = :exp ADD #c0 :c0, #c1 :c1"
    assert names == {"#exp": "expires_at", "#c0": "busy_ms", "#c1": "queued"}
    assert values == {":exp": {"N": "1700086400"}, ":c0": {"N": "1500"}, ":c1": {"N": "3"}}


def test_counter_update_refuses_unknown_fields() -> None:
    with pytest.raises(ValueError, match="'seconds'"):
        counter_update({"seconds": 1}, 0)


@pytest.mark.parametrize(
    ("item", "row"),
    [
        pytest.param(
            {"pk": {"S": "C#o"}, "sk": {"S": "S#0001700000000"}, "queued": {"N": "4"}},
            CounterRow(second=1_700_000_000, queued=4),
            id="sparse",
        ),
        pytest.param(
            serialize_item(
                {
                    "pk": "C#o",
                    "sk": "S#0001700000001",
                    "queued": 1,
                    "started": 2,
                    "completed": 3,
                    "failed": 1,
                    "busy_ms": 4000,
                    "pickup_ms": 900,
                    "pickups": 2,
                    "expires_at": 1,
                }
            ),
            CounterRow(1_700_000_001, 1, 2, 3, 1, 4000, 900),
            id="full",
        ),
    ],
)
def test_parse_counter_item(item: dict[str, Any], row: CounterRow) -> None:
    assert parse_counter_item(item) == row


def test_parse_counter_item_rejects_a_counter_that_is_not_a_number() -> None:
    item = {"pk": {"S": "C#o"}, "sk": {"S": "S#0000000000005"}, "queued": {"S": "three"}}
    with pytest.raises(
        MalformedResponse, match=re.escape("S#0000000000005: field 'queued' = {'S': 'three'}")
    ):
        parse_counter_item(item)


def test_parse_counter_item_rejects_a_non_counter_key() -> None:
    with pytest.raises(MalformedResponse, match="'STATE' is not a counter key"):
        parse_counter_item({"pk": {"S": "Q#o"}, "sk": {"S": "STATE"}})


def test_parse_document_round_trips_floats_and_reads_json_bodies() -> None:
    state = {"queue": "o", "version": 3, "last_scale_up_at": 1.5, "samples": [[1.0, 0.25, 3, 2, 0]]}
    item = serialize_item({"pk": "Q#o", "sk": "STATE", **state})
    assert parse_document(item) == state
    legacy = {"pk": {"S": "Q#o"}, "sk": {"S": "MODEL"}, "body": {"S": '{"level": 2.5}'}}
    assert parse_document(legacy) == {"level": 2.5}
    assert parse_document(None) is None


@pytest.mark.parametrize(
    ("at", "key"),
    [
        pytest.param(1_763_000_000.0, "events/dt=2025-11-13/hour=02/b1.jsonl.gz", id="utc-hour"),
        pytest.param(1_767_225_599.9, "events/dt=2025-12-31/hour=23/b1.jsonl.gz", id="year-end"),
    ],
)
def test_events_key_partitions_by_utc_day_and_hour(at: float, key: str) -> None:
    assert events_key(at, "b1") == key


def test_decisions_key_and_jsonl_round_trip() -> None:
    assert decisions_key(1_763_000_000.0, "t1") == "decisions/dt=2025-11-13/t1.jsonl.gz"
    records: list[dict[str, Any]] = [{"b": 1, "a": "x"}, {"c": None}]
    data = encode_jsonl_gz(records)
    assert data == encode_jsonl_gz(records), "equal records must give equal bytes"
    assert decode_jsonl_gz(data) == records


def test_build_entries_and_parse_put_events() -> None:
    entries = build_entries([DecisionEvent("WorkersScaled", {"queue": "o", "to": 4})], "bus")
    assert entries == [
        {
            "Source": "queue-autoscale",
            "DetailType": "WorkersScaled",
            "Detail": '{"queue":"o","to":4}',
            "EventBusName": "bus",
        }
    ]
    response = {
        "FailedEntryCount": 1,
        "Entries": [{"EventId": "e"}, {"ErrorCode": "InternalFailure", "ErrorMessage": "x"}],
    }
    (failure,) = parse_put_events(response, offset=10)
    assert (failure.index, failure.code) == (11, "InternalFailure")
    assert parse_put_events({"FailedEntryCount": 0, "Entries": [{"EventId": "e"}]}) == []


@pytest.mark.parametrize(
    "sort_key",
    [
        pytest.param("S#1700000000", id="unpadded"),
        pytest.param("S#00017000000000", id="too-wide"),
        pytest.param("S#-001700000000", id="signed"),
        pytest.param(
            "S#\u0661\u0667\u0660\u0660\u0660\u0660\u0660\u0660\u0660\u0660\u0660\u0660\u0660",
            id="arabic-digits",
        ),
    ],
)
def test_parse_counter_item_rejects_a_key_not_of_fixed_width(sort_key: str) -> None:
    with pytest.raises(MalformedResponse, match="has no 13-digit epoch second"):
        parse_counter_item({"pk": {"S": "C#o"}, "sk": {"S": sort_key}})


@pytest.mark.parametrize(
    ("second", "key"),
    [
        (0, "S#0000000000000"),
        (1_762_999, "S#0000001762999"),
        (9_007_199_254_740, "S#9007199254740"),
    ],
)
def test_counter_sort_keys_are_fixed_width_so_string_order_is_time_order(
    second: int, key: str
) -> None:
    assert second_sk(second) == key
    assert sorted([second_sk(1_762_999), second_sk(1_762_998_800)]) == [
        second_sk(1_762_999),
        second_sk(1_762_998_800),
    ]


def test_a_counter_second_outside_the_key_width_is_refused() -> None:
    with pytest.raises(ValueError, match=r"outside 0\.\.9999999999999"):
        second_sk(10**13)
    with pytest.raises(ValueError, match="outside"):
        second_sk(-1)


class RecordingSqs:
    def __init__(self) -> None:
        self.calls: list[list[dict[str, Any]]] = []

    def send_message_batch(self, QueueUrl: str, Entries: list[dict[str, Any]]) -> dict[str, Any]:  # noqa: N803 - boto3's names
        self.calls.append(Entries)
        return {"Successful": [{"Id": e["Id"]} for e in Entries], "Failed": []}


def test_dead_letter_batches_count_the_reason_attribute_toward_sqs_s_size_limit() -> None:
    # GIVEN ten rejections whose bodies alone fit one 256 KiB batch (26,000 bytes each) but
    # whose 1,024-character reason attributes take the batch past it
    client = RecordingSqs()
    dead = DeadLetters(SqsQueues(client), "https://sqs.us-east-1.amazonaws.com/1/dlq")
    items = [("b" * 26_000, "r" * 5_000) for _ in range(10)]
    # WHEN they are sent
    assert dead.reject_many(items) == []
    # THEN no SendMessageBatch exceeds the limit, bodies and attributes together
    assert len(client.calls) == 2
    for entries in client.calls:
        size = sum(
            len(e["MessageBody"])
            + len("reason")
            + len("String")
            + len(e["MessageAttributes"]["reason"]["StringValue"])
            for e in entries
        )
        assert size <= 256 * 1024


def test_item_bytes_follows_dynamodbs_sizing_rules_worked_by_hand() -> None:
    # GIVEN a STATE-like item: pk "Q#a" (2 + 3), a number of 17 significant digits "version"
    # (7 + 9 + 1), a trailing-zero number "n" (1 + "15" 1 + 1), zero "z" (1 + 1 + 1), a null
    # "u" (1 + 1), a list "s" of [1.5, 0] (1 + 3 + (2 + 1) + (2 + 1)) and a map "m" of
    # {"k": "ab"} (1 + 3 + 1 + 2 + 1)
    item = {
        "pk": {"S": "Q#a"},
        "version": {"N": "1796187113.2246842"},
        "n": {"N": "1500"},
        "z": {"N": "0"},
        "u": {"NULL": True},
        "s": {"L": [{"N": "1.5"}, {"N": "0"}]},
        "m": {"M": {"k": {"S": "ab"}}},
    }
    # THEN its size is the sum, in bytes, as DynamoDB bills it
    assert item_bytes(item) == 5 + 17 + 3 + 3 + 2 + 10 + 8
    assert item_bytes({"e": {"N": "1E-7"}, "b": {"B": b"\x00\x01"}}) == (1 + 2) + (1 + 2)
