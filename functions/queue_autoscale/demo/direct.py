"""Create, through its own API, what the endpoint's CloudFormation does not implement.

Each function takes one resource's CloudFormation properties, already resolved
(`intrinsics.Resolver`), and makes the matching API call(s): `create_direct` for a whole
resource, `complete_properties` for the settings moto's stack ignores on one it created.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any


class EmulatorError(RuntimeError):
    """The emulator could not be started or the stack could not be created."""


def queue_attribute(sqs: Any, url: str, name: str) -> str:
    """One attribute of the queue at `url` (e.g. QueueArn), as text."""
    return str(sqs.get_queue_attributes(QueueUrl=url, AttributeNames=[name])["Attributes"][name])


def create_direct(client: Callable[[str], Any], kind: str, p: Mapping[str, Any]) -> str:
    """Create one resource of `kind` from its resolved CloudFormation properties; its name."""
    if kind == "AWS::SQS::QueuePolicy":
        for url in p["Queues"]:
            client("sqs").set_queue_attributes(
                QueueUrl=url, Attributes={"Policy": json.dumps(p["PolicyDocument"])}
            )
        return ",".join(p["Queues"])
    if kind == "AWS::S3::BucketPolicy":
        client("s3").put_bucket_policy(Bucket=p["Bucket"], Policy=json.dumps(p["PolicyDocument"]))
        return str(p["Bucket"])
    if kind == "AWS::Glue::SecurityConfiguration":
        encryption = dict(p["EncryptionConfiguration"])
        # CloudFormation spells the API's S3Encryption list in the plural.
        encryption["S3Encryption"] = encryption.pop("S3Encryptions", [])
        client("glue").create_security_configuration(
            Name=p["Name"], EncryptionConfiguration=encryption
        )
        return str(p["Name"])
    if kind == "AWS::Glue::Job":
        client("glue").create_job(Name=p["Name"], **_pick(p, kind))
        return str(p["Name"])
    if kind == "AWS::Glue::Trigger":
        arguments = _pick(p, kind)
        if "Predicate" in arguments:  # CloudFormation's default; moto requires it spelled out
            arguments["Predicate"] = {"Logical": "AND", **arguments["Predicate"]}
        client("glue").create_trigger(Name=p["Name"], **arguments)
        return str(p["Name"])
    if kind == "AWS::Scheduler::Schedule":
        client("scheduler").create_schedule(Name=p["Name"], **_pick(p, kind))
        return str(p["Name"])
    if kind == "AWS::CloudWatch::Alarm":
        client("cloudwatch").put_metric_alarm(**_alarm_arguments(p))
        return str(p["AlarmName"])
    if kind == "AWS::CloudWatch::Dashboard":
        client("cloudwatch").put_dashboard(
            DashboardName=p["DashboardName"], DashboardBody=p["DashboardBody"]
        )
        return str(p["DashboardName"])
    raise EmulatorError(f"{kind} cannot be created directly")


# CloudFormation properties that are also the Create API's arguments, per type.
API_ARGUMENTS: dict[str, tuple[str, ...]] = {
    "AWS::Glue::Job": (
        "Description",
        "Role",
        "GlueVersion",
        "WorkerType",
        "NumberOfWorkers",
        "Timeout",
        "MaxRetries",
        "SecurityConfiguration",
        "Command",
        "DefaultArguments",
    ),
    "AWS::Glue::Trigger": (
        "Description",
        "Type",
        "Schedule",
        "Predicate",
        "Actions",
        "StartOnCreation",
    ),
    "AWS::Scheduler::Schedule": (
        "Description",
        "ScheduleExpression",
        "FlexibleTimeWindow",
        "State",
        "Target",
    ),
}


def _pick(p: Mapping[str, Any], kind: str) -> dict[str, Any]:
    return {key: p[key] for key in API_ARGUMENTS[kind] if key in p}


def complete_properties(
    client: Callable[[str], Any], kind: str, physical: str, p: Mapping[str, Any]
) -> list[str]:
    """Apply the properties moto's CloudFormation ignores (TTL, PITR, SSE, bucket settings).

    Each is set only when the endpoint does not already report it; returns what was applied.
    """
    applied: list[str] = []
    if kind == "AWS::DynamoDB::Table":
        dynamodb = client("dynamodb")
        ttl = p.get("TimeToLiveSpecification")
        status = dynamodb.describe_time_to_live(TableName=physical)["TimeToLiveDescription"]
        if ttl and ttl.get("Enabled") and status.get("TimeToLiveStatus") != "ENABLED":
            dynamodb.update_time_to_live(
                TableName=physical,
                TimeToLiveSpecification={"Enabled": True, "AttributeName": ttl["AttributeName"]},
            )
            applied.append("TimeToLiveSpecification")
        pitr = p.get("PointInTimeRecoverySpecification", {})
        backups = dynamodb.describe_continuous_backups(TableName=physical)
        recovery = backups["ContinuousBackupsDescription"].get("PointInTimeRecoveryDescription", {})
        if (
            pitr.get("PointInTimeRecoveryEnabled")
            and recovery.get("PointInTimeRecoveryStatus") != "ENABLED"
        ):
            dynamodb.update_continuous_backups(
                TableName=physical,
                PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True},
            )
            applied.append("PointInTimeRecoverySpecification")
        sse = p.get("SSESpecification", {})
        described = dynamodb.describe_table(TableName=physical)["Table"].get("SSEDescription")
        if sse.get("SSEEnabled") and not described:
            dynamodb.update_table(TableName=physical, SSESpecification={"Enabled": True})
            after = dynamodb.describe_table(TableName=physical)["Table"].get("SSEDescription")
            # moto accepts the update but never reports SSE; say so rather than claim it.
            applied.append("SSESpecification" if after else "SSESpecification (not reported back)")
    elif kind == "AWS::S3::Bucket":
        s3 = client("s3")
        if "PublicAccessBlockConfiguration" in p:
            s3.put_public_access_block(
                Bucket=physical, PublicAccessBlockConfiguration=p["PublicAccessBlockConfiguration"]
            )
            applied.append("PublicAccessBlockConfiguration")
        if "OwnershipControls" in p:
            s3.put_bucket_ownership_controls(
                Bucket=physical, OwnershipControls=p["OwnershipControls"]
            )
            applied.append("OwnershipControls")
        if "VersioningConfiguration" in p:
            s3.put_bucket_versioning(
                Bucket=physical,
                VersioningConfiguration={"Status": p["VersioningConfiguration"]["Status"]},
            )
            applied.append("VersioningConfiguration")
        if "LifecycleConfiguration" in p:
            rules = [_lifecycle_rule(rule) for rule in p["LifecycleConfiguration"]["Rules"]]
            s3.put_bucket_lifecycle_configuration(
                Bucket=physical, LifecycleConfiguration={"Rules": rules}
            )
            applied.append("LifecycleConfiguration")
    return applied


def _lifecycle_rule(rule: Mapping[str, Any]) -> dict[str, Any]:
    """An S3 API lifecycle rule from CloudFormation's spelling of it."""
    out: dict[str, Any] = {
        "ID": rule["Id"],
        "Status": rule["Status"],
        "Filter": {"Prefix": rule.get("Prefix", "")},
    }
    if "ExpirationInDays" in rule:
        out["Expiration"] = {"Days": int(rule["ExpirationInDays"])}
    if "NoncurrentVersionExpiration" in rule:
        days = rule["NoncurrentVersionExpiration"]["NoncurrentDays"]
        out["NoncurrentVersionExpiration"] = {"NoncurrentDays": int(days)}
    if "AbortIncompleteMultipartUpload" in rule:
        days = rule["AbortIncompleteMultipartUpload"]["DaysAfterInitiation"]
        out["AbortIncompleteMultipartUpload"] = {"DaysAfterInitiation": int(days)}
    return out


def _alarm_arguments(p: Mapping[str, Any]) -> dict[str, Any]:
    """put_metric_alarm's arguments from AWS::CloudWatch::Alarm properties (numbers typed)."""
    arguments = dict(p)
    for key in ("Threshold",):
        if key in arguments:
            arguments[key] = float(arguments[key])
    for key in ("EvaluationPeriods", "DatapointsToAlarm", "Period"):
        if key in arguments:
            arguments[key] = int(arguments[key])
    for query in arguments.get("Metrics", []):
        if "Period" in query:
            query["Period"] = int(query["Period"])
        if "MetricStat" in query:
            query["MetricStat"]["Period"] = int(query["MetricStat"]["Period"])
    return arguments
