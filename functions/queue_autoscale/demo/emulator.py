"""Bootstrap the embedded AWS emulator: template.yaml's stack plus the demo's work queues and fleet.

1. Start moto's server on 127.0.0.1 (or reuse the endpoint in AWS_ENDPOINT_URL).
2. Create each configured work queue (with its DLQ) and ECS cluster/service, so the
   stack's IAM parameters (QueueArns, ServiceArns) name real resources.
3. Translate template.yaml with aws-sam-translator and create the stack with the
   endpoint's CloudFormation, keeping only the resource types it implements.
4. Create the rest through their own APIs from the same translated definitions
   (intrinsics resolved against the created stack), or skip them with the reason.

`bootstrap` returns an `EmulatorStack` with every name and URL the demo and tests need.
"""

from __future__ import annotations

import io
import json
import logging
import os
import zipfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from botocore.config import Config
from botocore.exceptions import ClientError

import queue_autoscale
from queue_autoscale.adapters.aws import make_client, make_session
from queue_autoscale.config import QueueConfig
from queue_autoscale.demo.template import DEFAULT_REGION, load_template, translate

# Resource types moto's CloudFormation implements and this template uses.
CFN_SUPPORTED = frozenset(
    {
        "AWS::SQS::Queue",
        "AWS::DynamoDB::Table",
        "AWS::S3::Bucket",
        "AWS::IAM::Role",
        "AWS::Logs::LogGroup",
        "AWS::Lambda::Function",
        "AWS::SSM::Parameter",
    }
)
# Types left out of the emulated stack altogether, with the reason printed.
SKIPPED = {
    "AWS::Lambda::EventSourceMapping": (
        "moto's SQS would invoke the function in Docker on every SendMessage; the demo "
        "polls the events queue and invokes the handler in-process, as the mapping would"
    ),
    "AWS::Lambda::EventInvokeConfig": (
        "the demo and tests invoke the evaluate handler in-process, so Lambda's asynchronous "
        "queue (its event age and retry limits) is never used; the template tests check it"
    ),
    "AWS::S3::BucketPolicy": (
        "the emulator speaks plain HTTP on loopback and moto enforces the TLS-only deny, "
        "so every archive write would be refused; the template tests check the policy"
    ),
}
# Created through their own APIs after the stack, in this order.
DIRECT_ORDER = (
    "AWS::SQS::QueuePolicy",
    "AWS::Glue::SecurityConfiguration",
    "AWS::Glue::Job",
    "AWS::Glue::Trigger",
    "AWS::Scheduler::Schedule",
    "AWS::CloudWatch::Alarm",
    "AWS::CloudWatch::Dashboard",
)
DUMMY_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
}
CLIENT_CONFIG = Config(
    retries={"mode": "standard", "max_attempts": 3}, connect_timeout=2, read_timeout=20
)


class EmulatorError(RuntimeError):
    """The emulator could not be started or the stack could not be created."""


@dataclass(frozen=True)
class WorkQueue:
    """One configured work queue with its DLQ and ECS service on the emulator."""

    name: str
    url: str
    arn: str
    dlq_url: str | None
    cluster: str
    service: str
    service_arn: str


@dataclass(frozen=True)
class EmulatorStack:
    """Names and URLs of everything `bootstrap` created."""

    endpoint_url: str
    region: str
    stack_name: str
    events_queue_url: str
    events_dlq_url: str
    evaluate_dlq_url: str
    load_table: str
    archive_bucket: str
    event_bus: str
    record_function: str
    evaluate_function: str
    config_parameter: str
    """The config store: the SSM parameter holding the queue config (QueuesConfig at first)."""
    work_queues: tuple[WorkQueue, ...]
    parameters: Mapping[str, str]
    """The stack parameters the template was created with."""
    created_by_stack: tuple[str, ...]
    """Logical ids the endpoint's CloudFormation created."""
    created_directly: tuple[str, ...]
    """Logical ids created through their own APIs."""
    skipped: tuple[tuple[str, str], ...] = field(default=())
    """(logical id, reason) of resources not created on the emulator."""


