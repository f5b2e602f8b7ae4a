"""Load template.yaml and translate it (SAM -> plain CloudFormation) without AWS calls.

The translation first expands `Fn::ForEach` (AWS::LanguageExtensions) as CloudFormation
would, then runs aws-sam-translator.

Used by the template tests and by the emulator bootstrap, so both read exactly what
`sam deploy` would deploy. Needs the repository checkout (template.yaml at its root) and the
dev extra (aws-sam-translator).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from samtranslator.parser.parser import Parser
from samtranslator.translator.translator import Translator
from samtranslator.yaml_helper import yaml_parse

from queue_autoscale.adapters.aws import make_session

ROOT = Path(__file__).resolve().parents[3]
"""The repository checkout this package runs from (functions/queue_autoscale/demo/ -> root)."""
TEMPLATE_PATH = ROOT / "template.yaml"
DEFAULT_REGION = "us-east-1"
PLACEHOLDER_CODE_URI = "s3://queue-autoscale-code/functions.zip"
"""sam-translator accepts only S3 URIs; `sam build`/`package` replace `functions/` the same way."""


def load_template(path: Path = TEMPLATE_PATH) -> dict[str, Any]:
    """The template as a dict; `!Ref`/`!Sub`/`!GetAtt` tags become their long forms."""
    document = yaml_parse(path.read_text(encoding="utf-8"))
    if not isinstance(document, dict):
        raise ValueError(f"{path}: not a template (top level is {type(document).__name__})")
    return document


FOR_EACH = "Fn::ForEach::"
LANGUAGE_EXTENSIONS = "AWS::LanguageExtensions"
_ALPHANUMERIC = re.compile(r"[^A-Za-z0-9]")


def expand_for_each(
    template: Mapping[str, Any], parameters: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The template after the AWS::LanguageExtensions transform's `Fn::ForEach` (Resources).

    Each `Fn::ForEach::Name: [Id, collection, {key: resource}]` becomes one resource per item
    of the collection (a list, or a Ref to a CommaDelimitedList parameter given in
    `parameters` or defaulted): `${Id}` in keys is the item, `&{Id}` the item's letters and
    digits only; inside the resource, `{"Ref": Id}` and `${Id}` in `Fn::Sub` are the item.
    sam-translator, moto and LocalStack do not run this transform; CloudFormation does.
    """
    document = copy.deepcopy(dict(template))
    resources: dict[str, Any] = {}
    for key, value in document.get("Resources", {}).items():
        if not key.startswith(FOR_EACH):
            resources[key] = value
            continue
        identifier, collection, body = value
        for item in _collection(collection, document, parameters or {}):
            for name, resource in body.items():
                logical_id = name.replace(f"${{{identifier}}}", item).replace(
                    f"&{{{identifier}}}", _ALPHANUMERIC.sub("", item)
                )
                if logical_id in resources:
                    raise ValueError(f"{key}: {item!r} repeats the logical ID {logical_id}")
                resources[logical_id] = _substitute(resource, identifier, item)
    document["Resources"] = resources
    transforms = document.get("Transform", [])
    if isinstance(transforms, list):
        remaining = [name for name in transforms if name != LANGUAGE_EXTENSIONS]
        document["Transform"] = remaining[0] if len(remaining) == 1 else remaining
    return document


def _collection(
    value: Any, document: Mapping[str, Any], parameters: Mapping[str, Any]
) -> list[str]:
    if isinstance(value, dict) and set(value) == {"Ref"}:
        name = value["Ref"]
        given = parameters.get(name, document.get("Parameters", {}).get(name, {}).get("Default"))
        if given is None:
            raise ValueError(f"Fn::ForEach over parameter {name}, which has no value")
        value = given.split(",") if isinstance(given, str) else given
    if not isinstance(value, list):
        raise ValueError(f"Fn::ForEach collection is not a list: {value!r}")
    return [str(item).strip() for item in value]


def _substitute(value: Any, identifier: str, item: str) -> Any:
    if isinstance(value, dict):
        if value == {"Ref": identifier}:
            return item
        if set(value) == {"Fn::Sub"} and isinstance(value["Fn::Sub"], str):
            return {"Fn::Sub": value["Fn::Sub"].replace(f"${{{identifier}}}", item)}
        return {key: _substitute(inner, identifier, item) for key, inner in value.items()}
    if isinstance(value, list):
        return [_substitute(inner, identifier, item) for inner in value]
    return value


