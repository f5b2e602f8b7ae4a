"""The discrete-event engine: a FIFO queue served by a fleet that a policy resizes.

Time advances one second at a time; inside a second, jobs start in exact event order with the
Kiefer-Wolfowitz recursion on a heap of worker-slot free times (a job starts at
max(its arrival, the earliest free slot)), so the per-job cost is one `heapreplace`.
A policy is called every `interval_seconds` from `FleetSpec.first_tick_seconds` (0 unless a
replay keeps its recorded phase); the fleet only changes at those ticks, and a new
worker's slots enter the heap with free time = its ready time, so provisioning needs no events.

Scale-in cancels workers still provisioning first (newest first), then stops ready workers with
the soonest-free slots; a busy worker finishes its job and then exits (ECS's SIGTERM + drain, as
`queue_autoscale.worker` does). A policy whose `scale_in` is "kill" has its platform stop workers
chosen at random instead, busy or not, with no drain: every busy slot stopped is an interrupted
job (its work is lost; the redelivery after the visibility timeout is not replayed, so the harm
counted is a lower bound).
"""

from __future__ import annotations

import bisect
import heapq
import math
import random
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, cast

import numpy as np
import numpy.typing as npt

from queue_autoscale.core import (
    CounterRow,
    OldestAge,
    QueueSnapshot,
    RateWindows,
    Readings,
    build_snapshot,
)
from queue_autoscale.core.snapshot import counter_lookback_seconds
from queue_autoscale.sim.prefetch import Buffers
from queue_autoscale.sim.workload import SCALE_IN_DRAIN, SCALE_IN_KILL, FleetSpec, Floats, Workload

Ints = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class Datapoint:
    """One published 1-minute CloudWatch datapoint (values sampled at the minute's last second,
    age as the minute's maximum, as SQS and ECS report them)."""

    minute_start: float
    """Epoch seconds."""
    visible: int
    in_flight: int
    running: int
    oldest_age_seconds: float


class Policy(Protocol):
    """A scaling policy as the engine drives it."""

    name: str
    interval_seconds: int
    """How often `decide` is called (the policy's own polling or evaluation period)."""

    def decide(self, view: FleetView) -> int:
        """The desired worker count at `view.now`."""
        ...


class JumpPolicy(Policy, Protocol):
    """A policy the record path may also tick between its clock ticks (`core/jump.py`)."""

    def jumped(self, counted: Ints, since: int, until: int) -> bool:
        """Whether the arrivals counted over seconds [since, until) (`counted` cumulative, from
        time 0) jump past what its last tick at second `since` sized on."""
        ...

    def decide_jump(self, view: FleetView) -> int:
        """The desired worker count at a jump tick."""
        ...


@dataclass(slots=True)
class Series:
    """Per-second state at the end of each second (index = second from time 0)."""

    visible: list[int] = field(default_factory=list)
    in_flight: list[int] = field(default_factory=list)
    running: list[int] = field(default_factory=list)
    pending: list[int] = field(default_factory=list)
    billed: list[int] = field(default_factory=list)
    """Workers billed during the second (ready, provisioning and draining)."""
    desired: list[int] = field(default_factory=list)
    oldest_age: list[float] = field(default_factory=list)


@dataclass(slots=True)
class RunResult:
    """What one policy did with one workload."""

    policy: str
    workload: Workload
    starts: Floats
    """Start (pickup) time of every job, NaN if never started."""
    end_seconds: int
    """When the run stopped, seconds from time 0."""
    series: Series
    scaling_actions: int
    """Changes of the desired count after the warm-up."""
    ticks: int
    wall_seconds: float
    concurrency: int = 1
    """Job slots per worker."""
    interrupted: int = 0
    """Jobs whose worker was stopped under them (only under a "kill" scale-in)."""
    interrupted_after_warmup: int = 0
    """The same, counted from the end of the warm-up."""
    lead_seconds: int = 0
    """The fleet's provisioning delay, s (a flap is a scale-out within it + 5 min of a
    scale-in, `sim.scores.flaps`)."""


