"""The verdict: does a policy pass one cell (a row x SLA x target of the validation set)?

Defined once, here; the bench and every claim about a policy use it as is. A policy passes a
cell when all of these hold:

1. **Target and bound.** It meets the target wherever the reaction bound (`sim/bound.py`) does.
   Where the bound misses, a policy that misses too stays within `BOUND_POINTS` of the bound's
   compliance at no more than `BOUND_COST_SHARE` of its worker-seconds. Where the bound is no
   bound in a cell (`is_bound`), the target applies. Monotone: a policy that misses the target
   fails whenever some tuned peer setting meets it; it never passes through the bound clause.
2. **Tuned peers.** Its worker-seconds are at most those of the cheapest tuned KEDA setting and
   of the cheapest tuned target-tracking setting that meet the target.
3. **Hindsight static.** Its worker-seconds are at most `STATIC_SLACK` times those of the least
   static fleet that meets the target (a yardstick handed the future, never a tuned peer).
4. **Flaps.** At most `STEADY_FLAPS_PER_HOUR` on the `steady` row; elsewhere no more than the
   cheapest meeting tuned KEDA setting's.
5. **Loose SLA.** At a `LOOSE_SLA_SECONDS` SLA, its utilization is at least
   `LOOSE_UTILIZATION` wherever some tuned peer setting meets the target at that utilization.

"Policy A beats policy B" (`beats`): A passes more cells, and on the cells both pass A uses fewer
worker-seconds in total.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from queue_autoscale.sim.scores import Score

BOUND_POINTS = 0.005
"""Where the bound misses: within this share (0.5 points) of its compliance..."""
BOUND_COST_SHARE = 0.5
"""...at no more than this share of its worker-seconds."""
STATIC_SLACK = 1.03
"""Worker-seconds allowed against the least meeting hindsight static fleet (x)."""
STEADY_FLAPS_PER_HOUR = 1.0
"""Flaps allowed per hour on the steady row."""
LOOSE_SLA_SECONDS = 300.0
LOOSE_UTILIZATION = 0.9
"""At the loose SLA: the utilization asked of a policy where a tuned peer meets at it."""


@dataclass(frozen=True, slots=True)
class Run:
    """What the verdict reads of one run scored at the cell's SLA."""

    label: str
    compliance: float
    """Share of jobs picked up within the SLA, 0..1."""
    worker_seconds: float
    flaps: int
    hours: float
    """The scored window, hours."""
    utilization: float

    @classmethod
    def of(cls, label: str, score: Score) -> Run:
        """The run of `score`, reported as `label`."""
        return cls(
            label,
            score.sla_compliance,
            score.worker_seconds,
            score.flaps,
            score.hours,
            score.utilization,
        )

    def meets(self, target: float) -> bool:
        """Compliance at least `target`."""
        return self.compliance >= target


@dataclass(frozen=True, slots=True)
class Cell:
    """One row x SLA x target: the policy judged and its yardsticks, all on the same jobs."""

    row: str
    steady: bool
    """The `steady` scenario (the flaps rule's per-hour limit)."""
    sla_seconds: float
    target: float
    ours: Run
    bound: Run | None
    """The reaction bound's run; None where it is no bound on this row (`is_bound`)."""
    keda: tuple[Run, ...]
    """Every tuned KEDA setting run for this cell."""
    target_tracking: tuple[Run, ...]
    static: tuple[Run, ...]
    """Static fleet sizes run for this cell (hindsight)."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """Pass or fail, and the words of every clause failed."""

    passed: bool
    failures: tuple[str, ...]

    @property
    def words(self) -> str:
        """'pass' or 'not met: ...'."""
        return "pass" if self.passed else "not met: " + "; ".join(self.failures)


def cheapest(runs: Sequence[Run], target: float) -> Run | None:
    """The run with the fewest worker-seconds among those meeting `target` (None: none)."""
    return min((r for r in runs if r.meets(target)), key=lambda r: r.worker_seconds, default=None)


def is_bound(bound: Run, reacting: Sequence[Run]) -> bool:
    """Whether the reaction bound is a bound in a cell: no purely reacting run there (a tuned
    peer setting with a floor of 0 or 1 worker, `reacting`) keeps more than `BOUND_POINTS`
    more jobs within the SLA than it. A peer with a higher floor holds workers before any
    surge, which no reaction bound covers; within `BOUND_POINTS` is the bound's own slack."""
    return all(run.compliance <= bound.compliance + BOUND_POINTS for run in reacting)


