"""The parsers deploy reads AWS with: GetCallerIdentity's account and partition, and a
stack's outputs."""

from __future__ import annotations

from typing import Any

import pytest

from queue_autoscale.adapters.errors import MalformedResponse
from queue_autoscale.adapters.stack import parse_outputs
from queue_autoscale.adapters.sts import Identity, parse_identity


@pytest.mark.parametrize(
    ("answer", "identity"),
    [
        pytest.param(
            {"Account": "123456789012", "Arn": "arn:aws:iam::123456789012:user/ops"},
            Identity("123456789012", "aws"),
            id="commercial",
        ),
        pytest.param(
            {"Account": "210987654321", "Arn": "arn:aws-cn:sts::210987654321:assumed-role/r/s"},
            Identity("210987654321", "aws-cn"),
            id="china",
        ),
        pytest.param(
            {"Account": "000011112222", "Arn": "arn:aws-us-gov:iam::000011112222:root"},
            Identity("000011112222", "aws-us-gov"),
            id="govcloud",
        ),
    ],
)
def test_identity_is_read_from_the_answer(answer: dict[str, Any], identity: Identity) -> None:
    assert parse_identity(answer) == identity


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param({"Arn": "arn:aws:iam::123456789012:root"}, id="no-account"),
        pytest.param({"Account": "12345", "Arn": "arn:aws:iam::12345:root"}, id="short-account"),
        pytest.param({"Account": "123456789012", "Arn": "not-an-arn"}, id="bad-arn"),
        pytest.param({"Account": "123456789012"}, id="no-arn"),
    ],
)
def test_a_malformed_identity_is_refused(answer: dict[str, Any]) -> None:
    with pytest.raises(MalformedResponse, match="GetCallerIdentity"):
        parse_identity(answer)


def test_outputs_map_keys_to_values() -> None:
    answer = {
        "Stacks": [
            {
                "Outputs": [
                    {"OutputKey": "ArchiveBucketName", "OutputValue": "bucket-1"},
                    {"OutputKey": "EventsQueueUrl", "OutputValue": "https://sqs/q"},
                    {"Description": "no key"},
                ]
            }
        ]
    }
    assert parse_outputs(answer, "s") == {
        "ArchiveBucketName": "bucket-1",
        "EventsQueueUrl": "https://sqs/q",
    }
    assert parse_outputs({"Stacks": [{}]}, "s") == {}
    with pytest.raises(MalformedResponse, match="DescribeStacks"):
        parse_outputs({"Stacks": []}, "s")
