"""Conservation under load, at CI size: 20,000 events (1% malformed in 16 ways, 1%
duplicated) through record_events against the embedded emulator, in SQS batches of 10
messages x 1..100 events. benchmarks/ingest_conservation.py runs the same logic at 1M.
"""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.ingest_conservation import (
    MALFORMED_KINDS,
    QUEUES,
    problems,
    run,
    unique_valid_ids,
)

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("moto")]

EVENTS = 20_000


def test_every_event_is_accepted_once_or_rejected_with_its_reason(
    clients: Any, suffix: str
) -> None:
    # GIVEN 20,000 units: valid events, 1% malformed items, 1% duplicates, junk bodies
    # WHEN they go through the handler 10 messages an invocation
    result = run(clients, EVENTS, suffix)
    plan, seen = result.plan, result.seen

    # THEN the workload held what it should (so the checks below check something)
    assert plan.sent == EVENTS
    assert 150 <= plan.duplicates <= 250
    assert set(plan.malformed) == {kind for kind, _ in MALFORMED_KINDS}
    # AND accepted + rejected = sent; the archive is exact after de-duplication; the
    # counters over-count by exactly the duplicates; each rejection names its kind
    assert seen.archived + seen.dead_letters == plan.sent
    assert seen.dead_letters == sum(plan.malformed.values())
    assert seen.without_reason == 0
    assert seen.kinds == plan.malformed
    assert seen.archived_unique == unique_valid_ids(EVENTS)
    assert seen.counted - len(seen.archived_unique) == plan.duplicates
    assert result.totals.failed_records == 0
    # AND metrics carry only allowlisted queues (or "unknown") as their dimension
    assert result.totals.dimensions <= {*QUEUES, "unknown"}
    assert problems(result, seen.archived_unique) == []


def test_the_checker_catches_a_lost_event(clients: Any, suffix: str) -> None:
    # GIVEN a small clean run
    result = run(clients, 2_000, suffix)
    expected = unique_valid_ids(2_000)
    assert problems(result, expected) == []

    # WHEN one archived event goes missing and one rejection loses its reason
    lost = next(iter(expected))
    result.seen.archived_unique.discard(lost)
    result.seen.archived -= 1
    result.seen.without_reason += 1

    # THEN the checker names each break
    found = problems(result, expected)
    assert any(text.startswith("accepted + rejected") for text in found)
    assert any(text.startswith("DLQ messages without a reason") for text in found)
    assert "archived event_ids differ from the valid events sent" in found