def session(endpoint_url: str, region: str = DEFAULT_REGION) -> Callable[[str], Any]:
    """A client factory for the endpoint (dummy credentials unless real ones are set)."""
    env = {key: os.environ.get(key) or value for key, value in DUMMY_CREDENTIALS.items()}
    chosen = make_session(region, env)

    def client(service: str) -> Any:
        return make_client(service, session=chosen, endpoint_url=endpoint_url, config=CLIENT_CONFIG)

    return client


@contextmanager
def embedded_endpoint(
    endpoint_url: str | None = None, *, from_environment: bool = True
) -> Iterator[str]:
    """Yield an endpoint URL: the given one or $AWS_ENDPOINT_URL (if `from_environment`),
    else a moto server started on 127.0.0.1.

    A server started here is stopped when the block exits, also on Ctrl-C.
    """
    given = endpoint_url or (os.environ.get("AWS_ENDPOINT_URL") if from_environment else None)
    if given:
        yield given
        return
    from moto.server import ThreadedMotoServer  # noqa: PLC0415 (dev-only dependency)

    # The server's request log would bury the demo's table; errors still show.
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        yield f"http://{host}:{port}"
    finally:
        server.stop()


# ------------------------------------------------------------------ work queues and fleet


def create_work_queue(client: Callable[[str], Any], queue: QueueConfig, running: int) -> WorkQueue:
    """The work queue (its DLQ after 3 receives) and an ECS service running `running` tasks."""
    sqs, ecs = client("sqs"), client("ecs")
    dlq_url = None
    attributes = {"SqsManagedSseEnabled": "true", "VisibilityTimeout": "60"}
    if queue.dlq:
        dlq_url = sqs.create_queue(
            QueueName=queue.dlq, Attributes={"SqsManagedSseEnabled": "true"}
        )["QueueUrl"]
        dlq_arn = _queue_attribute(sqs, dlq_url, "QueueArn")
        attributes["RedrivePolicy"] = json.dumps(
            {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 3}
        )
    url = sqs.create_queue(QueueName=queue.queue, Attributes=attributes)["QueueUrl"]
    ecs.create_cluster(clusterName=queue.cluster)
    family = f"{queue.service}-worker"
    ecs.register_task_definition(
        family=family,
        containerDefinitions=[{"name": "worker", "image": "worker:latest", "memory": 512}],
    )
    answer = ecs.create_service(
        cluster=queue.cluster,
        serviceName=queue.service,
        taskDefinition=family,
        desiredCount=running,
    )
    # moto starts a service with nothing running; an update brings running up to desired.
    ecs.update_service(cluster=queue.cluster, service=queue.service, desiredCount=running)
    return WorkQueue(
        name=queue.queue,
        url=url,
        arn=_queue_attribute(sqs, url, "QueueArn"),
        dlq_url=dlq_url,
        cluster=queue.cluster,
        service=queue.service,
        service_arn=answer["service"]["serviceArn"],
    )


def _queue_attribute(sqs: Any, url: str, name: str) -> str:
    return str(sqs.get_queue_attributes(QueueUrl=url, AttributeNames=[name])["Attributes"][name])


FUNCTIONS_ROOT = Path(queue_autoscale.__file__).resolve().parent.parent
"""The folder holding the queue_autoscale package (functions/ in the checkout)."""


