"""Bootstrap the embedded AWS emulator: template.yaml's stack plus the demo's work queues and fleet.

1. Start moto's server on 127.0.0.1 (or reuse the endpoint in AWS_ENDPOINT_URL).
2. Create each configured work queue (with its DLQ) and ECS cluster/service, so the
   stack's IAM parameters (QueueArns, ServiceArns, derived as `queue-autoscale deploy
   --scope listed` derives them) name real resources.
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
from queue_autoscale.adapters.sts import caller_identity
from queue_autoscale.config import QueueConfig
from queue_autoscale.demo.direct import (
    EmulatorError,
    complete_properties,
    create_direct,
    queue_attribute,
)
from queue_autoscale.demo.intrinsics import Resolver, unreferenced
from queue_autoscale.demo.template import DEFAULT_REGION, load_template, translate
from queue_autoscale.operator.deploy import Scope, Target, compact, derive_parameters

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
        "moto's SQS would invoke the function in Docker on every SendMessage; the demo reads "
        "the events queue and the tick queue itself and invokes each handler in-process with "
        "the batches the mapping would send (one tick a message)"
    ),
    "AWS::Lambda::EventInvokeConfig": (
        "the demo and tests invoke the evaluate handler in-process, so Lambda's asynchronous "
        "queue (its event age and retry limits) is never used; the template tests check it"
    ),
    "AWS::KinesisFirehose::DeliveryStream": (
        "moto's Firehose writes each call at once, uncompressed, under the literal prefix (no "
        "!{timestamp:...} folders, no FileExtension), where no archive reader looks: the "
        "functions write the archive straight to the bucket, one object per batch and tick, "
        "in the folders the streams fill on AWS (docs/deploy.md, 'Tested on')"
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
    tick_queue_url: str | None = None
    """The evaluate function's tick queue (None where the template's HasTickQueue is false)."""
    environments: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """Each function's Environment.Variables, by logical id, resolved on this stack."""


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
        dlq_arn = queue_attribute(sqs, dlq_url, "QueueArn")
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
        desiredCount=0,
    )
    # Created with 0 tasks, moto (5.2) reports the deployment COMPLETED (with more it stays
    # IN_PROGRESS, holding every scale-down); an update brings running up to desired at once.
    ecs.update_service(cluster=queue.cluster, service=queue.service, desiredCount=running)
    return WorkQueue(
        name=queue.queue,
        url=url,
        arn=queue_attribute(sqs, url, "QueueArn"),
        dlq_url=dlq_url,
        cluster=queue.cluster,
        service=queue.service,
        service_arn=answer["service"]["serviceArn"],
    )


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
    client: Callable[[str], Any],
    queues: Sequence[QueueConfig],
    *,
    stack_name: str,
    region: str,
    evaluation_interval_seconds: int,
    dry_run: bool,
) -> dict[str, str]:
    """Template parameters for the emulated stack: `queue-autoscale deploy`'s derivation from
    the queue config (listed scope, the endpoint's STS identity), plus the demo's settings."""
    target = Target(stack=stack_name, region=region, identity=caller_identity(client("sts")))
    document = compact([queue.model_dump(mode="json") for queue in queues])
    return {
        **derive_parameters(queues, document, target, Scope.LISTED),
        "EvaluationIntervalSeconds": str(evaluation_interval_seconds),
        "DryRun": "true" if dry_run else "false",
        "DashboardEnabled": "true",
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
    work = _create_work_queues(client, queues, log)
    parameters = stack_parameters(
        client,
        queues,
        stack_name=stack_name,
        region=region,
        evaluation_interval_seconds=evaluation_interval_seconds,
        dry_run=dry_run,
    )
    translated = _translated_stack(
        client,
        parameters,
        code_uri=_upload_code(client, stack_name),
        stack_name=stack_name,
        region=region,
    )
    stack_template, direct, skipped = split_template(translated)
    physical = _create_stack(client, stack_name, stack_template, parameters)
    log(f"stack {stack_name}: {len(physical)} resources created by CloudFormation")
    _use_endpoint_queue_urls(client, translated, physical)
    resolver = Resolver(client, translated, parameters, physical, stack_name, region)
    _complete_stack_resources(client, translated, resolver, physical, log)
    environments = resolver.environments({name for name, _ in skipped})
    created_directly = _create_directly(client, translated, resolver, direct, physical, skipped)
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
        tick_queue_url=physical.get("EvaluateTickQueue"),
        environments=environments,
    )