class FleetView:
    """What a policy can read at a tick: live SQS/ECS attributes, the per-second counters the
    ingest function writes, and CloudWatch's published 1-minute datapoints."""

    def __init__(self, engine: _Engine) -> None:
        self._engine = engine

    @property
    def now(self) -> float:
        """Epoch seconds."""
        return float(self._engine.fleet.base_epoch + self._engine.t)

    @property
    def elapsed_seconds(self) -> int:
        """Seconds since time 0 (the start of the warm-up)."""
        return self._engine.t

    @property
    def visible(self) -> int:
        """Jobs waiting (ApproximateNumberOfMessages): with a prefetch, the broker's ready
        messages plus those waiting in workers' buffers (as the RabbitMQ source reads them)."""
        e = self._engine
        return int(e.cum[min(e.t, e.horizon)]) - e.i + e.buffered()

    @property
    def in_flight(self) -> int:
        """Jobs started and not finished (ApproximateNumberOfMessagesNotVisible)."""
        return self._engine.in_flight()

    @property
    def running(self) -> int:
        """Workers taking jobs (ECS runningCount)."""
        return self._engine.ready_workers

    @property
    def pending(self) -> int:
        """Workers ordered but not yet taking jobs (ECS pendingCount)."""
        return len(self._engine.pending)

    @property
    def desired(self) -> int:
        """The desired count last set."""
        return self._engine.desired

    def counter_rows(self, window_seconds: int = 300) -> list[CounterRow]:
        """The load table's counter items for the seconds before now that saw any event."""
        return self._engine.counter_rows(window_seconds)

    @property
    def delayed(self) -> int:
        """Jobs sent with a delay (ApproximateNumberOfMessagesDelayed): the simulator has none."""
        return 0

    @property
    def deployment_in_progress(self) -> bool:
        """The simulated service never rolls a deployment."""
        return False

    def oldest_age(self) -> OldestAge | None:
        """CloudWatch's latest published age-of-oldest datapoint and its lag (None: none yet,
        or the fleet is set to give the controller no CloudWatch age)."""
        latest = self.cloudwatch(1) if self._engine.fleet.cloudwatch_age else []
        if not latest:
            return None
        point = latest[-1]
        return OldestAge(point.oldest_age_seconds, self.now - (point.minute_start + 60.0))

    def snapshot(self, queue: str = "sim", sla_seconds: float = 0.0) -> QueueSnapshot:
        """The snapshot our evaluate function builds at this tick, by the same builder, from
        counters over the same lookback (which grows with `sla_seconds`)."""
        rows = self.counter_rows(counter_lookback_seconds(sla_seconds))
        readings = Readings(
            depth=self, oldest_age=self.oldest_age(), fleet=self, dlq_depth=0, rows=rows
        )
        windows = RateWindows(short_seconds=float(self._engine.fleet.short_window_seconds))
        return build_snapshot(queue, self.now, readings, windows)

    def cloudwatch(self, count: int) -> list[Datapoint]:
        """The latest `count` 1-minute datapoints published by now, oldest first."""
        return self._engine.datapoints(count)


