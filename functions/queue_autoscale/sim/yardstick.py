"""The yardstick's cells and results file: each row's tuned runs judged by `sim.verdict`.

`judge_row` turns one row's runs (`sim.tuning.tune_row`) into cells, one per SLA x target, each
with the verdict for `hybrid` (configured for the target) and for `seed-hybrid`;
`results_markdown` writes them as benchmarks/results/policy_frontier.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from queue_autoscale.sim.bound import NAME as BOUND_NAME
from queue_autoscale.sim.policies import parse_policy
from queue_autoscale.sim.tuning import (
    DAY_SECONDS,
    KEDA_WINDOWS,
    NASA_SCALE,
    SETS,
    TT_COOLDOWNS,
    RowRuns,
    cell_keys,
    floors,
)
from queue_autoscale.sim.verdict import (
    Cell,
    Run,
    Tally,
    Verdict,
    beats,
    cheapest,
    is_bound,
    judge,
    tally,
)


@dataclass(frozen=True, slots=True)
class Judged:
    """One cell: hybrid's and seed-hybrid's verdicts, and the yardsticks they were held to."""

    cell: Cell
    verdict: Verdict
    seed: Run
    seed_verdict: Verdict
    bound_run: Run
    """The reaction bound's run (in `cell.bound` only where it is a bound)."""

    @property
    def key(self) -> str:
        """e.g. 'spike seed 1 / 30 s / 99.9%'."""
        c = self.cell
        return f"{c.row} / {c.sla_seconds:g} s / {c.target:.1%}"


def judge_row(rr: RowRuns, slas: Sequence[float], targets: Sequence[float]) -> list[Judged]:
    """Every cell of one row, judged."""
    runs, out = rr.runs, []
    for sla in slas:
        at_sla = [s for (s_sla, _), group in rr.searches.items() if s_sla == sla for s in group]
        bound = Run.of(BOUND_NAME, runs.score((BOUND_NAME, sla, None), sla))
        seed = Run.of("seed-hybrid", runs.score(("seed-hybrid", sla, None), sla))
        statics = tuple(Run.of(k[0], runs.score(k, sla)) for k in cell_keys(at_sla, "static", None))
        for target in targets:
            allowed = floors(rr.mean_rate, runs.spec, sla, target)
            peers = {
                name: tuple(
                    Run.of(k[0], runs.score(k, sla)) for k in cell_keys(at_sla, name, knob, allowed)
                )
                for name, knob in (("keda", "min_replicas"), ("target-tracking", "min_capacity"))
            }
            ours = Run.of("hybrid", runs.score(("hybrid", sla, target), sla))
            tuned = [r for r in (*peers["keda"], *peers["target-tracking"]) if _reacting(r)]
            cell = Cell(
                row=rr.row.label,
                steady=rr.row.name == "steady",
                sla_seconds=sla,
                target=target,
                ours=ours,
                bound=bound if is_bound(bound, tuned) else None,
                keda=peers["keda"],
                target_tracking=peers["target-tracking"],
                static=statics,
            )
            out.append(Judged(cell, judge(cell), seed, judge(replace(cell, ours=seed)), bound))
    return out


def _reacting(run: Run) -> bool:
    """A peer setting with a floor of 0 or 1 worker: it holds nothing before a surge."""
    choice = parse_policy(run.label)
    floor = choice.get("min_replicas")
    floor = choice.get("min_capacity") if floor is None else floor
    return floor is not None and floor <= 1


def row(cells: Sequence[str]) -> str:
    """A markdown table row."""
    return "| " + " | ".join(cells) + " |"


def _run_cell(run: Run | None, flaps: bool = True) -> str:
    if run is None:
        return "none meets"
    extra = f", {run.flaps} flaps" if flaps else ""
    return f"`{run.label}`: {run.worker_seconds:,.0f} ({run.compliance:.3%}{extra})"


def _ours_cell(run: Run) -> str:
    return (
        f"{run.compliance:.3%}, {run.worker_seconds:,.0f} worker-s, {run.flaps} flaps, "
        f"util {run.utilization:.3f}"
    )


def cell_lines(judged: Sequence[Judged]) -> list[str]:
    """The cell-by-cell table of one row."""
    head = ["SLA s", "target", "hybrid", "verdict", "seed-hybrid", "cheapest tuned keda",
            "cheapest tuned target-tracking", "least static (hindsight)",
            "reaction bound"]  # fmt: skip
    lines = [row(head), row(["---:", "---:", *["---"] * (len(head) - 2)])]
    for j in judged:
        c = j.cell
        b = j.bound_run
        bound = f"{b.compliance:.3%}, {b.worker_seconds:,.0f}" + (
            "" if c.bound is not None else " (no bound here: a reacting tuned peer keeps more)"
        )
        lines.append(
            row(
                [
                    f"{c.sla_seconds:g}",
                    f"{c.target:.1%}",
                    _ours_cell(c.ours),
                    j.verdict.words,
                    f"{_ours_cell(j.seed)}: {j.seed_verdict.words}",
                    _run_cell(cheapest(c.keda, c.target)),
                    _run_cell(cheapest(c.target_tracking, c.target)),
                    _run_cell(cheapest(c.static, c.target), flaps=False),
                    bound,
                ]
            )
        )
    return lines


