"""Counter increments per (queue, second), and a batch's stable id."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable, Sequence

from queue_autoscale.events import Event

CounterKey = tuple[str, int]
"""(queue, epoch second)."""


def aggregate(events: Iterable[Event]) -> dict[CounterKey, dict[str, int]]:
    """Counter increments per (queue, second): counts per type, busy_ms, pickup_ms, pickups."""
    totals: dict[CounterKey, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for event in events:
        counts = totals[(event.queue, event.second)]
        counts[event.type] += 1
        if event.duration_ms is not None:
            counts["busy_ms"] += event.duration_ms
        if event.pickup_ms is not None:
            counts["pickup_ms"] += event.pickup_ms
            counts["pickups"] += 1
    return {key: dict(value) for key, value in totals.items()}


def batch_id(message_ids: Sequence[str]) -> str:
    """A stable id for a set of messages (a redelivered batch overwrites its own object)."""
    digest = hashlib.sha256("\n".join(sorted(message_ids)).encode("utf-8")).hexdigest()
    return digest[:32]
