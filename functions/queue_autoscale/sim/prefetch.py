"""Workers with a prefetch buffer (RabbitMQ's basic.qos): the engine's delivery model when
`FleetSpec.prefetch` is set, instead of one shared FIFO.

"Prefetch" here is the total a worker holds, running jobs included (`basic.qos`); the worker
runtime's `prefetch` (worker/settings.py) counts the messages held beyond its concurrency, so a
runtime worker with concurrency k and prefetch p is a prefetch of k + p here."""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable


class Buffers:
    """Workers with a prefetch: each holds up to `prefetch` unacked jobs, works on `k` of them.

    The broker delivers the next job to the worker whose earliest credit frees first (a credit
    is a held job's completion); the job starts on that worker when one of its k slots frees,
    even if another worker is idle by then. With prefetch == k this is the shared FIFO.
    """

    def __init__(self, prefetch: int, k: int) -> None:
        if prefetch < k:
            raise ValueError(f"prefetch {prefetch} is below the concurrency {k}")
        self.prefetch, self.k = prefetch, k
        self.slots: list[list[float]] = []  # per worker: heap of its slots' free times
        self.alive: list[bool] = []
        self.credits: list[tuple[float, int]] = []  # (time a delivery credit frees, worker)
        self.pending_starts: list[float] = []  # heap: start times of delivered, unstarted jobs
        self.order: deque[tuple[float, float]] = deque()  # (start, arrival) in delivery order

    def start(self, at: float) -> None:
        worker = len(self.slots)
        self.slots.append([at] * self.k)
        self.alive.append(True)
        for _ in range(self.prefetch):
            heapq.heappush(self.credits, (at, worker))

    def stop(self, count: int, t: float) -> list[float]:
        """Stop the `count` workers whose held jobs finish soonest; they work through their
        buffers first (a graceful drain). Returns their busy slots' free times."""
        live = [w for w, up in enumerate(self.alive) if up]
        live.sort(key=lambda w: max(self.slots[w]))
        draining: list[float] = []
        for worker in live[:count]:
            self.alive[worker] = False
            draining.extend(free for free in self.slots[worker] if free > t)
        return draining

    def deliver(
        self,
        arrivals: list[float],
        service: list[float],
        i: int,
        n: int,
        t_next: float,
        append: Callable[[float], None],
    ) -> int:
        """Deliver jobs i.. that arrive and find a credit before `t_next`; return the new i."""
        credits, alive = self.credits, self.alive
        while i < n:
            while credits and not alive[credits[0][1]]:
                heapq.heappop(credits)  # a stopped worker's credits are gone
            if not credits:
                break
            a = arrivals[i]
            if a >= t_next:
                break
            free, worker = credits[0]
            delivered = a if a > free else free
            if delivered >= t_next:
                break
            slots = self.slots[worker]
            begin = delivered if delivered > slots[0] else slots[0]
            end = begin + service[i]
            heapq.heapreplace(slots, end)
            heapq.heapreplace(credits, (end, worker))
            append(begin)
            if begin >= t_next:
                heapq.heappush(self.pending_starts, begin)
            self.order.append((begin, a))
            i += 1
        return i

    def working(self, t: float) -> int:
        """Slots of live workers busy at `t` (stopped workers' slots are in `draining`)."""
        return sum(
            1
            for worker, up in enumerate(self.alive)
            if up
            for free in self.slots[worker]
            if free > t
        )

    def waiting(self, t: float) -> int:
        """Delivered jobs that have not started by `t`."""
        starts = self.pending_starts
        while starts and starts[0] <= t:
            heapq.heappop(starts)
        return len(starts)

    def oldest_arrival(self, t: float) -> float | None:
        """Arrival time of the oldest delivered job not started by `t` (None: none waits)."""
        order = self.order
        while order and order[0][0] <= t:
            order.popleft()
        return order[0][1] if order else None
