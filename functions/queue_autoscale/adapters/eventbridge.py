"""EventBridge: decision events (`ScalingDecisionMade`, `WorkersScaled`, `SlaBreachPredicted`).

PutEvents takes 10 entries a call; entries EventBridge refuses are returned, not raised,
so one bad entry does not hide the others.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from queue_autoscale.adapters.errors import aws_call
from queue_autoscale.constants import EVENT_SOURCE

MAX_ENTRIES = 10
"""PutEvents takes at most 10 entries per call."""


@dataclass(frozen=True, slots=True)
class DecisionEvent:
    """One event to publish: its detail-type and JSON-safe detail."""

    detail_type: str
    detail: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class EntryFailure:
    """An entry PutEvents refused."""

    index: int
    """Position in the list given to `publish`."""
    code: str
    message: str


def build_entries(
    events: Sequence[DecisionEvent], bus_name: str, source: str = EVENT_SOURCE
) -> list[dict[str, Any]]:
    """PutEvents entries for the given events (detail serialized as compact JSON)."""
    return [
        {
            "Source": source,
            "DetailType": event.detail_type,
            "Detail": json.dumps(event.detail, separators=(",", ":"), default=str),
            "EventBusName": bus_name,
        }
        for event in events
    ]


def parse_put_events(response: Mapping[str, Any], offset: int = 0) -> list[EntryFailure]:
    """Entries with an ErrorCode in a PutEvents response, by position."""
    if not response.get("FailedEntryCount"):
        return []
    return [
        EntryFailure(
            index=offset + index,
            code=str(entry.get("ErrorCode")),
            message=str(entry.get("ErrorMessage", "")),
        )
        for index, entry in enumerate(response.get("Entries", []))
        if entry.get("ErrorCode")
    ]


class EventPublisher:
    """Publishes decision events to one bus through one EventBridge client."""

    def __init__(self, client: Any, bus_name: str, source: str = EVENT_SOURCE) -> None:
        self._client = client
        self.bus_name = bus_name
        self.source = source

    def publish(self, events: Sequence[DecisionEvent]) -> list[EntryFailure]:
        """PutEvents in calls of 10; return refused entries (a failed call raises)."""
        entries = build_entries(events, self.bus_name, self.source)
        failures: list[EntryFailure] = []
        for first in range(0, len(entries), MAX_ENTRIES):
            with aws_call("PutEvents", self.bus_name):
                response = self._client.put_events(Entries=entries[first : first + MAX_ENTRIES])
            failures.extend(parse_put_events(response, first))
        return failures
