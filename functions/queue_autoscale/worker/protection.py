"""ECS task scale-in protection through the container agent's endpoint.

ECS injects `ECS_AGENT_URI` into every task's containers; a PUT to
`$ECS_AGENT_URI/task-protection/v1/state` with `{"ProtectionEnabled": true,
"ExpiresInMinutes": N}` keeps the task from being chosen by a scale-in (or a deployment) for N
minutes (1..2880), `{"ProtectionEnabled": false}` makes it eligible again. The task role needs
`ecs:UpdateTaskProtection` (and `ecs:GetTaskProtection` for a GET).

Without the variable (a local run) protection is off: one log line, no error. A failing agent
call is logged and counted; the worker keeps working (scale-in then may pick this task, and the
SIGTERM drain still finishes the jobs in flight).
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from queue_autoscale.adapters import deadline_http
from queue_autoscale.adapters.errors import AdapterError

LOG = logging.getLogger("queue_autoscale.worker")
PATH = "/task-protection/v1/state"
MIN_MINUTES = 1
MAX_MINUTES = 2880
"""The agent accepts ExpiresInMinutes from 1 to 2,880 (48 h)."""
TIMEOUT_SECONDS = 2.0
"""One agent call's total deadline, s: the agent is local to the task; a slow one is broken."""
MAX_ANSWER_BYTES = 64 * 1024
"""The agent answers with a small JSON object; more is not the agent."""
RETRY_SECONDS = 10.0
"""After a failed protect, the next attempt waits this long (the worker keeps working)."""


@dataclass
class ProtectionStats:
    """What the protection client did."""

    protects: int = 0
    unprotects: int = 0
    failures: int = 0


def expiry_minutes(job_timeout_seconds: float) -> int:
    """Minutes of protection per renewal: the hard job limit plus a minute, within 1..2880."""
    return max(MIN_MINUTES, min(MAX_MINUTES, math.ceil(job_timeout_seconds / 60.0) + 1))


class TaskProtection:
    """Protects the task while it holds work, unprotects it when idle, renews before expiry.

    `agent_uri` None or empty: every call is a no-op (logged once). `set_busy(bool)` is cheap
    when nothing changes; the worker calls it each loop pass.
    """

    def __init__(
        self,
        agent_uri: str | None,
        expires_in_minutes: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        timeout_seconds: float = TIMEOUT_SECONDS,
    ) -> None:
        self.url = f"{agent_uri.rstrip('/')}{PATH}" if agent_uri else None
        self.expires_in_minutes = max(MIN_MINUTES, min(MAX_MINUTES, int(expires_in_minutes)))
        self._clock = clock
        self._timeout = timeout_seconds
        self.protected = False
        self._renew_at = 0.0
        self._retry_at = 0.0
        self.stats = ProtectionStats()
        if self.url is None:
            LOG.info("ECS_AGENT_URI is not set: task scale-in protection is off (a local run)")

    @property
    def enabled(self) -> bool:
        """True when an agent endpoint is configured."""
        return self.url is not None

    def set_busy(self, busy: bool) -> None:
        """Protect on idle -> busy (and renew at half the expiry), unprotect on busy -> idle."""
        if self.url is None:
            return
        now = self._clock()
        if busy and (not self.protected or now >= self._renew_at) and now >= self._retry_at:
            if self._put(True):
                self.protected = True
                self.stats.protects += 1
                self._renew_at = now + self.expires_in_minutes * 30.0
            else:
                self._retry_at = now + RETRY_SECONDS
        elif not busy and self.protected:
            # Whether or not the agent answers, stop renewing: the expiry ends it anyway.
            self.protected = False
            if self._put(False):
                self.stats.unprotects += 1

    def _put(self, enabled: bool) -> bool:
        body: dict[str, object] = {"ProtectionEnabled": enabled}
        if enabled:
            body["ExpiresInMinutes"] = self.expires_in_minutes
        try:
            answer = deadline_http.request(
                str(self.url),
                {"Content-Type": "application/json"},
                method="PUT",
                body=json.dumps(body).encode(),
                deadline_seconds=self._timeout,
                max_bytes=MAX_ANSWER_BYTES,
                operation="ECS agent PUT task-protection",
                resource=str(self.url),
            )
            if not 200 <= answer.status < 300:
                raise ValueError(f"HTTP {answer.status}: {answer.body[:200]!r}")
            reply = json.loads(answer.body or b"{}")
        except (AdapterError, ValueError) as error:
            self.stats.failures += 1
            LOG.warning("task protection %s failed: %s", "on" if enabled else "off", error)
            return False
        failure = reply.get("failure") or reply.get("error") if isinstance(reply, dict) else None
        if failure:
            self.stats.failures += 1
            LOG.warning("task protection %s refused: %s", "on" if enabled else "off", failure)
            return False
        return True
