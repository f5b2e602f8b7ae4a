"""One comparison: a workload (scenario or trace) replayed under several policies, scored."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar, cast

from queue_autoscale.core import DEFAULT_EVALUATION_INTERVAL_SECONDS, Decision, QueueSettings
from queue_autoscale.core.jump import tick_queue_at
from queue_autoscale.ingest.lateness import EVENTS_BATCHING_WINDOW_SECONDS
from queue_autoscale.sim.arrivals import ArrivalError, Counts, read_trace, scenario
from queue_autoscale.sim.engine import RunResult, run_policy
from queue_autoscale.sim.peers import StaticPolicy
from queue_autoscale.sim.policies import CorePolicy, initial_workers, make_policy, sim_settings
from queue_autoscale.sim.scores import Score, score
from queue_autoscale.sim.workload import FleetSpec, Workload, build_workload

Progress = Callable[[str, int, int], None]
"""progress(policy, done_seconds, total_seconds)."""

PROCESSES_ENV = "QUEUE_AUTOSCALE_SIM_PROCESSES"
"""Environment variable: how many processes the simulator's independent runs use (default: the
machine's cores; 1 runs everything in this process)."""

_Item = TypeVar("_Item")
_Result = TypeVar("_Result")
_task: Callable[[Any], Any] | None = None
"""The function the forked workers of parallel_map call (inherited at fork, never pickled)."""
_in_worker = False


def sim_processes() -> int:
    """Processes for independent runs: $QUEUE_AUTOSCALE_SIM_PROCESSES, else the cores (>= 1)."""
    raw = os.environ.get(PROCESSES_ENV, "").strip()
    if raw:
        try:
            return max(1, int(raw))
        except ValueError:
            raise ArrivalError(f"{PROCESSES_ENV} = {raw!r}: give a whole number >= 1") from None
    return max(1, os.cpu_count() or 1)


def _mark_worker() -> None:
    global _in_worker  # noqa: PLW0603 - per-process flag: a worker never forks workers of its own
    _in_worker = True


def _run_task(item: object) -> object:
    assert _task is not None
    return _task(item)


def _workers(items: int, processes: int | None = None) -> int:
    """Processes parallel_map forks for `items` items (<= 1: it runs them here)."""
    if _in_worker or "fork" not in multiprocessing.get_all_start_methods():
        return 1
    return min(items, sim_processes() if processes is None else max(1, processes))


def parallel_map(
    function: Callable[[_Item], _Result],
    items: Iterable[_Item],
    processes: int | None = None,
    done: Callable[[int], None] | None = None,
) -> list[_Result]:
    """[function(item) for item in items], the items spread over forked processes.

    Each run is deterministic given its inputs (its own seeded generators), so the results
    are those of the serial loop, in order. `function` and what it closes over (workloads of
    millions of jobs) reach the workers by fork, not by pickling; only items and results are
    pickled. Serial with one process or one item, inside a worker, or where fork is missing.
    `done(index)` is called in this process as each result arrives, in order.
    """
    work = list(items)
    results: list[_Result] = []
    count = _workers(len(work), processes)
    if count <= 1:
        for index, item in enumerate(work):
            results.append(function(item))
            if done is not None:
                done(index)
        return results
    global _task  # noqa: PLW0603 - handed to the forked workers (a closure cannot be pickled)
    previous, _task = _task, function
    try:
        context = multiprocessing.get_context("fork")
        with context.Pool(count, initializer=_mark_worker) as pool:
            for index, result in enumerate(pool.imap(_run_task, work, chunksize=1)):
                results.append(cast(_Result, result))
                if done is not None:
                    done(index)
            return results
    finally:
        _task = previous


