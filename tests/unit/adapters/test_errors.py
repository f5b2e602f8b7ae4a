"""Error translation: botocore errors from real client calls (Stubber) become project errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ConnectTimeoutError, EndpointConnectionError, ReadTimeoutError

from queue_autoscale.adapters.aws import LAMBDA_CONFIG
from queue_autoscale.adapters.cloudwatch import OldestAgeReader
from queue_autoscale.adapters.dynamodb import LoadTable
from queue_autoscale.adapters.ecs import EcsServices, ServiceRef
from queue_autoscale.adapters.errors import (
    AccessDenied,
    AdapterError,
    InvalidRequest,
    NotFound,
    ServiceUnavailable,
    StateConflict,
    Throttled,
    translate,
)
from queue_autoscale.adapters.eventbridge import DecisionEvent, EventPublisher
from queue_autoscale.adapters.s3 import Archive
from queue_autoscale.adapters.sqs import SqsQueues

URL = "https://sqs.us-east-1.amazonaws.com/123456789012/orders"


ERRORS = [
    pytest.param("ThrottlingException", 400, Throttled, id="throttling"),
    pytest.param("RequestThrottled", 403, Throttled, id="sqs-throttled"),
    pytest.param("InternalFailure", 500, ServiceUnavailable, id="5xx"),
    pytest.param("ServiceUnavailable", 503, ServiceUnavailable, id="503"),
    pytest.param("AccessDeniedException", 400, AccessDenied, id="access-denied"),
    pytest.param("AccessDenied", 403, AccessDenied, id="s3-access-denied"),
    pytest.param("ResourceNotFoundException", 400, NotFound, id="not-found"),
    pytest.param("ValidationException", 400, InvalidRequest, id="validation"),
    # a HEAD has no body, so S3's missing key (download_file) comes back as code "404"
    pytest.param("404", 404, NotFound, id="head-404"),
]


@pytest.mark.parametrize(("code", "status", "kind"), ERRORS)
def test_sqs_depth_translates_client_errors(
    stubbed: Any, code: str, status: int, kind: type[AdapterError]
) -> None:
    sqs, stub = stubbed("sqs")
    stub.add_client_error("get_queue_attributes", code, "boom", http_status_code=status)
    with pytest.raises(kind) as caught:
        SqsQueues(sqs).depth(URL)
    assert caught.value.code == code
    assert "GetQueueAttributes" in str(caught.value)


@pytest.mark.parametrize(("code", "status", "kind"), ERRORS[:5])
def test_every_adapter_call_translates(
    stubbed: Any, code: str, status: int, kind: type[AdapterError]
) -> None:
    cloudwatch, cw_stub = stubbed("cloudwatch")
    cw_stub.add_client_error("get_metric_data", code, "x", http_status_code=status)
    with pytest.raises(kind):
        OldestAgeReader(cloudwatch).oldest_ages(["orders"], 1_763_000_000.0)

    ecs, ecs_stub = stubbed("ecs")
    ecs_stub.add_client_error("update_service", code, "x", http_status_code=status)
    with pytest.raises(kind):
        EcsServices(ecs).set_desired(ServiceRef("c", "orders"), 3)

    dynamodb, ddb_stub = stubbed("dynamodb")
    ddb_stub.add_client_error("update_item", code, "x", http_status_code=status)
    with pytest.raises(kind):
        LoadTable(dynamodb, "load").add_counters_once(
            "orders", 1, {"m": {"queued": 1}}, expires_at=2
        )

    s3, s3_stub = stubbed("s3")
    s3_stub.add_client_error("put_object", code, "x", http_status_code=status)
    with pytest.raises(kind):
        Archive(s3, "bucket").put_decisions(1_763_000_000.0, "t", [{"a": 1}])

    events, ev_stub = stubbed("events")
    ev_stub.add_client_error("put_events", code, "x", http_status_code=status)
    with pytest.raises(kind):
        EventPublisher(events, "bus").publish([DecisionEvent("ScalingDecisionMade", {})])


def test_describe_services_marks_only_the_failed_call(stubbed: Any) -> None:
    # GIVEN 11 services in one cluster (two calls) where the second call is throttled
    ecs, stub = stubbed("ecs")
    refs = [ServiceRef("c", f"s{i}") for i in range(11)]
    services = [
        {"serviceName": f"s{i}", "runningCount": i, "desiredCount": i, "pendingCount": 0}
        for i in range(10)
    ]
    stub.add_response(
        "describe_services",
        {"services": services, "failures": []},
        {"cluster": "c", "services": [f"s{i}" for i in range(10)]},
    )
    stub.add_client_error("describe_services", "ThrottlingException", "slow down")

    # WHEN they are described
    answer = EcsServices(ecs).describe(refs)

    # THEN the first ten have counts and only the eleventh carries the error
    assert [answer[ref].running for ref in refs[:10]] == list(range(10))  # type: ignore[union-attr]
    assert isinstance(answer[refs[10]], Throttled)


def test_describe_services_reports_a_missing_service(stubbed: Any) -> None:
    ecs, stub = stubbed("ecs")
    stub.add_response(
        "describe_services",
        {
            "services": [],
            "failures": [{"arn": "arn:aws:ecs:r:1:service/c/ghost", "reason": "MISSING"}],
        },
    )
    answer = EcsServices(ecs).describe([ServiceRef("c", "ghost")])
    error = answer[ServiceRef("c", "ghost")]
    assert isinstance(error, NotFound)
    assert "ghost" in str(error) and "MISSING" in str(error)


def test_state_write_lost_race_is_a_state_conflict(stubbed: Any) -> None:
    dynamodb, stub = stubbed("dynamodb")
    stub.add_client_error("put_item", "ConditionalCheckFailedException", "condition failed")
    with pytest.raises(StateConflict, match="no longer 4"):
        LoadTable(dynamodb, "load").write_state("orders", {"queue": "orders"}, expected_version=4)


def test_state_write_sends_the_version_condition(stubbed: Any) -> None:
    dynamodb, stub = stubbed("dynamodb")
    stub.add_response(
        "put_item",
        {},
        {
            "TableName": "load",
            "Item": {
                "queue": {"S": "orders"},
                "version": {"N": "5"},
                "pk": {"S": "Q#orders"},
                "sk": {"S": "STATE"},
            },
            "ConditionExpression": "attribute_not_exists(pk) OR version = :expected",
            "ExpressionAttributeValues": {":expected": {"N": "4"}},
        },
    )
    assert LoadTable(dynamodb, "load").write_state("orders", {"queue": "orders"}, 4) == 5
    stub.assert_no_pending_responses()


def test_batch_get_retries_unprocessed_keys_then_gives_up(stubbed: Any) -> None:
    dynamodb, stub = stubbed("dynamodb")
    key = {"pk": {"S": "Q#o"}, "sk": {"S": "STATE"}}
    for _ in range(3):
        stub.add_response(
            "batch_get_item",
            {"Responses": {"load": []}, "UnprocessedKeys": {"load": {"Keys": [key]}}},
        )
    naps: list[float] = []
    table = LoadTable(dynamodb, "load", sleep=naps.append, max_unprocessed_rounds=2)
    with pytest.raises(ServiceUnavailable, match="1 keys still unprocessed after 3 rounds"):
        table.read_documents(["o"])
    assert naps == [0.1, 0.2]


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        pytest.param(
            ConnectTimeoutError(endpoint_url="https://x"), ServiceUnavailable, id="connect"
        ),
        pytest.param(ReadTimeoutError(endpoint_url="https://x"), ServiceUnavailable, id="read"),
        pytest.param(
            EndpointConnectionError(endpoint_url="https://x"), ServiceUnavailable, id="dns"
        ),
    ],
)
def test_transport_errors_are_unavailable(error: Exception, kind: type[AdapterError]) -> None:
    translated = translate(error, "GetQueueAttributes", "orders")
    assert isinstance(translated, kind)
    assert "orders" in str(translated)


def test_lambda_config_uses_standard_retries_and_short_timeouts() -> None:
    config: Any = LAMBDA_CONFIG
    assert config.retries == {"mode": "standard", "total_max_attempts": 3}
    assert (config.connect_timeout, config.read_timeout) == (2, 5)


def test_an_upload_to_a_missing_bucket_is_not_found(stubbed: Any, tmp_path: Path) -> None:
    # GIVEN a file to upload and a bucket that does not exist (boto3's upload_file wraps
    # the PutObject error in S3UploadFailedError, which `report --out s3://...` printed as a
    # traceback)
    (tmp_path / "report.html").write_text("<html></html>", encoding="utf-8")
    s3, stub = stubbed("s3")
    stub.add_client_error("put_object", "NoSuchBucket", "no bucket", http_status_code=404)

    # WHEN it is uploaded
    with pytest.raises(NotFound) as caught:
        Archive(s3, "nope").upload(tmp_path / "report.html", "reports/report.html")

    # THEN it is the project's NotFound, naming the call, the object and AWS's code
    assert caught.value.code == "NoSuchBucket"
    assert "PutObject on s3://nope/reports/report.html" in str(caught.value)


def test_an_untranslated_error_is_one_line_and_no_region_says_what_to_set() -> None:
    from botocore.exceptions import ClientError, NoRegionError

    from queue_autoscale.adapters.errors import UNTRANSLATED, untranslated_line

    assert isinstance(NoRegionError(), UNTRANSLATED)
    assert untranslated_line(NoRegionError()) == (
        "no AWS region: set AWS_DEFAULT_REGION (or a region in the AWS_PROFILE's config)"
    )
    denied = ClientError({"Error": {"Code": "AccessDenied", "Message": "no"}}, "GetObject")
    assert isinstance(denied, UNTRANSLATED)
    assert untranslated_line(denied) == (
        "ClientError: An error occurred (AccessDenied) when calling the GetObject operation: no"
    )
