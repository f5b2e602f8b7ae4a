"""`queue-autoscale deploy --localstack` end to end on LocalStack's CloudFormation: sam build
with the pinned SAM CLI, sam deploy through LocalStack's change sets and SAM transform, the
Glue upload, the outputs, `status` on the stack; then an update with one more queue, and
the stack deleted. Runs in `make test-localstack` only (moto's CloudFormation runs no SAM
transform); what LocalStack cannot create here is stood in for and named
(queue_autoscale.operator.localstack).

`--scope cluster`: LocalStack 2026.3's change sets read the previous value of a
CommaDelimitedList parameter as a string, so an update fails on the template's
`!Join ["", !Ref QueueArns]` whenever the listed ARNs are not empty (its create does not)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from infra.template import ROOT, function_environment, load_template
from queue_autoscale.adapters.aws import make_client
from queue_autoscale.adapters.dynamodb import create_load_table
from queue_autoscale.operator.deploy import SCOPE_TAG
from queue_autoscale.operator.localstack import LEFT_OUT
from tests.integration.conftest import REGION, Endpoint

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("deploy")]

DEPLOY_SECONDS = 900
"""Deadline of one `deploy` (sam build about 90 s on the 2-core machine, sam deploy 20 s)."""
STATUS_SECONDS = 120
CLI = str(Path(sys.executable).with_name("queue-autoscale"))


def _client(endpoint: Endpoint, service: str) -> Any:
    return make_client(service, endpoint_url=endpoint.url, region_name=REGION)


def _queue(endpoint: Endpoint, name: str, *, dlq: bool = False, **extra: Any) -> dict[str, Any]:
    """A work queue (and DLQ) created on LocalStack's SQS, as its config entry."""
    sqs = _client(endpoint, "sqs")
    entry = {"queue": name, "cluster": "workers", "service": f"{name}-w", **extra}
    sqs.create_queue(QueueName=name)
    if dlq:
        entry["dlq"] = sqs.create_queue(QueueName=f"{name}-dlq")["QueueUrl"].rsplit("/", 1)[-1]
    return entry


def _deploy(config: Path, stack: str) -> subprocess.CompletedProcess[str]:
    command = [CLI, "deploy", "--config", str(config), "--stack", stack, "--region", REGION]
    return subprocess.run(
        [*command, "--scope", "cluster", "--localstack"],
        capture_output=True,
        text=True,
        timeout=DEPLOY_SECONDS,
        check=False,
    )


def _resources(cloudformation: Any, stack: str) -> dict[str, dict[str, Any]]:
    answer = cloudformation.describe_stack_resources(StackName=stack)["StackResources"]
    return {item["LogicalResourceId"]: item for item in answer}


def _stand_in_function_and_table(
    endpoint: Endpoint, stack: str, physical: dict[str, str], parameters: dict[str, str]
) -> None:
    """On the embedded moto server (where this session routes Lambda and DynamoDB), the
    evaluate function and the load table by their stand-ins' names, the function with the
    environment template.yaml gives it, resolved against the deployed stack."""
    assert endpoint.moto_url
    values = {**parameters, **physical, "AWS::StackName": stack}
    environment = function_environment(load_template(), "EvaluateFunction", values)
    iam = make_client("iam", endpoint_url=endpoint.moto_url, region_name=REGION)
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "lambda.amazonaws.com"},
                "Action": "sts:AssumeRole",
            }
        ],
    }
    role = iam.create_role(RoleName=f"{stack}-evaluate", AssumeRolePolicyDocument=json.dumps(trust))
    code = io.BytesIO()
    with zipfile.ZipFile(code, "w") as archive:
        archive.writestr("handler.py", "def handler(event, context):\n    return None\n")
    lambda_ = make_client("lambda", endpoint_url=endpoint.moto_url, region_name=REGION)
    lambda_.create_function(
        FunctionName=physical["EvaluateFunction"],
        Runtime="python3.13",
        Role=role["Role"]["Arn"],
        Handler="handler.handler",
        Code={"ZipFile": code.getvalue()},
        Environment={"Variables": environment},
    )
    dynamodb = make_client("dynamodb", endpoint_url=endpoint.moto_url, region_name=REGION)
    create_load_table(dynamodb, physical["LoadTable"])


@pytest.fixture
def stack_name(aws_endpoint: Endpoint) -> Iterator[str]:
    """A fresh stack name on LocalStack; the stack is deleted afterwards whatever happened."""
    if aws_endpoint.embedded:
        pytest.skip("the real deploy runs on LocalStack (make test-localstack)")
    if not aws_endpoint.moto_url:
        pytest.skip("status needs Lambda and DynamoDB routed to the embedded moto server")
    name = f"dp-{uuid.uuid4().hex[:8]}"
    yield name
    _client(aws_endpoint, "cloudformation").delete_stack(StackName=name)