@dataclass(frozen=True, slots=True)
class RunSpec:
    """Everything but the arrivals: the queue, the fleet and the controllers' settings."""

    sla_seconds: float = 30.0
    service_seconds: float = 1.0
    service_cv: float = 1.0
    service_distribution: str = "gamma"
    concurrency: int = 1
    provision_delay_seconds: int = 60
    provision_jitter_seconds: float = 0.0
    """Each new worker lands a further uniform 0..this many seconds later (seeded by `seed`)."""
    interval_seconds: int = int(DEFAULT_EVALUATION_INTERVAL_SECONDS)
    """Our controller's evaluation interval (the evaluate function's default)."""
    percentile: float = 0.999
    min_workers: int = 1
    max_workers: int = 1000
    seed: int = 0
    warmup_seconds: int = 600
    cloudwatch_lag_seconds: int = 60
    cloudwatch_age: bool = True
    short_window_seconds: int = 60
    partitions: int | None = None
    """Kafka: the topic's partitions, one consumer per worker: the partition cap (None: none)."""
    prefetch: int | None = None
    """RabbitMQ: each worker's prefetch count, >= concurrency (None: a shared FIFO, as SQS)."""
    counter_delay_seconds: int = 0
    """Seconds of the newest counters a tick does not see yet (`FleetSpec`'s, >= 0)."""
    first_tick_seconds: int = 0
    """Seconds from time 0 to the first tick (`FleetSpec`'s, >= 0)."""
    jump_lateness_seconds: int | None = EVENTS_BATCHING_WINDOW_SECONDS
    """Seconds the record path counts an arrival after it, for our controller's jump ticks
    (`FleetSpec`'s, >= 0): the events queue's batching window, as the stack deployed with its
    defaults (JumpTicks true). None: clock ticks only (JumpTicks false). At an interval of a
    minute or more the stack has no tick queue for jump ticks to travel on, so `fleet` reads
    None there whatever this says."""

    def __post_init__(self) -> None:
        checks: dict[str, tuple[bool, object, str]] = {  # option: (ok, value, the bound)
            "sla": (self.sla_seconds > 0, self.sla_seconds, "> 0 s"),
            "service-time": (self.service_seconds > 0, self.service_seconds, "> 0 s"),
            "service-cv": (self.service_cv >= 0, self.service_cv, ">= 0"),
            "concurrency": (self.concurrency >= 1, self.concurrency, ">= 1"),
            "provision-delay": (
                self.provision_delay_seconds >= 0,
                self.provision_delay_seconds,
                ">= 0 s",
            ),
            "provision-jitter": (
                self.provision_jitter_seconds >= 0,
                self.provision_jitter_seconds,
                ">= 0 s",
            ),
            "interval": (self.interval_seconds >= 1, self.interval_seconds, ">= 1 s"),
            "percentile": (0 < self.percentile < 1, self.percentile, "between 0 and 1, exclusive"),
            "min-workers": (
                0 <= self.min_workers <= self.max_workers,
                self.min_workers,
                f"0..--max-workers ({self.max_workers})",
            ),
            "max-workers": (self.max_workers >= 1, self.max_workers, ">= 1"),
            "short-window": (
                1 <= self.short_window_seconds <= 300,
                self.short_window_seconds,
                "1..300 s",
            ),
            "partitions": (
                self.partitions is None or self.partitions >= 1,
                self.partitions,
                ">= 1",
            ),
            "prefetch": (
                self.prefetch is None or self.prefetch >= self.concurrency,
                self.prefetch,
                f">= --concurrency ({self.concurrency})",
            ),
            "counter-delay": (
                self.counter_delay_seconds >= 0,
                self.counter_delay_seconds,
                ">= 0 s",
            ),
            "first-tick": (self.first_tick_seconds >= 0, self.first_tick_seconds, ">= 0 s"),
            "jump-lateness": (
                self.jump_lateness_seconds is None or self.jump_lateness_seconds >= 0,
                self.jump_lateness_seconds,
                ">= 0 s",
            ),
        }
        for name, (ok, value, bound) in checks.items():
            if not ok:
                raise ArrivalError(f"--{name} = {value}: out of range (must be {bound})")

    def fleet(self) -> FleetSpec:
        """The engine's fleet spec."""
        return FleetSpec(
            service_mean_seconds=self.service_seconds,
            service_cv=self.service_cv,
            service_distribution=self.service_distribution,
            concurrency=self.concurrency,
            provision_delay_seconds=self.provision_delay_seconds,
            provision_jitter_seconds=self.provision_jitter_seconds,
            jitter_seed=self.seed,
            max_workers=self.max_workers,
            cloudwatch_lag_seconds=self.cloudwatch_lag_seconds,
            cloudwatch_age=self.cloudwatch_age,
            short_window_seconds=self.short_window_seconds,
            partition_cap=self.partitions,
            prefetch=self.prefetch,
            counter_delay_seconds=self.counter_delay_seconds,
            first_tick_seconds=self.first_tick_seconds,
            jump_lateness_seconds=(
                self.jump_lateness_seconds if tick_queue_at(self.interval_seconds) else None
            ),
        )

    def settings(self) -> QueueSettings:
        """The queue settings every policy shares."""
        settings = sim_settings(
            sla_seconds=self.sla_seconds,
            service_seconds=self.service_seconds,
            concurrency=self.concurrency,
            provision_delay_seconds=self.provision_delay_seconds,
            interval_seconds=self.interval_seconds,
            percentile=self.percentile,
            min_workers=self.min_workers,
            max_workers=self.max_workers,
        )
        if self.partitions is not None:  # our controller knows the cap, as config.py gives it
            settings = replace(settings, partition_cap=self.partitions)
        return settings