def package_functions(root: Path = FUNCTIONS_ROOT) -> bytes:
    """A zip of the Lambda code (the queue_autoscale package; dependencies are the runtime's)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted((root / "queue_autoscale").rglob("*.py")):
            archive.write(path, path.relative_to(root).as_posix())
    return buffer.getvalue()


# ------------------------------------------------------------------ the stack


def stack_parameters(
    queues: Sequence[QueueConfig],
    work: Sequence[WorkQueue],
    queue_arns: Sequence[str],
    *,
    evaluation_interval_seconds: int,
    dry_run: bool,
) -> dict[str, str]:
    """Template parameters for the emulated stack, derived from the queue config."""
    config = [queue.model_dump(mode="json") for queue in queues]
    clusters = sorted({w.cluster for w in work})
    return {
        "QueuesConfig": json.dumps(config, separators=(",", ":")),
        "QueueNames": ",".join(queue.queue for queue in queues),
        "QueueArns": ",".join(queue_arns),
        "ServiceArns": ",".join(w.service_arn for w in work),
        "EcsClusterName": clusters[0] if clusters else "default",
        "EvaluationIntervalSeconds": str(evaluation_interval_seconds),
        "DryRun": "true" if dry_run else "false",
    }


def bootstrap(
    endpoint_url: str,
    queues: Sequence[QueueConfig],
    *,
    stack_name: str = "queue-autoscale",
    region: str = DEFAULT_REGION,
    evaluation_interval_seconds: int = 5,
    dry_run: bool = False,
    log: Callable[[str], None] = lambda _message: None,
) -> EmulatorStack:
    """Create the work queues, fleets and template.yaml's stack on the endpoint."""
    client = session(endpoint_url, region)
    work = [create_work_queue(client, queue, running=max(queue.min_workers, 0)) for queue in queues]
    queue_arns = [w.arn for w in work]
    sqs = client("sqs")
    queue_arns += [_queue_attribute(sqs, w.dlq_url, "QueueArn") for w in work if w.dlq_url]
    log(
        f"work queues {[w.name for w in work]} and ECS services {[w.service for w in work]} created"
    )

    code_bucket = f"{stack_name}-code"
    s3 = client("s3")
    s3.create_bucket(Bucket=code_bucket)
    s3.put_object(Bucket=code_bucket, Key="functions.zip", Body=package_functions())

    parameters = stack_parameters(
        queues,
        work,
        queue_arns,
        evaluation_interval_seconds=evaluation_interval_seconds,
        dry_run=dry_run,
    )
    translated = translate(
        load_template(), parameters, code_uri=f"s3://{code_bucket}/functions.zip", region=region
    )
    # A resource whose Condition is false is not part of the stack (e.g. no source secrets).
    conditions = Resolver(client, translated, parameters, {}, stack_name, region).conditions
    resources = translated["Resources"]
    translated["Resources"] = {
        name: r for name, r in resources.items() if conditions.get(r.get("Condition"), True)
    }
    stack_template, direct, skipped = split_template(translated)
    cfn = client("cloudformation")
    try:
        cfn.create_stack(
            StackName=stack_name,
            TemplateBody=json.dumps(stack_template),
            Parameters=[
                {"ParameterKey": key, "ParameterValue": value}
                for key, value in parameters.items()
                if key in stack_template.get("Parameters", {})
            ],
            Capabilities=["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"],
        )
        cfn.get_waiter("stack_create_complete").wait(
            StackName=stack_name, WaiterConfig={"Delay": 1, "MaxAttempts": 120}
        )
    except Exception as error:  # name what failed and the stack events' reasons
        raise EmulatorError(
            f"stack {stack_name} was not created: {error}{_failure_reasons(cfn, stack_name)}"
        ) from error
    physical = {
        item["LogicalResourceId"]: item["PhysicalResourceId"]
        for item in cfn.describe_stack_resources(StackName=stack_name)["StackResources"]
    }
    log(f"stack {stack_name}: {len(physical)} resources created by CloudFormation")

    for logical_id, resource in translated["Resources"].items():
        if resource["Type"] == "AWS::SQS::Queue" and logical_id in physical:
            # moto's stack reports AWS-style URLs; use the endpoint's own.
            name = physical[logical_id].rstrip("/").rsplit("/", 1)[-1]
            physical[logical_id] = sqs.get_queue_url(QueueName=name)["QueueUrl"]
    resolver = Resolver(client, translated, parameters, physical, stack_name, region)
    for logical_id in ("LoadTable", "ArchiveBucket"):
        resource = translated["Resources"][logical_id]
        properties = resolver.resolve(resource.get("Properties", {}))
        applied = complete_properties(client, resource["Type"], physical[logical_id], properties)
        if applied:
            log(f"{logical_id}: set through the API what the stack left out: {', '.join(applied)}")
    created_directly = []
    for logical_id in sorted(
        direct, key=lambda name: DIRECT_ORDER.index(translated["Resources"][name]["Type"])
    ):
        resource = translated["Resources"][logical_id]
        properties = resolver.resolve(resource.get("Properties", {}))
        try:
            physical[logical_id] = create_direct(client, resource["Type"], properties)
        except ClientError as error:  # an endpoint without this API: skip it, say why
            skipped.append((logical_id, f"the endpoint refused {resource['Type']}: {error}"))
            continue
        created_directly.append(logical_id)
    log(f"created through their APIs: {', '.join(created_directly)}")
    for logical_id, reason in skipped:
        log(f"skipped {logical_id}: {reason}")

    return EmulatorStack(
        endpoint_url=endpoint_url,
        region=region,
        stack_name=stack_name,
        events_queue_url=physical["EventsQueue"],
        events_dlq_url=physical["EventsDeadLetterQueue"],
        evaluate_dlq_url=physical["EvaluateDeadLetterQueue"],
        load_table=physical["LoadTable"],
        archive_bucket=physical["ArchiveBucket"],
        event_bus=str(translated["Parameters"]["EventBusName"]["Default"]),
        record_function=physical["RecordEventsFunction"],
        evaluate_function=physical["EvaluateFunction"],
        config_parameter=physical["QueueConfigParameter"],
        work_queues=tuple(work),
        parameters=parameters,
        created_by_stack=tuple(sorted(set(physical) - set(created_directly))),
        created_directly=tuple(created_directly),
        skipped=tuple(skipped),
    )


