"""A real RabbitMQ broker for the tests: Debian's rabbitmq-server with the management plugin.

`start_broker` runs its own epmd and node on 127.0.0.1 with free ports, its own node name,
HOME (Erlang cookie), mnesia and log directories under a temporary folder, and stops both by
their PIDs. `make test` installs the package when missing (infra/install_rabbitmq.sh); without
it the tests skip with that reason (under CI they fail: CI must have run the installer).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from base64 import b64encode
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

SERVER = Path("/usr/lib/rabbitmq/bin/rabbitmq-server")
CTL = Path("/usr/lib/rabbitmq/bin/rabbitmqctl")
START_TIMEOUT_SECONDS = 90.0
STOP_TIMEOUT_SECONDS = 30.0
USER, PASSWORD = "guest", "guest"
"""RabbitMQ's default user, which may log in from loopback only."""


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass(frozen=True)
class Broker:
    """A running broker: where its AMQP and management listeners are, and how to reach it."""

    amqp_port: int
    management_url: str
    env: dict[str, str]
    """The environment rabbitmqctl needs to talk to this node."""

    def api(self, path: str) -> Any:
        """GET a management API path as JSON (the tests' own view, to poll for readiness)."""
        token = b64encode(f"{USER}:{PASSWORD}".encode()).decode()
        request = urllib.request.Request(
            f"{self.management_url}{path}", headers={"Authorization": f"Basic {token}"}
        )
        with urllib.request.urlopen(request, timeout=5) as answer:  # loopback only
            return json.loads(answer.read())

    def ctl(self, *args: str) -> str:
        """Run rabbitmqctl against this node (the broker's own word, independent of HTTP)."""
        done = subprocess.run(
            [str(CTL), *args], env=self.env, capture_output=True, text=True, timeout=60, check=True
        )
        return done.stdout

    def queue_counts(self, vhost: str, name: str) -> dict[str, int]:
        """messages_ready, messages_unacknowledged and consumers as rabbitmqctl lists them."""
        out = self.ctl(
            "list_queues",
            "-p",
            vhost,
            "--quiet",
            "--no-table-headers",
            "name",
            "messages_ready",
            "messages_unacknowledged",
            "consumers",
        )
        for line in out.splitlines():
            parts = line.split("\t")
            if parts[0] == name:
                ready, unacked, consumers = (int(part) for part in parts[1:4])
                return {"ready": ready, "unacked": unacked, "consumers": consumers}
        raise AssertionError(f"queue {name!r} not listed by rabbitmqctl: {out!r}")


def _stop(process: subprocess.Popen[bytes], pid_file: Path | None = None) -> None:
    targets = []
    if pid_file is not None and pid_file.exists():
        text = pid_file.read_text().strip()
        if text.isdigit():
            targets.append(int(text))  # the Erlang VM (beam.smp) the script started
    targets.append(process.pid)
    for pid in targets:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    try:
        process.wait(timeout=STOP_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        for pid in targets:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        process.wait(timeout=10)


@contextmanager
def start_broker(base: Path) -> Iterator[Broker]:
    """Start epmd and a RabbitMQ node under `base`; stop both by PID on exit."""
    if not SERVER.exists() or shutil.which("epmd") is None:
        reason = "rabbitmq-server is not installed: run `make test` or infra/install_rabbitmq.sh"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    epmd_port, amqp_port, http_port, dist_port = (free_port() for _ in range(4))
    config = base / "rabbitmq.conf"
    config.write_text(
        f"listeners.tcp.default = 127.0.0.1:{amqp_port}\n"
        "management.tcp.ip = 127.0.0.1\n"
        f"management.tcp.port = {http_port}\n"
        # statistics every 500 ms (default 5 s), so the API catches up within a test's poll
        "collect_statistics_interval = 500\n"
    )
    plugins = base / "enabled_plugins"
    plugins.write_text("[rabbitmq_management].\n")
    pid_file = base / "rabbit.pid"
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(base),
        "LANG": "C.UTF-8",
        "ERL_EPMD_ADDRESS": "127.0.0.1",
        "ERL_EPMD_PORT": str(epmd_port),
        "RABBITMQ_NODENAME": f"qa{os.getpid()}@localhost",
        "RABBITMQ_DIST_PORT": str(dist_port),
        "RABBITMQ_CONFIG_FILE": str(base / "rabbitmq"),
        "RABBITMQ_ADVANCED_CONFIG_FILE": str(base / "advanced.config"),
        "RABBITMQ_ENABLED_PLUGINS_FILE": str(plugins),
        "RABBITMQ_MNESIA_BASE": str(base / "mnesia"),
        "RABBITMQ_LOG_BASE": str(base / "log"),
        "RABBITMQ_PID_FILE": str(pid_file),
    }
    log = (base / "broker.out").open("wb")
    epmd = subprocess.Popen(
        ["epmd", "-address", "127.0.0.1", "-port", str(epmd_port)],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    node: subprocess.Popen[bytes] | None = None
    try:
        node = subprocess.Popen([str(SERVER)], env=env, stdout=log, stderr=subprocess.STDOUT)
        broker = Broker(amqp_port, f"http://127.0.0.1:{http_port}", env)
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while True:
            if node.poll() is not None:
                raise RuntimeError(f"rabbitmq-server exited: see {base / 'broker.out'}")
            try:
                broker.api("/api/overview")
                break
            except (OSError, urllib.error.URLError, ValueError) as error:
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"rabbitmq-server not up after {START_TIMEOUT_SECONDS} s"
                    ) from error
                time.sleep(0.5)
        yield broker
    finally:
        if node is not None:
            _stop(node, pid_file)
        _stop(epmd)
        log.close()
