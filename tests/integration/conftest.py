"""The AWS endpoint for integration tests.

With AWS_ENDPOINT_URL unset, one embedded moto server (ThreadedMotoServer on 127.0.0.1, a
free port) serves the whole session and is reset before every test; with it set, the
tests run against that endpoint (e.g. LocalStack) and every resource gets a unique name.
Credentials and region are dummies either way. Services an endpoint lacks are skipped
with the reason, never faked.
"""

from __future__ import annotations

import contextlib
import json
import os
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from queue_autoscale.adapters import dynamodb as dynamodb_adapter
from queue_autoscale.adapters.aws import AwsClients, make_clients

REGION = "us-east-1"


@dataclass(frozen=True)
class Endpoint:
    """The endpoint under test; `embedded` when this session started it."""

    url: str
    embedded: bool


@pytest.fixture(scope="session")
def aws_endpoint() -> Iterator[Endpoint]:
    """Start the embedded moto server unless AWS_ENDPOINT_URL names an endpoint."""
    patch = pytest.MonkeyPatch()
    patch.setenv("AWS_ACCESS_KEY_ID", "testing")
    patch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    patch.setenv("AWS_SESSION_TOKEN", "testing")
    patch.setenv("AWS_DEFAULT_REGION", REGION)
    patch.setenv("POWERTOOLS_TRACE_DISABLED", "true")
    patch.setenv("POWERTOOLS_METRICS_NAMESPACE", "QueueAutoscale")
    given = os.environ.get("AWS_ENDPOINT_URL")
    if given:
        yield Endpoint(given, embedded=False)
        patch.undo()
        return
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield Endpoint(f"http://{host}:{port}", embedded=True)
    finally:
        server.stop()
        patch.undo()


@pytest.fixture
def endpoint(aws_endpoint: Endpoint) -> Endpoint:
    """The endpoint, reset (embedded moto only) so each test starts from nothing."""
    if aws_endpoint.embedded:
        request = urllib.request.Request(f"{aws_endpoint.url}/moto-api/reset", method="POST")
        with urllib.request.urlopen(request, timeout=10) as answer:  # loopback only
            answer.read()
    return aws_endpoint


@pytest.fixture
def clients(endpoint: Endpoint) -> AwsClients:
    """Project-configured boto3 clients pointed at the endpoint."""
    return make_clients(endpoint_url=endpoint.url, region_name=REGION)


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
    """Skip the test when the endpoint has no ECS (e.g. LocalStack's free edition)."""
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
        desiredCount=running,
    )
    # moto starts a new service with 0 running; an update makes running = desired.
    clients.ecs.update_service(cluster=cluster, service=service, desiredCount=running)


def emf_documents(text: str) -> list[dict[str, Any]]:
    """The EMF documents among captured stdout lines (Powertools metrics)."""
    documents = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line.startswith("{"):
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict) and "_aws" in data:
            documents.append(data)
    return documents


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

    def queue(self, base: str) -> str:
        """Create a queue named base-suffix; return its URL."""
        return create_queue(self.clients, self.name(base))

    def queue_arn(self, url: str) -> str:
        """The queue's ARN."""
        return queue_arn(self.clients, url)

    def receive_all(self, url: str) -> list[dict[str, Any]]:
        """Every message receivable now."""
        return receive_all(self.clients, url)

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