def judge(cell: Cell) -> Verdict:
    """The verdict of the module's rules on one cell."""
    ours, target = cell.ours, cell.target
    failures: list[str] = []
    tuned = (*cell.keda, *cell.target_tracking)
    peer_meets = [r for r in tuned if r.meets(target)]
    if not ours.meets(target):
        bound = cell.bound
        if peer_meets:
            best = min(peer_meets, key=lambda r: r.worker_seconds)
            failures.append(
                f"misses {target:.1%} ({ours.compliance:.3%}) where tuned {best.label} meets it"
            )
        elif bound is None or bound.meets(target):
            where = "no bound on this row" if bound is None else "the bound meets it"
            failures.append(f"misses {target:.1%} ({ours.compliance:.3%}); {where}")
        else:
            gap = bound.compliance - ours.compliance
            if gap > BOUND_POINTS + 1e-12:
                failures.append(f"{gap * 100:.2f} points below the bound's {bound.compliance:.3%}")
            if ours.worker_seconds > BOUND_COST_SHARE * bound.worker_seconds:
                share = ours.worker_seconds / bound.worker_seconds
                failures.append(f"{share:.0%} of the bound's worker-s (at most 50%)")
    keda = cheapest(cell.keda, target)
    for peer in (keda, cheapest(cell.target_tracking, target)):
        if peer is not None and ours.worker_seconds > peer.worker_seconds:
            failures.append(
                f"{ours.worker_seconds:,.0f} worker-s > tuned {peer.label}'s "
                f"{peer.worker_seconds:,.0f}"
            )
    static = cheapest(cell.static, target)
    if static is not None and ours.worker_seconds > STATIC_SLACK * static.worker_seconds:
        failures.append(
            f"{ours.worker_seconds:,.0f} worker-s > {STATIC_SLACK:g} x hindsight "
            f"{static.label}'s {static.worker_seconds:,.0f}"
        )
    failures += _flap_failures(cell, keda)
    if math.isclose(cell.sla_seconds, LOOSE_SLA_SECONDS) and ours.utilization < LOOSE_UTILIZATION:
        busy = [r for r in peer_meets if r.utilization >= LOOSE_UTILIZATION]
        if busy:
            best = max(busy, key=lambda r: r.utilization)
            failures.append(
                f"utilization {ours.utilization:.3f} < {LOOSE_UTILIZATION:g} where tuned "
                f"{best.label} meets at {best.utilization:.3f}"
            )
    return Verdict(not failures, tuple(failures))


def _flap_failures(cell: Cell, keda: Run | None) -> list[str]:
    ours = cell.ours
    if cell.steady:
        per_hour = ours.flaps / ours.hours if ours.hours > 0 else math.inf
        if per_hour > STEADY_FLAPS_PER_HOUR:
            return [f"{ours.flaps} flaps ({per_hour:.1f}/h) on steady traffic (at most 1/h)"]
        return []
    if keda is not None and ours.flaps > keda.flaps:
        return [f"{ours.flaps} flaps > tuned {keda.label}'s {keda.flaps}"]
    return []


@dataclass(frozen=True, slots=True)
class Tally:
    """Cells passed, and the worker-seconds on each passed cell (by cell key)."""

    passed: int
    cells: int
    worker_seconds: dict[str, float]


def tally(judged: Sequence[tuple[str, Cell, Verdict]]) -> Tally:
    """(cell key, cell, verdict) of one policy -> its tally."""
    passed = {key: cell.ours.worker_seconds for key, cell, v in judged if v.passed}
    return Tally(len(passed), len(judged), passed)


def beats(a: Tally, b: Tally) -> bool:
    """A passes more cells, and on the cells both pass uses fewer worker-seconds in total."""
    both = a.worker_seconds.keys() & b.worker_seconds.keys()
    ours = sum(a.worker_seconds[k] for k in both)
    theirs = sum(b.worker_seconds[k] for k in both)
    return a.passed > b.passed and (not both or ours < theirs)