def _create_work_queues(
    client: Callable[[str], Any], queues: Sequence[QueueConfig], log: Callable[[str], None]
) -> list[WorkQueue]:
    """Each configured queue with its DLQ and fleet."""
    work = [create_work_queue(client, queue, running=max(queue.min_workers, 0)) for queue in queues]
    log(
        f"work queues {[w.name for w in work]} and ECS services {[w.service for w in work]} created"
    )
    return work


def _upload_code(client: Callable[[str], Any], stack_name: str) -> str:
    """The Lambda code zipped into a bucket of its own; its s3:// URI."""
    code_bucket = f"{stack_name}-code"
    s3 = client("s3")
    s3.create_bucket(Bucket=code_bucket)
    s3.put_object(Bucket=code_bucket, Key="functions.zip", Body=package_functions())
    return f"s3://{code_bucket}/functions.zip"


def _translated_stack(
    client: Callable[[str], Any],
    parameters: Mapping[str, str],
    *,
    code_uri: str,
    stack_name: str,
    region: str,
) -> dict[str, Any]:
    """template.yaml translated, without the resources whose Condition is false."""
    translated = translate(load_template(), parameters, code_uri=code_uri, region=region)
    # A resource whose Condition is false is not part of the stack (e.g. no source secrets).
    conditions = Resolver(client, translated, parameters, {}, stack_name, region).conditions
    resources = translated["Resources"]
    kept = {name: r for name, r in resources.items() if conditions.get(r.get("Condition"), True)}
    # CloudFormation lets the Fn::If branch not taken name such a resource (the roles' tick
    # queue statements at a 60 s interval); moto's refuses any reference to one.
    translated["Resources"] = unreferenced(kept, set(resources) - set(kept))
    return translated


def _create_stack(
    client: Callable[[str], Any],
    stack_name: str,
    stack_template: Mapping[str, Any],
    parameters: Mapping[str, str],
) -> dict[str, str]:
    """Create the stack on the endpoint's CloudFormation and wait; logical -> physical ids."""
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
    return {
        item["LogicalResourceId"]: item["PhysicalResourceId"]
        for item in cfn.describe_stack_resources(StackName=stack_name)["StackResources"]
    }


def _use_endpoint_queue_urls(
    client: Callable[[str], Any], translated: Mapping[str, Any], physical: dict[str, str]
) -> None:
    """Replace the AWS-style queue URLs moto's stack reports with the endpoint's own."""
    sqs = client("sqs")
    for logical_id, resource in translated["Resources"].items():
        if resource["Type"] == "AWS::SQS::Queue" and logical_id in physical:
            name = physical[logical_id].rstrip("/").rsplit("/", 1)[-1]
            physical[logical_id] = sqs.get_queue_url(QueueName=name)["QueueUrl"]


def _complete_stack_resources(
    client: Callable[[str], Any],
    translated: Mapping[str, Any],
    resolver: Resolver,
    physical: Mapping[str, str],
    log: Callable[[str], None],
) -> None:
    """Set on the table and the bucket the properties moto's stack left out."""
    for logical_id in ("LoadTable", "ArchiveBucket"):
        resource = translated["Resources"][logical_id]
        properties = resolver.resolve(resource.get("Properties", {}))
        applied = complete_properties(client, resource["Type"], physical[logical_id], properties)
        if applied:
            log(f"{logical_id}: set through the API what the stack left out: {', '.join(applied)}")


def _create_directly(
    client: Callable[[str], Any],
    translated: Mapping[str, Any],
    resolver: Resolver,
    direct: Sequence[str],
    physical: dict[str, str],
    skipped: list[tuple[str, str]],
) -> list[str]:
    """Create `direct` through their APIs in DIRECT_ORDER; the ids created.

    One the endpoint refuses is appended to `skipped` with the reason; its name goes into
    `physical`.
    """
    created = []
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
        created.append(logical_id)
    return created


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
    absent = {name for name, _ in skipped}
    template["Resources"] = {
        name: unreferenced(_without_dependencies(r, set(kept)), absent) for name, r in kept.items()
    }
    return template, direct, skipped


def _without_dependencies(resource: Mapping[str, Any], kept: set[str]) -> dict[str, Any]:
    copy = dict(resource)
    depends = copy.pop("DependsOn", None)
    if depends:
        remaining = [d for d in ([depends] if isinstance(depends, str) else depends) if d in kept]
        if remaining:
            copy["DependsOn"] = remaining
    return copy
