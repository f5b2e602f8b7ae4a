"""How cheap could any fleet be on the bench's NASA x10 window at a tight SLA? (issue 15)

The frontier cells NASA x10 at SLA 10 s and 30 s ask the controller for the target share of jobs
picked up within the SLA at <= 80 % of the cheapest peer setting that meets it (a static size
there; see `results/policy_frontier.md`). This measures yardsticks that are handed the future, none
of them a policy, on the bench's jobs (the 4-hour window around the busiest minute, seed 0, 60 s +
uniform 0..10 s start-up, 10 s ticks):

- **piecewise static**: the static fleet at every size of a grid, its compliance per 5-minute
  segment; per segment length (15, 30, 60 min), the cheapest size per segment that meets the
  target over the window (exact over the grid, a multiple-choice knapsack; each segment's
  compliance is read from the run at that size throughout, so a backlog carried across a
  segment boundary is approximate). Then
  the same choice made causally: each segment sized for the previous one's compliance at each
  size (the threshold and a margin tuned on this very window, so optimistic).
- **fluid lower bound** (scipy's HiGHS `linprog`): a linear programme over 10 s slots that
  knows every arrival and job time, bills each worker 60 s before it serves (the lead), treats
  the fleet and the work as fluid, and lets any 5 % of jobs (by arrival slot) be served late.
  No fleet schedule in the simulator can be cheaper.
- **clairvoyant replay**: the programme's schedule at 100 % plus k workers, each size ordered a
  lead + jitter (70 s) ahead, replayed in the simulator: what a fleet that knew the future got.

    .venv/bin/python benchmarks/nasa_hindsight.py [--sla 10] [--target 0.95]

Writes `results/nasa_hindsight_sla{SLA}.md` at the default target, else
`results/nasa_hindsight_sla{SLA}_p{100 x target}.md`.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp
from scipy.optimize import linprog

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "functions"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import bench_trace_defaults, header, write  # noqa: E402

from queue_autoscale.sim.arrivals import read_trace  # noqa: E402
from queue_autoscale.sim.bench import SweepOptions, bench_spec  # noqa: E402
from queue_autoscale.sim.engine import FleetView, run_policy  # noqa: E402
from queue_autoscale.sim.frontier import WINDOW_SECONDS, sweep_window  # noqa: E402
from queue_autoscale.sim.scores import score  # noqa: E402
from queue_autoscale.sim.workload import FleetSpec, Workload, build_workload  # noqa: E402

Array = npt.NDArray[np.int64]
"""Sizes, segment indices and job counts."""

SEGMENT_SECONDS = 300
"""The finest piecewise-static segment."""
SLOT_SECONDS = 10
"""The fluid programme's slot (the bench's evaluation interval)."""
CAUSAL_MARGIN_WORKERS = 6
"""The largest margin, in workers, the causal rule may add to the size that met its threshold."""
"""The fluid programme's slot (the bench's evaluation interval)."""
DEFAULT_TARGET = 0.95
"""The target compliance when none is given; its results file carries no target suffix."""


def results_name(sla: float, target: float) -> str:
    """The results file for an SLA (s) and a target share: `nasa_hindsight_sla10.md` at the
    default target (the name the first runs used), `nasa_hindsight_sla30_p99.md` otherwise."""
    suffix = "" if target == DEFAULT_TARGET else f"_p{100 * target:g}"
    return f"nasa_hindsight_sla{sla:g}{suffix}.md"


class Fixed:
    """A fleet of one size (ticks every slot)."""

    name = "fixed"
    interval_seconds = SLOT_SECONDS

    def __init__(self, size: int) -> None:
        self.size = size

    def decide(self, view: FleetView) -> int:
        return self.size


class Scheduled:
    """The fluid schedule (workers per slot of the scored window) rounded up plus `extra`, each
    size ordered `ahead` seconds before its slot (scale-in at once)."""

    name = "clairvoyant"
    interval_seconds = SLOT_SECONDS

    def __init__(self, fleet: list[float], warmup: int, ahead: int, extra: int) -> None:
        self.fleet, self.warmup, self.ahead, self.extra = fleet, warmup, ahead, extra

    def decide(self, view: FleetView) -> int:
        t = max(0, view.elapsed_seconds - self.warmup)
        lo, hi = t // SLOT_SECONDS, (t + self.ahead) // SLOT_SECONDS + 1
        want = max(self.fleet[lo:hi], default=0.0)
        return max(1, math.ceil(want - 1e-6) + self.extra)


def segments(workload: Workload) -> Array:
    """The 5-minute segment of every scored job."""
    warm = workload.warmup_seconds
    scored = workload.arrivals[workload.arrivals >= warm]
    return ((scored - warm) // SEGMENT_SECONDS).astype(np.int64)


def segment_compliance(workload: Workload, sla: float, size: int, fleet: FleetSpec) -> Array:
    """Jobs picked up within `sla` per 5-minute segment of the scored window, static `size`."""
    run = run_policy(workload, Fixed(size), fleet, size)
    scored = workload.arrivals >= workload.warmup_seconds
    wait = run.starts[scored] - workload.arrivals[scored]
    on_time = ~np.isnan(wait) & (wait <= sla)
    return np.bincount(segments(workload), weights=on_time)


def cheapest_pieces(sizes: Array, on_time: Array, per_segment: Array, target: float) -> list[str]:
    """Per segment length, the cheapest sizes per segment meeting `target` (hindsight), and the
    causal rule's best (each segment sized for the previous one)."""
    lines = []
    jobs = int(per_segment.sum())
    for minutes in (15, 30, 60):
        group = minutes * 60 // SEGMENT_SECONDS
        count = on_time.shape[1] // group
        got = on_time[:, : count * group].reshape(len(sizes), count, group).sum(2)
        arrived = per_segment[: count * group].reshape(count, group).sum(1)
        seconds = minutes * 60
        pick = _least_sizes(sizes, got, math.ceil(target * jobs - 1e-9))
        best = None
        if pick is not None:
            share = got[pick, np.arange(count)].sum() / jobs
            best = (float((sizes[pick] * seconds).sum()), share, [int(s) for s in sizes[pick]])
        lines.append(_piece_line(f"{minutes}-min segments, hindsight", best))
        causal = _causal(sizes, got, arrived, seconds, target)
        lines.append(_piece_line(f"{minutes}-min segments, causal", causal))
    return lines


