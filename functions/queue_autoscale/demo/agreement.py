"""The simulator fed the demo's own jobs: does it decide, serve and bill as the demo's world did?

The demo's archive is replayed as `queue-autoscale simulate --archive` replays it (each job's
own arrival and duration, the queue's config, the decision log's tick gap and starting fleet),
under `hybrid`, and compared with the run: the controller's targets tick by tick (the simulated
decision nearest in time, within +-1 worker), the share of jobs within the SLA, and billed
worker-seconds (both count a task from its order to its exit). The tolerance is the demo's own
run-to-run spread, measured by benchmarks/demo_agreement.py.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from queue_autoscale.config import QueueConfig


@dataclass(frozen=True)
class Tolerance:
    """How far two runs of the same jobs may be apart and still agree."""

    compliance_points: float
    """Percentage points of jobs within the SLA."""
    worker_seconds_share: float
    """Relative billed worker-seconds (0.1: 10 %)."""
    ticks_within_one: float
    """The least share of ticks whose targets are within +-1 worker."""


TOLERANCE = Tolerance(compliance_points=0.2, worker_seconds_share=0.08, ticks_within_one=0.8)
"""The spread of four `queue-autoscale demo` runs of the same jobs (a fifth, whose tick ran out
of its budget on the loaded machine, left out): all 100 % within the SLA (so one job, 0.2
points), billed worker-seconds 563..607 (8 % of the mean), targets within +-1 between two
runs on 80..92 % of ticks. benchmarks/results/demo_agreement.md has the runs and the command."""


@dataclass(frozen=True)
class Agreement:
    """The simulator on the demo's jobs, beside the demo."""

    compliance: float
    """Share of the simulated jobs picked up within the SLA, 0..1."""
    worker_seconds: float
    """Simulated billed worker-seconds."""
    ticks_within_one: float
    """Share of the demo's ticks whose simulated target is within +-1 worker."""
    compliance_points: float
    """Simulated minus demo, percentage points."""
    worker_seconds_share: float
    """(simulated - demo) / demo."""

    def within(self, tolerance: Tolerance = TOLERANCE) -> bool:
        """All three figures within `tolerance`."""
        return (
            abs(self.compliance_points) <= tolerance.compliance_points
            and abs(self.worker_seconds_share) <= tolerance.worker_seconds_share
            and self.ticks_within_one >= tolerance.ticks_within_one
        )


def logged_targets(archive: Path, queue: str) -> list[tuple[float, int]]:
    """(epoch s, target) of every decision for `queue` in the archive's decision log."""
    found: list[tuple[float, int]] = []
    for path in sorted((archive / "decisions").rglob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as stream:
            for line in stream:
                record = json.loads(line)
                if record.get("queue") == queue and record.get("target") is not None:
                    found.append((float(record["at"]), int(record["target"])))
    return sorted(found)


def from_first(series: Sequence[tuple[float, int]]) -> list[tuple[float, int]]:
    """The same (time, target) pairs, times counted from the first one."""
    first = series[0][0] if series else 0.0
    return [(at - first, target) for at, target in series]


def within_one(ours: Sequence[tuple[float, int]], theirs: Sequence[tuple[float, int]]) -> float:
    """Share of `ours` whose target is within +-1 of `theirs` nearest in time (0 if either is
    empty); both (seconds from their own first tick, target)."""
    if not ours or not theirs:
        return 0.0
    close = 0
    for at, target in ours:
        _, other = min(theirs, key=lambda item: abs(item[0] - at))
        close += abs(other - target) <= 1
    return close / len(ours)


def simulate_archive(
    archive: Path, config: QueueConfig, compliance: float, worker_seconds: float
) -> Agreement:
    """Replay the archive's jobs of `config`'s queue under hybrid and compare with the demo's
    `compliance` (0..1) and billed `worker_seconds`."""
    from queue_autoscale.sim.replay import archive_input, run_replay  # noqa: PLC0415 (numpy)
    from queue_autoscale.sim.runner import RunSpec  # noqa: PLC0415

    replay_input = archive_input(archive, config.queue, (None, None), RunSpec(), config)
    replay = run_replay(replay_input, ["hybrid"], record_decisions=True)
    (score,) = replay.comparison.scores
    simulated = [(d.at, d.target) for d in replay.comparison.decisions["hybrid"]]
    ours = from_first(logged_targets(archive, config.queue))
    return Agreement(
        compliance=score.sla_compliance,
        worker_seconds=float(score.worker_seconds),
        ticks_within_one=within_one(ours, from_first(simulated)),
        compliance_points=(score.sla_compliance - compliance) * 100.0,
        worker_seconds_share=(score.worker_seconds - worker_seconds) / worker_seconds
        if worker_seconds > 0
        else 0.0,
    )