def _failure_reasons(cfn: Any, stack_name: str) -> str:
    """'; LogicalId: reason' for every resource that failed, or '' if none can be read."""
    try:
        events = cfn.describe_stack_events(StackName=stack_name)["StackEvents"]
    except ClientError:
        return ""
    failed = [e for e in events if str(e.get("ResourceStatus", "")).endswith("FAILED")]
    return "".join(
        f"; {e['LogicalResourceId']}: {e.get('ResourceStatusReason', '?')}" for e in failed
    )


def split_template(
    translated: Mapping[str, Any],
) -> tuple[dict[str, Any], list[str], list[tuple[str, str]]]:
    """(template for the endpoint's CloudFormation, ids to create directly, skipped with why)."""
    resources = translated["Resources"]
    kept = {name: r for name, r in resources.items() if r["Type"] in CFN_SUPPORTED}
    direct = [name for name, r in resources.items() if r["Type"] in DIRECT_ORDER]
    skipped = [
        (name, SKIPPED.get(r["Type"], f"{r['Type']} has no emulation"))
        for name, r in resources.items()
        if name not in kept and name not in direct
    ]
    template = {
        key: value for key, value in translated.items() if key not in {"Resources", "Outputs"}
    }
    template["Resources"] = {name: _without_dependencies(r, set(kept)) for name, r in kept.items()}
    return template, direct, skipped


def _without_dependencies(resource: Mapping[str, Any], kept: set[str]) -> dict[str, Any]:
    copy = dict(resource)
    depends = copy.pop("DependsOn", None)
    if depends:
        remaining = [d for d in ([depends] if isinstance(depends, str) else depends) if d in kept]
        if remaining:
            copy["DependsOn"] = remaining
    return copy


# ------------------------------------------------------------------ intrinsics


