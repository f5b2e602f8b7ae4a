"""The yardstick's rows and its hindsight tuning: every peer at its best on each cell.

Rows. A *tuning set* (scenarios at seed 0, NASA days 8, 12 and 19) and a *validation set*
(scenarios at seeds 1-3, NASA days 46, 37 and 57); a scenario runs over its whole length, a
NASA day is the 86,400 s block `day` x 86,400 s from the start of the trace, each second's count
x10, and every row starts from the same warm-up (`build_workload`'s). Each row is its own cells:
SLA x target, nothing pooled.

Tuning, per cell, with hindsight (the cheapest setting that meets the cell's target):

- KEDA: queueLength on a geometric grid (steps of at most 25 %) from 1 to the documented value
  (SLA x concurrency / job time), HPA scale-down stabilization 0, 60 and 300 s, minReplicaCount
  0, 1 and the Erlang-C size of the row's mean rate at the cell's SLA and target;
- target tracking: the target value on the same grid, scale-in cooldown 60 and 300 s, minimum
  capacity as KEDA's floor;
- static: the least size that meets the target (bisection), the hindsight yardstick.

For each (secondary knobs, floor) the main knob is bisected to the largest value that meets
the target (a larger queueLength or target value orders fewer workers, so compliance falls and
cost with it); the cell's tuned peer is the cheapest meeting run among those probed. A peer's
run depends on neither the SLA nor the target (it starts from the same warm fleet whatever the
cell), so each setting is run once per row, cached, and scored at every SLA.
"""

from __future__ import annotations

import hashlib
import math
import pickle
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

import queue_autoscale
from queue_autoscale.core import DEFAULT_POLICY, workers_for_sla
from queue_autoscale.sim.arrivals import SCENARIOS, Counts, minute_rates, read_trace
from queue_autoscale.sim.bound import NAME as BOUND_NAME
from queue_autoscale.sim.engine import Policy, RunResult, run_policy
from queue_autoscale.sim.frontier import SLAS, TARGETS, failing_static_size
from queue_autoscale.sim.peers import keda
from queue_autoscale.sim.policies import (
    CORE_NAMES,
    PolicyChoice,
    initial_workers,
    make_policy,
    parse_policy,
)
from queue_autoscale.sim.runner import RunSpec, parallel_map
from queue_autoscale.sim.scores import Score, scores_at
from queue_autoscale.sim.workload import Workload, build_workload

NASA_SCALE = 10
DAY_SECONDS = 86_400
SETS: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {
    "tuning": ((0,), (8, 12, 19)),
    "validation": ((1, 2, 3), (46, 37, 57)),
}
"""Per set: (scenario seeds, NASA days)."""
GRID_STEP = 1.25
"""The main knobs' geometric grid: each value at most 25 % above the one before."""
KEDA_WINDOWS: tuple[int, ...] = (0, 60, 300)
"""HPA scale-down stabilization windows searched, s."""
TT_COOLDOWNS: tuple[int, ...] = (60, 300)
"""Target tracking scale-in cooldowns searched, s."""
PEER_SLA = 30.0
"""The queue settings a peer's run starts from (its warm fleet): one for every cell, so a
peer's run does not depend on the cell; its knobs are all given explicitly."""
STATIC_HEADROOM = 1.5
"""The static search's top: this x the Erlang-C size of the busiest minute (workers)."""


@dataclass(frozen=True, slots=True)
class Row:
    """One workload of a set: a scenario at a seed, or a NASA day."""

    name: str
    """The scenario's name, or 'nasa'."""
    seed: int
    day: int | None = None

    @property
    def label(self) -> str:
        """e.g. 'spike seed 1' or 'nasa day 57'."""
        return f"nasa day {self.day}" if self.day is not None else f"{self.name} seed {self.seed}"

    def counts(self, trace: Path) -> Counts:
        """The row's per-second arrivals (a NASA day read from `trace`, x`NASA_SCALE`)."""
        if self.day is None:
            return SCENARIOS[self.name].counts(seed=self.seed, length_seconds=None)
        start = self.day * DAY_SECONDS
        return read_trace(trace, scale=NASA_SCALE, start=start, length=DAY_SECONDS)


def set_rows(name: str, with_nasa: bool = True) -> list[Row]:
    """The rows of the tuning or validation set (NASA days left out without the trace): the
    scenarios at the first seed, the NASA days, then the scenarios at the other seeds (so a run
    cut short has every workload once)."""
    seeds, days = SETS[name]
    rows = [Row(scenario, seeds[0]) for scenario in SCENARIOS]
    if with_nasa:
        rows += [Row("nasa", seeds[0], day) for day in days]
    return rows + [Row(scenario, seed) for seed in seeds[1:] for scenario in SCENARIOS]


