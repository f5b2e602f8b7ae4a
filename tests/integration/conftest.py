"""The AWS endpoint for integration tests.

With AWS_ENDPOINT_URL unset, one embedded moto server (ThreadedMotoServer on 127.0.0.1, a
free port) serves the whole session and is reset before every test; with it set, the
tests run against that endpoint (e.g. LocalStack) and every resource gets a unique name.
Credentials and region are dummies either way.

A capability probe (one cheap call per service, 3 s, no retries) finds the services the
endpoint cannot serve: LocalStack's free edition has no ECS, and its DynamoDB needs a
download it cannot make offline. Those services alone are routed to the embedded moto
server through botocore's own per-service setting (AWS_ENDPOINT_URL_DYNAMODB, ...), and
the session's header says so; the rest (SQS, S3, EventBridge, CloudWatch) stay on the
endpoint. A test that needs the endpoint itself for a routed service skips with the reason.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest
from botocore.config import Config

from infra.emulator import EmulatorStack, bootstrap
from infra.template import function_environment, load_template
from queue_autoscale.adapters import dynamodb as dynamodb_adapter
from queue_autoscale.adapters.aws import AwsClients, make_clients
from queue_autoscale.config import QueueConfig

REGION = "us-east-1"
PROBE_CONFIG = Config(
    connect_timeout=2, read_timeout=3, retries={"mode": "standard", "total_max_attempts": 1}
)
"""A capability probe answers in seconds or the service counts as missing."""
PROBES: dict[str, Callable[[Any], Any]] = {
    "dynamodb": lambda client: client.list_tables(Limit=1),
    "ecs": lambda client: client.list_clusters(maxResults=1),
}
"""The services the suite needs that an emulator may lack, each with a cheap call."""


@dataclass(frozen=True)
class Endpoint:
    """The endpoint under test; `embedded` when this session started it.

    `routed` maps a service the endpoint could not serve to (moto URL, the probe's reason).
    """

    url: str
    embedded: bool
    routed: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    moto_url: str | None = None

    def require(self, *services: str) -> None:
        """Skip unless the endpoint itself serves these services."""
        for service in services:
            if service in self.routed:
                pytest.skip(f"{service} is not served by {self.url}: {self.routed[service][1]}")


@functools.cache
def probe(url: str, service: str) -> str | None:
    """None when `url` serves `service`, else why not (first line of the error)."""
    client = boto3.session.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION
    ).client(service, endpoint_url=url, config=PROBE_CONFIG)
    try:
        PROBES[service](client)
    except Exception as error:  # any failure means: not usable here
        return str(error).splitlines()[0][:200]
    return None


def reset_moto(url: str) -> None:
    """Empty the embedded moto server."""
    request = urllib.request.Request(f"{url}/moto-api/reset", method="POST")
    with urllib.request.urlopen(request, timeout=10) as answer:  # loopback only
        answer.read()


def bootstrap_stack(
    endpoint: Endpoint, queues: Sequence[QueueConfig], stack_name: str
) -> EmulatorStack:
    """template.yaml's stack for `queues` on the endpoint (10 s evaluation interval); a test
    on an endpoint that cannot create it is skipped with the reason."""
    try:
        return bootstrap(
            endpoint.url, queues, stack_name=stack_name, evaluation_interval_seconds=10
        )
    except Exception as error:
        if not endpoint.embedded:
            pytest.skip(f"this endpoint cannot create the stack: {error}")
        raise


@pytest.fixture(scope="session")
def aws_endpoint() -> Iterator[Endpoint]:
    """Start the embedded moto server unless AWS_ENDPOINT_URL names an endpoint that
    serves everything; route each service it lacks to moto."""
    patch = pytest.MonkeyPatch()
    patch.setenv("AWS_ACCESS_KEY_ID", "testing")
    patch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    patch.setenv("AWS_SESSION_TOKEN", "testing")
    patch.setenv("AWS_DEFAULT_REGION", REGION)
    patch.setenv("POWERTOOLS_TRACE_DISABLED", "true")
    given = os.environ.get("AWS_ENDPOINT_URL")
    missing = {name: why for name in PROBES if (why := probe(given, name))} if given else {}
    if given and not missing:
        yield Endpoint(given, embedded=False)
        patch.undo()
        return
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    moto_url = f"http://{host}:{port}"
    try:
        if not given:
            yield Endpoint(moto_url, embedded=True, moto_url=moto_url)
            return
        for name in missing:
            # botocore's per-service endpoint: every client built without endpoint_url obeys it
            patch.setenv(f"AWS_ENDPOINT_URL_{name.upper()}", moto_url)
        routed = {name: (moto_url, why) for name, why in missing.items()}
        yield Endpoint(given, embedded=False, routed=routed, moto_url=moto_url)
    finally:
        server.stop()
        patch.undo()


def pytest_report_header(config: pytest.Config) -> list[str]:
    """Say where the suite runs, and which services go to the embedded moto server."""
    given = os.environ.get("AWS_ENDPOINT_URL")
    if not given:
        return ["integration endpoint: embedded moto server"]
    lines = [f"integration endpoint: {given}"]
    for name in PROBES:
        why = probe(given, name)
        if why:
            lines.append(f"  {name}: embedded moto server ({given} cannot: {why})")
    return lines


@pytest.fixture
def endpoint(aws_endpoint: Endpoint) -> Endpoint:
    """The endpoint, with the embedded moto server reset so each test starts from nothing."""
    if aws_endpoint.moto_url:
        reset_moto(aws_endpoint.moto_url)
    return aws_endpoint


@pytest.fixture
def clients(endpoint: Endpoint) -> AwsClients:
    """Project-configured boto3 clients pointed at the endpoint (routed services at moto)."""
    if endpoint.routed:
        # no endpoint_url: botocore reads AWS_ENDPOINT_URL and the per-service overrides
        return make_clients(region_name=REGION)
    return make_clients(endpoint_url=endpoint.url, region_name=REGION)


TEMPLATE_VALUES = {
    "QueuesConfig": "[]",
    "QueueConfigParameter": "/unset/queues-config",
    "LoadTable": "unset-load-table",
    "ArchiveBucket": "unset-archive-bucket",
    "EventsDeadLetterQueue": "",
    "EventBusName": "default",
    "EvaluationIntervalSeconds": "15",
    "DryRun": "false",
    "EvaluateTickMode": "tick",
    "EvaluateTickQueue": "",
    # No delivery streams: the functions write the archive straight to the bucket, one object
    # per batch and tick. Neither moto's nor LocalStack's Firehose files records as AWS does
    # (prefix expressions, GZIP, FileExtension); test_firehose_archive.py tests the stream
    # writer and the readers on Firehose's layout (docs/deploy.md, "Tested on").
    "EventsDeliveryStream": "",
    "DecisionsDeliveryStream": "",
    "AWS::StackName": "qa-stack",
}
"""Stand-ins for the template's Refs; tests give the names of what they created."""


def template_environment(logical_id: str, **resources: str) -> dict[str, str]:
    """The environment template.yaml gives a function, with this test's resource names
    (keyword arguments named like the template's parameters and resources)."""
    return function_environment(load_template(), logical_id, {**TEMPLATE_VALUES, **resources})


def create_config_parameter(clients: AwsClients, name: str, document: str) -> str:
    """The config store as template.yaml creates it: an SSM parameter holding the document."""
    clients.ssm.put_parameter(
        Name=name, Value=document, Type="String", Tier="Intelligent-Tiering", Overwrite=True
    )
    return name


@pytest.fixture
def function_environ(
    monkeypatch: pytest.MonkeyPatch, clients: AwsClients, suffix: str
) -> Callable[..., dict[str, str]]:
    """Put a function's template environment into os.environ (what Lambda does) and
    return it; Powertools reads its settings (service name, namespace) from there.

    Unless a `QueueConfigParameter` is given, the `QueuesConfig` document is written into a
    config store parameter of this test, as the stack does with its parameter."""

    def apply(logical_id: str, **resources: str) -> dict[str, str]:
        if "QueueConfigParameter" not in resources:
            document = resources.get("QueuesConfig", TEMPLATE_VALUES["QueuesConfig"])
            resources["QueueConfigParameter"] = create_config_parameter(
                clients, f"/qa-{suffix}/queues-config", document
            )
        environment = template_environment(logical_id, **resources)
        for name, value in environment.items():
            monkeypatch.setenv(name, value)
        return environment

    return apply


@pytest.fixture
def suffix() -> str:
    """A short unique suffix for resource names (shared endpoints are not reset)."""
    return uuid.uuid4().hex[:8]


def create_load_table(clients: AwsClients, name: str) -> str:
    """The load table as template.yaml declares it: pk/sk strings, on demand, TTL."""
    dynamodb_adapter.create_load_table(clients.dynamodb, name)
    # TTL is not under test here; an endpoint without it still serves the table.
    with contextlib.suppress(clients.dynamodb.exceptions.ClientError):
        clients.dynamodb.update_time_to_live(
            TableName=name,
            TimeToLiveSpecification={"Enabled": True, "AttributeName": "expires_at"},
        )
    return name


def create_queue(clients: AwsClients, name: str) -> str:
    """A standard queue; returns its URL."""
    return str(clients.sqs.create_queue(QueueName=name)["QueueUrl"])


def queue_arn(clients: AwsClients, url: str) -> str:
    """The ARN of a queue."""
    answer = clients.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])
    return str(answer["Attributes"]["QueueArn"])


