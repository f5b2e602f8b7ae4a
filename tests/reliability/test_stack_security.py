"""Security of the stack, beyond tests/unit/test_template.py (which already checks: no
wildcard action, Resource "*" only for APIs without resource-level permissions, the
PutMetricData namespace condition, SSE on queues/table (+PITR)/bucket, public access
blocked and non-TLS denied): checkov skips are justified next to their resource, IAM
resources are built from parameters and stack resources, and each Lambda role grants
exactly the AWS calls its handler is seen making against the emulator.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from infra.template import expand_for_each, load_template, translate
from queue_autoscale.adapters.aws import AwsClients
from queue_autoscale.controller import shards, tick
from queue_autoscale.controller.config_loader import build_loader
from queue_autoscale.core.shard import plan_shards
from queue_autoscale.demo import sqs_event
from queue_autoscale.handlers import evaluate, record_events
from queue_autoscale.settings import RecordSettings
from tests.reliability.worlds import NOW, Fleet

PREFIX = {
    "sqs": "sqs",
    "dynamodb": "dynamodb",
    "s3": "s3",
    "ecs": "ecs",
    "cloudwatch": "cloudwatch",
    "eventbridge": "events",
    "lambda": "lambda",
    "ssm": "ssm",
    "firehose": "firehose",
}
IAM_NAME = {"SendMessageBatch": "SendMessage", "Invoke": "InvokeFunction"}
"""Operations authorised under another action's name."""
PLATFORM = {
    # What Lambda itself does with the function's role, not the handler's code.
    "RecordEventsRole": {
        "sqs:ReceiveMessage",  # the SQS event source mapping
        "sqs:DeleteMessage",
        "sqs:ChangeMessageVisibility",
        "sqs:GetQueueAttributes",
        "logs:CreateLogStream",
        "logs:PutLogEvents",
        "xray:PutTraceSegments",
        "xray:PutTelemetryRecords",
        "cloudwatch:PutMetricData",  # Powertools metrics (namespace-conditioned)
    },
    "EvaluateRole": {
        "sqs:SendMessage",  # the function's on-failure DLQ (EvaluateDeadLetterQueue)
        "sqs:ReceiveMessage",  # the tick queue's event source mapping
        "sqs:DeleteMessage",
        "sqs:ChangeMessageVisibility",
        "logs:CreateLogStream",
        "logs:PutLogEvents",
        "xray:PutTraceSegments",
        "xray:PutTelemetryRecords",
        "cloudwatch:PutMetricData",
    },
}


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return expand_for_each(load_template())


@pytest.fixture(scope="module")
def translated(template: dict[str, Any]) -> dict[str, Any]:
    return translate(template)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def statements(document: dict[str, Any], role: str) -> list[dict[str, Any]]:
    properties = document["Resources"][role]["Properties"]
    return [
        statement
        for policy in properties.get("Policies", [])
        for statement in _list(policy["PolicyDocument"]["Statement"])
        if statement.get("Effect") == "Allow"
    ]


def granted(document: dict[str, Any], role: str) -> set[str]:
    return {action for s in statements(document, role) for action in _list(s["Action"])}


def test_every_checkov_skip_is_justified_next_to_its_resource(template: dict[str, Any]) -> None:
    skips = []
    for name, resource in template["Resources"].items():
        for skip in resource.get("Metadata", {}).get("checkov", {}).get("skip", []):
            skips.append((name, skip))
    assert skips, "the template declares its checkov skips in resource Metadata"
    for name, skip in skips:
        assert re.fullmatch(r"CKV2?_AWS_\d+", skip.get("id", "")), (name, skip)
        assert len(str(skip.get("comment", "")).split()) >= 8, f"{name}: {skip} says too little"