class _Engine:
    """Mutable run state; `run_policy` is the public entry point."""

    def __init__(
        self,
        workload: Workload,
        fleet: FleetSpec,
        initial_workers: int,
        scale_in: str = SCALE_IN_DRAIN,
    ) -> None:
        if scale_in not in (SCALE_IN_DRAIN, SCALE_IN_KILL):
            raise ValueError(f"scale_in {scale_in!r}: choose {SCALE_IN_DRAIN} or {SCALE_IN_KILL}")
        self.scale_in = scale_in
        self.rng = random.Random(workload.arrivals.size)  # the same stops for the same workload
        self.interrupted = 0
        self.interrupted_after_warmup = 0
        self.workload = workload
        self.fleet = fleet
        self.k = fleet.concurrency
        self.horizon = workload.horizon_seconds
        self.cum: Ints = np.concatenate([[0], np.cumsum(workload.counts)]).astype(np.int64)
        self.n = int(workload.arrivals.size)
        self.t = 0
        self.i = 0  # jobs started so far (FIFO: exactly jobs 0 .. i-1)
        self.flushed = 0  # jobs whose start is already in the counters
        self.starts: list[float] = []
        self.heap: list[float] = []  # free time of every ready worker's slots
        self.pending: deque[float] = deque()  # ready-at time of workers being provisioned
        self.draining: list[float] = []  # free time of stopped workers' busy slots
        self.ready_workers = 0
        self.desired = 0
        tail = math.ceil(float(workload.service.max())) if self.n else 0
        size = self.horizon + fleet.drain_limit_seconds + tail + 3
        self.started_c = np.zeros(size, dtype=np.int64)
        self.completed_c = np.zeros(size, dtype=np.int64)
        self.busy_ms_c = np.zeros(size, dtype=np.int64)
        self.pickup_ms_c = np.zeros(size, dtype=np.int64)
        self.series = Series()
        self.rows: list[CounterRow] = []  # settled counter rows, oldest first (see counter_rows)
        self.row_seconds: list[int] = []  # their epoch seconds, for bisect
        self.settled = 0  # rows exist for every active second before this one
        self.jitter = np.random.default_rng(fleet.jitter_seed)
        self.idle = 0  # ready workers beyond the partition cap: no slots, no jobs
        self.buffers = Buffers(fleet.prefetch, self.k) if fleet.prefetch else None
        if self.buffers is not None and scale_in == SCALE_IN_KILL:
            raise ValueError("a prefetch fleet drains its buffers on scale-in: no kill mode")
        self._set_fleet(initial_workers, ready_now=True)
        self.desired = initial_workers

    # -- fleet ---------------------------------------------------------------------------
    def tick(self, policy: Policy, view: FleetView, *, scored: bool, jump: bool = False) -> int:
        """Ask `policy` for the size at second `t` (at a jump tick, `jump`) and set the fleet to
        it; returns 1 for a scaling action to count (`scored`: after the warm-up), else 0."""
        t = self.t
        self.draining = [free for free in self.draining if free > t]
        decide = cast("JumpPolicy", policy).decide_jump if jump else policy.decide
        wanted = max(0, min(int(decide(view)), self.fleet.max_workers))
        if wanted == self.desired:
            return 0
        self._set_fleet(wanted)
        self.desired = wanted
        return 1 if scored else 0

    def _set_fleet(self, desired: int, ready_now: bool = False) -> None:
        t = float(self.t)
        current = self.ready_workers + len(self.pending)
        if desired > current:
            delay = 0.0 if ready_now else float(self.fleet.provision_delay_seconds)
            spread = 0.0 if ready_now else self.fleet.provision_jitter_seconds
            for _ in range(desired - current):
                extra = float(self.jitter.uniform(0.0, spread)) if spread > 0 else 0.0
                if delay + extra <= 0:
                    self._make_ready(t)
                else:  # kept sorted by ready time: the soonest lands first, the last is cancelled
                    bisect.insort(self.pending, t + delay + extra)
            return
        remove = current - desired
        while remove and self.pending:
            self.pending.pop()  # cancel the order furthest from ready first
            remove -= 1
        idle = min(remove, self.idle)  # idle workers (no partition) go first: they hold nothing
        self.idle -= idle
        self.ready_workers -= idle
        remove -= idle
        if self.scale_in == SCALE_IN_KILL:
            self._kill(remove, t)
        elif self.buffers is not None:
            self.draining.extend(self.buffers.stop(remove, t))
            self.ready_workers -= remove
        else:
            heap = self.heap
            for _ in range(remove):
                for _ in range(self.k):
                    free = heapq.heappop(heap)
                    if free > t:
                        self.draining.append(free)
                self.ready_workers -= 1

    def _kill(self, remove: int, t: float) -> None:
        """Stop `remove` ready workers picked at random; each busy slot is an interrupted job."""
        heap = self.heap
        for _ in range(min(remove, self.ready_workers)):
            for _ in range(self.k):
                index = self.rng.randrange(len(heap))
                free = heap[index]
                heap[index] = heap[-1]
                heap.pop()
                if free > t:
                    self.interrupted += 1
                    if t >= self.workload.warmup_seconds:
                        self.interrupted_after_warmup += 1
            self.ready_workers -= 1
        heapq.heapify(heap)

    def _make_ready(self, at: float) -> None:
        cap = self.fleet.partition_cap
        self.ready_workers += 1
        if cap is not None and self.ready_workers - self.idle > cap:
            self.idle += 1  # no partition left for it: it polls and gets nothing
        elif self.buffers is not None:
            self.buffers.start(at)
        else:
            for _ in range(self.k):
                heapq.heappush(self.heap, at)

    def busy_slots(self, t: float) -> int:
        """Job slots working at `t`, stopped workers' included."""
        if self.buffers is not None:
            busy = self.buffers.working(t)
        else:
            busy = sum(1 for free in self.heap if free > t)
        return busy + sum(1 for free in self.draining if free > t)

    def in_flight(self) -> int:
        return self.busy_slots(self.t)

    def buffered(self) -> int:
        """Jobs delivered to a worker's prefetch buffer and not started (0 without prefetch)."""
        return self.buffers.waiting(self.t) if self.buffers is not None else 0

    # -- counters ------------------------------------------------------------------------
    def _flush(self) -> None:
        lo, hi = self.flushed, self.i
        if hi <= lo:
            return
        w = self.workload
        starts = np.asarray(self.starts[lo:hi], dtype=np.float64)
        arrivals = w.arrivals[lo:hi]
        durations = w.service[lo:hi]
        _add(self.started_c, np.floor(starts).astype(np.int64), None)
        _add(self.pickup_ms_c, np.floor(starts).astype(np.int64), (starts - arrivals) * 1000.0)
        done = np.floor(starts + durations).astype(np.int64)
        _add(self.completed_c, done, None)
        _add(self.busy_ms_c, done, durations * 1000.0)
        self.flushed = hi

    def counter_rows(self, window_seconds: int) -> list[CounterRow]:
        """The counter rows of seconds [t - window, t - counter delay) that saw any event,
        oldest first.

        After a flush at t every job started before t is counted, and later jobs start (and
        finish) at t or after, so a second before t never changes again: its row is built once,
        kept, and shared by every later tick (a tick builds only its interval's new rows).
        """
        self._flush()
        t = self.t
        self._settle_rows(t)
        lo = self.fleet.base_epoch + max(0, t - window_seconds)
        hi = self.fleet.base_epoch + t - self.fleet.counter_delay_seconds
        seconds = self.row_seconds
        return self.rows[bisect.bisect_left(seconds, lo) : bisect.bisect_left(seconds, hi)]

    def _settle_rows(self, t: int) -> None:
        """Build the rows of seconds [settled, t) (final once flushed at t)."""
        lo = self.settled
        if t <= lo:
            return
        queued = self.workload.counts[lo : min(t, self.horizon)]
        started = self.started_c[lo:t]
        completed = self.completed_c[lo:t]
        busy = self.busy_ms_c[lo:t]
        pickup = self.pickup_ms_c[lo:t]
        q = np.zeros(t - lo, dtype=np.int64)
        q[: queued.size] = queued
        active = np.flatnonzero(q + started + completed)
        base = self.fleet.base_epoch + lo
        seconds = (active + base).tolist()
        self.rows.extend(
            CounterRow(second=second, queued=a, started=b, completed=c, busy_ms=d, pickup_ms=e)
            for second, a, b, c, d, e in zip(
                seconds,
                q[active].tolist(),
                started[active].tolist(),
                completed[active].tolist(),
                busy[active].tolist(),
                pickup[active].tolist(),
                strict=True,
            )
        )
        self.row_seconds.extend(seconds)
        self.settled = t

    def datapoints(self, count: int) -> list[Datapoint]:
        # Minute m covers seconds [60m, 60m + 60) and is readable from 60m + 60 + lag.
        published = (self.t - self.fleet.cloudwatch_lag_seconds) // 60
        first = max(0, published - count)
        s = self.series
        points = []
        for m in range(first, published):
            last = 60 * m + 59
            if last >= len(s.visible):
                break
            points.append(
                Datapoint(
                    minute_start=float(self.fleet.base_epoch + 60 * m),
                    visible=s.visible[last],
                    in_flight=s.in_flight[last],
                    running=s.running[last],
                    oldest_age_seconds=max(s.oldest_age[60 * m : last + 1]),
                )
            )
        return points


