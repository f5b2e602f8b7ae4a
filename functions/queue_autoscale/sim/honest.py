"""Scores beyond one compliance number: how fast a policy sees a surge, the largest step it can
absorb, how many hours meet the target, how often it flaps, and its worst hours on many
variants of a real trace.

Definitions (times in seconds, rates in jobs/s):

- a **surge** starts at a minute whose mean arrival rate is at least `SURGE_FACTOR` times the
  mean of the five minutes before it and above it by `SURGE_SIGMAS` standard deviations of
  Poisson noise; surges less than `SURGE_GAP_SECONDS` apart count once;
- **detection latency**: from a surge's start to the policy's first scale-up after it (the mean
  over the surges; inf when it never scales up after one, as a fixed fleet);
- **absorbable step**: (R + S) / R with R = detection latency + provisioning delay and S the SLA:
  a fleet sized for lambda that sees k lambda serves the backlog of R seconds within the SLA only
  if the step k is at most about this;
- **hours meeting the target**: one-hour windows starting every `HOUR_STEP_SECONDS`, each
  scoring the jobs arriving in it; the share with compliance >= the target;
- **flaps**: scale-outs within (provisioning delay + 300 s) of the previous scale-in.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from queue_autoscale.sim.arrivals import Counts, minute_rates, read_trace
from queue_autoscale.sim.engine import RunResult, run_policy
from queue_autoscale.sim.policies import initial_workers, make_policy
from queue_autoscale.sim.runner import RunSpec, parallel_map
from queue_autoscale.sim.scores import FLAP_EXTRA_SECONDS, flaps
from queue_autoscale.sim.workload import build_workload

SURGE_FACTOR = 2.0
SURGE_SIGMAS = 3.0
SURGE_GAP_SECONDS = 600
HOUR_SECONDS = 3600
HOUR_STEP_SECONDS = 600
EXTRA_COLUMNS: tuple[str, ...] = (
    "detect s",
    "absorbable step",
    "hours meeting %",
    "flaps",
)
"""The extra columns `honest_scores` fills, in report order."""


def surge_starts(counts: Counts) -> list[int]:
    """Seconds (from the start of `counts`) at which surges begin, per the module's rule."""
    rate = minute_rates(counts)
    minutes = rate.size
    if counts.size < 6 * 60:
        return []
    starts: list[int] = []
    for m in range(5, minutes):
        before = float(rate[m - 5 : m].mean())
        noise = math.sqrt(max(before, 1.0 / 60.0) / 60.0)
        if rate[m] >= SURGE_FACTOR * before and rate[m] - before > SURGE_SIGMAS * noise:
            at = 60 * m
            if not starts or at - starts[-1] >= SURGE_GAP_SECONDS:
                starts.append(at)
    return starts


def detection_latency(desired: Sequence[int], surges: Sequence[int], offset: int) -> float:
    """Mean seconds from each surge (seconds after `offset` in `desired`) to the first rise of
    the desired count; NaN without surges, inf if the count never rises after one."""
    if not surges:
        return math.nan
    series = np.asarray(desired, dtype=np.int64)
    rises = np.flatnonzero(np.diff(series) > 0) + 1
    latencies = []
    for surge in surges:
        at = offset + surge
        later = rises[rises >= at]
        latencies.append(float(later[0] - at) if later.size else math.inf)
    return float(np.mean(latencies))


def absorbable_step(detect_seconds: float, provision_seconds: float, sla_seconds: float) -> float:
    """(R + S) / R with R = detection + provisioning; inf when R is 0, NaN when unknown, 1 when
    the policy never reacts (it absorbs no step beyond the fleet it has)."""
    reaction = detect_seconds + provision_seconds
    if math.isnan(reaction):
        return math.nan
    if math.isinf(reaction):
        return 1.0
    return math.inf if reaction <= 0 else (reaction + sla_seconds) / reaction