def _least_sizes(sizes: Array, got: Array, need: int) -> Array | None:
    """The size index per segment with the least summed size (so the fewest worker-s) whose
    on-time jobs (`got[size, segment]`) sum to at least `need`; None if no choice does. Exact:
    a multiple-choice knapsack by dynamic programming over the summed size."""
    count = got.shape[1]
    top = int(sizes.max()) * count
    most = np.full(top + 1, -np.inf)  # most on-time jobs at each summed size; -inf unreachable
    most[0] = 0.0
    chosen = np.zeros((count, top + 1), dtype=np.int64)
    for segment in range(count):
        best = np.full(top + 1, -np.inf)
        for k, size in enumerate(int(v) for v in sizes):
            reach = np.full(top + 1, -np.inf)
            reach[size:] = most[: top + 1 - size] + got[k, segment]
            better = reach > best
            best[better] = reach[better]
            chosen[segment, better] = k
        most = best
    feasible = np.flatnonzero(most >= need)
    if feasible.size == 0:
        return None
    total = int(feasible[0])
    pick = np.zeros(count, dtype=np.int64)
    for segment in reversed(range(count)):
        pick[segment] = chosen[segment, total]
        total -= int(sizes[pick[segment]])
    return pick


def _causal(
    sizes: Array, got: Array, arrived: Array, seconds: int, target: float
) -> tuple[float, float, list[int]] | None:
    """Each segment at the smallest size whose compliance in the previous segment reached a
    threshold, plus a margin of up to `CAUSAL_MARGIN_WORKERS` workers (both tuned on this window,
    and the first segment sized for itself: optimistic)."""
    share = got / np.maximum(arrived, 1)
    count = got.shape[1]
    jobs = int(arrived.sum())
    best: tuple[float, float, list[int]] | None = None
    for threshold in np.linspace(0.80, 1.0, 81):
        for margin in range(CAUSAL_MARGIN_WORKERS + 1):
            pick = []
            for i in range(count):
                reached = np.flatnonzero(share[:, max(0, i - 1)] >= threshold)
                first = int(reached[0]) if reached.size else len(sizes) - 1
                above = np.flatnonzero(sizes >= sizes[first] + margin)
                pick.append(int(above[0]) if above.size else len(sizes) - 1)
            chosen = np.asarray(pick)
            on_time = got[chosen, np.arange(count)].sum() / jobs
            cost = float((sizes[chosen] * seconds).sum())
            if on_time >= target and (best is None or cost < best[0]):
                best = (cost, on_time, [int(s) for s in sizes[chosen]])
    return best


