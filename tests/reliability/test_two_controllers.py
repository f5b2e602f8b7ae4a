"""Two controllers at once: two evaluate runtimes (own clients) tick the same queues at the
same moment on threads against the emulator. Both read the STATE item before either writes
(a barrier per queue on PutItem makes the race real every time); the conditional write lets exactly
one win per queue and tick, only the winner calls UpdateService, the loser reports the
conflict and backs off.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from queue_autoscale.adapters.aws import make_clients
from queue_autoscale.adapters.dynamodb import STATE_SK, queue_pk
from queue_autoscale.controller import tick
from tests.integration.conftest import REGION, Endpoint
from tests.reliability.faults import CallLog
from tests.reliability.worlds import MAX_WORKERS, NOW, Fleet

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("moto")]

TICKS = 4
WRITE_GAP_SECONDS = 0.2
"""Between the two controllers' state writes once both have read, s (see `wait_for_rival`)."""


def test_only_one_controller_acts_per_queue_and_tick(
    kit: Any, clients: Any, endpoint: Endpoint
) -> None:
    # GIVEN two backlogged queues and two controllers with their own clients
    fleet = Fleet.create(kit, clients)
    controllers = []
    updates = []
    owns = []
    for _ in range(2):
        own = make_clients(endpoint_url=endpoint.url, region_name=REGION)
        updates.append(CallLog("UpdateService").install(own.ecs))
        controllers.append(fleet.runtime(own))
        owns.append(own)
    # Both controllers reach each queue's state write only after both have read it. One
    # barrier per queue: a tick writes its queues' states concurrently on its own pool, so a
    # single barrier could pair one controller's two queues and let it write before its rival
    # has read (the race would then not happen, and both would win).
    barriers = {pk: threading.Barrier(2, timeout=30) for pk in map(queue_pk, fleet.queues)}

    def wait_for_rival(params: dict[str, Any], **_: Any) -> None:
        item = params.get("Item", {})
        if item.get("sk", {}).get("S") == STATE_SK and barriers[item["pk"]["S"]].wait() == 0:
            # both have read; send the writes one after the other: DynamoDB's conditional
            # write is atomic, moto's server checks and stores on two threads without a lock
            # (both writes won, [False, False], in a fresh-clone make test)
            time.sleep(WRITE_GAP_SECONDS)

    for own in owns:
        own.dynamodb.meta.events.register("provide-client-params.dynamodb.PutItem", wait_for_rival)

    # WHEN both tick at the same moments, a few times
    results: list[tick.QueueOutcome] = []
    with ThreadPoolExecutor(max_workers=2) as pool:
        for index in range(TICKS):
            now = NOW + 30.0 * index
            pair = list(pool.map(tick.run_tick, controllers, [now, now]))
            results.extend(outcome for ticks in pair for outcome in ticks)
            for queue in fleet.queues:
                outcomes = [next(o for o in ticks if o.queue == queue) for ticks in pair]
                # THEN for each queue exactly one controller won the state, the other backed off
                assert sorted(o.conflict for o in outcomes) == [False, True], outcomes
                loser = next(o for o in outcomes if o.conflict)
                assert not loser.applied
                # AND the state moved by exactly one version per tick
                assert fleet.state_version(queue) == index + 1

    # AND UpdateService was called at most once per queue and tick, never above max
    calls = Counter(call["service"] for log in updates for call in log.calls)
    for queue in fleet.queues:
        assert 1 <= calls[queue] <= TICKS
        assert fleet.desired(queue) <= MAX_WORKERS
    applied = Counter(o.queue for o in results if o.applied)
    assert applied == calls
