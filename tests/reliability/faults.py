"""Injected AWS faults: a botocore `before-send` hook that answers one operation with an
error response, or raises a timeout, before any byte leaves the process.

The error goes through botocore's real parser and its standard-mode retry handler, so a
retryable fault is attempted `total_max_attempts` times, exactly as against AWS.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from botocore.awsrequest import AWSPreparedRequest, AWSResponse, HTTPHeaders
from botocore.exceptions import ConnectTimeoutError, ReadTimeoutError

FAULTS = ("throttled", "server-error", "read-timeout", "connect-timeout", "access-denied")
"""The faults every AWS call is tested under."""


class _Raw:
    """The urllib3-like body botocore reads from an AWSResponse."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def stream(self, **_: Any) -> Any:
        yield self._data


def _error(protocol: str, fault: str) -> tuple[int, dict[str, str], bytes]:
    """(status, headers, body) of an error answer in the service's wire protocol."""
    status, code = {
        "throttled": (400, "ThrottlingException"),
        "server-error": (500, "InternalFailure"),
        "access-denied": (403, "AccessDeniedException"),
    }[fault]
    message = f"injected {fault}"
    if protocol == "rest-xml":  # S3
        s3_codes = {"throttled": (503, "SlowDown"), "access-denied": (403, "AccessDenied")}
        status, code = s3_codes.get(fault, (500, "InternalError"))
        body = f"<Error><Code>{code}</Code><Message>{message}</Message></Error>"
        return status, {"Content-Type": "application/xml"}, body.encode()
    if protocol == "query":  # CloudWatch
        if fault == "throttled":
            code = "Throttling"
        elif fault == "access-denied":
            code = "AccessDenied"
        body = (
            f"<ErrorResponse><Error><Type>Sender</Type><Code>{code}</Code>"
            f"<Message>{message}</Message></Error><RequestId>r</RequestId></ErrorResponse>"
        )
        return status, {"Content-Type": "text/xml"}, body.encode()
    headers = {"Content-Type": "application/x-amz-json-1.0"}
    if protocol == "json" and fault == "access-denied":
        headers["x-amzn-query-error"] = "AccessDenied;Sender"  # SQS's JSON protocol
    return status, headers, json.dumps({"__type": code, "message": message}).encode()


@dataclass
class Fault:
    """Fail `operation` of one client with `fault` while `active`; counts every attempt.

    `match` (bytes) limits the fault to requests whose URL or body contains it, so one
    queue's call can fail while another's succeeds.
    """

    operation: str
    fault: str
    match: bytes | None = None
    active: bool = True
    attempts: int = 0
    failed: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def install(self, client: Any) -> Fault:
        """Register on the client's event system; returns self."""
        protocol = client.meta.service_model.protocol
        service = client.meta.service_model.service_id.hyphenize()
        event = f"before-send.{service}.{self.operation}"
        client.meta.events.register(event, self._hook(protocol), unique_id=f"fault-{id(self)}")
        return self

    def _hits(self, request: AWSPreparedRequest) -> bool:
        if self.match is None:
            return True
        raw = request.body
        body = raw if isinstance(raw, bytes) else raw.encode() if isinstance(raw, str) else b""
        return self.match in body or self.match in request.url.encode()

    def _hook(self, protocol: str) -> Callable[..., AWSResponse | None]:
        def hook(request: AWSPreparedRequest, **_: Any) -> AWSResponse | None:
            if not self.active or not self._hits(request):
                return None
            with self._lock:
                self.attempts += 1
                self.failed += 1
            if self.fault == "read-timeout":
                raise ReadTimeoutError(endpoint_url=request.url)
            if self.fault == "connect-timeout":
                raise ConnectTimeoutError(endpoint_url=request.url)
            status, headers, body = _error(protocol, self.fault)
            return AWSResponse(request.url, status, HTTPHeaders.from_dict(headers), _Raw(body))

        return hook


@dataclass
class CallLog:
    """Parameters of every successful call of one operation (an `after-call` hook)."""

    operation: str
    calls: list[dict[str, Any]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def install(self, client: Any) -> CallLog:
        """Register on the client; returns self."""
        service = client.meta.service_model.service_id.hyphenize()

        def before(params: dict[str, Any], **_: Any) -> None:
            with self._lock:
                self.calls.append(dict(params))

        client.meta.events.register(
            f"provide-client-params.{service}.{self.operation}",
            before,
            unique_id=f"log-{id(self)}",
        )
        return self


def expected_attempts(fault: str, max_attempts: int = 3) -> int:
    """How many times botocore's standard mode sends a call that keeps failing this way."""
    return 1 if fault == "access-denied" else max_attempts
