"""A replay's figure: arrivals, each policy's fleet next to "as run", and pickup p95 over time
(per minute; per few seconds for a replay shorter than four hours)."""

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
POINTS = 240
"""A short replay is drawn in bins of horizon / this many seconds (at most a minute)."""


def _p95_per_bin(arrivals: Floats, pickups: Floats, bins: int, width: int) -> np.ndarray[Any, Any]:
    """Per bin of `width` seconds of arrival: the 95th percentile pickup of the jobs arriving in
    it, s (NaN: none arrived)."""
    out = np.full(bins, np.nan)
    minute = (arrivals // width).astype(np.int64)
    order = np.argsort(minute, kind="stable")
    minute, pickups = minute[order], pickups[order]
    edges = np.searchsorted(minute, np.arange(bins + 1))
    for m in range(bins):
        lo, hi = edges[m], edges[m + 1]
        if hi > lo:
            out[m] = np.percentile(pickups[lo:hi], P95)
    return out


def plot_replay(replay: Replay, path: str | Path, sla_seconds: float) -> Path:
    """Write a PNG: arrivals/s, workers (each policy billed, and "as run"), pickup p95 (s)."""
    comparison = replay.comparison
    w = comparison.workload
    width = int(min(60, max(1, w.horizon_seconds // POINTS)))
    unit, scale = ("hours", 3600.0) if width == 60 else ("minutes", 60.0)
    figure, axes = plt.subplots(3, 1, figsize=(11, 9), sharex=True)
    arrivals = _per_minute(w.counts.tolist(), "mean", width)
    bins = max(1, arrivals.size)
    x = np.arange(bins) * width / scale
    axes[0].plot(x[: arrivals.size], arrivals, color="black", linewidth=0.8)
    axes[0].set_ylabel("arrivals (jobs/s)")
    for result in comparison.results:
        workers = _per_minute(result.series.billed, "mean", width)
        axes[1].plot(np.arange(workers.size) * width / scale, workers, linewidth=0.8)
        waited = np.where(
            np.isnan(result.starts), result.end_seconds - w.arrivals, result.starts - w.arrivals
        )
        p95 = _p95_per_bin(w.arrivals, waited, bins, width)
        axes[2].plot(x, p95, linewidth=0.8, label=result.policy)
    if replay.as_run_fleet is not None:
        fleet = _per_minute(replay.as_run_fleet, "mean", width)
        axes[1].plot(np.arange(fleet.size) * width / scale, fleet, color="black", linestyle="--")
    if replay.as_run_pickups is not None:
        arrived, pickups = replay.as_run_pickups
        p95 = _p95_per_bin(arrived, pickups, bins, width)
        axes[2].plot(x, p95, color="black", linewidth=1.2, linestyle="--", label=AS_RUN)
    axes[1].set_ylabel("workers")
    axes[2].set_ylabel("pickup p95 (s)")
    axes[2].axhline(sla_seconds, color="red", linestyle=":", linewidth=0.8, label="SLA")
    axes[2].set_xlabel(f"{unit} from the first arrival ({width} s bins)")
    axes[2].legend(loc="upper left", fontsize=8, ncol=4)
    figure.suptitle(w.name)
    figure.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=110, format="png")
    plt.close(figure)
    return out