def _piece_line(what: str, best: tuple[float, float, list[int]] | None) -> str:
    if best is None:
        return f"| {what} | none meets it | | |"
    cost, share, sizes = best
    return f"| {what} | {cost:,.0f} | {share:.2%} | {', '.join(map(str, sizes))} |"


def fluid(workload: Workload, sla: float, lead: float, target: float) -> tuple[float, list[float]]:
    """The fluid programme over SLOT_SECONDS slots: its cost (worker-s) and workers per slot.

    Variables per slot t: n (workers), u (workers added, billed `lead` s before they serve),
    y (the share of the slot's arrivals served on time), l (late work served), b (late work
    carried), and per (arrival slot, last on-time slot) group the on-time work done in each slot
    it may run in. Minimise S sum n + lead sum u subject to: the work in a slot <= S n; at least
    `target` of the jobs on time; late work still served, any time after it arrived.
    """
    warm = workload.warmup_seconds
    scored = workload.arrivals >= warm
    a = workload.arrivals[scored] - warm
    d = workload.service[scored]
    size = SLOT_SECONDS
    slots = int(workload.horizon_seconds - warm) // size + math.ceil((sla + d.max()) / size) + 2
    k = np.floor(a / size).astype(np.int64)
    e = np.floor((a + sla + d) / size).astype(np.int64)  # the last slot an on-time job runs in
    key, inv = np.unique(k * 100_000 + e, return_inverse=True)
    gk, ge = key // 100_000, key % 100_000
    group_work = np.bincount(inv, weights=d)
    span = ge - gk + 1
    zoff = np.concatenate([[0], np.cumsum(span)[:-1]])
    i_n, i_u, i_y, i_l, i_b, i_z = 0, slots, 2 * slots, 3 * slots, 4 * slots, 5 * slots + 1
    nv = i_z + int(span.sum())
    cost = np.zeros(nv)
    cost[i_n : i_n + slots] = size
    cost[i_u : i_u + slots] = lead
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []

    def put(r: int, col: int, v: float) -> None:
        rows.append(r)
        cols.append(col)
        vals.append(v)

    b_ub: list[float] = []
    g_of = np.repeat(np.arange(gk.size), span)
    slot_of = gk[g_of] + (np.arange(span.sum()) - zoff[g_of])
    for t in range(slots):  # the slot's work (late + on-time) within S n
        put(t, i_l + t, 1.0)
        put(t, i_n + t, -float(size))
        b_ub.append(0.0)
    for j, t in enumerate(slot_of):
        put(int(t), i_z + j, 1.0)
    r = slots
    for t in range(1, slots):  # u_t >= n_t - n_(t-1)
        put(r, i_n + t, 1.0)
        put(r, i_n + t - 1, -1.0)
        put(r, i_u + t, -1.0)
        b_ub.append(0.0)
        r += 1
    jobs = np.bincount(k, minlength=slots).astype(float)
    work = np.bincount(k, weights=d, minlength=slots)
    for t in np.flatnonzero(jobs):
        put(r, i_y + int(t), -float(jobs[t]))
    b_ub.append(-target * a.size)
    r += 1
    a_ub = sp.csr_matrix((vals, (rows, cols)), shape=(r, nv))
    rows, cols, vals = [], [], []
    b_eq: list[float] = []
    for g in range(gk.size):  # a group's on-time work within its slots
        for j in range(int(span[g])):
            put(g, i_z + int(zoff[g]) + j, 1.0)
        put(g, i_y + int(gk[g]), -float(group_work[g]))
        b_eq.append(0.0)
    r = gk.size
    put(r, i_b, 1.0)
    b_eq.append(0.0)
    r += 1
    for t in range(slots):  # late work is still served, any time after it arrived
        put(r, i_b + t + 1, 1.0)
        put(r, i_b + t, -1.0)
        put(r, i_l + t, 1.0)
        if work[t]:
            put(r, i_y + t, float(work[t]))
        b_eq.append(float(work[t]))
        r += 1
    put(r, i_b + slots, 1.0)
    b_eq.append(0.0)
    r += 1
    a_eq = sp.csr_matrix((vals, (rows, cols)), shape=(r, nv))
    bounds: list[tuple[float, float | None]] = [(0.0, None)] * nv
    for t in range(slots):
        bounds[i_y + t] = (0.0, 1.0)
    res = linprog(cost, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=b_eq, bounds=bounds, method="highs")
    if res.status != 0:
        raise RuntimeError(f"the fluid programme did not solve: {res.message}")
    return float(res.fun), [float(v) for v in res.x[i_n : i_n + slots]]