def receive_until(
    clients: AwsClients, url: str, count: int, timeout: float = 30.0
) -> list[dict[str, Any]]:
    """Messages from a queue, polled until `count` have arrived or `timeout` seconds passed.

    For queues fed asynchronously (an EventBridge target): AWS and LocalStack deliver after
    PutEvents has returned, so reading once right after the handler would race them.
    """
    messages: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while len(messages) < count and time.monotonic() < deadline:
        answer = clients.sqs.receive_message(
            QueueUrl=url,
            MaxNumberOfMessages=10,
            MessageAttributeNames=["All"],
            WaitTimeSeconds=1,
            VisibilityTimeout=60,
        )
        messages.extend(answer.get("Messages", []))
    return messages


def event_sink(clients: AwsClients, name: str, pattern: Mapping[str, Any]) -> str:
    """A queue receiving the default bus's events that match `pattern`; returns its URL.

    The queue policy lets EventBridge (events.amazonaws.com) send for this rule only, as
    AWS requires: without it AWS drops every delivery (moto does not check).
    """
    url = create_queue(clients, name)
    arn = queue_arn(clients, url)
    rule_arn = clients.events.put_rule(
        Name=name, EventPattern=json.dumps(pattern), State="ENABLED"
    )["RuleArn"]
    policy = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "EventBridgeRule",
                "Effect": "Allow",
                "Principal": {"Service": "events.amazonaws.com"},
                "Action": "sqs:SendMessage",
                "Resource": arn,
                "Condition": {"ArnEquals": {"aws:SourceArn": rule_arn}},
            }
        ],
    }
    clients.sqs.set_queue_attributes(QueueUrl=url, Attributes={"Policy": json.dumps(policy)})
    clients.events.put_targets(Rule=name, Targets=[{"Id": "sink", "Arn": arn}])
    return url


