"""What a simulation replays: the fleet's parameters (`FleetSpec`) and the jobs (`Workload`,
drawn by `build_workload` from per-second arrival counts, or given job by job to
`jobs_workload`). Times are seconds."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from queue_autoscale.sim.arrivals import ArrivalError, Counts, arrival_times, service_times

Floats = npt.NDArray[np.float64]

SCALE_IN_DRAIN = "drain"
"""Stopped workers finish their jobs first (the default: graceful drain)."""
SCALE_IN_KILL = "kill"
"""Stopped workers are chosen at random and their jobs are interrupted (no protection, no drain)."""

DEFAULT_BASE_EPOCH = 1_767_225_600
"""2026-01-01T00:00:00Z: epoch second of the simulation's time 0 (the start of the warm-up)."""


@dataclass(frozen=True, slots=True)
class FleetSpec:
    """The worker fleet and the measurement delays; times are seconds."""

    service_mean_seconds: float = 1.0
    service_cv: float = 1.0
    service_distribution: str = "gamma"
    concurrency: int = 1
    """Jobs one worker runs at once."""
    provision_delay_seconds: int = 60
    """From the policy's decision until a new worker takes jobs (Fargate start + app init)."""
    provision_jitter_seconds: float = 0.0
    """Each new worker takes a further uniform 0..this many seconds (ECS start-up is a fixed
    delay plus a spread, not exponential); drawn from `jitter_seed`, so runs repeat."""
    jitter_seed: int = 0
    max_workers: int = 1000
    """A hard ceiling the engine enforces whatever a policy asks for (an account quota)."""
    drain_limit_seconds: int = 3600
    """After the last arrival, keep going at most this long for the queue to empty."""
    cloudwatch_lag_seconds: int = 60
    """A 1-minute CloudWatch datapoint is readable this long after its minute ends."""
    base_epoch: int = DEFAULT_BASE_EPOCH
    cloudwatch_age: bool = True
    """Give the controller CloudWatch's ApproximateAgeOfOldestMessage (as evaluate does); False
    leaves only the counters' estimate (a diagnostic)."""
    short_window_seconds: int = 60
    """The short arrival-rate window of the controller's snapshot (the long one is 300 s)."""
    partition_cap: int | None = None
    """Kafka: workers beyond this many hold no partition and sit idle (billed, serving nothing);
    scale-in stops idle workers first."""
    prefetch: int | None = None
    """RabbitMQ: each worker holds up to this many unacked jobs (>= concurrency); a job
    delivered to a busy worker waits in its buffer, even while another worker is free. None:
    one shared FIFO (SQS)."""
    counter_delay_seconds: int = 0
    """The counters of the last this many seconds are not yet written when a tick reads them
    (events late by the producer's flush and the events queue's batching window): the worst
    case of that lateness, whole seconds missing rather than part of each."""
    first_tick_seconds: int = 0
    """Seconds from time 0 to the policies' first tick; they tick every interval from there (a
    replay ticks at the recorded controller's phase, where its first arrival's second and its
    first tick are seconds apart). No policy acts before it."""
    jump_lateness_seconds: int | None = None
    """Seconds after an arrival the record path has counted it (its batching window): a policy
    with a `jumped` test is also ticked at the second the arrivals it has counted since its last
    tick jump (`core/jump.py`). None: clock ticks only."""


@dataclass(frozen=True, slots=True)
class Workload:
    """Jobs to replay: a warm-up prefix (not scored) followed by the scored window."""

    name: str
    counts: Counts
    """Per-second arrivals including the warm-up prefix."""
    warmup_seconds: int
    arrivals: Floats
    """Arrival time of every job, seconds from time 0, sorted."""
    service: Floats
    """Duration of every job, seconds (the same job gets the same duration under every policy)."""

    @property
    def horizon_seconds(self) -> int:
        """Seconds of arrivals, warm-up included."""
        return int(self.counts.size)

    @property
    def scored_jobs(self) -> int:
        """Jobs arriving after the warm-up."""
        return int(self.counts[self.warmup_seconds :].sum())


def build_workload(
    name: str,
    counts: Counts,
    fleet: FleetSpec,
    seed: int = 0,
    warmup_seconds: int = 600,
) -> Workload:
    """Draw arrival instants and service times for `counts` behind a warm-up prefix.

    The warm-up arrives at the mean rate of the first five minutes, so every policy starts the
    scored window with a full five-minute rate history and a fleet it has already settled.
    """
    rng = np.random.default_rng(seed)
    head = counts[:300]
    warm_rate = float(head.mean()) if head.size else 0.0
    warm = rng.poisson(warm_rate, size=warmup_seconds).astype(np.int64)
    full = np.concatenate([warm, counts.astype(np.int64)])
    arrivals = arrival_times(full, rng)
    service = service_times(
        arrivals.size, fleet.service_mean_seconds, fleet.service_cv, rng, fleet.service_distribution
    )
    return Workload(name, full, warmup_seconds, arrivals, service)


def jobs_workload(
    name: str,
    arrivals: npt.ArrayLike,
    durations: npt.ArrayLike,
    warmup_seconds: int = 0,
) -> Workload:
    """Recorded jobs as they are: job j arrives at `arrivals[j]` (seconds from time 0) and
    occupies a job slot for `durations[j]` seconds, under every policy.

    Each row is one attempt: a retried job is one row per attempt, each arriving at its own
    queued time. Rows are put in arrival order (ties keep their given order: FIFO). The first
    `warmup_seconds` of arrivals are replayed but not scored. Raises ArrivalError naming the
    first bad row (a time or duration that is negative, NaN or infinite).
    """
    times = np.asarray(arrivals, dtype=np.float64).reshape(-1)
    service = np.asarray(durations, dtype=np.float64).reshape(-1)
    check_jobs(times, service)
    order = np.argsort(times, kind="stable")
    times, service = times[order], service[order]
    seconds = np.floor(times).astype(np.int64)
    horizon = max(warmup_seconds, int(seconds[-1]) + 1 if seconds.size else 0)
    counts = np.bincount(seconds, minlength=horizon).astype(np.int64)
    return Workload(name, counts, warmup_seconds, times, service)


def check_jobs(arrivals: Floats, durations: Floats) -> None:
    """Raise ArrivalError naming the first job (0-based, in the given order) whose arrival or
    duration is negative, NaN or infinite, or when the two counts differ."""
    if arrivals.size != durations.size:
        raise ArrivalError(f"{arrivals.size:,} arrival times but {durations.size:,} durations")
    for label, values in (("arrival", arrivals), ("duration", durations)):
        bad = np.flatnonzero(~np.isfinite(values) | (values < 0))
        if bad.size:
            row = int(bad[0])
            raise ArrivalError(
                f"job {row}: {label} = {values[row]!r} s: must be a finite number >= 0"
            )