def main() -> None:
    defaults = bench_trace_defaults()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sla", type=float, default=10.0, help="SLA, seconds")
    ap.add_argument("--target", type=float, default=DEFAULT_TARGET, help="target compliance")
    ap.add_argument("--sizes", default="26:72:1", help="static grid start:stop:step")
    ap.add_argument("--extra", default="0,1,2,3", help="workers added to the replayed schedule")
    a = ap.parse_args()
    spec = replace(bench_spec(SweepOptions(), 0), sla_seconds=a.sla)
    fleet = spec.fleet()
    full = read_trace(
        Path(str(defaults["trace"])),
        scale=int(str(defaults["trace_scale"])),
        start=int(str(defaults["trace_start"])),
        length=int(str(defaults["trace_length"])),
    )
    counts, start = sweep_window(full, WINDOW_SECONDS)
    workload = build_workload(
        f"nasa x{defaults['trace_scale']}",
        counts,
        fleet,
        seed=0,
        warmup_seconds=spec.warmup_seconds,
    )
    jobs = workload.scored_jobs
    lo, hi, step = (int(v) for v in a.sizes.split(":"))
    sizes = np.arange(lo, hi, step)
    on_time = np.array([segment_compliance(workload, a.sla, int(s), fleet) for s in sizes])
    per_segment = np.bincount(segments(workload))
    static = [(int(s), on_time[i].sum() / jobs) for i, s in enumerate(sizes)]
    lines = [
        header(f"NASA x10 at SLA {a.sla:g} s, target {a.target:.0%}: what hindsight costs"),
        f"Window: trace seconds {start:,}..{start + counts.size:,} (the bench's), {jobs:,} jobs, "
        f"{float(workload.service[workload.arrivals >= workload.warmup_seconds].sum()):,.0f} "
        "job-seconds of work; start-up 60 s + uniform 0..10 s; 10 s ticks.",
        "",
        "Static sizes (whole window): " + ", ".join(f"{s}: {share:.2%}" for s, share in static),
        "",
        "| yardstick | worker-s | within SLA | sizes per segment |",
        "| --- | ---: | ---: | --- |",
        *cheapest_pieces(sizes, on_time, per_segment, a.target),
    ]
    lead = float(fleet.provision_delay_seconds)
    bound, _ = fluid(workload, a.sla, lead, a.target)
    lines.append(
        f"| fluid lower bound ({a.target:.0%} on time, lead {lead:g} s) | "
        f"{bound:,.0f} | {a.target:.2%} | |"
    )
    _, schedule = fluid(workload, a.sla, lead, 1.0)
    ahead = int(lead + fleet.provision_jitter_seconds)
    for extra in (int(v) for v in a.extra.split(",")):
        policy = Scheduled(schedule, workload.warmup_seconds, ahead, extra)
        run = run_policy(workload, policy, fleet, math.ceil(schedule[0]) + extra)
        s = score(run, a.sla)
        lines.append(
            f"| clairvoyant replay (100 % schedule + {extra}, ordered {ahead} s ahead) | "
            f"{s.worker_seconds:,.0f} | {s.sla_compliance:.2%} | |"
        )
    write(results_name(a.sla, a.target), "\n".join(lines))


if __name__ == "__main__":
    main()