def _references(value: Any) -> Iterator[str]:
    """Every literal string inside an IAM Resource value, with intrinsic functions kept."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        (function, argument), *_ = value.items()
        if function == "Fn::Sub":
            yield f"Fn::Sub:{argument if isinstance(argument, str) else argument[0]}"
        elif function in ("Ref", "Fn::GetAtt"):
            yield f"{function}:{json.dumps(argument)}"
        else:
            for item in _list(argument):
                yield from _references(item)
    elif isinstance(value, list):
        for item in value:
            yield from _references(item)


def _tagged_by_stack(statement: dict[str, Any]) -> bool:
    """Whether the statement's condition requires the stack's own tag on the resource."""
    condition = json.dumps(statement.get("Condition"))
    return '"aws:ResourceTag/queue-autoscale": {"Ref": "AWS::StackName"}' in condition


def test_iam_resources_come_from_parameters_and_stack_resources(
    translated: dict[str, Any],
) -> None:
    parameters = set(translated.get("Parameters", {}))
    stack = set(translated["Resources"])
    for role, resource in translated["Resources"].items():
        if resource["Type"] != "AWS::IAM::Role":
            continue
        for statement in statements(translated, role):
            for reference in _references(statement.get("Resource")):
                if reference == "*":
                    continue  # test_template.py limits "*" to APIs without resource ARNs
                assert not reference.startswith("arn:"), f"{role}: literal ARN {reference}"
                if reference.startswith("Ref:"):
                    assert json.loads(reference[4:]) in parameters | stack, (role, reference)
                elif reference.startswith("Fn::GetAtt:"):
                    assert json.loads(reference[11:])[0] in stack, (role, reference)
                else:
                    text = reference.removeprefix("Fn::Sub:")
                    names = set(re.findall(r"\$\{([\w:.]+)\}", text))
                    ours = {n.split(".")[0] for n in names if not n.startswith("AWS::")}
                    assert ours <= parameters | stack, (role, text)
                    # A wildcard only inside something of ours (a bucket prefix, Glue's logs),
                    # or over resources tagged with this stack's name (the cluster scope).
                    if "*" in text:
                        assert ours or "/aws-glue/" in text or _tagged_by_stack(statement), (
                            role,
                            text,
                        )
                        assert text.index("*") > text.rfind("}"), (role, text)


@pytest.fixture
def observed(kit: Any, clients: AwsClients, lambda_context: Any) -> dict[str, set[str]]:
    """IAM actions each handler's code is seen calling: a batch with two rejections (one too
    large for the DLQ), and a tick that resizes a service, each function writing the archive
    through its own delivery stream, against the emulator (a `before-call` hook on every
    client)."""
    seen: dict[str, set[str]] = {"RecordEventsRole": set(), "EvaluateRole": set()}
    current = ["RecordEventsRole"]
    names = ("sqs", "dynamodb", "s3", "ecs", "cloudwatch", "events", "lambda_", "ssm", "firehose")
    for name in names:
        client = getattr(clients, name)
        prefix = PREFIX[client.meta.service_model.service_id.hyphenize()]

        def hook(model: Any, prefix: str = prefix, **_: Any) -> None:
            operation = IAM_NAME.get(model.name, model.name)
            seen[current[0]].add(f"{prefix}:{operation}")

        client.meta.events.register("before-call", hook)

    fleet = Fleet.create(kit, clients, bases=("orders",))
    # the archive's two delivery streams, as the template gives each function its own
    streams = {kind: kit.delivery_stream(kind, fleet.bucket) for kind in ("events", "decisions")}
    # the queue config in a config store that points at an object, as a large one would
    document = fleet.settings().queues_config or ""
    clients.s3.put_object(Bucket=fleet.bucket, Key="config/queues.json", Body=document.encode())
    parameter = f"/{kit.name('stack')}/queues-config"
    pointer = f"s3://{fleet.bucket}/config/queues.json"
    clients.ssm.put_parameter(Name=parameter, Value=pointer, Type="String")
    settings = RecordSettings.from_environ(
        {
            "QUEUES_CONFIG_PARAMETER": parameter,
            "LOAD_TABLE": fleet.table,
            "ARCHIVE_BUCKET": fleet.bucket,
            "EVENTS_DLQ_URL": kit.queue("events-dlq"),
            "EVENTS_DELIVERY_STREAM": streams["events"],
        }
    )
    good = {"type": "queued", "queue": fleet.queues[0], "job_id": "a", "at": int(NOW * 1000)}
    batch = [
        {"MessageId": "m1", "Body": json.dumps(good)},
        {"MessageId": "m2", "Body": "not json"},
        # too large to travel inside a DLQ message: the body goes to the bucket's rejected/
        {"MessageId": "m3", "Body": "not json " * 25_000},
    ]
    for value in seen.values():
        value.clear()  # the setup's calls are not the handlers'
    record_events.set_runtime(record_events.build_runtime(settings, clients, clock=lambda: NOW))
    try:
        assert record_events.handler(sqs_event(batch, "arn:x"), lambda_context) == {
            "batchItemFailures": []
        }
    finally:
        record_events.set_runtime(None)
    current[0] = "EvaluateRole"
    evaluate_settings = fleet.settings().model_copy(
        update={"decisions_stream": streams["decisions"]}
    )
    runtime = evaluate.build_runtime(evaluate_settings, clients, clock=lambda: NOW)
    runtime.config = build_loader(settings, clients)  # the fleet's document, from the store
    (outcome,) = tick.run_tick(runtime, NOW)
    assert outcome.applied, "the tick must resize the service so UpdateService is seen"
    # the dispatcher starting a second shard (the function is not on the emulator: refused)
    two = plan_shards(2, budget_seconds=12, max_shards=2, fixed=2)
    started, refused = shards.fan_out(runtime, two, "evaluate-not-deployed", {})
    assert len(started) + len(refused) == 1, "the dispatcher must try to start shard 1"
    return seen


@pytest.mark.integration
@pytest.mark.xdist_group("moto")
def test_each_lambda_role_allows_every_call_its_handler_makes(
    translated: dict[str, Any], observed: dict[str, set[str]]
) -> None:
    assert "ecs:UpdateService" in observed["EvaluateRole"]
    assert "dynamodb:UpdateItem" in observed["RecordEventsRole"]
    for role, calls in observed.items():
        assert calls <= granted(translated, role), (
            f"{role} lacks {calls - granted(translated, role)}"
        )


@pytest.mark.integration
@pytest.mark.xdist_group("moto")
def test_each_lambda_role_allows_nothing_its_handler_does_not_call(
    translated: dict[str, Any], observed: dict[str, set[str]]
) -> None:
    extras = {
        role: sorted(granted(translated, role) - calls - PLATFORM[role])
        for role, calls in observed.items()
    }
    assert extras == {"RecordEventsRole": [], "EvaluateRole": []}
