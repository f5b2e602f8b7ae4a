"""Synthetic archives in the stack's layout (events/ and decisions/ as .jsonl.gz) for report tests.

`write_archive` writes a seeded run of one or two queues: Poisson-ish arrivals with a daily
cycle, a fleet that follows the load with a short lag, and one surge a day that breaches the
SLA for a while, so every chart and table has something to show.
"""

from __future__ import annotations

import gzip
import json
import math
import random
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path


@dataclass(frozen=True)
class SyntheticQueue:
    """One queue of a synthetic archive (rates jobs/s, times seconds)."""

    name: str
    sla_seconds: float
    percentile: float
    base_rate: float
    mean_job_seconds: float


QUEUES = (
    SyntheticQueue("orders", 30.0, 0.95, 0.08, 2.0),
    SyntheticQueue("emails", 60.0, 0.90, 0.04, 4.0),
)


def config_json(queues: tuple[SyntheticQueue, ...] = QUEUES) -> str:
    """The project's queue config for these queues."""
    return json.dumps(
        {
            "queues": [
                {"queue": q.name, "sla_seconds": q.sla_seconds, "percentile": q.percentile}
                for q in queues
            ]
        }
    )


def _write(path: Path, records: list[dict[str, object]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.writelines(json.dumps(record) + "\n" for record in records)


def write_archive(
    root: Path,
    start: float,
    seconds: float,
    *,
    queues: tuple[SyntheticQueue, ...] = QUEUES,
    tick_seconds: float = 60.0,
    rate_scale: float = 1.0,
    seed: int = 5,
) -> dict[str, int]:
    """Write events and decisions for `seconds` from `start` (epoch s); return jobs per queue."""
    generator = random.Random(seed)
    events: dict[Path, list[dict[str, object]]] = {}
    decisions: dict[Path, list[dict[str, object]]] = {}
    jobs: dict[str, int] = {}
    for queue in queues:
        at, index = start, 0
        while True:
            day_phase = math.sin(2 * math.pi * ((at - start) % 86_400) / 86_400)
            rate = queue.base_rate * rate_scale * (1.0 + 0.6 * day_phase)
            at += generator.expovariate(max(rate, 1e-6))
            if at >= start + seconds:
                break
            surge = (at - start) % 86_400 < min(1_800.0, seconds / 3)
            wait = generator.expovariate(1 / (queue.sla_seconds * (1.2 if surge else 0.15)))
            duration = generator.expovariate(1 / queue.mean_job_seconds)
            job = f"{queue.name}-{index}"
            index += 1
            for kind, moment in (
                ("queued", at),
                ("started", at + wait),
                ("completed", at + wait + duration),
            ):
                record: dict[str, object] = {
                    "type": kind,
                    "queue": queue.name,
                    "job_id": job,
                    "at": int(moment * 1000),
                    "attempt": 1,
                    "event_id": f"{job}-{kind}",
                }
                if kind == "completed":
                    record["duration_ms"] = int(duration * 1000)
                stamp = datetime.fromtimestamp(moment, UTC)
                key = root / "events" / f"dt={stamp:%Y-%m-%d}" / f"hour={stamp:%H}" / "b.jsonl.gz"
                events.setdefault(key, []).append(record)
        jobs[queue.name] = index
        tick = start
        while tick < start + seconds:
            rate = queue.base_rate * rate_scale
            workers = max(1, math.ceil(rate * queue.mean_job_seconds * 1.5))
            stamp = datetime.fromtimestamp(tick, UTC)
            key = root / "decisions" / f"dt={stamp:%Y-%m-%d}" / f"t{int(tick) // 3600}.jsonl.gz"
            decisions.setdefault(key, []).append(
                {
                    "queue": queue.name,
                    "at": tick,
                    "current": workers,
                    "target": workers,
                    "action": "hold",
                    "running": workers,
                    "arrival_rate": rate,
                    "load_ratio": 0.6,
                    "sla_seconds": queue.sla_seconds,
                    "percentile": queue.percentile,
                }
            )
            tick += tick_seconds
    for path, records in {**events, **decisions}.items():
        _write(path, records)
    return jobs