def _add(target: Ints, index: Ints, weights: Floats | None) -> None:
    lo = int(index.min())
    binned = np.bincount(index - lo, weights=weights)
    if weights is not None:
        binned = np.rint(binned)
    target[lo : lo + binned.size] += binned.astype(np.int64)


def run_policy(
    workload: Workload,
    policy: Policy,
    fleet: FleetSpec,
    initial_workers: int,
    progress: Callable[[int, int], None] | None = None,
) -> RunResult:
    """Replay `workload` under `policy`; every job ends served, in service or still waiting.

    `progress(done_seconds, total_seconds)` is called about every simulated hour.
    """
    started_wall = time.perf_counter()
    e = _Engine(
        workload,
        fleet,
        min(initial_workers, fleet.max_workers),
        getattr(policy, "scale_in", SCALE_IN_DRAIN),
    )
    view = FleetView(e)
    arrivals: list[float] = workload.arrivals.tolist()
    service: list[float] = workload.service.tolist()
    starts = e.starts
    append = starts.append
    replace = heapq.heapreplace
    n, horizon, cum = e.n, e.horizon, e.cum
    interval = max(1, int(policy.interval_seconds))
    phase = max(0, fleet.first_tick_seconds)
    stop_at = horizon + fleet.drain_limit_seconds
    warmup = workload.warmup_seconds
    s = e.series
    actions = ticks = busy = 0
    i = 0
    t = 0
    jumped = getattr(policy, "jumped", None) if fleet.jump_lateness_seconds is not None else None
    lateness = fleet.jump_lateness_seconds or 0
    last = -1  # the last tick's second
    while t < horizon or (i < n and t < stop_at):
        e.t, e.i = t, i
        if t >= phase and (t - phase) % interval == 0:
            ticks += 1
            actions += e.tick(policy, view, scored=t >= warmup)
            last = t
        elif (
            jumped is not None
            and 0 <= last < t - lateness
            and t <= horizon
            and jumped(cum, last, t - lateness)
        ):
            ticks += 1
            actions += e.tick(policy, view, scored=t >= warmup, jump=True)
            last = t
        t_next = t + 1
        pending = e.pending
        while pending and pending[0] < t_next:
            e._make_ready(pending.popleft())
        heap = e.heap
        if e.buffers is not None:
            i = e.buffers.deliver(arrivals, service, i, n, t_next, append)
        elif heap:
            while i < n:
                a = arrivals[i]
                if a >= t_next:
                    break
                free = heap[0]
                begin = a if a > free else free
                if begin >= t_next:
                    break
                append(begin)
                replace(heap, begin + service[i])
                i += 1
        waiting_from = int(cum[t_next if t_next < horizon else horizon])
        if e.buffers is None:
            s.visible.append(waiting_from - i)
            s.oldest_age.append(t_next - arrivals[i] if i < waiting_from else 0.0)
        else:  # buffered jobs wait too, and were delivered (so arrived) before the broker's head
            s.visible.append(waiting_from - i + e.buffers.waiting(t_next))
            head = e.buffers.oldest_arrival(t_next)
            if head is None and i < waiting_from:
                head = arrivals[i]
            s.oldest_age.append(t_next - head if head is not None else 0.0)
        if t_next % 60 == 0 or not s.in_flight:  # CloudWatch samples it once a minute
            busy = e.busy_slots(t_next)
        s.in_flight.append(busy)
        s.running.append(e.ready_workers)
        s.pending.append(len(pending))
        s.billed.append(e.ready_workers + len(pending) + _draining_workers(e.draining, t, e.k))
        s.desired.append(e.desired)
        t = t_next
        if progress is not None and t % 3600 == 0:
            progress(t, horizon)
    e.t, e.i = t, i
    result = np.full(n, np.nan)
    result[:i] = starts
    if progress is not None:
        progress(horizon, horizon)
    return RunResult(
        policy=policy.name,
        workload=workload,
        starts=result,
        end_seconds=t,
        series=s,
        scaling_actions=actions,
        ticks=ticks,
        wall_seconds=time.perf_counter() - started_wall,
        concurrency=fleet.concurrency,
        interrupted=e.interrupted,
        interrupted_after_warmup=e.interrupted_after_warmup,
        lead_seconds=fleet.provision_delay_seconds,
    )


def _draining_workers(draining: list[float], t: int, k: int) -> int:
    busy = sum(1 for free in draining if free > t)
    return math.ceil(busy / k)
