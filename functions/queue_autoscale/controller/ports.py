"""What the controller and the ingest handler need from the adapters, as small Protocols.

The runtimes are typed against these, not the boto3-backed classes, so a test's fake that
answers the same calls type-checks without a cast (KEDA's one narrow client interface per
call). The adapters in `adapters/` satisfy them; mypy checks that where the runtimes are built.
Parameters are positional-only unless a caller names them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from queue_autoscale.adapters.ecs import ServiceRef, ServiceStatus
from queue_autoscale.adapters.errors import AdapterError
from queue_autoscale.adapters.eventbridge import DecisionEvent, EntryFailure
from queue_autoscale.adapters.sqs import QueueDepth, SendFailure
from queue_autoscale.core import CounterRow, OldestAge

Documents = dict[str, tuple[dict[str, Any] | None, dict[str, Any] | None]]
"""Per queue: its STATE item and its MODEL item, each None when absent."""

# -- the evaluate tick --------------------------------------------------------------------


class QueueDepths(Protocol):
    def depth(self, name: str, /) -> QueueDepth:
        """Visible, in-flight and delayed counts of one queue (URL or name)."""
        ...


class OldestAges(Protocol):
    def oldest_ages(self, queue_names: Sequence[str], now: float, /) -> dict[str, OldestAge | None]:
        """Each queue's newest age-of-oldest datapoint at `now` (epoch s), None when none."""
        ...


class Services(Protocol):
    def describe(
        self, refs: Sequence[ServiceRef], /
    ) -> dict[ServiceRef, ServiceStatus | AdapterError]:
        """Each service's counts, or the error that kept it from being read."""
        ...

    def set_desired(self, ref: ServiceRef, desired: int, /) -> int:
        """UpdateService's desiredCount; returns the count set."""
        ...


class StateTable(Protocol):
    def read_documents(self, queues: Sequence[str], /) -> Documents:
        """The STATE and MODEL items of `queues`."""
        ...

    def counter_rows(self, queue: str, first_second: int, last_second: int, /) -> list[CounterRow]:
        """The per-second counter rows of `queue` in [first, last], epoch seconds."""
        ...

    def write_state(self, queue: str, state: Mapping[str, Any], expected_version: int, /) -> int:
        """Store STATE if its version is still `expected_version` (else StateConflict)."""
        ...

    def acquire_lock(self, shard: str, index: int, owner: str, now: float, until: float, /) -> None:
        """Hold shard `index`'s lock until `until` (StateConflict when another owner holds it)."""
        ...

    def release_lock(self, shard: str, index: int, owner: str, now: float, /) -> None:
        """Let the lock go at `now` if `owner` holds it."""
        ...

    def claim_tick(self, shard: str, index: int, due_ms: int, now: float, /) -> None:
        """Claim shard `index`'s tick due at `due_ms` (epoch ms); StateConflict when a tick due
        at or after it was claimed already."""
        ...


class TickScheduler(Protocol):
    def schedule(self, ticks: Sequence[tuple[Mapping[str, Any], float]], /) -> list[SendFailure]:
        """Queue each (request, delay in seconds); the entries refused."""
        ...


class DecisionArchive(Protocol):
    def put_decisions(
        self, at_epoch_seconds: float, tick_id: str, records: Iterable[Mapping[str, Any]], /
    ) -> str:
        """Write one tick's decision log; returns its key."""
        ...


class DecisionBus(Protocol):
    def publish(self, events: Sequence[DecisionEvent], /) -> list[EntryFailure]:
        """PutEvents; the entries EventBridge refused."""
        ...


# -- record_events ------------------------------------------------------------------------


class CounterTable(Protocol):
    def add_counters_once(
        self,
        queue: str,
        second: int,
        contributions: Mapping[str, Mapping[str, int]],
        /,
        *,
        expires_at: int,
    ) -> None:
        """Add one second's counts per message id (ADD; a message already counted there, a
        redelivery, adds nothing again)."""
        ...


class JumpLines(Protocol):
    def jump_line(self, queue: str, /) -> dict[str, Any] | None:
        """The queue's jump line as its STATE item holds it (plain numbers, `fired_at` once
        claimed), None when it has none."""
        ...

    def queued(self, queue: str, first_second: int, last_second: int, /) -> int:
        """Jobs queued in seconds first..last (epoch s), as the counters hold them now."""
        ...

    def claim_jump(self, queue: str, since: float, now: float, /) -> bool:
        """Mark the line counted from `since` fired at `now`; False when it was already."""
        ...


class EventArchive(Protocol):
    def put_events(
        self, at_epoch_seconds: float, batch_id: str, records: Iterable[Mapping[str, Any]], /
    ) -> str:
        """Write one batch's accepted events; returns the key."""
        ...

    def put_rejected(self, at_epoch_seconds: float, rejection_id: str, body: str, /) -> str:
        """Store a rejected body too large for the DLQ message; returns the key."""
        ...


class DeadLetterQueue(Protocol):
    def reject_many(self, items: Sequence[tuple[str, str]], /) -> list[SendFailure]:
        """Send (wrapped body, reason) pairs to the events DLQ; the entries SQS refused."""
        ...