def hourly_compliance(result: RunResult, sla_seconds: float) -> npt.NDArray[np.float64]:
    """Compliance of the jobs arriving in each one-hour window of the scored part (windows
    start every `HOUR_STEP_SECONDS`; a window with no jobs scores 1)."""
    w = result.workload
    first = int(w.counts[: w.warmup_seconds].sum())
    arrivals = w.arrivals[first:] - w.warmup_seconds
    starts = result.starts[first:]
    ok = ~np.isnan(starts) & (starts - w.arrivals[first:] <= sla_seconds)
    duration = w.horizon_seconds - w.warmup_seconds
    if duration < HOUR_SECONDS or arrivals.size == 0:
        return np.array([float(ok.mean()) if ok.size else 1.0])
    cum_ok = np.concatenate([[0], np.cumsum(ok)])
    out = []
    for lo in range(0, duration - HOUR_SECONDS + 1, HOUR_STEP_SECONDS):
        a, b = np.searchsorted(arrivals, [lo, lo + HOUR_SECONDS])
        out.append(float(cum_ok[b] - cum_ok[a]) / (b - a) if b > a else 1.0)
    return np.asarray(out)


def run_flaps(result: RunResult, spec: RunSpec) -> int:
    """The run's flaps: scale-outs within the provisioning lead + `FLAP_EXTRA_SECONDS` (s) of a
    scale-in, counted after the warm-up."""
    window = spec.provision_delay_seconds + FLAP_EXTRA_SECONDS
    return flaps(result.series.desired, result.workload.warmup_seconds, window)


def honest_scores(result: RunResult, spec: RunSpec, target: float) -> dict[str, float]:
    """The extra scores of one run, keyed by `EXTRA_COLUMNS`."""
    w = result.workload
    scored = w.counts[w.warmup_seconds :]
    detect = detection_latency(result.series.desired, surge_starts(scored), w.warmup_seconds)
    hours = hourly_compliance(result, spec.sla_seconds)
    return {
        "detect s": detect,
        "absorbable step": absorbable_step(detect, spec.provision_delay_seconds, spec.sla_seconds),
        "hours meeting %": 100.0 * float(np.mean(hours >= target)),
        "flaps": float(run_flaps(result, spec)),
    }


@dataclass(frozen=True, slots=True)
class Variant:
    """One seeded window of the NASA trace: where it starts and how it is scaled."""

    start: int
    scale: int


def nasa_variants(
    total_seconds: int, count: int, length: int, seed: int, scales: Sequence[int] = (5, 10, 20)
) -> list[Variant]:
    """`count` windows of `length` seconds at seeded starts in the trace and seeded scales."""
    rng = np.random.default_rng(seed)
    starts = rng.integers(0, max(1, total_seconds - length), size=count)
    picked = rng.choice(np.asarray(scales), size=count)
    return [Variant(int(s), int(k)) for s, k in zip(starts, picked, strict=True)]


def worst_decile(
    trace: str,
    total_seconds: int,
    policies: Sequence[str],
    spec: RunSpec,
    count: int,
    length: int = HOUR_SECONDS,
    progress: Callable[[int], None] | None = None,
) -> dict[str, float]:
    """Per policy: the 10th percentile of hourly compliance over `count` seeded NASA windows."""
    hours: dict[str, list[float]] = {name: [] for name in policies}
    settings = spec.settings()
    fleet = spec.fleet()

    def run(indexed: tuple[int, Counts]) -> dict[str, list[float]]:
        index, counts = indexed
        workload = build_workload(
            "nasa", counts, fleet, seed=spec.seed + index, warmup_seconds=spec.warmup_seconds
        )
        warm = float(counts[:300].mean()) if counts.size else 0.0
        compliance: dict[str, list[float]] = {}
        for name in policies:
            policy = make_policy(name, settings, counts)
            result = run_policy(workload, policy, fleet, initial_workers(policy, settings, warm))
            compliance[name] = hourly_compliance(result, spec.sla_seconds).tolist()
        return compliance

    variants = nasa_variants(total_seconds, count, length, spec.seed)
    # read here, once: the trace's parse is cached in this process, not in the forked workers
    windows = [read_trace(trace, scale=v.scale, start=v.start, length=length) for v in variants]
    tick = None if progress is None else (lambda index: progress(index + 1))
    for compliance in parallel_map(run, enumerate(windows), done=tick):
        for name, values in compliance.items():
            hours[name] += values
    return {name: float(np.percentile(values, 10)) for name, values in hours.items()}
