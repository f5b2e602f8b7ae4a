"""deploy --localstack: the template LocalStack can create offline, with every stand-in named
and every reference to one resolved; refused without an endpoint."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from queue_autoscale.cli import app
from queue_autoscale.demo.template import load_template
from queue_autoscale.operator.localstack import LEFT_OUT, STAND_IN_TYPE, stand_in


def _references(value: Any) -> set[str]:
    """Logical IDs named by Ref, GetAtt or ${...} anywhere in `value`."""
    found: set[str] = set()
    if isinstance(value, list):
        for inner in value:
            found |= _references(inner)
    elif isinstance(value, dict):
        if set(value) == {"Ref"}:
            found.add(value["Ref"])
        elif set(value) == {"Fn::GetAtt"}:
            target = value["Fn::GetAtt"]
            found.add(target.split(".")[0] if isinstance(target, str) else target[0])
        elif set(value) == {"Fn::Sub"} and isinstance(value["Fn::Sub"], str):
            text = value["Fn::Sub"]
            found |= {part.split("}")[0].split(".")[0] for part in text.split("${")[1:]}
        for inner in value.values():
            found |= _references(inner)
    return found


def test_stand_ins_replace_what_localstack_lacks_and_nothing_refers_to_them() -> None:
    # GIVEN template.yaml for two queues
    queues = '[{"queue": "order-s", "cluster": "c"}, {"queue": "emails", "cluster": "c"}]'
    template, left_out = stand_in(load_template(), {"QueuesConfig": queues})
    resources = template["Resources"]
    # THEN the stack's alarms are kept as they are (one per condition, not per queue)
    assert {"OverloadingAlarm", "ControllerSilentAlarm"} <= set(resources)
    # and every resource of a type LocalStack cannot create is a named stand-in
    assert set(left_out) == {
        "LoadTable",
        "RecordEventsFunction",
        "EvaluateFunction",
        "EvaluateFunctionTick",
        "GlueSecurityConfiguration",
        "DailySparkJob",
        "DailySparkTrigger",
    }
    assert all(LEFT_OUT.get(r.get("Type")) is None for r in resources.values())
    for logical_id, why in left_out.items():
        assert resources[logical_id]["Type"] == STAND_IN_TYPE
        assert why in resources[logical_id]["Properties"]["Value"]
    assert resources["EvaluateFunction"]["Properties"]["Name"] == {
        "Fn::Sub": "${AWS::StackName}-evaluate"
    }
    # a mapping to a stand-in function is one too (named for its logical ID: it has no name),
    # kept under its condition, so the stack holds what CloudFormation would create
    tick = resources["EvaluateFunctionTick"]
    assert tick["Properties"]["Name"] == {"Fn::Sub": "${AWS::StackName}-EvaluateFunctionTick"}
    assert tick["Condition"] == "HasTickQueue"
    # and nothing refers to a stand-in any more, so no attribute it lacks is asked for
    for section in ("Resources", "Outputs", "Globals"):
        assert not _references(template[section]) & set(left_out), section
    # the names and ARNs the real resources would have take their place
    outputs = template["Outputs"]
    assert outputs["EvaluateFunctionArn"]["Value"] == {
        "Fn::Sub": "arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:"
        "${AWS::StackName}-evaluate"
    }
    assert outputs["LoadTableName"]["Value"] == {"Fn::Sub": "${AWS::StackName}-load"}
    policies = json.dumps(resources["EvaluateRole"]["Properties"]["Policies"])
    assert "table/${AWS::StackName}-load" in policies


def test_a_stand_in_attribute_other_than_arn_is_refused() -> None:
    template = {
        "Resources": {
            "Table": {"Type": "AWS::DynamoDB::Table", "Properties": {"TableName": "t"}},
            "Reader": {
                "Type": "AWS::SSM::Parameter",
                "Properties": {"Value": {"Fn::GetAtt": ["Table", "StreamArn"]}},
            },
        }
    }
    with pytest.raises(ValueError, match=r"Table\.StreamArn"):
        stand_in(template, {})


def test_localstack_without_an_endpoint_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a valid config and no AWS_ENDPOINT_URL: the deploy would go to AWS itself
    config = tmp_path / "queues.json"
    config.write_text(json.dumps({"queue": "jobs", "cluster": "workers"}))
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    # WHEN deploy --localstack runs
    result = CliRunner().invoke(
        app, ["deploy", "--config", str(config), "--region", "us-east-1", "--localstack"]
    )
    # THEN it stops before any call, saying what is missing
    assert result.exit_code == 2
    assert "--localstack needs AWS_ENDPOINT_URL" in result.output
