"""RabbitMQ as a queue source, against a real broker (Debian's rabbitmq-server on 127.0.0.1).

Publish, consume with a prefetch, leave messages unacked, reject some into a dead-letter
exchange; then every number of the reading and of the snapshot is checked against what the
broker itself says (rabbitmqctl) and against what the test did. Credentials come from Secrets
Manager on the AWS endpoint, as in production; the tick scales the ECS service on it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pika
import pytest

from queue_autoscale.adapters.dynamodb import counter_pk, second_sk
from queue_autoscale.adapters.errors import AccessDenied, NotFound
from queue_autoscale.adapters.rabbitmq import Credentials, RabbitManagement
from queue_autoscale.config import parse_queue
from queue_autoscale.controller import tick
from queue_autoscale.core import Readings, build_snapshot
from queue_autoscale.handlers import evaluate
from queue_autoscale.settings import EvaluateSettings
from queue_autoscale.sources import Sources
from tests.integration.rabbitmq_broker import PASSWORD, USER, Broker, start_broker

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("moto")]

PREFETCH = 5
PUBLISHED = 30
REJECTED = 2
POLL_SECONDS = 30.0


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    """One broker for this module (it takes ~10 s to start and ~10 s to stop)."""
    with start_broker(tmp_path_factory.mktemp("rabbitmq")) as running:
        yield running


def until(check: Callable[[], Any], what: str, seconds: float = POLL_SECONDS) -> Any:
    """Poll `check` until it returns a truthy value (the broker's statistics lag ~0.5 s)."""
    deadline = time.monotonic() + seconds
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {seconds} s: {what}")
        time.sleep(0.2)


class Workload:
    """Queues, a dead-letter exchange and two consumers holding unacked messages."""

    def __init__(self, broker: Broker, name: str) -> None:
        params = pika.ConnectionParameters(
            host="127.0.0.1",
            port=broker.amqp_port,
            credentials=pika.PlainCredentials(USER, PASSWORD),
        )
        self.connection = pika.BlockingConnection(params)
        self.queue, self.dlq, dlx = name, f"{name}.dlq", f"{name}.dlx"
        setup = self.connection.channel()
        setup.exchange_declare(dlx, exchange_type="fanout")
        setup.queue_declare(self.dlq)
        setup.queue_bind(self.dlq, dlx)
        setup.queue_declare(self.queue, arguments={"x-dead-letter-exchange": dlx})
        self.first_stamp = int(time.time()) - 100
        for index in range(PUBLISHED):  # message i is stamped first_stamp + i (AMQP seconds)
            setup.basic_publish(
                "",
                self.queue,
                f"job {index}".encode(),
                pika.BasicProperties(timestamp=self.first_stamp + index),
            )
        self.held: list[list[int]] = [[], []]
        self.channels = []
        for holder in (0, 1):
            channel = self.connection.channel()
            channel.basic_qos(prefetch_count=PREFETCH)
            channel.basic_consume(self.queue, self._keeper(channel, holder))
            self.channels.append(channel)
            # wait for this consumer's prefetch window to fill before the next one subscribes
            until(lambda h=holder: self._pump() or len(self.held[h]) == PREFETCH, "prefetch")

    def _keeper(self, channel: Any, holder: int) -> Callable[..., None]:
        rejected = [0]

        def on_message(ch: Any, method: Any, properties: Any, body: bytes) -> None:
            index = int(body.split()[1])
            if holder == 1 and rejected[0] < REJECTED:
                rejected[0] += 1  # poison: dead-lettered, and the window refills
                ch.basic_reject(method.delivery_tag, requeue=False)
                return
            self.held[holder].append(index)  # never acked: stays unacknowledged

        return on_message

    def _pump(self) -> bool:
        self.connection.process_data_events(time_limit=0.1)
        return False

    def close(self) -> None:
        self.connection.close()


@pytest.fixture
def workload(broker: Broker, suffix: str) -> Iterator[Workload]:
    load = Workload(broker, f"orders-{suffix}")
    yield load
    load.close()


def rabbit_config(broker: Broker, workload: Workload, secret: str, **extra: Any) -> Any:
    return {
        "queue": workload.queue.replace(".", "-"),
        "sla_seconds": 300,
        "max_workers": 20,
        "source": {
            "type": "rabbitmq",
            "management_url": broker.management_url,
            "queue": workload.queue,
            "dead_letter_queue": workload.dlq,
            "prefetch": PREFETCH,
            "credentials_secret": secret,
        },
        **extra,
    }


def store_secret(clients: Any, name: str, user: str = USER, password: str = PASSWORD) -> str:
    clients.secretsmanager.create_secret(
        Name=name, SecretString=json.dumps({"username": user, "password": password})
    )
    return name


def test_every_number_of_the_reading_matches_the_broker(
    broker: Broker, workload: Workload, clients: Any, suffix: str
) -> None:
    # GIVEN 30 published; 2 consumers with prefetch 5 hold 10 unacked; 2 rejected to the DLX
    held = sorted(workload.held[0] + workload.held[1])
    assert held == [*range(0, 5), *range(7, 12)]  # 5 and 6 were rejected by the second
    expected = {"ready": PUBLISHED - 10 - REJECTED, "unacked": 10, "consumers": 2}
    # (the management API's statistics trail the queue by up to collect_statistics_interval)
    until(
        lambda: (
            broker.queue_counts("/", workload.queue) == expected
            and broker.api(f"/api/queues/%2F/{workload.queue}").get("messages_ready") == 18
            and broker.api(f"/api/queues/%2F/{workload.dlq}").get("messages_ready") == REJECTED
        ),
        "the broker's counts settle",
    )
    assert broker.queue_counts("/", workload.dlq)["ready"] == REJECTED
    config = parse_queue(rabbit_config(broker, workload, store_secret(clients, f"mq-{suffix}")))
    sources = Sources(clients.cloudwatch, clients.secretsmanager, clients.ssm)

    # WHEN the source reads the queue (credentials from Secrets Manager)
    now = time.time()
    reading = sources.read(config, now)

    # THEN each of the 2 consumers works on 1 job (concurrency 1) and holds 4 in its buffer:
    # waiting = 18 ready + 8 buffered, in flight = 2; the dead-letter queue holds the 2 rejected
    assert reading is not None and reading.origin == "rabbitmq-management"
    assert (reading.depth.visible, reading.depth.in_flight) == (18 + 8, 2)
    assert reading.depth.visible + reading.depth.in_flight == expected["ready"] + 10
    assert reading.dlq_depth == REJECTED
    # AND the age is that of message 0, the oldest the queue still holds (unacked, at the
    # head): an upper bound on the oldest waiting job (message 1, in a prefetch buffer)
    assert reading.age is not None
    assert reading.age.age_seconds == pytest.approx(now - workload.first_stamp, abs=1.0)

    # AND the snapshot the tick builds carries the same numbers
    readings = Readings(
        depth=reading.depth,
        oldest_age=reading.age,
        fleet=None,
        dlq_depth=reading.dlq_depth,
        rows=[],
    )
    snapshot = build_snapshot(config.queue, now, readings)
    assert (snapshot.visible, snapshot.in_flight, snapshot.dlq_depth) == (26, 2, REJECTED)
    assert snapshot.oldest_age_seconds == pytest.approx(reading.age.age_seconds, abs=1e-6)


def test_a_wrong_password_is_access_denied_and_a_missing_queue_not_found(
    broker: Broker, workload: Workload
) -> None:
    wrong = RabbitManagement(broker.management_url, Credentials(USER, "not-the-password"))
    with pytest.raises(AccessDenied, match="HTTP401"):
        wrong.queue("/", workload.queue)
    right = RabbitManagement(broker.management_url, Credentials(USER, PASSWORD))
    with pytest.raises(NotFound, match="HTTP404"):
        right.queue("/", "no-such-queue")


def test_a_rabbitmq_queue_is_configured_read_decided_and_scaled(
    broker: Broker, workload: Workload, kit: Any, clients: Any, suffix: str, tmp_path: Path
) -> None:
    # GIVEN the workload's queue configured through $QUEUES_CONFIG with its ECS service, and
    # a second queue whose secret holds a wrong password
    kit.require_ecs()
    until(
        lambda: (
            broker.api(f"/api/queues/%2F/{workload.queue}").get("messages_unacknowledged") == 10
        ),
        "the API sees the unacked messages",
    )
    cluster = kit.name("workers")
    secret = store_secret(clients, f"mq-{suffix}")
    good = rabbit_config(broker, workload, secret, cluster=cluster, sla_seconds=30)
    bad_secret = store_secret(clients, f"mq-bad-{suffix}", password="wrong")
    bad = rabbit_config(broker, workload, bad_secret, cluster=cluster)
    bad["queue"] = kit.name("locked-out")
    for config in (good, bad):
        kit.service(cluster, config["queue"], 2)
    table, bucket = kit.load_table(), kit.bucket()
    settings = EvaluateSettings.from_environ(
        {
            "QUEUES_CONFIG": json.dumps([good, bad]),
            "LOAD_TABLE": table,
            "ARCHIVE_BUCKET": bucket,
            "EVALUATION_INTERVAL_SECONDS": "30",
        }
    )
    now = float(int(time.time()))
    runtime = evaluate.build_runtime(settings, clients, clock=lambda: now)
    # counters: 3 jobs/s arrived and completed for 5 minutes, 1 s jobs (2 workers are short)
    rows = [
        {
            "pk": {"S": counter_pk(good["queue"])},
            "sk": {"S": second_sk(second)},
            "expires_at": {"N": str(second + 86_400)},
            "queued": {"N": "3"},
            "completed": {"N": "3"},
            "busy_ms": {"N": "3000"},
        }
        for second in range(int(now) - 300, int(now))
    ]
    for first in range(0, len(rows), 25):
        clients.dynamodb.batch_write_item(
            RequestItems={table: [{"PutRequest": {"Item": r}} for r in rows[first : first + 25]]}
        )

    # WHEN one tick runs
    outcomes = {outcome.queue: outcome for outcome in tick.run_tick(runtime, now)}

    # THEN the RabbitMQ queue was decided from the broker's numbers and the service scaled
    ours = outcomes[good["queue"]]
    assert ours.errors == [] and ours.decision is not None
    assert ours.decision.inputs_ok
    assert "kept 2 workers busy with 2 jobs" not in ours.decision.reason  # not the floor
    assert ours.decision.backlog_per_instance == 26 / 2
    assert ours.applied and ours.decision.target > 2
    desired = clients.ecs.describe_services(cluster=cluster, services=[good["queue"]])
    assert desired["services"][0]["desiredCount"] == ours.decision.target
    # AND the queue whose secret is wrong held, with the broker's 401 as its error
    locked = outcomes[bad["queue"]]
    assert not locked.applied
    assert locked.decision is None or not locked.decision.inputs_ok
    assert any("HTTP401" in error for error in locked.errors)


@pytest.mark.parametrize(
    ("unit", "ttl_ms", "believed", "note"),
    [
        pytest.param(1, None, True, None, id="seconds"),
        pytest.param(1000, None, True, "read as milliseconds", id="milliseconds"),
        pytest.param(0, None, False, "ignored", id="stamped 1"),
        pytest.param(1, 60_000, False, "over the 60 s", id="older than x-message-ttl"),
    ],
)
def test_a_publishers_timestamp_is_checked_against_the_clock_and_the_ttl(
    broker: Broker,
    clients: Any,
    suffix: str,
    unit: int,
    ttl_ms: int | None,
    believed: bool,
    note: str | None,
) -> None:
    # GIVEN 40 messages published with an AMQP timestamp of ten minutes ago, in this unit
    params = pika.ConnectionParameters(
        host="127.0.0.1",
        port=broker.amqp_port,
        credentials=pika.PlainCredentials(USER, PASSWORD),
    )
    name = f"clock-{suffix}-{unit}-{ttl_ms or 0}"
    published = int(time.time() - 600)
    stamp = published * unit if unit else 1
    connection = pika.BlockingConnection(params)
    try:
        channel = connection.channel()
        channel.queue_declare(name, arguments={"x-message-ttl": ttl_ms} if ttl_ms else None)
        for index in range(40):
            channel.basic_publish(
                "", name, f"job {index}".encode(), pika.BasicProperties(timestamp=stamp)
            )
    finally:
        connection.close()
    until(
        lambda: broker.api(f"/api/queues/%2F/{name}").get("head_message_timestamp") == stamp,
        "the broker reports the head's stamp as published",
    )
    source = {
        "type": "rabbitmq",
        "management_url": broker.management_url,
        "queue": name,
        "prefetch": 1,
        "credentials_secret": store_secret(clients, f"mq-{name}"),
    }
    config = parse_queue({"queue": name, "sla_seconds": 300, "max_workers": 5, "source": source})
    # WHEN the source reads it
    now = time.time()
    reading = Sources(clients.cloudwatch, clients.secretsmanager, clients.ssm).read(config, now)
    # THEN the age is the stamp's where it can be right (ten minutes, whatever the unit), else
    # unknown (our own events decide)
    assert reading is not None and reading.depth.visible == 40
    if not believed:
        assert reading.age is None
    else:
        assert reading.age is not None
        assert reading.age.age_seconds == pytest.approx(now - published, abs=0.01)
    assert [n for n in reading.reason_notes if note and note in n] or (
        note is None and reading.reason_notes == ()
    )