def knob_grid(top: int) -> list[int]:
    """Integers from 1 to `top` (both kept), each at most `GRID_STEP` x the one before (or
    the next integer)."""
    values = [1]
    while values[-1] < top:
        values.append(min(top, max(values[-1] + 1, math.floor(values[-1] * GRID_STEP))))
    return values


RunKey = tuple[str, float | None, float | None]
"""(policy label, SLA, percentile): None, None for a peer (run once, scored at every SLA)."""


@dataclass(slots=True)
class Runs:
    """The runs of one row, each made once and kept as its scores per SLA."""

    workload: Workload
    counts: Counts
    spec: RunSpec
    slas: tuple[float, ...]
    scores: dict[RunKey, dict[float, Score]] = field(default_factory=dict)

    def ensure(self, keys: Iterable[RunKey]) -> None:
        """Run every key not run yet (over the machine's cores)."""
        missing = sorted(set(keys) - self.scores.keys(), key=str)
        for key, result in zip(missing, parallel_map(self._run, missing), strict=True):
            self.scores[key] = result

    def score(self, key: RunKey, sla: float) -> Score:
        """A run's score at `sla` (run first with `ensure`)."""
        return self.scores[key][sla]

    def _run(self, key: RunKey) -> dict[float, Score]:
        _, result = self.run(key)
        sla = key[1]
        return scores_at(result, (sla,) if sla is not None else self.slas)

    def run(self, key: RunKey, record: bool = False) -> tuple[Policy, RunResult]:
        """One run of the row, as the verdict makes it (not kept): the policy after the run
        (with its decision records where `record` and it is one of ours) and what it did."""
        label, sla, percentile = key
        spec = replace(
            self.spec,
            sla_seconds=sla if sla is not None else PEER_SLA,
            percentile=percentile if percentile is not None else self.spec.percentile,
        )
        settings = spec.settings()
        policy = make_policy(label, settings, self.counts, record)
        warm = float(self.counts[:300].mean()) if self.counts.size else 0.0
        result = run_policy(
            self.workload, policy, spec.fleet(), initial_workers(policy, settings, warm)
        )
        return policy, result


def row_runs(
    row: Row,
    trace: Path,
    spec: RunSpec,
    slas: Sequence[float],
    known: dict[RunKey, dict[float, Score]] | None = None,
) -> Runs:
    """The row's runs, none made yet but those `known`: its arrivals (`Row.counts`), and its
    job times and the workers' start-up jitter seeded by the row's seed, as the verdict runs
    every policy of the row."""
    counts = row.counts(trace)
    spec = replace(spec, seed=row.seed)
    workload = build_workload(
        row.label, counts, spec.fleet(), seed=row.seed, warmup_seconds=spec.warmup_seconds
    )
    return Runs(workload, counts, spec, tuple(slas), dict(known or {}))


