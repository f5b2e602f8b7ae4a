"""What one batch did."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class IngestResult:
    """What one batch did. `failed` maps message id -> why (those are redelivered)."""

    accepted: int = 0
    rejected: int = 0
    failed: dict[str, str] = field(default_factory=dict)
    archive_key: str | None = None
    counter_writes: int = 0
    accepted_by_queue: dict[str, int] = field(default_factory=dict)
    rejected_by_queue: dict[str, int] = field(default_factory=dict)
    jumps: list[str] = field(default_factory=list)
    """Queues this batch asked a jump tick for (`ingest.jumps`)."""