def load_arrivals(
    scenario_name: str | None,
    trace: str | Path | None,
    scale: int = 1,
    start: int = 0,
    length: int | None = None,
    seed: int = 0,
) -> tuple[str, Counts]:
    """(label, per-second counts) from exactly one of a scenario or a trace file."""
    if (scenario_name is None) == (trace is None):
        raise ArrivalError("give exactly one of --scenario NAME or --trace FILE")
    if scenario_name is not None:
        return scenario_name, scenario(scenario_name).counts(seed=seed, length_seconds=length)
    assert trace is not None
    counts = read_trace(trace, scale=scale, start=start, length=length)
    label = f"{Path(trace).name} x{scale} [{start}s +{counts.size}s]"
    return label, counts


@dataclass(frozen=True, slots=True)
class Comparison:
    """The runs of one workload."""

    workload: Workload
    results: tuple[RunResult, ...]
    scores: tuple[Score, ...]
    decisions: dict[str, list[Decision]]
    """Each core policy's decision records, when asked for."""


def compare(
    label: str,
    counts: Counts,
    policies: Sequence[str],
    spec: RunSpec,
    progress: Progress | None = None,
    record_decisions: bool = False,
) -> Comparison:
    """Replay the same jobs (same arrivals, same service times) under every policy: arrivals
    drawn from `counts` behind the spec's warm-up, durations from its job-time distribution."""
    workload = build_workload(
        label, counts, spec.fleet(), seed=spec.seed, warmup_seconds=spec.warmup_seconds
    )
    return compare_workload(workload, policies, spec, progress, record_decisions)


def compare_workload(
    workload: Workload,
    policies: Sequence[str],
    spec: RunSpec,
    progress: Progress | None = None,
    record_decisions: bool = False,
    settings: QueueSettings | None = None,
    start_workers: int | None = None,
) -> Comparison:
    """Replay `workload`'s jobs (each with its own arrival and duration) under every policy;
    the spec gives everything else (its warm-up and job-time distribution are the
    workload's business, not read here). `settings`: a queue's own (from its config) instead
    of the spec's. `start_workers`: the fleet every adaptive policy starts with (a replay's
    recorded fleet), instead of one sized for the first five minutes' rate."""
    fleet = spec.fleet()
    settings = spec.settings() if settings is None else settings
    counts = workload.counts[workload.warmup_seconds :]
    warm_rate = float(counts[:300].mean()) if counts.size else 0.0
    serial = _workers(len(policies)) <= 1

    def run(name: str) -> tuple[RunResult, list[Decision] | None]:
        policy = make_policy(name, settings, counts, record_decisions)
        start = initial_workers(policy, settings, warm_rate)
        if start_workers is not None and not isinstance(policy, StaticPolicy):
            start = start_workers

        def tick(done: int, total: int) -> None:
            if progress is not None and serial:  # a forked run cannot draw this process's bar
                progress(name, done, total)

        result = run_policy(workload, policy, fleet, start, tick)
        recorded = policy.decisions if isinstance(policy, CorePolicy) else None
        return result, recorded if record_decisions else None

    def finished(index: int) -> None:
        if progress is not None and not serial:
            horizon = workload.horizon_seconds
            progress(policies[index], horizon, horizon)

    outcomes = parallel_map(run, policies, done=finished)
    # a forked run returns its own copy of the workload: share this one
    results = [replace(result, workload=workload) for result, _ in outcomes]
    scores = [score(result, spec.sla_seconds) for result in results]
    decisions = {
        name: recorded
        for name, (_, recorded) in zip(policies, outcomes, strict=True)
        if recorded is not None
    }
    return Comparison(workload, tuple(results), tuple(scores), decisions)