def translate(
    template: Mapping[str, Any],
    parameters: Mapping[str, Any] | None = None,
    *,
    code_uri: str = PLACEHOLDER_CODE_URI,
    region: str = DEFAULT_REGION,
    account_id: str = "123456789012",
) -> dict[str, Any]:
    """The CloudFormation template `sam deploy` would submit, with the code at `code_uri`."""
    document = expand_for_each(template, parameters)
    document.setdefault("Globals", {}).setdefault("Function", {})["CodeUri"] = code_uri
    for resource in document.get("Resources", {}).values():
        if resource.get("Type") == "AWS::Serverless::Function":
            resource.get("Properties", {}).pop("CodeUri", None)
    values: dict[str, Any] = {
        "AWS::Region": region,
        "AWS::Partition": "aws-cn" if region.startswith("cn-") else "aws",
        "AWS::AccountId": account_id,
    }
    values.update(parameters or {})
    # The template names no AWS managed policy, so the translator needs no IAM lookup; the
    # session only supplies the region (no call is made with it).
    session = make_session(region)
    translator = Translator(None, Parser(), boto_session=session)
    translated = translator.translate(document, values, get_managed_policy_map=dict)
    return dict(translated)


def function_environment(
    template: Mapping[str, Any], logical_id: str, values: Mapping[str, str]
) -> dict[str, str]:
    """The environment variables template.yaml gives one function: Globals, then its own, and
    the two Lambda sets from a JSON `LoggingConfig` (AWS_LAMBDA_LOG_FORMAT, and
    AWS_LAMBDA_LOG_LEVEL: its ApplicationLogLevel, INFO when unset), which Powertools reads.

    Literal values are kept as strings; `!Ref Name` becomes `values[Name]` (a parameter or a
    resource's physical name, as the caller knows it), else the parameter's Default, as
    CloudFormation would; `!If` takes its branch by the template's condition on those values
    (`is_condition_true`), and a variable that comes to `AWS::NoValue` is left out; anything
    else raises ValueError.
    """
    defaults = {
        name: parameter["Default"]
        for name, parameter in template.get("Parameters", {}).items()
        if "Default" in parameter
    }
    values = {**defaults, **values}
    merged: dict[str, Any] = dict(
        template.get("Globals", {}).get("Function", {}).get("Environment", {}).get("Variables", {})
    )
    own = template["Resources"][logical_id]["Properties"].get("Environment", {})
    merged.update(own.get("Variables", {}))
    environment: dict[str, str] = {}
    for name, given in merged.items():
        value = given
        if isinstance(given, dict) and set(given) == {"Fn::If"}:
            condition, when_true, when_false = given["Fn::If"]
            value = when_true if is_condition_true(template, condition, values) else when_false
        if value == {"Ref": NO_VALUE}:
            continue
        if isinstance(value, dict):
            if set(value) != {"Ref"}:
                raise ValueError(
                    f"{logical_id}: {name} is {value!r}, only literals, Refs and Fn::If"
                )
            if value["Ref"] not in values:
                raise KeyError(f"{logical_id}: {name} needs a value for {value['Ref']}")
            environment[name] = str(values[value["Ref"]])
        else:
            environment[name] = str(value)
    logging_config = template["Resources"][logical_id]["Properties"].get("LoggingConfig", {})
    if logging_config.get("LogFormat") == "JSON":
        environment["AWS_LAMBDA_LOG_FORMAT"] = "JSON"
        environment["AWS_LAMBDA_LOG_LEVEL"] = str(logging_config.get("ApplicationLogLevel", "INFO"))
    return environment


NO_VALUE = "AWS::NoValue"


def is_condition_true(template: Mapping[str, Any], name: str, values: Mapping[str, Any]) -> bool:
    """Whether the template's condition `name` holds for these parameter values (each a
    parameter's given value, else its Default), as CloudFormation evaluates it: Fn::Equals
    of literals and Refs (compared as strings), Fn::Not, Fn::And, Fn::Or and Condition."""
    conditions = template.get("Conditions", {})
    if name not in conditions:
        raise ValueError(f"condition {name!r} is not in the template's Conditions")
    return _holds(conditions[name], template, values)


def _holds(expression: Any, template: Mapping[str, Any], values: Mapping[str, Any]) -> bool:
    if not isinstance(expression, dict) or len(expression) != 1:
        raise ValueError(f"not a condition: {expression!r}")
    ((function, arguments),) = expression.items()
    if function == "Condition":
        return is_condition_true(template, arguments, values)
    if function == "Fn::Equals":
        left, right = (_scalar(argument, template, values) for argument in arguments)
        return left == right
    if function == "Fn::Not":
        return not _holds(arguments[0], template, values)
    if function == "Fn::And":
        return all(_holds(argument, template, values) for argument in arguments)
    if function == "Fn::Or":
        return any(_holds(argument, template, values) for argument in arguments)
    raise ValueError(f"condition function {function} is not evaluated here")


def _scalar(value: Any, template: Mapping[str, Any], values: Mapping[str, Any]) -> str:
    """A literal or a Ref, as the string CloudFormation compares."""
    if isinstance(value, dict) and set(value) == {"Ref"}:
        name = value["Ref"]
        parameter = template.get("Parameters", {}).get(name, {})
        if name in values:
            value = values[name]
        elif "Default" in parameter:
            value = parameter["Default"]
        else:
            raise KeyError(f"condition needs a value for {name}")
    if isinstance(value, (dict, list)):
        raise ValueError(f"only literals and Refs compare in a condition, not {value!r}")
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
