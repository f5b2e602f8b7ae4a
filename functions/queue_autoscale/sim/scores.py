"""Scores of one run: SLA compliance, pickup percentiles, worker-seconds, utilization, cost,
the jobs interrupted by scale-in, flaps and task starts.

- a **flap** is a scale-out (a rise of the desired count) within the provisioning lead plus
  `FLAP_EXTRA_SECONDS` (5 min) after the last scale-in;
- a **task start** is a worker launched (each bills a provisioning lead and starts cold); a
  start cancelled before it was ready still counts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from queue_autoscale.core.constraints import REVISIT_SECONDS
from queue_autoscale.sim.engine import RunResult
from queue_autoscale.sim.workload import Floats

FARGATE_VCPU_HOUR_USD = 0.04048
"""AWS Fargate, Linux/x86, us-east-1, per vCPU-hour (on-demand)."""
FARGATE_GB_HOUR_USD = 0.004445
"""AWS Fargate, Linux/x86, us-east-1, per GB-hour of memory (on-demand)."""
TASK_VCPU = 0.5
TASK_MEMORY_GB = 1.0
TASK_HOUR_USD = TASK_VCPU * FARGATE_VCPU_HOUR_USD + TASK_MEMORY_GB * FARGATE_GB_HOUR_USD
"""One worker task (0.5 vCPU, 1 GB) for an hour: $0.024685."""
PRICE_NOTE = (
    f"Fargate us-east-1 Linux/x86 on-demand: ${FARGATE_VCPU_HOUR_USD}/vCPU-h, "
    f"${FARGATE_GB_HOUR_USD}/GB-h; task {TASK_VCPU:g} vCPU + {TASK_MEMORY_GB:g} GB = "
    f"${TASK_HOUR_USD:.6f}/task-hour"
)


FLAP_EXTRA_SECONDS = REVISIT_SECONDS
"""A flap: a scale-out within the lead plus this (s) of a scale-in (the same window the core's
re-order confirmation reads, core/constraints.py)."""


@dataclass(frozen=True, slots=True)
class Score:
    """One policy on one workload, over the scored window (after the warm-up)."""

    policy: str
    workload: str
    jobs: int
    served: int
    """Jobs picked up and finished by the end of the run."""
    in_service: int
    """Jobs picked up and still running when the run ended."""
    waiting: int
    """Jobs never picked up (counted as SLA misses)."""
    sla_seconds: float
    sla_compliance: float
    """Share of jobs picked up within the SLA, 0..1."""
    p50_pickup_seconds: float
    p99_pickup_seconds: float
    max_pickup_seconds: float
    worker_seconds: float
    busy_seconds: float
    """Job-seconds of work done in the window (k jobs at once on a worker count k times)."""
    utilization: float
    """busy_seconds / (worker_seconds x concurrency): the share of job slots in use."""
    scaling_actions: int
    cost_usd: float
    mean_workers: float
    peak_workers: int
    duration_seconds: int
    wall_seconds: float
    interrupted_jobs: int = 0
    """Jobs whose worker was stopped under them by a scale-in (0 when stopped workers drain)."""
    flaps: int = 0
    """Scale-outs within the lead + 5 min of a scale-in, after the warm-up."""
    task_starts: int = 0
    """Workers launched after the warm-up."""

    @property
    def hours(self) -> float:
        """The scored window, hours."""
        return self.duration_seconds / 3600.0

    @property
    def task_starts_per_hour(self) -> float:
        """Workers launched per hour of the scored window."""
        return self.task_starts / self.hours

    @property
    def flaps_per_hour(self) -> float:
        """Flaps per hour of the scored window."""
        return self.flaps / self.hours

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe."""
        return asdict(self)

    def cells(self) -> dict[str, str]:
        """The score as table text, one format per column for every table that shows it (the
        `simulate` / `bench` console table and policy_quality.md's markdown)."""
        return {
            "policy": self.policy,
            "jobs": f"{self.jobs:,}",
            "within SLA": f"{self.sla_compliance:.4%}",
            "p50 pickup s": f"{self.p50_pickup_seconds:.2f}",
            "p99 pickup s": f"{self.p99_pickup_seconds:.2f}",
            "max pickup s": f"{self.max_pickup_seconds:.1f}",
            "worker-s": f"{self.worker_seconds:,.0f}",
            "busy-s": f"{self.busy_seconds:,.0f}",
            "utilization": f"{self.utilization:.3f}",
            "actions": str(self.scaling_actions),
            "interrupted": f"{self.interrupted_jobs:,}",
            "flaps": f"{self.flaps:,}",
            "starts/h": f"{self.task_starts_per_hour:,.1f}",
            "peak workers": str(self.peak_workers),
            "cost $": f"{self.cost_usd:.2f}",
            "wall s": f"{self.wall_seconds:.1f}",
        }


@dataclass(frozen=True, slots=True)
class Spent:
    """What a run paid for its pickups: the fleet's worker-seconds and what it did with them."""

    worker_seconds: float
    busy_seconds: float
    """Job-seconds of work done."""
    concurrency: int
    duration_seconds: int
    peak_workers: int
    scaling_actions: int
    flaps: int
    task_starts: int


