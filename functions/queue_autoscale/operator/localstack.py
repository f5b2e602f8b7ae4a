"""`deploy --localstack`: the built template as LocalStack, run offline and without Docker,
can create it.

LocalStack's CloudFormation is real (change sets, the SAM transform, Refs and outputs), but
some resources it cannot create here, and `stand_in` names each:

- The resource types in `LEFT_OUT`: each becomes an `AWS::SSM::Parameter` of the name the real
  resource would have (so the stack still has the logical ID, whose physical ID is that name),
  and every `Ref`/`GetAtt ... Arn` to it becomes that name or ARN.

Nothing here runs against AWS: `deploy` accepts `--localstack` only with `AWS_ENDPOINT_URL`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from queue_autoscale.demo.template import expand_for_each

STAND_IN_TYPE = "AWS::SSM::Parameter"


@dataclass(frozen=True)
class LeftOut:
    """A resource type LocalStack cannot create here: its name property, ARN and why."""

    name_property: str | None
    """The property holding its name (None: it has none; the stand-in is named
    `<stack>-<logical ID>`)."""
    arn: str
    """The ARN after `arn:${AWS::Partition}:`, with NAME for the resource's name."""
    reason: str


NO_GLUE = "Glue is not in LocalStack's free edition"
ARN_TAIL = "${AWS::Region}:${AWS::AccountId}"
LEFT_OUT: dict[str, LeftOut] = {
    "AWS::Serverless::Function": LeftOut(
        "FunctionName",
        f"lambda:{ARN_TAIL}:function:NAME",
        "LocalStack creates a function only with Docker to run it and a runtime binary it "
        "downloads",
    ),
    "AWS::DynamoDB::Table": LeftOut(
        "TableName",
        f"dynamodb:{ARN_TAIL}:table/NAME",
        "LocalStack serves DynamoDB through DynamoDB Local, a download",
    ),
    "AWS::Lambda::EventSourceMapping": LeftOut(
        None,
        f"lambda:{ARN_TAIL}:event-source-mapping:NAME",
        "it maps a queue to a function, and the function is a stand-in here",
    ),
    "AWS::Glue::Job": LeftOut("Name", f"glue:{ARN_TAIL}:job/NAME", NO_GLUE),
    "AWS::Glue::Trigger": LeftOut("Name", f"glue:{ARN_TAIL}:trigger/NAME", NO_GLUE),
    "AWS::Glue::SecurityConfiguration": LeftOut(
        "Name", f"glue:{ARN_TAIL}:securityConfiguration/NAME", NO_GLUE
    ),
}
"""Resource types of template.yaml that LocalStack (host mode, offline) cannot create."""


def _sub_text(value: Any, logical_id: str) -> str:
    """A name property as `Fn::Sub` text: a literal, or `!Sub` of a string."""
    if isinstance(value, str):
        return value.replace("${", "${!")
    if isinstance(value, dict) and set(value) == {"Fn::Sub"} and isinstance(value["Fn::Sub"], str):
        return str(value["Fn::Sub"])
    raise ValueError(f"{logical_id}: its name must be a string or a !Sub of one, not {value!r}")


def _replace(value: Any, names: Mapping[str, str], arns: Mapping[str, str]) -> Any:
    """`value` with every Ref, GetAtt Arn and `${Id}`/`${Id.Arn}` of a stand-in resolved."""
    if isinstance(value, list):
        return [_replace(inner, names, arns) for inner in value]
    if not isinstance(value, dict):
        return value
    if set(value) == {"Ref"} and value["Ref"] in names:
        return {"Fn::Sub": names[value["Ref"]]}
    if set(value) == {"Fn::GetAtt"}:
        target = value["Fn::GetAtt"]
        logical_id, attribute = target.split(".", 1) if isinstance(target, str) else target
        if logical_id in names:
            if attribute != "Arn":
                raise ValueError(f"GetAtt {logical_id}.{attribute}: a stand-in has only Arn")
            return {"Fn::Sub": arns[logical_id]}
    if set(value) == {"Fn::Sub"} and isinstance(value["Fn::Sub"], str):
        text = value["Fn::Sub"]
        for logical_id in names:
            text = text.replace(f"${{{logical_id}.Arn}}", arns[logical_id])
            text = text.replace(f"${{{logical_id}}}", names[logical_id])
        return {"Fn::Sub": text}
    return {key: _replace(inner, names, arns) for key, inner in value.items()}


def stand_in(
    built: Mapping[str, Any], parameters: Mapping[str, str]
) -> tuple[dict[str, Any], dict[str, str]]:
    """The built template for LocalStack and what was left out (logical ID -> why).

    `parameters` supply the values of any `Fn::ForEach` loop (`demo.template.expand_for_each`
    expands it as CloudFormation would; template.yaml has none).
    """
    template = expand_for_each(built, parameters)
    names: dict[str, str] = {}
    arns: dict[str, str] = {}
    left_out: dict[str, str] = {}
    for logical_id, resource in template["Resources"].items():
        kind = LEFT_OUT.get(resource.get("Type", ""))
        if kind is None:
            continue
        properties = resource.get("Properties", {})
        name = properties.get(kind.name_property) if kind.name_property else None
        names[logical_id] = (
            _sub_text(name, logical_id) if name else f"${{AWS::StackName}}-{logical_id}"
        )
        arns[logical_id] = "arn:${AWS::Partition}:" + kind.arn.replace("NAME", names[logical_id])
        left_out[logical_id] = f"{resource['Type']}: {kind.reason}"
    resources = _replace(template["Resources"], names, arns)
    for logical_id, why in left_out.items():
        condition = template["Resources"][logical_id].get("Condition")
        resources[logical_id] = {
            "Type": STAND_IN_TYPE,
            "Properties": {
                "Name": {"Fn::Sub": names[logical_id]},
                "Type": "String",
                "Value": f"stand-in for {why}",
            },
            **({"Condition": condition} if condition else {}),
        }
    template["Resources"] = resources
    for section in ("Globals", "Outputs"):
        if section in template:
            template[section] = _replace(template[section], names, arns)
    return template, left_out
