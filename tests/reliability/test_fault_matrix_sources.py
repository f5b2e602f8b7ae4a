"""Fault matrix of the Kafka and RabbitMQ sources: the hurt queue holds, the others decide.

Kafka (MSK) reads CloudWatch `AWS/Kafka` on the emulator, so its faults are the AWS ones,
injected with the botocore hook of faults.py on that one query (throttling, 5xx, read and
connect timeouts, AccessDenied). RabbitMQ's management API is HTTP: its faults come from a
loopback server that answers 503, 429 or 401, or accepts and never answers (read timeout), or
from a closed port (connection refused). No fault server ever answers with counts; the healthy
RabbitMQ path is tested against a real broker in tests/integration/test_source_rabbitmq.py.
Each case: one tick over an SQS queue and the hurt queue, both backlogged.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition

from queue_autoscale.adapters.aws import make_clients
from queue_autoscale.controller import tick
from queue_autoscale.handlers import evaluate
from queue_autoscale.settings import EvaluateSettings
from tests.integration.conftest import REGION, Endpoint, Kit
from tests.integration.kafka_broker import consume_and_commit, create_topic, produce, start_broker
from tests.reliability.faults import FAULTS, Fault, expected_attempts
from tests.reliability.worlds import NOW, SECOND, START_WORKERS, Fleet, MetricsRecorder

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("moto")]

MAX_WORKERS = 10
ROOT = Path(__file__).resolve().parents[2]
HTTP_FAULTS = {
    "server-error": 503,
    "throttled": 429,
    "auth-failure": 401,
    "read-timeout": None,
    "connection-refused": None,
}


class _FaultHandler(BaseHTTPRequestHandler):
    status = 503
    hang = threading.Event()

    def do_GET(self) -> None:
        if self.status == 0:  # accept and never answer, until the test ends
            self.hang.wait(10)
            return
        body = b'{"error":"injected","reason":"fault"}'
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        return


class FaultServer:
    """A loopback HTTP server that answers every request with one fault."""

    def __init__(self) -> None:
        self.handler = type("Handler", (_FaultHandler,), {"hang": threading.Event()})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self.handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def answer(self, status: int | None) -> None:
        self.handler.status = status or 0

    def stop(self) -> None:
        self.handler.hang.set()
        self.server.shutdown()
        self.server.server_close()


def closed_port_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


class World:
    """An SQS queue (`other`) and a Kafka and a RabbitMQ queue, each with its ECS service and
    counters showing 6 jobs/s for the last 20 s; Kafka 140 messages behind in CloudWatch."""

    def __init__(self, kit: Any, clients: Any) -> None:
        self.fleet = Fleet.create(kit, clients, bases=("other",))
        self.other = self.fleet.queues[0]
        self.kit, self.clients = kit, clients
        self.kafka, self.rabbit = kit.name("kq"), kit.name("rq")
        for queue in (self.kafka, self.rabbit):
            self.fleet.clusters[queue] = kit.name(f"c{queue}")
            kit.service(self.fleet.clusters[queue], queue, START_WORKERS)
            self.fleet.count(queue, range(SECOND - 20, SECOND), queued=6)
            self.fleet.count(
                queue, range(SECOND - 300, SECOND - 20, 10), completed=10, busy_ms=10_000
            )
        self.put_metrics(
            "AWS/Kafka",
            {"Cluster Name": "prod", "Consumer Group": "workers", "Topic": self.kafka},
            SumOffsetLag=140,
            MaxOffsetLag=40,
            EstimatedMaxTimeLag=20,
        )
        self.put_metrics(
            "AWS/AmazonMQ",
            {"Broker": "b-1", "VirtualHost": "/", "Queue": self.rabbit},
            MessageReadyCount=140,
            MessageUnacknowledgedCount=2,
            ConsumerCount=2,
        )
        self.secret = f"mq-{kit.suffix}"
        clients.secretsmanager.create_secret(
            Name=self.secret, SecretString=json.dumps({"username": "u", "password": "p"})
        )

    def put_metrics(self, namespace: str, dimensions: dict[str, str], **values: float) -> None:
        dims = [{"Name": name, "Value": value} for name, value in dimensions.items()]
        stamp = datetime.fromtimestamp(NOW - 90, UTC)
        self.clients.cloudwatch.put_metric_data(
            Namespace=namespace,
            MetricData=[
                {"MetricName": name, "Dimensions": dims, "Timestamp": stamp, "Value": value}
                for name, value in values.items()
            ],
        )

    def config(self, queue: str, **source: Any) -> dict[str, Any]:
        base: dict[str, Any] = {
            "queue": queue,
            "cluster": self.fleet.clusters[queue],
            "max_workers": MAX_WORKERS,
            "sla_seconds": 30,
            "provisioning_lead_seconds": 0,
        }
        if queue == self.kafka:
            base["source"] = {
                "type": "kafka",
                "cluster_name": "prod",
                "topic": self.kafka,
                "consumer_group": "workers",
                "partitions": 64,
            }
        elif queue == self.rabbit:
            base["source"] = {
                "type": "rabbitmq",
                "prefetch": 1,
                "credentials_secret": self.secret,
                "timeout_seconds": 0.5,
                **source,
            }
        return base

    def runtime(self, clients: Any, hurt: dict[str, Any]) -> Any:
        settings = EvaluateSettings.from_environ(
            {
                "QUEUES_CONFIG": json.dumps([self.config(self.other), hurt]),
                "LOAD_TABLE": self.fleet.table,
                "ARCHIVE_BUCKET": self.fleet.bucket,
                "EVALUATION_INTERVAL_SECONDS": "30",
            }
        )
        runtime = evaluate.build_runtime(settings, clients, clock=lambda: NOW)
        runtime.publish_metrics = MetricsRecorder()
        return runtime

    def desired(self, queue: str) -> int:
        answer = self.clients.ecs.describe_services(
            cluster=self.fleet.clusters[queue], services=[queue]
        )
        return int(answer["services"][0]["desiredCount"])

    def reset(self) -> None:
        for queue in (self.other, self.kafka, self.rabbit):
            self.clients.ecs.update_service(
                cluster=self.fleet.clusters[queue], service=queue, desiredCount=START_WORKERS
            )
            self.clients.dynamodb.delete_item(
                TableName=self.fleet.table,
                Key={"pk": {"S": f"Q#{queue}"}, "sk": {"S": "STATE"}},
            )


@pytest.fixture(scope="module")
def world(aws_endpoint: Endpoint) -> World:
    if aws_endpoint.embedded:
        import urllib.request

        request = urllib.request.Request(f"{aws_endpoint.url}/moto-api/reset", method="POST")
        with urllib.request.urlopen(request, timeout=10) as answer:  # loopback only
            answer.read()
    clients = make_clients(endpoint_url=aws_endpoint.url, region_name=REGION)
    return World(Kit(clients, uuid.uuid4().hex[:8]), clients)


@pytest.fixture
def clients(world: World, aws_endpoint: Endpoint) -> Iterator[Any]:
    yield make_clients(endpoint_url=aws_endpoint.url, region_name=REGION)
    world.reset()


@pytest.fixture
def fault_server() -> Iterator[FaultServer]:
    server = FaultServer()
    yield server
    server.stop()


def run_and_check(world: World, runtime: Any, hurt: str, acts: bool) -> dict[str, Any]:
    outcomes = {o.queue: o for o in tick.run_tick(runtime, NOW)}
    metrics = runtime.publish_metrics
    # the SQS queue decided and scaled, with a clean tick
    assert outcomes[world.other].applied, outcomes[world.other].errors
    assert world.desired(world.other) > START_WORKERS
    assert outcomes[world.other].errors == []
    assert metrics.last(world.other)["ControllerErrors"] == 0
    # the hurt queue: scaled only when it could still decide; never down, never above max
    assert outcomes[hurt].applied is acts
    desired = world.desired(hurt)
    assert START_WORKERS <= desired <= MAX_WORKERS
    assert (desired > START_WORKERS) is acts
    assert metrics.last(hurt)["ControllerErrors"] >= 1
    return outcomes


@pytest.mark.parametrize("fault", FAULTS)
def test_kafka_lag_read_under_a_failing_call(world: World, clients: Any, fault: str) -> None:
    # GIVEN CloudWatch failing only the AWS/Kafka query
    runtime = world.runtime(clients, world.config(world.kafka))
    injected = Fault("GetMetricData", fault, match=b"Kafka").install(clients.cloudwatch)
    # WHEN a tick runs; THEN the Kafka queue holds and the SQS queue scales
    outcomes = run_and_check(world, runtime, world.kafka, acts=False)
    injected.active = False
    assert injected.attempts == expected_attempts(fault)
    assert any("AWS/Kafka" in error for error in outcomes[world.kafka].errors)


def test_kafka_queue_scales_from_its_lag_when_healthy(world: World, clients: Any) -> None:
    # GIVEN 140 messages of lag on the emulator's CloudWatch: the Kafka queue decides and scales
    runtime = world.runtime(clients, world.config(world.kafka))
    outcomes = {o.queue: o for o in tick.run_tick(runtime, NOW)}
    kafka = outcomes[world.kafka]
    assert kafka.errors == [] and kafka.applied and kafka.decision is not None
    assert world.desired(world.kafka) == kafka.decision.target > START_WORKERS
    assert kafka.decision.backlog_per_instance == 140 / START_WORKERS


@pytest.mark.parametrize("fault", list(HTTP_FAULTS))
def test_rabbit_management_api_under_a_fault(
    world: World, clients: Any, fault_server: FaultServer, fault: str
) -> None:
    # GIVEN the management API failing this way and no CloudWatch fallback configured
    if fault == "connection-refused":
        url = closed_port_url()
    else:
        fault_server.answer(HTTP_FAULTS[fault])
        url = fault_server.url
    runtime = world.runtime(clients, world.config(world.rabbit, management_url=url))
    # WHEN a tick runs; THEN the RabbitMQ queue holds with the API's error, the SQS queue scales
    outcomes = run_and_check(world, runtime, world.rabbit, acts=False)
    assert any("RabbitMQ GET /api/queues" in error for error in outcomes[world.rabbit].errors)


def test_rabbit_falls_back_to_amazon_mq_cloudwatch(
    world: World, clients: Any, fault_server: FaultServer
) -> None:
    # GIVEN a 503 from the management API and the broker's AWS/AmazonMQ metrics on CloudWatch
    fault_server.answer(503)
    hurt = world.config(world.rabbit, management_url=fault_server.url, broker="b-1")
    runtime = world.runtime(clients, hurt)
    # WHEN a tick runs; THEN the queue decides from CloudWatch's counts, and says why
    outcomes = run_and_check(world, runtime, world.rabbit, acts=True)
    rabbit = outcomes[world.rabbit]
    assert rabbit.decision is not None
    # 140 ready + 2 unacked; 2 consumers of prefetch 1 work on both: 140 waiting
    assert rabbit.decision.backlog_per_instance == 140 / START_WORKERS
    assert any("CloudWatch used" in error for error in rabbit.errors)


@pytest.fixture(params=["body", "headers"])
def trickle_url(request: pytest.FixtureRequest) -> Iterator[tuple[str, int]]:
    """(URL, port) of a management API trickling a byte every 0.2 s (each read well within the
    source's 0.5 s timeout): a subprocess on 127.0.0.1, killed by PID."""
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.reliability.trickle_server", request.param, "0.2"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        yield f"http://127.0.0.1:{port}", port
    finally:
        server.kill()
        server.communicate(timeout=10)


def sockets_to(port: int) -> int:
    """This process's open TCP sockets whose peer is 127.0.0.1:`port`."""
    inodes = set()
    for fd in Path("/proc/self/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    count = 0
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if int(fields[2].split(":")[1], 16) == port and fields[9] in inodes:
            count += 1
    return count


def test_a_trickling_management_api_leaves_no_thread_and_no_socket_after_20_ticks(
    world: World, clients: Any, trickle_url: tuple[str, int]
) -> None:
    # GIVEN a management API that never finishes its answer (0.5 s timeout)
    url, port = trickle_url
    runtime = world.runtime(clients, world.config(world.rabbit, management_url=url))
    run_and_check(world, runtime, world.rabbit, acts=False)
    threads = threading.active_count()
    # WHEN 20 more ticks run
    errors: list[str] = []
    for _ in range(20):
        world.reset()
        began = time.monotonic()
        outcomes = run_and_check(world, runtime, world.rabbit, acts=False)
        errors += outcomes[world.rabbit].errors
        assert time.monotonic() - began < 5.0  # each tick still ends (the RabbitMQ queue holds)
    # THEN no thread and no socket to the broker is left behind
    deadline = time.monotonic() + 2.0
    while threading.active_count() > threads and time.monotonic() < deadline:
        time.sleep(0.05)
    assert threading.active_count() <= threads, [t.name for t in threading.enumerate()]
    assert sockets_to(port) == 0
    # and each tick's error names the deadline
    assert len(errors) == 20 and all("0.5 s deadline" in error for error in errors), errors


class _Management(BaseHTTPRequestHandler):
    """Answers every GET with `body` as JSON (a management API whose counts are healthy)."""

    body: bytes = b"{}"

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: Any) -> None:
        return


@pytest.fixture
def management() -> Iterator[tuple[ThreadingHTTPServer, type[_Management]]]:
    """A management API on 127.0.0.1 whose answer the test sets; stopped at teardown."""
    handler = type("Handler", (_Management,), {})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server, handler
    server.shutdown()
    server.server_close()


TEN_MINUTES_AGO = NOW - 600


@pytest.mark.parametrize(
    ("stamp", "source", "note"),
    [
        pytest.param(TEN_MINUTES_AGO, "cloudwatch", None, id="seconds"),
        pytest.param(TEN_MINUTES_AGO * 1000, "cloudwatch", "read as milliseconds", id="ms"),
        pytest.param(1, "counters", "ignored: 17629", id="stamped 1"),
        pytest.param(NOW + 3_600, "counters", "3600 s in the future", id="an hour ahead"),
        pytest.param(TEN_MINUTES_AGO, "counters", "over the 60 s", id="older than the TTL"),
    ],
)
def test_a_broker_timestamp_is_believed_only_where_it_can_be_right(
    world: World,
    clients: Any,
    management: tuple[ThreadingHTTPServer, type[_Management]],
    stamp: float,
    source: str,
    note: str | None,
) -> None:
    # GIVEN 40 ready messages whose head was published ten minutes ago, stamped this way (the
    # last case: on a queue whose x-message-ttl is 60 s), and our own queued events
    server, handler = management
    body: dict[str, Any] = {
        "messages_ready": 40,
        "messages_unacknowledged": 0,
        "consumers": 0,
        "head_message_timestamp": stamp,
    }
    if note and "60 s" in note:
        body["arguments"] = {"x-message-ttl": 60_000}
    handler.body = json.dumps(body).encode()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    runtime = world.runtime(clients, world.config(world.rabbit, management_url=url))
    # WHEN a tick runs
    outcome = {o.queue: o for o in tick.run_tick(runtime, NOW)}[world.rabbit]
    # THEN the age is the stamp's where it can be right, else our counters' (never 0, never
    # decades), and the decision's reason says what was done with the stamp
    decision = outcome.decision
    assert decision is not None and outcome.errors == []
    assert decision.oldest_age_source == source
    assert decision.oldest_age_seconds is not None
    if source == "cloudwatch":
        assert decision.oldest_age_seconds == pytest.approx(600, abs=1)
    else:
        assert 0 < decision.oldest_age_seconds < 600
    if note is None:
        assert "head_message_timestamp" not in decision.reason
    else:
        assert note in decision.reason, decision.reason


# -- Kafka through the admin API, against a real broker (tansu on 127.0.0.1) --------------

TOPIC_PARTITIONS = 3
PER_PARTITION = 100
GROUP = "workers"


@pytest.fixture(scope="module")
def kafka(tmp_path_factory: pytest.TempPathFactory, world: World) -> Iterator[str]:
    """One broker for the module: the World's Kafka topic with 3 partitions of 100 records
    each; the group committed all of partition 0, 40 of partition 1, nothing on partition 2."""
    with start_broker(tmp_path_factory.mktemp("tansu")) as bootstrap:
        create_topic(bootstrap, world.kafka, TOPIC_PARTITIONS)
        produce(bootstrap, world.kafka, TOPIC_PARTITIONS * PER_PARTITION, TOPIC_PARTITIONS)
        consume_and_commit(bootstrap, GROUP, world.kafka, 0, PER_PARTITION)
        consume_and_commit(bootstrap, GROUP, world.kafka, 1, 40)
        yield bootstrap


def admin_config(world: World, bootstrap: str, **source: Any) -> dict[str, Any]:
    """The World's Kafka queue read through the admin API (plaintext: the broker is local)."""
    config = world.config(world.kafka)
    config["source"] = {
        **config["source"],
        "bootstrap_servers": bootstrap,
        "auth": "plaintext",
        "timeout_seconds": 2,
        **source,
    }
    return config


def broker_view(bootstrap: str, topic: str) -> tuple[list[int], list[int]]:
    """(log-end offsets, the group's committed offsets; -1001 none) as a client sees them."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP})
    try:
        parts = [TopicPartition(topic, p) for p in range(TOPIC_PARTITIONS)]
        ends = [consumer.get_watermark_offsets(p, timeout=10)[1] for p in parts]
        committed = [p.offset for p in consumer.committed(parts, timeout=10)]
    finally:
        consumer.close()
    return ends, committed


@pytest.mark.parametrize(
    ("policy", "lag"),
    [
        pytest.param("latest", 0 + 60 + 1, id="no commit, reset latest: KEDA's 1"),
        pytest.param("earliest", 0 + 60 + 100, id="no commit, reset earliest: all 100"),
    ],
)
def test_kafka_lag_comes_from_the_brokers_offsets(
    world: World, clients: Any, kafka: str, policy: str, lag: int
) -> None:
    # GIVEN the broker's own view: 100 records a partition, commits at 100, 40 and none
    assert broker_view(kafka, world.kafka) == ([100, 100, 100], [100, 40, -1001])
    runtime = world.runtime(
        clients, admin_config(world, kafka, offset_reset_policy=policy, partitions=None)
    )
    # WHEN a tick runs
    outcome = {o.queue: o for o in tick.run_tick(runtime, NOW)}[world.kafka]
    # THEN the backlog is the admin API's lag, the partition cap the live count (3)
    decision = outcome.decision
    assert outcome.errors == [] and decision is not None
    assert decision.backlog_per_instance == lag / START_WORKERS
    assert decision.target == TOPIC_PARTITIONS
    # the plan asks for at least the 3 the lag needs; the cap is named wherever it asked more
    assert decision.raw_target >= TOPIC_PARTITIONS
    assert ("partition_cap" in decision.constraints) == (decision.raw_target > TOPIC_PARTITIONS)
    assert outcome.applied and world.desired(world.kafka) == TOPIC_PARTITIONS


def test_kafka_partitions_with_lag_cap_the_useful_consumers(
    world: World, clients: Any, kafka: str
) -> None:
    # GIVEN KEDA's limitToPartitionsWithLag and reset earliest: partitions 1 and 2 lag
    config = admin_config(
        world, kafka, limit_to_partitions_with_lag=True, offset_reset_policy="earliest"
    )
    runtime = world.runtime(clients, config)
    # WHEN a tick runs; THEN the cap is the two lagging partitions, not the three
    outcome = {o.queue: o for o in tick.run_tick(runtime, NOW)}[world.kafka]
    assert outcome.decision is not None and outcome.decision.target == 2
    assert "partition_cap" in outcome.decision.constraints


def test_kafka_persistent_lag_is_left_out_on_the_second_read(
    world: World, clients: Any, kafka: str
) -> None:
    # GIVEN KEDA's excludePersistentLag and no consumer moving between two ticks
    runtime = world.runtime(clients, admin_config(world, kafka, exclude_persistent_lag=True))
    first = {o.queue: o for o in tick.run_tick(runtime, NOW)}[world.kafka]
    assert first.decision is not None and first.decision.backlog_per_instance == 61 / 2
    world.reset()
    # WHEN the next tick reads the same commits
    second = {o.queue: o for o in tick.run_tick(runtime, NOW)}[world.kafka]
    # THEN partition 1 (lagging 60, its commit unmoved) is left out, and the reason says so;
    # partition 2 has no commit to compare, so its 1 stays
    assert second.decision is not None and second.decision.backlog_per_instance == 1 / 2
    assert "lag of partitions 1 left out" in second.decision.reason


def test_kafka_admin_api_unreachable_falls_back_to_cloudwatch_within_the_deadline(
    world: World, clients: Any
) -> None:
    # GIVEN bootstrap servers where nothing listens, and MSK's lag of 140 on CloudWatch
    port = closed_port_url().rsplit(":", 1)[1]
    runtime = world.runtime(clients, admin_config(world, f"127.0.0.1:{port}"))
    # WHEN a tick runs
    began = time.monotonic()
    outcome = {o.queue: o for o in tick.run_tick(runtime, NOW)}[world.kafka]
    # THEN it decides from CloudWatch within the 2 s deadline, and says why
    assert time.monotonic() - began < 5.0
    assert outcome.decision is not None
    assert outcome.decision.backlog_per_instance == 140 / START_WORKERS
    assert any("Kafka admin API failed, CloudWatch used" in e for e in outcome.errors)
