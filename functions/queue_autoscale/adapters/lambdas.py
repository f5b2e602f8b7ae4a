"""Lambda: the evaluate function starting its own shards (asynchronous Invoke of itself)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from queue_autoscale.adapters.errors import InvalidRequest, aws_call

ASYNC_ACCEPTED = 202
"""Invoke with InvocationType Event answers 202 when Lambda queued the event."""


def check_queued(response: Mapping[str, Any], function_name: str) -> None:
    """Raise InvalidRequest unless an asynchronous Invoke answered 202 (event queued)."""
    status = response.get("StatusCode")
    if status != ASYNC_ACCEPTED:
        raise InvalidRequest(
            "Invoke",
            f"asynchronous invoke answered {status!r}, not {ASYNC_ACCEPTED}",
            code=str(status),
            resource=function_name,
        )


class FunctionInvoker:
    """Queues asynchronous invocations through one Lambda client."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def invoke_async(self, function_name: str, payload: Mapping[str, Any]) -> None:
        """Queue one invocation of `function_name` with a JSON `payload` (InvocationType Event)."""
        with aws_call("Invoke", function_name):
            response = self._client.invoke(
                FunctionName=function_name,
                InvocationType="Event",
                Payload=json.dumps(dict(payload)).encode("utf-8"),
            )
        check_queued(response, function_name)
