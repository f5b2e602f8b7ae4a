"""A fake ECS agent task-protection endpoint on 127.0.0.1, started and stopped by the test."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class FakeAgent:
    """The ECS agent's task-protection endpoint on 127.0.0.1: records every request."""

    fail: bool = False
    requests: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)

    def handler(self) -> type[BaseHTTPRequestHandler]:
        agent = self

        class Handler(BaseHTTPRequestHandler):
            def do_PUT(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                agent.requests.append(("PUT", self.path, body))
                if agent.fail:
                    self.send_response(500)
                    self.end_headers()
                    self.wfile.write(b'{"error": {"Code": "ServerException"}}')
                    return
                reply = {"protection": {"ProtectionEnabled": body.get("ProtectionEnabled")}}
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(json.dumps(reply).encode())

            def log_message(self, *_: Any) -> None:
                return

        return Handler


@contextmanager
def serve_agent() -> Iterator[tuple[FakeAgent, str]]:
    """(the agent, its ECS_AGENT_URI) while the block runs; the server is stopped after."""
    agent = FakeAgent()
    server = ThreadingHTTPServer(("127.0.0.1", 0), agent.handler())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    host, port = server.server_address[:2]
    try:
        yield agent, f"http://{host}:{port}/api/task-1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
