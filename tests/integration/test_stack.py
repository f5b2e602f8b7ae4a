"""template.yaml creates on the emulator: the stack, plus what its CloudFormation lacks."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from infra.emulator import EmulatorStack, session
from queue_autoscale.config import parse_config
from queue_autoscale.constants import METRIC_NAMESPACE
from tests.integration.conftest import bootstrap_stack, reset_moto

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("moto")]


@pytest.fixture(scope="module")
def stack(aws_endpoint: Any) -> EmulatorStack:
    # One stack for the module (bootstrapping takes seconds); it starts from a reset server.
    if aws_endpoint.moto_url:
        reset_moto(aws_endpoint.moto_url)
    # the stack's CloudFormation creates the table and the functions on the endpoint itself
    aws_endpoint.require("dynamodb", "ecs")
    suffix = uuid.uuid4().hex[:8]
    endpoint = aws_endpoint
    queues = parse_config(
        {
            "queue": f"jobs-{suffix}",
            "dlq": f"jobs-{suffix}-dlq",
            "cluster": f"cluster-{suffix}",
            "service": f"workers-{suffix}",
            "profile": "critical",
        }
    )
    return bootstrap_stack(endpoint, queues, f"qa-{suffix}")


def test_stack_resources_are_created(stack: EmulatorStack) -> None:
    client = session(stack.endpoint_url, stack.region)
    status = client("cloudformation").describe_stacks(StackName=stack.stack_name)["Stacks"][0]
    assert status["StackStatus"] == "CREATE_COMPLETE"
    assert {
        "EventsQueue",
        "EventsDeadLetterQueue",
        "LoadTable",
        "ArchiveBucket",
        "RecordEventsFunction",
        "EvaluateFunction",
        "EvaluateTickQueue",
        "RecordEventsRole",
        "EvaluateRole",
        "SchedulerRole",
        "GlueJobRole",
    } <= set(stack.created_by_stack)
    # only the SQS mappings, the TLS-only bucket policy and the archive's delivery streams are
    # left out, with reasons; the source credentials policy's Condition is false here (no
    # secrets), so it is not in the stack at all
    skipped = dict(stack.skipped)
    assert set(skipped) == {
        "RecordEventsFunctionEvents",
        "EvaluateFunctionTick",
        "ArchiveBucketPolicy",
        "EvaluateFunctionEventInvokeConfig",
        "EventsDeliveryStream",
        "DecisionsDeliveryStream",
    }
    assert "EvaluateSourceCredentialsPolicy" not in stack.created_by_stack
    assert "in-process" in skipped["RecordEventsFunctionEvents"]
    assert "plain HTTP" in skipped["ArchiveBucketPolicy"]
    assert "straight to the bucket" in skipped["EventsDeliveryStream"]


def test_queues_are_encrypted_and_redrive_to_the_dlq(stack: EmulatorStack) -> None:
    sqs = session(stack.endpoint_url, stack.region)("sqs")
    events = sqs.get_queue_attributes(QueueUrl=stack.events_queue_url, AttributeNames=["All"])[
        "Attributes"
    ]
    dlq = sqs.get_queue_attributes(QueueUrl=stack.events_dlq_url, AttributeNames=["All"])[
        "Attributes"
    ]
    assert events["SqsManagedSseEnabled"] == "true"
    assert dlq["SqsManagedSseEnabled"] == "true"
    assert json.loads(events["RedrivePolicy"])["deadLetterTargetArn"] == dlq["QueueArn"]
    policy = json.loads(events["Policy"])
    assert policy["Statement"][0]["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def test_table_and_bucket_settings(stack: EmulatorStack) -> None:
    client = session(stack.endpoint_url, stack.region)
    dynamodb, s3 = client("dynamodb"), client("s3")
    ttl = dynamodb.describe_time_to_live(TableName=stack.load_table)["TimeToLiveDescription"]
    assert ttl == {"TimeToLiveStatus": "ENABLED", "AttributeName": "expires_at"}
    backups = dynamodb.describe_continuous_backups(TableName=stack.load_table)
    recovery = backups["ContinuousBackupsDescription"]["PointInTimeRecoveryDescription"]
    assert recovery["PointInTimeRecoveryStatus"] == "ENABLED"
    keys = dynamodb.describe_table(TableName=stack.load_table)["Table"]["KeySchema"]
    assert keys == [
        {"AttributeName": "pk", "KeyType": "HASH"},
        {"AttributeName": "sk", "KeyType": "RANGE"},
    ]
    block = s3.get_public_access_block(Bucket=stack.archive_bucket)[
        "PublicAccessBlockConfiguration"
    ]
    assert all(block.values()) and len(block) == 4
    encryption = s3.get_bucket_encryption(Bucket=stack.archive_bucket)
    rule = encryption["ServerSideEncryptionConfiguration"]["Rules"][0]
    assert rule["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"


def test_functions_get_the_environment_the_handlers_read(stack: EmulatorStack) -> None:
    lambda_ = session(stack.endpoint_url, stack.region)("lambda")
    evaluate = lambda_.get_function(FunctionName=stack.evaluate_function)["Configuration"]
    assert evaluate["Handler"] == "queue_autoscale.handlers.evaluate.handler"
    variables = evaluate["Environment"]["Variables"]
    assert variables["LOAD_TABLE"] == stack.load_table
    assert variables["ARCHIVE_BUCKET"] == stack.archive_bucket
    assert variables["POWERTOOLS_METRICS_NAMESPACE"] == METRIC_NAMESPACE
    assert str(variables["EVALUATION_INTERVAL_SECONDS"]) == "10"
    # no delivery stream on the emulator: the decision log goes straight to the bucket
    assert variables.get("DECISIONS_DELIVERY_STREAM", "") == ""
    # the queue config is not in the environment: the function reads the stack's config store
    assert "QUEUES_CONFIG" not in variables
    assert variables["QUEUES_CONFIG_PARAMETER"] == stack.config_parameter
    ssm = session(stack.endpoint_url, stack.region)("ssm")
    stored = ssm.get_parameter(Name=stack.config_parameter)["Parameter"]["Value"]
    config = parse_config(json.loads(stored))
    assert [(q.queue, q.sla_seconds) for q in config] == [(stack.work_queues[0].name, 10.0)]
    record = lambda_.get_function(FunctionName=stack.record_function)["Configuration"]
    assert record["Handler"] == "queue_autoscale.handlers.record_events.handler"


def test_schedule_glue_alarms_and_dashboard(stack: EmulatorStack) -> None:
    client = session(stack.endpoint_url, stack.region)
    schedule = client("scheduler").get_schedule(Name=f"{stack.stack_name}-evaluate")
    assert schedule["ScheduleExpression"] == "rate(1 minute)"
    assert schedule["Target"]["Arn"].endswith(f":function:{stack.evaluate_function}")
    job = client("glue").get_job(JobName=f"{stack.stack_name}-daily-spark")["Job"]
    assert job["DefaultArguments"]["--table_name"] == stack.load_table
    assert job["Command"]["ScriptLocation"] == f"s3://{stack.archive_bucket}/glue/daily.py"
    alarms = client("cloudwatch").describe_alarms(AlarmNamePrefix=f"{stack.stack_name}-")[
        "MetricAlarms"
    ]
    names = {alarm["AlarmName"].removeprefix(f"{stack.stack_name}-") for alarm in alarms}
    # one alarm per condition for the whole stack, on the fleet metrics of the stack's name
    assert {
        "overloading",
        "overloaded",
        "sla-breach",
        "fleet-near-max",
        "controller-errors",
        "queue-silent",
        "controller-silent",
        "events-dlq-not-empty",
        "function-errors",
        "config-errors",
    } == names
    fleet = next(a for a in alarms if a["AlarmName"].endswith("-fleet-near-max"))
    assert (fleet["MetricName"], fleet["Threshold"]) == ("MaxFleetUsage", 0.8)
    assert fleet["Dimensions"] == [{"Name": "Stack", "Value": stack.stack_name}]
    dlq_alarm = next(a for a in alarms if a["AlarmName"].endswith("events-dlq-not-empty"))
    assert dlq_alarm["Dimensions"] == [
        {"Name": "QueueName", "Value": stack.events_dlq_url.rsplit("/", 1)[-1]}
    ]
    body = client("cloudwatch").get_dashboard(DashboardName=stack.stack_name)["DashboardBody"]
    assert f"{stack.stack_name}-events-dlq-not-empty" in body
    assert "${" not in body  # every substitution was resolved