class Bisection:
    """The index in `values` where meeting the target turns: the last meeting index when
    compliance falls along `values` (`falling`), else the first. -1 / len(values): none."""

    def __init__(self, values: Sequence[int], falling: bool) -> None:
        self.values = list(values)
        self.falling = falling
        self.lo, self.hi = -1, len(self.values)
        """falling: lo meets (or -1), hi misses (or len); rising: lo misses, hi meets."""
        self.seen: list[int] = []
        """The values run, in order."""

    @property
    def done(self) -> bool:
        """No index left between the two known ends."""
        return self.hi - self.lo <= 1

    def wanted(self) -> int:
        """The value to run next."""
        return self.values[(self.lo + self.hi) // 2]

    def feed(self, meets: bool) -> None:
        """The outcome of `wanted()`."""
        mid = (self.lo + self.hi) // 2
        self.seen.append(self.values[mid])
        if meets == self.falling:
            self.lo = mid
        else:
            self.hi = mid


@dataclass(frozen=True, slots=True)
class Search:
    """One bisection of a cell: a peer's main knob with the others fixed."""

    sla: float
    target: float
    name: str
    knob: str
    others: tuple[tuple[str, float], ...]
    bisection: Bisection

    def key(self, value: int) -> RunKey:
        """The run of `value`."""
        knobs = ((self.knob, float(value)), *self.others)
        return PolicyChoice(self.name, knobs).label, None, None


def floors(row_mean_rate: float, spec: RunSpec, sla: float, target: float) -> list[int]:
    """The floors searched for a cell: 0, 1 and the Erlang-C size of the row's mean rate at
    the cell's SLA and target (workers)."""
    k, job = spec.concurrency, spec.service_seconds
    erlang = workers_for_sla(row_mean_rate, job, k, sla, target)
    return sorted({0, 1, erlang})


def peer_searches(counts: Counts, spec: RunSpec, sla: float, target: float) -> list[Search]:
    """Every bisection of KEDA and target tracking for one cell."""
    documented = keda.queue_length(replace(spec, sla_seconds=sla).settings())
    grid = knob_grid(documented)
    out: list[Search] = []
    for floor in floors(float(counts.mean()), spec, sla, target):
        out += [
            Search(sla, target, "keda", "queue_length",
                   (("scale_down_stabilization", float(w)), ("min_replicas", float(floor))),
                   Bisection(grid, falling=True))
            for w in KEDA_WINDOWS
        ]  # fmt: skip
        out += [
            Search(sla, target, "target-tracking", "target_value",
                   (("scale_in_cooldown", float(c)), ("min_capacity", float(floor))),
                   Bisection(grid, falling=True))
            for c in TT_COOLDOWNS
        ]  # fmt: skip
    return out


def static_search(
    workload: Workload, counts: Counts, spec: RunSpec, sla: float, target: float
) -> Search:
    """The least static size meeting one cell's target, bisected between the largest size shown
    to miss by capacity alone (`failing_static_size`) and `STATIC_HEADROOM` x the Erlang-C size
    of the busiest minute."""
    busiest = float(minute_rates(counts).max()) if counts.size else 0.0
    top = workers_for_sla(busiest, spec.service_seconds, spec.concurrency, sla, target)
    top = min(spec.max_workers, math.ceil(STATIC_HEADROOM * max(1, top)))
    low = min(top, failing_static_size(workload, sla, spec.concurrency) + 1)
    return Search(sla, target, "static", "size", (), Bisection(range(low, top + 1), falling=False))


def run_searches(runs: Runs, searches: Sequence[Search], progress: Callable[[int], None]) -> None:
    """All bisections in lockstep: each round runs every wanted setting not yet run (once,
    over the cores) and feeds each search its outcome at its own SLA and target."""
    while True:
        live = [s for s in searches if not s.bisection.done]
        if not live:
            return
        keys = [s.key(s.bisection.wanted()) for s in live]
        runs.ensure(keys)
        progress(len(runs.scores))
        for search, key in zip(live, keys, strict=True):
            compliance = runs.score(key, search.sla).sla_compliance
            search.bisection.feed(compliance >= search.target)


def cell_keys(
    searches: Sequence[Search], name: str, floor_knob: str | None, floors: Iterable[int] = ()
) -> tuple[RunKey, ...]:
    """The runs of `name` the searches at one SLA made (with a floor among `floors`, when
    `floor_knob` names one): the settings a cell may choose from, distinct, in a stable order."""
    allowed = {float(f) for f in floors}
    keys = {
        s.key(v)
        for s in searches
        if s.name == name and (floor_knob is None or dict(s.others)[floor_knob] in allowed)
        for v in s.bisection.seen
    }
    return tuple(sorted(keys, key=str))


AS_SEEDED: tuple[str, ...] = ("seed-hybrid",)
"""Judged policies run as the seeds write them: configured per SLA, not per target."""


def our_key(policy: str, sla: float, target: float) -> RunKey:
    """A judged policy's run for one cell: configured for the cell's SLA and target (the
    percentile), or for the SLA alone when it is run as seeded (`AS_SEEDED`)."""
    return policy, sla, (None if parse_policy(policy).name in AS_SEEDED else target)


def our_keys(
    policies: Sequence[str], slas: Sequence[float], targets: Sequence[float]
) -> list[RunKey]:
    """Each judged policy's run for every SLA and target, and the reaction bound per SLA."""
    keys = {our_key(p, s, t) for p in policies for s in slas for t in targets}
    return sorted(keys, key=str) + [(BOUND_NAME, s, None) for s in slas]


@dataclass(frozen=True, slots=True)
class RowRuns:
    """Everything the verdict needs of one row: the runs and which searches made them."""

    row: Row
    runs: Runs
    searches: dict[tuple[float, float], tuple[Search, ...]]
    """Per (SLA, target): its peer and static searches."""
    mean_rate: float
    busiest_minute: float


def tune_row(
    row: Row,
    trace: Path,
    spec: RunSpec,
    slas: Sequence[float] = SLAS,
    targets: Sequence[float] = TARGETS,
    progress: Callable[[int], None] | None = None,
    policies: Sequence[str] = (DEFAULT_POLICY,),
    known: dict[RunKey, dict[float, Score]] | None = None,
) -> RowRuns:
    """Run the judged `policies` and tune every peer on every cell of one row; a run in
    `known` (a `RunCache`'s) is taken from there instead of run again."""
    runs = row_runs(row, trace, spec, slas, known)
    counts, workload, spec = runs.counts, runs.workload, runs.spec
    runs.ensure(our_keys(policies, slas, targets))
    searches = {
        (s, t): (*peer_searches(counts, spec, s, t), static_search(workload, counts, spec, s, t))
        for s in slas
        for t in targets
    }
    every = [search for group in searches.values() for search in group]
    run_searches(runs, every, progress or (lambda _: None))
    busiest = float(minute_rates(counts).max()) if counts.size else 0.0
    return RowRuns(row, runs, searches, float(np.mean(counts)) if counts.size else 0.0, busiest)


def slim(rr: RowRuns) -> RowRuns:
    """The row's runs without its jobs (what the verdict reads; small enough to keep)."""
    empty = np.zeros(0)
    none = Workload(rr.row.label, np.zeros(0, dtype=np.int64), 0, empty, empty)
    runs = Runs(none, none.counts, rr.runs.spec, rr.runs.slas, rr.runs.scores)
    return replace(rr, runs=runs)


PEER_CODE: tuple[str, ...] = (
    "sim/engine.py",
    "sim/workload.py",
    "sim/arrivals.py",
    "sim/scores.py",
    "sim/runner.py",
    "sim/bound.py",
    "sim/prefetch.py",
    "sim/peers/__init__.py",
    "sim/peers/keda.py",
    "sim/peers/knobs.py",
    "sim/peers/static.py",
    "sim/peers/target_tracking.py",
    "core/queueing.py",
    "core/jump.py",
    "core/predictive_knobs.py",
)
"""What a peer's or the reaction bound's run depends on (paths in the package): the key of
their cached runs (the bound's jump test is the record path's line, `core/jump.py`, at the
move tests' z, `core/predictive_knobs.py`). Not covered: a peer's decision record
(`sim/peers/_record.py`, the core's record builder), which no score reads, and the few core
constants these read from elsewhere (the flaps' `REVISIT_SECONDS`, the counters' look-back);
empty the cache when one of those changes."""


PACKAGE = Path(queue_autoscale.__file__).parent
"""The imported package's folder (the code a run runs)."""


def code_fingerprint(paths: Iterable[str], root: Path = PACKAGE) -> str:
    """A short hash of the Python sources at `paths` under `root` (files, or folders searched
    for *.py): names and bytes."""
    digest = hashlib.sha256()
    for path in sorted(paths):
        target = root / path
        for file in sorted(target.rglob("*.py")) if target.is_dir() else [target]:
            digest.update(str(file.relative_to(root)).encode())
            digest.update(file.read_bytes())
    return digest.hexdigest()[:16]


def is_ours(key: RunKey) -> bool:
    """A run of one of our policies (a core policy or an ablation of one), not a peer's or
    the bound's."""
    name = parse_policy(key[0]).name
    return name in CORE_NAMES


@dataclass(frozen=True, slots=True)
class RunCache:
    """Scored runs kept on disk per row, keyed by the code they ran: the peers' and the
    bound's by `PEER_CODE`, our policies' by every source file of the package (so a change
    anywhere re-runs ours, and judging a new commit re-runs only ours). Make it with `at`,
    once, before any run: the keys are the code as imported."""

    directory: Path
    ours: str
    """`code_fingerprint` of the whole package."""
    peers: str
    """`code_fingerprint` of `PEER_CODE`."""

    @classmethod
    def at(cls, directory: Path) -> RunCache:
        """The cache in `directory`, keyed by the code as it is now."""
        return cls(directory, code_fingerprint(["."]), code_fingerprint(PEER_CODE))

    def _files(self, row: Row) -> dict[str, Path]:
        name = row.label.replace(" ", "-")
        return {
            "ours": self.directory / f"{name}.ours-{self.ours}.pickle",
            "peers": self.directory / f"{name}.peers-{self.peers}.pickle",
        }

    def load(self, row: Row) -> dict[RunKey, dict[float, Score]]:
        """The row's runs kept for this code (empty when none)."""
        out: dict[RunKey, dict[float, Score]] = {}
        for file in self._files(row).values():
            if file.is_file():
                with file.open("rb") as handle:
                    out.update(pickle.load(handle))
        return out

    def save(self, row: Row, scores: dict[RunKey, dict[float, Score]]) -> None:
        """Keep the row's runs, ours and the peers' each under its own code's key (the runs
        already kept there stay: a row judged for other policies adds to them)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        for part, file in self._files(row).items():
            kept = {k: v for k, v in scores.items() if is_ours(k) == (part == "ours")}
            if file.is_file():
                with file.open("rb") as handle:
                    kept = {**pickle.load(handle), **kept}
            temporary = file.with_suffix(".tmp")
            with temporary.open("wb") as handle:
                pickle.dump(kept, handle)
            temporary.replace(file)