def receive_all(clients: AwsClients, url: str, limit: int = 1000) -> list[dict[str, Any]]:
    """Every message currently receivable on a queue (with all attributes)."""
    messages: list[dict[str, Any]] = []
    while len(messages) < limit:
        answer = clients.sqs.receive_message(
            QueueUrl=url,
            MaxNumberOfMessages=10,
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
            WaitTimeSeconds=0,
            VisibilityTimeout=60,
        )
        batch = answer.get("Messages", [])
        if not batch:
            break
        messages.extend(batch)
    return messages


def require_ecs(clients: AwsClients) -> None:
    """Skip the test when no ECS answers (the probe routes a missing one to moto first)."""
    try:
        clients.ecs.list_clusters()
    except Exception as error:  # any failure means: no usable ECS here
        pytest.skip(f"ECS not available on this endpoint: {error}")


def create_service(clients: AwsClients, cluster: str, service: str, running: int) -> None:
    """An ECS service with `running` tasks (moto runs what UpdateService asks for)."""
    clients.ecs.create_cluster(clusterName=cluster)
    clients.ecs.register_task_definition(
        family=f"{service}-worker",
        containerDefinitions=[{"name": "worker", "image": "worker:latest", "memory": 512}],
    )
    clients.ecs.create_service(
        cluster=cluster,
        serviceName=service,
        taskDefinition=f"{service}-worker",
        desiredCount=0,
    )
    # A settled service, as ECS reports one at steady state. moto (5.2) marks a new service's
    # deployment IN_PROGRESS unless it asks for no tasks, and never completes it; created with
    # 0 it is COMPLETED. It starts nothing: an update makes running = desired at once.
    clients.ecs.update_service(cluster=cluster, service=service, desiredCount=running)


def json_lines(text: str, key: str) -> list[dict[str, Any]]:
    """The JSON objects holding `key` among captured stdout lines."""
    documents = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line.startswith("{"):
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict) and key in data:
            documents.append(data)
    return documents


