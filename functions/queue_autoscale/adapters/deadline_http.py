"""One HTTP call with a total deadline, for broker management APIs and the ECS agent.

A socket timeout bounds each read, not the call: a server that trickles a byte a second keeps a
read-timed call alive for ever. Here a timer shuts the socket down when the deadline passes,
whatever the call is doing (connecting, sending, reading headers or body), so the call returns
within the deadline and leaves no socket and no thread behind (the timer is cancelled and
joined before the call returns). One connection per call: nothing stays open between ticks.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import ssl
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from queue_autoscale.adapters.errors import InvalidRequest, MalformedResponse, ServiceUnavailable


@dataclass(frozen=True, slots=True)
class Answer:
    """An HTTP answer: its status and at most `max_bytes` + 1 bytes of its body."""

    status: int
    body: bytes


class _Guard:
    """Shuts a connection's socket down once the deadline passes (a timer thread)."""

    def __init__(self, connection: http.client.HTTPConnection, seconds: float) -> None:
        self._connection = connection
        self._lock = threading.Lock()
        self.expired = False
        self._timer = threading.Timer(seconds, self._cut)
        self._timer.daemon = True

    def _cut(self) -> None:
        with self._lock:
            self.expired = True
            sock = self._connection.sock
            if sock is not None:
                with contextlib.suppress(OSError):  # already closed
                    sock.shutdown(socket.SHUT_RDWR)

    def __enter__(self) -> _Guard:
        self._timer.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._timer.cancel()
        self._timer.join()
        with self._lock:
            self._connection.close()


def _connection(url: str, seconds: float) -> tuple[http.client.HTTPConnection, str]:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidRequest("HTTP GET", f"not an http(s) URL: {url!r}", resource=url)
    path = parts.path or "/"
    if parts.query:
        path = f"{path}?{parts.query}"
    if parts.scheme == "https":
        return (
            http.client.HTTPSConnection(
                parts.hostname,
                parts.port,
                timeout=seconds,
                context=ssl.create_default_context(),
            ),
            path,
        )
    return http.client.HTTPConnection(parts.hostname, parts.port, timeout=seconds), path


def _late(operation: str, resource: str, seconds: float) -> ServiceUnavailable:
    return ServiceUnavailable(
        operation,
        f"no complete answer within the {seconds:g} s deadline",
        code="Deadline",
        resource=resource,
    )


def request(
    url: str,
    headers: Mapping[str, str],
    *,
    deadline_seconds: float,
    max_bytes: int,
    operation: str,
    resource: str,
    method: str = "GET",
    body: bytes | None = None,
) -> Answer:
    """`method` `url` within `deadline_seconds` in total (connect, send, headers and body),
    reading at most `max_bytes` + 1 bytes of answer; no redirect is followed. A deadline
    passed or a network failure is ServiceUnavailable; an answer over `max_bytes` is
    MalformedResponse."""
    connection, path = _connection(url, deadline_seconds)
    with _Guard(connection, deadline_seconds) as guard:
        try:
            connection.request(method, path, body=body, headers=dict(headers))
            response = connection.getresponse()
            body = response.read(max_bytes + 1)
        except (OSError, http.client.HTTPException) as error:
            if guard.expired or isinstance(error, TimeoutError):  # the socket's own timeout
                raise _late(operation, resource, deadline_seconds) from None
            reason = str(error) or type(error).__name__
            raise ServiceUnavailable(
                operation, reason, code=type(error).__name__, resource=resource
            ) from error
        if guard.expired:  # a body read to EOF may have been cut short by the deadline
            raise _late(operation, resource, deadline_seconds)
    if len(body) > max_bytes:
        raise MalformedResponse(
            operation, f"answer larger than {max_bytes} bytes", resource=resource
        )
    return Answer(response.status, body)