def summary_lines(rows: Sequence[tuple[str, Sequence[Judged]]]) -> list[str]:
    """Per row and SLA: hybrid's verdict per target ('pass' or 'not met')."""
    lines: list[str] = []
    for label, judged in rows:
        by_sla: dict[float, list[Judged]] = {}
        for j in judged:
            by_sla.setdefault(j.cell.sla_seconds, []).append(j)
        for sla, cells in by_sla.items():
            verdicts = ["pass" if j.verdict.passed else "not met" for j in cells]
            lines.append(row([label, f"{sla:g}", *verdicts]))
    return lines


def tallies(rows: Sequence[tuple[str, Sequence[Judged]]]) -> tuple[Tally, Tally]:
    """(hybrid's, seed-hybrid's) tally over every cell of `rows`."""
    every = [j for _, judged in rows for j in judged]
    ours = tally([(j.key, j.cell, j.verdict) for j in every])
    seed = tally([(j.key, replace(j.cell, ours=j.seed), j.seed_verdict) for j in every])
    return ours, seed


def set_lines(command: str) -> list[str]:
    """The split, with the command that reproduces each set."""
    lines = []
    for name, (seeds, days) in SETS.items():
        seed_words = ", ".join(str(s) for s in seeds)
        day_words = ", ".join(str(d) for d in days)
        lines.append(
            f"- *{name} set*: every scenario at seed {seed_words} (whole length), NASA days "
            f"{day_words} (each day = seconds day x {DAY_SECONDS:,} .. +{DAY_SECONDS:,} of the "
            f"trace, each second's count x{NASA_SCALE}). Reproduce: `{command} --set {name}`"
        )
    return lines


def results_markdown(
    rows: Sequence[tuple[str, Sequence[Judged]]],
    set_name: str,
    command: str,
    base_command: str,
    setup: Sequence[str],
    wall_seconds: float,
    machine: str,
    pending: Sequence[str] = (),
) -> str:
    """The results file for one set."""
    ours, seed = tallies(rows)
    won = beats(ours, seed)
    lines = [
        "# Policy frontier: the verdict on each validation cell",
        "",
        "Generated by `benchmarks/frontier_verdict.py` (`sim/tuning.py`, `sim/verdict.py`, "
        "`sim/yardstick.py`); do not edit by hand. This file, from the repository root:",
        "",
        "```",
        command,
        "```",
        "",
        f"Set: **{set_name}**. Ran in {wall_seconds:,.0f} s on {machine}.",
        "",
        "## The split",
        "",
        *set_lines(base_command),
        "",
        "Our controller's rules and defaults may be tuned on the tuning set only; every claim "
        "rests on the validation set. Each row is its own cells (SLA x target); nothing is "
        "pooled.",
        "",
        "## Set-up",
        "",
        *setup,
        f"- Peers tuned per cell with hindsight (`sim/tuning.py`): `keda` queue_length on a "
        f"geometric grid (steps <= 25 %) from 1 to SLA x concurrency / job time, "
        f"scale_down_stabilization {'/'.join(str(w) for w in KEDA_WINDOWS)} s, min_replicas "
        f"0, 1 and the Erlang-C size of the row's mean rate at the cell's SLA and target; "
        f"`target-tracking` target_value on the same grid, scale_in_cooldown "
        f"{'/'.join(str(c) for c in TT_COOLDOWNS)} s, min_capacity as keda's floor. The main "
        "knob bisected per (other knobs); the cheapest meeting setting probed is the cell's "
        "tuned peer. `static`: the least size meeting the target (bisection), the hindsight "
        "yardstick, never a tuned peer.",
        "- `hybrid` configured for each cell's target (percentile = target) and SLA; "
        "`seed-hybrid` as seeded. The verdict: `sim/verdict.py` (docs/benchmarks.md).",
        "",
        "## Verdict",
        "",
        f"- hybrid passes **{ours.passed} of {ours.cells}** cells; seed-hybrid {seed.passed} of "
        f"{seed.cells}. Hybrid beats seed-hybrid: {'yes' if won else 'no'}.",
    ]
    if pending:
        lines.append(f"- Not run (out of time): {', '.join(pending)}.")
    lines += [
        "",
        row(["row", "SLA s", "95.0%", "99.0%", "99.9%"]),
        row(["---", "---:", "---", "---", "---"]),
        *summary_lines(rows),
        "",
    ]
    for label, judged in rows:
        lines += [f"## {label}", "", *cell_lines(judged), ""]
    return "\n".join(lines) + "\n"