def build_score(  # noqa: PLR0913 - keyword-only: the record's inputs, each named
    *,
    policy: str,
    workload: str,
    sla_seconds: float,
    pickup: Floats,
    started: npt.NDArray[np.bool_],
    in_service: int,
    spent: Spent,
    wall_seconds: float = 0.0,
    interrupted_jobs: int = 0,
) -> Score:
    """The one builder of a Score (a simulated run's and a recorded one's "as run"): `pickup`
    per job, s (a job never `started` waited that long so far and counts as a miss)."""
    jobs = int(pickup.size)
    picked = int(np.count_nonzero(started))
    within = int(np.count_nonzero(started & (pickup <= sla_seconds)))
    work = spent.worker_seconds
    return Score(
        policy=policy,
        workload=workload,
        jobs=jobs,
        served=picked - in_service,
        in_service=in_service,
        waiting=jobs - picked,
        sla_seconds=sla_seconds,
        sla_compliance=within / jobs if jobs else 1.0,
        p50_pickup_seconds=_pct(pickup, 50),
        p99_pickup_seconds=_pct(pickup, 99),
        max_pickup_seconds=float(pickup.max()) if jobs else 0.0,
        worker_seconds=work,
        busy_seconds=spent.busy_seconds,
        utilization=spent.busy_seconds / (work * spent.concurrency) if work > 0 else 0.0,
        scaling_actions=spent.scaling_actions,
        cost_usd=work / 3600.0 * TASK_HOUR_USD,
        mean_workers=work / spent.duration_seconds,
        peak_workers=spent.peak_workers,
        duration_seconds=spent.duration_seconds,
        wall_seconds=wall_seconds,
        interrupted_jobs=interrupted_jobs,
        flaps=spent.flaps,
        task_starts=spent.task_starts,
    )


def score(result: RunResult, sla_seconds: float) -> Score:
    """Score a run; every scored arrival is served, in service or waiting."""
    w = result.workload
    warm = w.warmup_seconds
    end = result.end_seconds
    first = int(w.counts[:warm].sum())
    arrivals = w.arrivals[first:]
    starts = result.starts[first:]
    durations = w.service[first:]
    started = ~np.isnan(starts)
    pickup = np.where(started, starts - arrivals, end - arrivals)  # waiting: age so far
    finish = starts + durations
    in_service = int(np.count_nonzero(started & (finish > end)))
    billed = np.asarray(result.series.billed[warm:end], dtype=np.float64)
    all_starts = result.starts
    ok = ~np.isnan(all_starts)
    begin = np.clip(all_starts[ok], warm, end)
    stop = np.clip(all_starts[ok] + w.service[ok], warm, end)
    spent = Spent(
        worker_seconds=float(billed.sum()),
        busy_seconds=float((stop - begin).sum()),
        concurrency=result.concurrency,
        duration_seconds=max(1, end - warm),
        peak_workers=int(billed.max()) if billed.size else 0,
        scaling_actions=result.scaling_actions,
        flaps=flaps(result.series.desired, warm, result.lead_seconds + FLAP_EXTRA_SECONDS),
        task_starts=task_starts(result, warm),
    )
    return build_score(
        policy=result.policy,
        workload=w.name,
        sla_seconds=sla_seconds,
        pickup=pickup,
        started=started,
        in_service=in_service,
        spent=spent,
        wall_seconds=result.wall_seconds,
        interrupted_jobs=result.interrupted_after_warmup,
    )


def scores_at(result: RunResult, slas: Sequence[float]) -> dict[float, Score]:
    """The run's score at each SLA (s): scored once; only the compliance depends on the SLA."""
    if not slas:
        return {}
    first = score(result, slas[0])
    w = result.workload
    start = int(w.counts[: w.warmup_seconds].sum())
    starts = result.starts[start:]
    pickup = starts - w.arrivals[start:]  # NaN (never picked up) is within no SLA
    jobs = int(pickup.size)
    out = {slas[0]: first}
    for sla in slas[1:]:
        within = int(np.count_nonzero(pickup <= sla))
        compliance = within / jobs if jobs else 1.0
        out[sla] = replace(first, sla_seconds=sla, sla_compliance=compliance)
    return out


def flaps(desired: Sequence[int], start: int, window_seconds: float) -> int:
    """Scale-outs (from second `start`) within `window_seconds` after the last scale-in."""
    series = np.asarray(desired[start:], dtype=np.int64)
    change = np.diff(series)
    count = 0
    last_in = -math.inf
    for second in np.flatnonzero(change):
        if change[second] < 0:
            last_in = float(second)
        elif second - last_in <= window_seconds:
            count += 1
    return count


def task_starts(result: RunResult, start: int) -> int:
    """Workers launched from second `start` on: the rises of ready + provisioning workers (in
    one second a policy's tick either launches or stops, and a worker becoming ready moves from
    one to the other)."""
    s = result.series
    ordered = np.asarray(s.running, dtype=np.int64) + np.asarray(s.pending, dtype=np.int64)
    rises = np.diff(ordered[max(0, start - 1) :])
    return int(rises[rises > 0].sum())


def _pct(values: np.ndarray[Any, np.dtype[np.float64]], q: float) -> float:
    if values.size == 0:
        return 0.0
    value = float(np.percentile(values, q))
    return value if math.isfinite(value) else float("inf")
