"""A replay: recorded jobs (a job trace or the archive) under every policy, next to "as run".

`simulate --jobs FILE` and `simulate --archive DIR --queue Q` build a `ReplayInput` here and run
it through `runner.compare_workload`, the same per-tick loop as every other simulation.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from queue_autoscale.config import QueueConfig, load_config
from queue_autoscale.core import Decision, QueueSettings
from queue_autoscale.sim.archive import Recorded, read_archive
from queue_autoscale.sim.arrivals import ArrivalError
from queue_autoscale.sim.as_run import (
    AS_RUN,
    Fidelity,
    as_run_score,
    fidelity,
    fleet_series,
    median_tick_gap,
    realized_lead,
    recorded_seconds,
    within_one,
)
from queue_autoscale.sim.jobs import JobTrace
from queue_autoscale.sim.runner import Comparison, Progress, RunSpec, compare_workload
from queue_autoscale.sim.scores import Score
from queue_autoscale.sim.workload import FleetSpec, Floats


@dataclass(frozen=True, slots=True)
class ReplayInput:
    """What a replay runs: the jobs, the spec and the queue's own settings if known."""

    trace: JobTrace
    spec: RunSpec
    settings: QueueSettings | None = None
    recorded: Recorded | None = None
    """The archive's account of the window (None for a plain job trace)."""


@dataclass(frozen=True, slots=True)
class Replay:
    """The comparison plus, for an archive, the "as run" row and the simulator's fidelity."""

    comparison: Comparison
    start_epoch: int
    as_run: Score | None = None
    as_run_fleet: list[int] | None = None
    """Workers per second from `start_epoch`, as the decision log shows them."""
    as_run_pickups: tuple[Floats, Floats] | None = None
    """(arrival s from `start_epoch`, realized pickup s; a job never started waited to the end)."""
    fidelity: Fidelity | None = None

    @property
    def scores(self) -> tuple[Score, ...]:
        """Every simulated row, then "as run" when there is one."""
        extra = (self.as_run,) if self.as_run is not None else ()
        return self.comparison.scores + extra


def queue_config(path: Path, queue: str) -> QueueConfig:
    """The config of `queue` in a queues config file (the stack's QueuesConfig JSON)."""
    return pick_queue(load_config(path), queue, f"--config {path}")


def pick_queue(configs: Sequence[QueueConfig], queue: str, source: str) -> QueueConfig:
    """The config of `queue` among `configs` read from `source`."""
    for config in configs:
        if config.queue == queue:
            return config
    names = ", ".join(c.queue for c in configs)
    raise ArrivalError(f"{source}: no queue {queue!r} in it (queues: {names})")


def replay_spec(
    spec: RunSpec, trace: JobTrace, config: QueueConfig | None, interval: float | None
) -> tuple[RunSpec, QueueSettings | None]:
    """The spec for replaying `trace`: no warm-up (recorded jobs are all scored), the mean job
    time measured from the trace, and, with a queue config, its SLA, percentile, fleet bounds,
    concurrency and provisioning lead; `interval`: the recorded controller's tick gap, s."""
    durations = trace.durations
    mean = float(durations.mean()) if durations.size else spec.service_seconds
    spec = replace(spec, warmup_seconds=0, service_seconds=max(mean, 1e-3))
    if interval is not None:
        spec = replace(spec, interval_seconds=max(1, round(interval)))
    if config is None:
        return spec, None
    spec = replace(
        spec,
        sla_seconds=config.sla_seconds,
        percentile=config.percentile,
        min_workers=config.min_workers,
        max_workers=config.max_workers,
        concurrency=config.effective_concurrency,
        provision_delay_seconds=math.ceil(config.provisioning_lead_seconds),
    )
    return spec, config.settings(evaluation_interval_seconds=spec.interval_seconds)