def emf_documents(text: str) -> list[dict[str, Any]]:
    """The EMF documents among captured stdout lines (Powertools metrics)."""
    return json_lines(text, "_aws")


@dataclass
class FakeLambdaContext:
    """The LambdaContext attributes Powertools reads."""

    function_name: str = "queue-autoscale-test"
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = (
        "arn:aws:lambda:us-east-1:123456789012:function:queue-autoscale-test"
    )
    aws_request_id: str = "00000000-0000-0000-0000-000000000000"
    remaining_ms: int = 120_000

    def get_remaining_time_in_millis(self) -> int:
        """Milliseconds left in the invocation."""
        return self.remaining_ms


class Kit:
    """The helpers above bound to one test's clients (test modules get it as a fixture)."""

    def __init__(self, clients: AwsClients, suffix: str) -> None:
        self.clients = clients
        self.suffix = suffix

    def name(self, base: str) -> str:
        """A resource name unique to this test."""
        return f"{base}-{self.suffix}"

    def load_table(self) -> str:
        """Create the load table; return its name."""
        return create_load_table(self.clients, self.name("load"))

    def bucket(self) -> str:
        """Create the archive bucket; return its name."""
        name = self.name("archive")
        self.clients.s3.create_bucket(Bucket=name)
        return name

    def delivery_stream(self, base: str, bucket: str, prefix: str = "delivered/") -> str:
        """Create a DirectPut Firehose stream named base-suffix into `bucket` under `prefix`
        (the emulator writes each call at once, uncompressed); return its name."""
        name = self.name(base)
        self.clients.firehose.create_delivery_stream(
            DeliveryStreamName=name,
            DeliveryStreamType="DirectPut",
            ExtendedS3DestinationConfiguration={
                "BucketARN": f"arn:aws:s3:::{bucket}",
                "RoleARN": "arn:aws:iam::123456789012:role/firehose",
                "Prefix": prefix,
            },
        )
        return name

    def queue(self, base: str) -> str:
        """Create a queue named base-suffix; return its URL."""
        return create_queue(self.clients, self.name(base))

    def queue_arn(self, url: str) -> str:
        """The queue's ARN."""
        return queue_arn(self.clients, url)

    def receive_all(self, url: str) -> list[dict[str, Any]]:
        """Every message receivable now."""
        return receive_all(self.clients, url)

    def receive_until(self, url: str, count: int, timeout: float = 30.0) -> list[dict[str, Any]]:
        """Messages polled until `count` arrived or the deadline passed."""
        return receive_until(self.clients, url, count, timeout)

    def event_sink(self, base: str, pattern: Mapping[str, Any]) -> str:
        """A queue (base-suffix) that receives matching events, with its EventBridge policy."""
        return event_sink(self.clients, self.name(base), pattern)

    def require_ecs(self) -> None:
        """Skip unless the endpoint has ECS."""
        require_ecs(self.clients)

    def service(self, cluster: str, service: str, running: int) -> None:
        """An ECS service with `running` tasks."""
        create_service(self.clients, cluster, service, running)

    def archive_keys(self, bucket: str, prefix: str) -> list[str]:
        """Object keys under a prefix."""
        answer = self.clients.s3.list_objects_v2(Bucket=bucket, Prefix=prefix)
        return sorted(item["Key"] for item in answer.get("Contents", []))


@pytest.fixture
def kit(clients: AwsClients, suffix: str) -> Kit:
    """Helpers for creating and inspecting resources on the endpoint."""
    return Kit(clients, suffix)


@pytest.fixture
def lambda_context() -> FakeLambdaContext:
    """A Powertools-compatible LambdaContext."""
    return FakeLambdaContext()


@pytest.fixture
def emf_output(capsys: pytest.CaptureFixture[str]) -> Any:
    """A function returning the EMF documents printed since the last call."""

    def read() -> list[dict[str, Any]]:
        return emf_documents(capsys.readouterr().out)

    return read


@pytest.fixture
def queue_log_lines(capsys: pytest.CaptureFixture[str]) -> Any:
    """A function returning the per-queue lines (field Queue) printed since the last call:
    plain JSON by default, EMF documents with PerQueueMetrics."""

    def read() -> list[dict[str, Any]]:
        return json_lines(capsys.readouterr().out, "Queue")

    return read


# the worker subprocess fixtures, shared by the worker test modules (imported last: they use Kit)
from tests.integration.worker_kit import fake_agent, start_worker  # noqa: E402, F401