class Resolver:
    """Resolves Ref / Fn::GetAtt / Fn::Sub / Fn::If / Fn::Join ... against the created stack."""

    def __init__(
        self,
        client: Callable[[str], Any],
        template: Mapping[str, Any],
        parameters: Mapping[str, str],
        physical: dict[str, str],
        stack_name: str,
        region: str,
    ) -> None:
        self._client = client
        self._template = template
        self._physical = physical
        account = client("sts").get_caller_identity()["Account"]
        self._values: dict[str, Any] = {
            "AWS::Region": region,
            "AWS::AccountId": account,
            "AWS::Partition": "aws",
            "AWS::StackName": stack_name,
            "AWS::URLSuffix": "amazonaws.com",
        }
        for name, spec in template.get("Parameters", {}).items():
            value = parameters.get(name, spec.get("Default"))
            if spec.get("Type") == "CommaDelimitedList" and isinstance(value, str):
                value = value.split(",") if value else []
            self._values[name] = value
        self._conditions = {
            name: bool(self.resolve(body)) for name, body in template.get("Conditions", {}).items()
        }

    @property
    def conditions(self) -> dict[str, bool]:
        """Every condition of the template, evaluated with the stack's parameters."""
        return dict(self._conditions)

    def resolve(self, value: Any) -> Any:
        """The value with every intrinsic function replaced (AWS::NoValue entries dropped)."""
        if isinstance(value, list):
            return [item for item in (self.resolve(v) for v in value) if item is not _NO_VALUE]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            ((key, argument),) = value.items()
            handler = self._functions().get(key)
            if handler is not None:
                return handler(argument)
        resolved = {k: self.resolve(v) for k, v in value.items()}
        return {k: v for k, v in resolved.items() if v is not _NO_VALUE}

    def _functions(self) -> dict[str, Callable[[Any], Any]]:
        return {
            "Ref": self._ref,
            "Fn::GetAtt": self._get_att,
            "Fn::Sub": self._sub,
            "Fn::Join": lambda a: self.resolve(a[0]).join(str(v) for v in self.resolve(a[1])),
            "Fn::Split": lambda a: self.resolve(a[1]).split(self.resolve(a[0])),
            "Fn::Select": lambda a: self.resolve(a[1])[int(self.resolve(a[0]))],
            "Fn::If": lambda a: self.resolve(a[1] if self._conditions[a[0]] else a[2]),
            "Fn::Equals": lambda a: self.resolve(a[0]) == self.resolve(a[1]),
            "Fn::Not": lambda a: not self.resolve(a[0]),
            "Fn::And": lambda a: all(self.resolve(v) for v in a),
            "Fn::Or": lambda a: any(self.resolve(v) for v in a),
            "Condition": lambda name: self._conditions[name],
        }

    def _ref(self, name: str) -> Any:
        if name == "AWS::NoValue":
            return _NO_VALUE
        if name in self._values:
            return self._values[name]
        if name in self._physical:
            return self._physical[name]
        raise EmulatorError(f"Ref {name}: neither a parameter nor a created resource")

    def _get_att(self, argument: Any) -> str:
        name, attribute = argument if isinstance(argument, list) else argument.split(".", 1)
        kind = self._template["Resources"][name]["Type"]
        physical = self._ref(name)
        if kind == "AWS::SQS::Queue":
            sqs = self._client("sqs")
            if attribute == "Arn":
                return _queue_attribute(sqs, physical, "QueueArn")
            if attribute == "QueueName":
                return str(physical).rstrip("/").rsplit("/", 1)[-1]
            if attribute == "QueueUrl":
                return str(physical)
        if kind == "AWS::S3::Bucket" and attribute == "Arn":
            return f"arn:aws:s3:::{physical}"
        if kind == "AWS::DynamoDB::Table" and attribute == "Arn":
            return str(
                self._client("dynamodb").describe_table(TableName=physical)["Table"]["TableArn"]
            )
        if kind == "AWS::IAM::Role" and attribute == "Arn":
            return str(self._client("iam").get_role(RoleName=physical)["Role"]["Arn"])
        if kind == "AWS::Lambda::Function" and attribute == "Arn":
            return str(
                self._client("lambda").get_function(FunctionName=physical)["Configuration"][
                    "FunctionArn"
                ]
            )
        if kind == "AWS::Logs::LogGroup" and attribute == "Arn":
            region, account = self._values["AWS::Region"], self._values["AWS::AccountId"]
            return f"arn:aws:logs:{region}:{account}:log-group:{physical}:*"
        raise EmulatorError(f"Fn::GetAtt {name}.{attribute} ({kind}) is not emulated")

    def _sub(self, argument: Any) -> str:
        text, variables = (
            (argument, {}) if isinstance(argument, str) else (argument[0], argument[1])
        )
        local = {key: self.resolve(value) for key, value in variables.items()}
        out, position = [], 0
        while True:
            start = text.find("${", position)
            if start < 0:
                out.append(text[position:])
                return "".join(out)
            end = text.index("}", start)
            out.append(text[position:start])
            name = text[start + 2 : end]
            if name.startswith("!"):
                out.append("${" + name[1:] + "}")
            elif name in local:
                out.append(str(local[name]))
            elif "." in name:
                out.append(self._get_att(name))
            else:
                out.append(str(self._ref(name)))
            position = end + 1


class _NoValue:
    def __repr__(self) -> str:
        return "AWS::NoValue"


_NO_VALUE = _NoValue()


# ------------------------------------------------------------------ direct creation


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