def archive_input(
    archive: Path,
    queue: str,
    window: tuple[float | None, float | None],
    spec: RunSpec,
    config: QueueConfig | None,
) -> ReplayInput:
    """Read `queue`'s window from the archive; the replay ticks as the recorded controller did."""
    recorded = read_archive(archive, queue, window[0], window[1], seed=spec.seed)
    spec, settings = replay_spec(spec, recorded.trace, config, median_tick_gap(recorded.ticks))
    spec = replace(spec, first_tick_seconds=recorded_phase(recorded, spec.interval_seconds))
    lead = realized_lead(recorded, spec.concurrency)
    if lead is not None:  # the world's lead as recorded; the controller keeps its configured one
        spec = replace(spec, provision_delay_seconds=math.ceil(lead))
    return ReplayInput(recorded.trace, spec, settings, recorded)


def recorded_phase(recorded: Recorded, interval: int) -> int:
    """Seconds from the replay's time 0 (its first arrival's second) to its first tick: the
    recorded controller's first tick there, less whole intervals, to the nearest second. A
    controller that ticks 2 s into a step has seen 2 s more of it than one at the step's
    second: in the demo's fivefold spike, 20 waiting jobs more. 0 without a decision log."""
    if not recorded.ticks or interval < 1:
        return 0
    offset = round(recorded.ticks[0].at - recorded.trace.start_epoch)
    return offset % interval


def recorded_start(recorded: Recorded) -> int | None:
    """The fleet the decision log shows at the first arrival: the last tick's workers at or
    before it, else the first tick's (None without a decision log)."""
    if not recorded.ticks:
        return None
    first = float(recorded.trace.arrivals.min()) if recorded.trace.arrivals.size else 0.0
    before = [tick for tick in recorded.ticks if tick.at <= first]
    return (before[-1] if before else recorded.ticks[0]).workers


def _ticks_within_one(
    recorded: Recorded,
    decisions: Mapping[str, Sequence[Decision]],
    start: int,
) -> float | None:
    """Share of the recorded ticks whose simulated target (the recorded policy's) is within
    +-1 worker, both in seconds from the replay's start (the log's epoch `start`, the
    simulation's `base_epoch`); None without simulated decisions."""
    simulated = decisions.get(recorded.policy)
    if not simulated:
        return None
    ours = [(tick.at - start, tick.target) for tick in recorded.ticks]
    base = FleetSpec().base_epoch
    return within_one(ours, [(float(d.at) - base, d.target) for d in simulated])


def run_replay(
    replay: ReplayInput,
    policies: Sequence[str],
    progress: Progress | None = None,
    record_decisions: bool = False,
) -> Replay:
    """Every policy on the recorded jobs; with the archive, "as run" and the fidelity."""
    start = replay.trace.start_epoch
    workload = replay.trace.workload(start)
    recorded = replay.recorded
    comparison = compare_workload(
        workload,
        policies,
        replay.spec,
        progress,
        record_decisions or recorded is not None,
        replay.settings,
        None if recorded is None else recorded_start(recorded),
    )
    if recorded is None:
        return Replay(comparison, start)
    spec = replay.spec
    as_run = as_run_score(
        recorded,
        spec.sla_seconds,
        spec.concurrency,
        spec.provision_delay_seconds,
        (start, recorded_seconds(recorded, start)),
    )
    seconds = max((r.end_seconds for r in comparison.results), default=0)
    fleet = fleet_series(recorded, start, seconds)
    ours = next((s for s in comparison.scores if s.policy == recorded.policy), None)
    gap = (
        fidelity(ours, as_run, _ticks_within_one(recorded, comparison.decisions, start))
        if ours is not None and replay.settings
        else None
    )
    arrived = recorded.trace.arrivals - start
    waited = np.where(
        np.isnan(recorded.pickups), recorded.end_epoch - recorded.trace.arrivals, recorded.pickups
    )
    return Replay(comparison, start, as_run, fleet, (arrived, waited), gap)


__all__ = ["AS_RUN", "Replay", "ReplayInput", "archive_input", "queue_config", "run_replay"]
