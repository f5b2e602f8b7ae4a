"""The "as run" row of a replay: what the recorded controller's fleet really did, scored like a
simulated run (`sim/scores.Score`), and how far the simulated row of the policy that ran is
from it."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

import numpy as np
import numpy.typing as npt

from queue_autoscale.core.models import JOB_TIME_RESOLUTION_SECONDS
from queue_autoscale.sim.archive import Recorded, Tick
from queue_autoscale.sim.scores import FLAP_EXTRA_SECONDS, Score, Spent, build_score, flaps

AS_RUN = "as run"
DEFAULT_TICK_SECONDS = 60.0
"""A decision log of one tick bills it this long (the report's default, glue_jobs cost.py)."""


def tick_seconds(ticks: Sequence[Tick]) -> list[float]:
    """Seconds each tick bills, by the SLA report's rule (glue_jobs/transforms/cost.py): until
    the next tick, capped at twice that UTC day's median gap; the last tick one median gap."""
    if not ticks:
        return []
    gaps: list[float | None] = [b.at - a.at for a, b in pairwise(ticks)]
    gaps.append(None)
    by_day: dict[int, list[float]] = {}
    for tick, gap in zip(ticks, gaps, strict=True):
        if gap is not None:
            by_day.setdefault(int(tick.at // 86_400), []).append(gap)
    seconds = []
    for tick, gap in zip(ticks, gaps, strict=True):
        day = by_day.get(int(tick.at // 86_400))
        typical = statistics.median(day) if day else DEFAULT_TICK_SECONDS
        seconds.append(min(typical if gap is None else gap, 2 * typical))
    return seconds


def median_tick_gap(ticks: Sequence[Tick]) -> float | None:
    """The recorded controller's evaluation interval: the median gap between its ticks, s."""
    gaps = [b.at - a.at for a, b in pairwise(ticks)]
    return statistics.median(gaps) if gaps else None


def fleet_series(
    recorded: Recorded, start_epoch: int, seconds: int, *, desired: bool = False
) -> list[int]:
    """Workers per second from `start_epoch` as the decision log shows them (each tick's
    workers, or with `desired` the count it set, until the next tick; 0 before the first)."""
    out = np.zeros(max(0, seconds), dtype=np.int64)
    ticks = recorded.ticks
    for tick, span in zip(ticks, tick_seconds(ticks), strict=True):
        lo = max(0, int(tick.at - start_epoch))
        hi = min(out.size, int(tick.at - start_epoch + span))
        out[lo:hi] = tick.target if desired else tick.workers
    workers: list[int] = out.tolist()
    return workers


def realized_lead(recorded: Recorded, concurrency: int = 1) -> float | None:
    """Median seconds from a scale-out order to the moment more jobs ran at once than the fleet
    ordered before it could run (`concurrency` jobs a task): the order's provisioning plus the
    new task's start-up, as the recorded events show it. Only orders given while more jobs
    waited than the earlier fleet could run are measured (otherwise a new task may idle, and its
    first job says nothing about when it landed); None when no order qualifies."""
    trace = recorded.trace
    started = ~np.isnan(recorded.pickups)
    starts = (trace.arrivals + recorded.pickups)[started]
    order = np.argsort(starts, kind="stable")
    starts = starts[order]
    ends = np.sort(starts + trace.durations[started][order])
    arrivals = np.sort(trace.arrivals)
    # jobs running just after each start (that start included); a job ending within the events'
    # resolution of a start has ended: a start and a duration each cut to the millisecond put
    # one job's end up to 2 ms past the next one's start on the same slot, which read as two
    # jobs at once on one worker and measured the demo's 10 s lead as 3-6 s
    settled = starts + 2 * JOB_TIME_RESOLUTION_SECONDS
    running = np.arange(1, starts.size + 1) - np.searchsorted(ends, settled, side="right")
    ticks = recorded.ticks
    samples = []
    for i in range(1, len(ticks)):
        before, tick = ticks[i - 1], ticks[i]
        capacity = before.target * concurrency
        if tick.target <= before.target:
            continue
        waiting = np.searchsorted(arrivals, tick.at, "right") - np.searchsorted(starts, tick.at)
        if waiting <= capacity:
            continue
        # until the order is taken back (a later tick at or below the earlier fleet)
        cut = next((t.at for t in ticks[i + 1 :] if t.target <= before.target), np.inf)
        later = int(np.searchsorted(starts, tick.at, side="right"))
        found = _first_above(running, capacity, later, int(np.searchsorted(starts, cut)))
        if found is not None:
            samples.append(float(starts[found] - tick.at))
    return statistics.median(samples) if samples else None


def _first_above(values: npt.NDArray[np.int64], floor: int, lo: int, hi: int) -> int | None:
    """The first index in [lo, hi) whose value is above `floor`, scanning in doubling blocks
    so the work is about the distance to it, not the array's length."""
    block = 64
    while lo < hi:
        end = min(hi, lo + block)
        above = np.nonzero(values[lo:end] > floor)[0]
        if above.size:
            return lo + int(above[0])
        lo, block = end, block * 2
    return None


def billed_worker_seconds(ticks: Sequence[Tick]) -> float:
    """Worker-seconds the recorded fleet billed, as Fargate bills and the simulator counts: a
    task from its order to its stop, i.e. each tick's desired count until the next tick
    (`tick_seconds`). Tasks still draining after a scale-in are left out (the log has no
    count of them); the logged running count is not used, as it leaves out the provisioning
    the order already pays for."""
    return float(sum(t.target * s for t, s in zip(ticks, tick_seconds(ticks), strict=True)))


def recorded_seconds(recorded: Recorded, start_epoch: int) -> int:
    """The recorded run's span from `start_epoch` as the simulator spans a run: until the second
    after the last arrival's, or the second the last job started if later (`engine.run_policy`
    stops there). 0 without jobs."""
    trace = recorded.trace
    if not trace.arrivals.size:
        return 0
    horizon = int(np.floor(trace.arrivals.max())) - start_epoch + 1
    starts = trace.arrivals + recorded.pickups
    started = starts[~np.isnan(starts)]
    last = math.ceil(float(started.max()) - start_epoch) if started.size else 0
    return max(horizon, last)


def window_worker_seconds(recorded: Recorded, start_epoch: int, seconds: int) -> float:
    """Worker-seconds the recorded fleet billed over `seconds` from `start_epoch`, a replay's
    span: each tick's desired count until the next (`fleet_series`), and before the first tick
    the fleet it found running, which the replay starts from (`replay.recorded_start`)."""
    series = np.asarray(fleet_series(recorded, start_epoch, seconds, desired=True))
    if recorded.ticks and series.size:
        first = min(series.size, max(0, int(recorded.ticks[0].at - start_epoch)))
        series[:first] = recorded.ticks[0].workers
    return float(series.sum())


def as_run_score(
    recorded: Recorded,
    sla_seconds: float,
    concurrency: int = 1,
    lead_seconds: float = 0.0,
    window: tuple[int, int] | None = None,
) -> Score:
    """The recorded run scored as `sim.scores.score` scores a simulated one: an attempt never
    started counts as a miss that waited until the archive's end; flaps by the same rule
    (`lead_seconds`: the provisioning lead), task starts as the rises of the logged fleet.
    Worker-seconds are the report's bill of the decision log (`billed_worker_seconds`), or with
    `window` (start epoch second, seconds) the fleet's over that span (`window_worker_seconds`;
    a replay passes the run's own, `recorded_seconds`, as each simulated row bills its own).
    The report bills the last tick one more gap, past the demo's last job: 20 of its 361
    worker-s."""
    trace = recorded.trace
    pickups = recorded.pickups
    started = ~np.isnan(pickups)
    jobs = int(trace.arrivals.size)
    first = float(trace.arrivals.min()) if jobs else recorded.end_epoch
    targets = [t.target for t in recorded.ticks]
    workers = [t.workers for t in recorded.ticks]
    start = int(first)
    desired = fleet_series(
        recorded, start, max(0, int(recorded.end_epoch) - start + 1), desired=True
    )
    spent = Spent(
        worker_seconds=(
            billed_worker_seconds(recorded.ticks)
            if window is None
            else window_worker_seconds(recorded, *window)
        ),
        busy_seconds=float(trace.durations.sum()),
        concurrency=concurrency,
        duration_seconds=max(1, round(recorded.end_epoch - first)),
        peak_workers=max(workers, default=0),
        scaling_actions=sum(1 for a, b in pairwise(targets) if a != b),
        flaps=flaps(desired, 0, lead_seconds + FLAP_EXTRA_SECONDS),
        task_starts=sum(max(0, b - a) for a, b in pairwise(workers)),
    )
    return build_score(
        policy=AS_RUN,
        workload=trace.name,
        sla_seconds=sla_seconds,
        pickup=np.where(started, pickups, recorded.end_epoch - trace.arrivals),
        started=started,
        in_service=0,
        spent=spent,
    )


@dataclass(frozen=True, slots=True)
class Tolerance:
    """How far two runs of the same jobs may be apart and still agree."""

    compliance_points: float
    """Percentage points of jobs within the SLA."""
    worker_seconds_share: float
    """Relative billed worker-seconds (0.1: 10 %)."""
    ticks_within_one: float
    """The least share of ticks whose targets are within +-1 worker."""


@dataclass(frozen=True, slots=True)
class Fidelity:
    """How far the simulated row of the recorded policy is from "as run" (simulated minus
    recorded): the one agreement measure, shown by `simulate --archive`, the demo summary and
    benchmarks/demo_agreement.py."""

    policy: str
    """The simulated row compared: the policy the recorded controller ran."""
    compliance_points: float
    """Percentage points of SLA compliance."""
    worker_seconds_share: float
    """Relative billed worker-seconds difference (0.1: the simulation billed 10% more)."""
    p99_pickup_seconds: float
    ticks_within_one: float | None = None
    """Share of the recorded ticks whose simulated target (the decision nearest in time) is
    within +-1 worker; None when the replay kept no decisions."""

    def within(self, tolerance: Tolerance) -> bool:
        """Compliance, worker-seconds and (when known) ticks all within `tolerance`."""
        ticks = self.ticks_within_one
        return (
            abs(self.compliance_points) <= tolerance.compliance_points
            and abs(self.worker_seconds_share) <= tolerance.worker_seconds_share
            and (ticks is None or ticks >= tolerance.ticks_within_one)
        )

    def text(self) -> str:
        """One line for the console."""
        ticks = self.ticks_within_one
        return (
            f"simulator fidelity ({self.policy} - as run): compliance "
            f"{self.compliance_points:+.2f} points, "
            f"worker-seconds {self.worker_seconds_share:+.1%}, "
            f"p99 pickup {self.p99_pickup_seconds:+.2f} s"
            + ("" if ticks is None else f", targets within +-1 on {ticks:.0%} of ticks")
        )


def from_first(series: Sequence[tuple[float, int]]) -> list[tuple[float, int]]:
    """The same (time, target) pairs, times counted from the first one."""
    first = series[0][0] if series else 0.0
    return [(at - first, target) for at, target in series]


def within_one(ours: Sequence[tuple[float, int]], theirs: Sequence[tuple[float, int]]) -> float:
    """Share of `ours` whose target is within +-1 of `theirs` nearest in time (0 if either is
    empty); both (seconds from their own first tick, target)."""
    if not ours or not theirs:
        return 0.0
    times = np.array([at for at, _ in theirs])
    targets = np.array([target for _, target in theirs])
    close = 0
    for at, target in ours:
        nearest = int(np.argmin(np.abs(times - at)))
        close += abs(int(targets[nearest]) - target) <= 1
    return close / len(ours)


def fidelity(simulated: Score, recorded: Score, ticks_within_one: float | None = None) -> Fidelity:
    """`simulated` (the recorded controller's policy replayed with its settings) against the
    "as run" row; `ticks_within_one` from `within_one` when the
    decisions were kept."""
    base = recorded.worker_seconds
    return Fidelity(
        policy=simulated.policy,
        compliance_points=100.0 * (simulated.sla_compliance - recorded.sla_compliance),
        worker_seconds_share=(simulated.worker_seconds - base) / base if base else 0.0,
        p99_pickup_seconds=simulated.p99_pickup_seconds - recorded.p99_pickup_seconds,
        ticks_within_one=ticks_within_one,
    )
