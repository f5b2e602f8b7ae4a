"""One figure per comparison: arrivals, backlog, workers and pickup time per policy, per minute."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from queue_autoscale.sim.runner import Comparison


def _per_minute(
    values: list[int] | list[float], how: str, seconds: int = 60
) -> np.ndarray[Any, Any]:
    """Per-second `values` reduced ("max" or mean) over bins of `seconds` (a minute)."""
    data = np.asarray(values, dtype=np.float64)
    minutes = data.size // seconds
    if minutes == 0:
        return data
    grid = data[: minutes * seconds].reshape(minutes, seconds)
    reduced: np.ndarray[Any, Any] = grid.max(axis=1) if how == "max" else grid.mean(axis=1)
    return reduced


def _pickup_per_minute(comparison: Comparison, index: int, minutes: int) -> np.ndarray[Any, Any]:
    w = comparison.workload
    result = comparison.results[index]
    waited = np.where(
        np.isnan(result.starts), result.end_seconds - w.arrivals, result.starts - w.arrivals
    )
    minute = (w.arrivals // 60).astype(np.int64)
    worst = np.zeros(minutes)
    if minute.size:
        keep = minute < minutes
        np.maximum.at(worst, minute[keep], waited[keep])
    return worst


def plot(comparison: Comparison, path: str | Path, sla_seconds: float) -> Path:
    """Write a PNG: arrivals/s, backlog (max visible), workers (mean billed), worst pickup (s)."""
    w = comparison.workload
    figure, axes = plt.subplots(4, 1, figsize=(11, 11), sharex=True)
    arrivals = _per_minute(w.counts.tolist(), "mean")
    hours = np.arange(arrivals.size) / 60.0
    axes[0].plot(hours, arrivals, color="black", linewidth=0.8)
    axes[0].set_ylabel("arrivals (jobs/s)")
    for index, result in enumerate(comparison.results):
        backlog = _per_minute(result.series.visible, "max")
        workers = _per_minute(result.series.billed, "mean")
        x = np.arange(backlog.size) / 60.0
        axes[1].plot(x, backlog, linewidth=0.8, label=result.policy)
        axes[2].plot(x, workers, linewidth=0.8, label=result.policy)
        pickup = _pickup_per_minute(comparison, index, arrivals.size)
        axes[3].plot(hours, pickup, linewidth=0.8, label=result.policy)
    axes[1].set_ylabel("backlog (max visible)")
    axes[2].set_ylabel("workers (billed)")
    axes[2].set_yscale("symlog", linthresh=10.0)
    axes[1].set_yscale("symlog", linthresh=10.0)
    axes[3].set_ylabel("worst pickup (s)")
    axes[3].axhline(sla_seconds, color="red", linestyle="--", linewidth=0.8, label="SLA")
    axes[3].set_yscale("symlog", linthresh=1.0)
    axes[3].set_ylim(bottom=0.0)
    axes[3].set_xlabel(f"hours (first {w.warmup_seconds // 60} min: warm-up, not scored)")
    for axis in axes:
        axis.axvline(w.warmup_seconds / 3600.0, color="grey", linewidth=0.6, linestyle=":")
    axes[2].legend(loc="upper left", fontsize=8, ncol=3)
    figure.suptitle(w.name)
    figure.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=110, format="png")  # at `path` as given: no '.png' appended
    plt.close(figure)
    return out