def _assert_created(
    endpoint: Endpoint, stack: str, queues: list[dict[str, Any]], printed: str
) -> dict[str, dict[str, Any]]:
    """The stack is complete, the stand-ins named, the outputs printed, the Glue files there;
    its resources."""
    cloudformation = _client(endpoint, "cloudformation")
    described = cloudformation.describe_stacks(StackName=stack)["Stacks"][0]
    assert described["StackStatus"] == "CREATE_COMPLETE"
    resources = _resources(cloudformation, stack)
    assert {r["ResourceStatus"] for r in resources.values()} == {"CREATE_COMPLETE"}
    # nothing passed as LocalStack's silent "deployed as a fallback"
    assert not [r for r in resources.values() if "fallback" in r.get("ResourceStatusReason", "")]
    template = load_template()
    left_out = sorted(
        name
        for name, r in template["Resources"].items()
        if isinstance(r, dict) and r.get("Type") in LEFT_OUT
    )
    named = sorted(line.split()[4] for line in printed.splitlines() if line.startswith("left out"))
    assert named == left_out
    assert {resources[name]["ResourceType"] for name in left_out} == {"AWS::SSM::Parameter"}
    # the stack's alarms: one per condition whatever the queue count
    alarms = [n for n, r in template["Resources"].items() if r["Type"] == "AWS::CloudWatch::Alarm"]
    assert len(alarms) == 10
    assert set(alarms) <= set(resources)
    for name in ("EvaluateRole", "RecordEventsRole", "EvaluateSchedule", "EventsQueuePolicy"):
        assert name in resources
    # every output is printed, then the status command
    outputs = {o["OutputKey"]: o["OutputValue"] for o in described["Outputs"]}
    for key, value in outputs.items():
        assert f"{key}: {value}" in printed
    assert f"queue-autoscale status --stack {stack}" in printed
    # the Glue job's script and zip are where the job's ScriptLocation points
    s3 = _client(endpoint, "s3")
    bucket = outputs["ArchiveBucketName"]
    listed = s3.list_objects_v2(Bucket=bucket, Prefix="glue/").get("Contents", [])
    assert sorted(o["Key"] for o in listed) == ["glue/daily.py", "glue/glue_jobs.zip"]
    script = s3.get_object(Bucket=bucket, Key="glue/daily.py")["Body"].read()
    assert script == (ROOT / "glue_jobs" / "daily.py").read_bytes()
    return resources


def _status(endpoint: Endpoint, stack: str) -> dict[str, Any]:
    """`status --json` on the stack, Lambda and DynamoDB read from the embedded moto server."""
    resources = _resources(_client(endpoint, "cloudformation"), stack)
    described = _client(endpoint, "cloudformation").describe_stacks(StackName=stack)["Stacks"][0]
    physical = {name: r["PhysicalResourceId"] for name, r in resources.items()}
    parameters = {p["ParameterKey"]: p["ParameterValue"] for p in described["Parameters"]}
    _stand_in_function_and_table(endpoint, stack, physical, parameters)
    moto = str(endpoint.moto_url)
    status = subprocess.run(
        [CLI, "status", "--stack", stack, "--json"],
        capture_output=True,
        text=True,
        timeout=STATUS_SECONDS,
        check=False,
        env={**os.environ, "AWS_DEFAULT_REGION": REGION, "AWS_ENDPOINT_URL_LAMBDA": moto},
    )
    assert status.returncode == 0, status.stderr
    return dict(json.loads(status.stdout.splitlines()[-1]))


def test_deploy_creates_updates_and_deletes_the_stack_on_localstack(
    aws_endpoint: Endpoint, stack_name: str, tmp_path: Path
) -> None:
    suffix = stack_name.removeprefix("dp-")
    queues = [
        _queue(aws_endpoint, f"reports-{suffix}", dlq=True, sla_seconds=60),
        _queue(aws_endpoint, f"emails-{suffix}", profile="critical"),
    ]
    config = tmp_path / "queues.json"
    config.write_text(json.dumps({"queues": queues}), encoding="utf-8")

    # WHEN the one command deploys the config
    first = _deploy(config, stack_name)
    # THEN the stack is complete with everything LocalStack can create, the rest named
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    resources = _assert_created(aws_endpoint, stack_name, queues, first.stdout)
    # and every work queue and DLQ carries the tag the evaluate role's SQS access is scoped by
    sqs = _client(aws_endpoint, "sqs")
    for name in [queues[0]["queue"], queues[0]["dlq"], queues[1]["queue"]]:
        tags = sqs.list_queue_tags(QueueUrl=sqs.get_queue_url(QueueName=name)["QueueUrl"])
        assert tags["Tags"] == {SCOPE_TAG: stack_name}, name

    # WHEN status runs against the deployed stack
    snapshot = _status(aws_endpoint, stack_name)
    # THEN it reads the queues from the stack's config store and the stack's own alarms
    assert [q["queue"] for q in snapshot["queues"]] == [q["queue"] for q in queues]
    assert snapshot["errors"] == []
    alarm_names = {a["name"] for a in snapshot["alarms"]}
    assert {f"{stack_name}-overloading", f"{stack_name}-controller-silent"} <= alarm_names

    # WHEN the config gains a queue and the same command runs again
    queues.append(_queue(aws_endpoint, f"thumbs-{suffix}"))
    config.write_text(json.dumps({"queues": queues}), encoding="utf-8")
    second = _deploy(config, stack_name)
    # THEN the stack is updated: no resource is added for the queue, the store holds the config
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    cloudformation = _client(aws_endpoint, "cloudformation")
    described = cloudformation.describe_stacks(StackName=stack_name)["Stacks"][0]
    assert described["StackStatus"] == "UPDATE_COMPLETE"
    updated = _resources(cloudformation, stack_name)
    assert set(updated) == set(resources)
    config_store = resources["QueueConfigParameter"]["PhysicalResourceId"]
    stored = _client(aws_endpoint, "ssm").get_parameter(Name=config_store)["Parameter"]["Value"]
    assert json.loads(stored) == {"queues": queues}

    # WHEN the stack is deleted
    cloudformation.delete_stack(StackName=stack_name)
    cloudformation.get_waiter("stack_delete_complete").wait(
        StackName=stack_name, WaiterConfig={"Delay": 2, "MaxAttempts": 90}
    )
    # THEN its alarms are gone with it
    cloudwatch = _client(aws_endpoint, "cloudwatch")
    assert cloudwatch.describe_alarms(AlarmNamePrefix=f"{stack_name}-")["MetricAlarms"] == []
