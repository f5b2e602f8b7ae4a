"""A replay's figure: arrivals, each policy's fleet next to "as run", and pickup p95 per minute."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from queue_autoscale.sim.as_run import AS_RUN
from queue_autoscale.sim.plot import _per_minute
from queue_autoscale.sim.replay import Replay
from queue_autoscale.sim.workload import Floats

P95 = 95.0


def _p95_per_minute(arrivals: Floats, pickups: Floats, minutes: int) -> np.ndarray[Any, Any]:
    """Per minute of arrival: the 95th percentile pickup of the jobs arriving in it, s (NaN:
    none arrived)."""
    out = np.full(minutes, np.nan)
    minute = (arrivals // 60).astype(np.int64)
    order = np.argsort(minute, kind="stable")
    minute, pickups = minute[order], pickups[order]
    edges = np.searchsorted(minute, np.arange(minutes + 1))
    for m in range(minutes):
        lo, hi = edges[m], edges[m + 1]
        if hi > lo:
            out[m] = np.percentile(pickups[lo:hi], P95)
    return out


def plot_replay(replay: Replay, path: str | Path, sla_seconds: float) -> Path:
    """Write a PNG: arrivals/s, workers (each policy billed, and "as run"), pickup p95 (s)."""
    comparison = replay.comparison
    w = comparison.workload
    figure, axes = plt.subplots(3, 1, figsize=(11, 9), sharex=True)
    arrivals = _per_minute(w.counts.tolist(), "mean")
    minutes = max(1, arrivals.size)
    hours = np.arange(arrivals.size) / 60.0
    axes[0].plot(hours, arrivals, color="black", linewidth=0.8)
    axes[0].set_ylabel("arrivals (jobs/s)")
    for result in comparison.results:
        workers = _per_minute(result.series.billed, "mean")
        axes[1].plot(np.arange(workers.size) / 60.0, workers, linewidth=0.8, label=result.policy)
        waited = np.where(
            np.isnan(result.starts), result.end_seconds - w.arrivals, result.starts - w.arrivals
        )
        p95 = _p95_per_minute(w.arrivals, waited, minutes)
        axes[2].plot(np.arange(minutes) / 60.0, p95, linewidth=0.8, label=result.policy)
    recorded = replay.as_run
    if recorded is not None and replay.as_run_fleet is not None:
        fleet = _per_minute(replay.as_run_fleet, "mean")
        x = np.arange(fleet.size) / 60.0
        axes[1].plot(x, fleet, color="black", linewidth=1.2, linestyle="--", label=AS_RUN)
    if replay.as_run_pickups is not None:
        arrived, pickups = replay.as_run_pickups
        p95 = _p95_per_minute(arrived, pickups, minutes)
        x = np.arange(minutes) / 60.0
        axes[2].plot(x, p95, color="black", linewidth=1.2, linestyle="--", label=AS_RUN)
    axes[1].set_ylabel("workers")
    axes[2].set_ylabel("pickup p95 (s)")
    axes[2].axhline(sla_seconds, color="red", linestyle=":", linewidth=0.8, label="SLA")
    axes[2].set_xlabel("hours from the first arrival")
    axes[1].legend(loc="upper left", fontsize=8, ncol=3)
    axes[2].legend(loc="upper left", fontsize=8, ncol=3)
    figure.suptitle(w.name)
    figure.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=110, format="png")
    plt.close(figure)
    return out
