"""The yardstick's cells and results file: each row's tuned runs judged by `sim.verdict`.

`judge_row` turns one row's runs (`sim.tuning.tune_row`) into cells, one per SLA x target, each
with the verdict for every judged policy (each configured for the cell, `tuning.our_key`);
`results_markdown` writes them as benchmarks/results/policy_frontier.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from queue_autoscale.core import DEFAULT_POLICY
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
    our_key,
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

JUDGED: tuple[str, ...] = (DEFAULT_POLICY, "seed-hybrid")
"""The policies judged unless others are named: the controller's default and seed-hybrid as
the seeds write it."""


@dataclass(frozen=True, slots=True)
class Judged:
    """One cell: each judged policy's run and verdict, and the yardsticks they were held to."""

    policies: tuple[str, ...]
    cells: tuple[Cell, ...]
    """Per policy (in `policies` order): the cell with that policy's run as `ours`."""
    verdicts: tuple[Verdict, ...]
    bound_run: Run
    """The reaction bound's run (in the cells' `bound` only where it is a bound)."""

    @property
    def cell(self) -> Cell:
        """The cell as the first judged policy sees it (the yardsticks are every policy's)."""
        return self.cells[0]

    @property
    def key(self) -> str:
        """e.g. 'spike seed 1 / 30 s / 99.9%'."""
        c = self.cell
        return f"{c.row} / {c.sla_seconds:g} s / {c.target:.1%}"

    def verdict_of(self, policy: str) -> Verdict:
        """The verdict of one judged policy."""
        return self.verdicts[self.policies.index(policy)]

    def run_of(self, policy: str) -> Run:
        """The run of one judged policy."""
        return self.cells[self.policies.index(policy)].ours


def judge_row(
    rr: RowRuns,
    slas: Sequence[float],
    targets: Sequence[float],
    policies: Sequence[str] = JUDGED,
) -> list[Judged]:
    """Every cell of one row, each judged policy judged by the one `judge`."""
    runs, out = rr.runs, []
    for sla in slas:
        at_sla = [s for (s_sla, _), group in rr.searches.items() if s_sla == sla for s in group]
        bound = Run.of(BOUND_NAME, runs.score((BOUND_NAME, sla, None), sla))
        statics = tuple(Run.of(k[0], runs.score(k, sla)) for k in cell_keys(at_sla, "static", None))
        for target in targets:
            allowed = floors(rr.mean_rate, runs.spec, sla, target)
            peers = {
                name: tuple(
                    Run.of(k[0], runs.score(k, sla)) for k in cell_keys(at_sla, name, knob, allowed)
                )
                for name, knob in (("keda", "min_replicas"), ("target-tracking", "min_capacity"))
            }
            tuned = [r for r in (*peers["keda"], *peers["target-tracking"]) if _reacting(r)]
            yardsticks = Cell(
                row=rr.row.label,
                steady=rr.row.name == "steady",
                sla_seconds=sla,
                target=target,
                ours=bound,
                bound=bound if is_bound(bound, tuned) else None,
                keda=peers["keda"],
                target_tracking=peers["target-tracking"],
                static=statics,
            )
            cells = tuple(
                replace(yardsticks, ours=Run.of(p, runs.score(our_key(p, sla, target), sla)))
                for p in policies
            )
            verdicts = tuple(judge(c) for c in cells)
            out.append(Judged(tuple(policies), cells, verdicts, bound))
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
    """The cell-by-cell table of one row: each judged policy's run and verdict, then the
    yardsticks."""
    policies = judged[0].policies if judged else ()
    head = ["SLA s", "target", *policies, "cheapest tuned keda",
            "cheapest tuned target-tracking", "least static (hindsight)",
            "reaction bound"]  # fmt: skip
    lines = [row(head), row(["---:", "---:", *["---"] * (len(head) - 2)])]
    for j in judged:
        c = j.cell
        b = j.bound_run
        bound = f"{b.compliance:.3%}, {b.worker_seconds:,.0f}" + (
            "" if c.bound is not None else " (no bound here: a reacting tuned peer keeps more)"
        )
        ours = [
            f"{_ours_cell(x.ours)}: {v.words}" for x, v in zip(j.cells, j.verdicts, strict=True)
        ]
        lines.append(
            row(
                [
                    f"{c.sla_seconds:g}",
                    f"{c.target:.1%}",
                    *ours,
                    _run_cell(cheapest(c.keda, c.target)),
                    _run_cell(cheapest(c.target_tracking, c.target)),
                    _run_cell(cheapest(c.static, c.target), flaps=False),
                    bound,
                ]
            )
        )
    return lines


def summary_lines(rows: Sequence[tuple[str, Sequence[Judged]]]) -> list[str]:
    """Per row and SLA: each judged policy's verdict per target ('pass' or 'not met')."""
    lines: list[str] = []
    for label, judged in rows:
        by_sla: dict[float, list[Judged]] = {}
        for j in judged:
            by_sla.setdefault(j.cell.sla_seconds, []).append(j)
        for sla, cells in by_sla.items():
            verdicts = [
                "pass" if j.verdicts[i].passed else "not met"
                for i in range(len(cells[0].policies))
                for j in cells
            ]
            lines.append(row([label, f"{sla:g}", *verdicts]))
    return lines


def tallies(rows: Sequence[tuple[str, Sequence[Judged]]]) -> dict[str, Tally]:
    """Each judged policy's tally over every cell of `rows`."""
    every = [j for _, judged in rows for j in judged]
    policies = every[0].policies if every else ()
    return {
        p: tally([(j.key, j.cells[i], j.verdicts[i]) for j in every])
        for i, p in enumerate(policies)
    }


def sla_tallies(rows: Sequence[tuple[str, Sequence[Judged]]]) -> dict[float, dict[str, Tally]]:
    """`tallies` per SLA."""
    slas = sorted({j.cell.sla_seconds for _, judged in rows for j in judged})
    return {
        sla: tallies(
            [(label, [j for j in judged if j.cell.sla_seconds == sla]) for label, judged in rows]
        )
        for sla in slas
    }


def beats_words(a: str, b: str, counts: dict[str, Tally]) -> str:
    """Whether policy `a` beats `b` (`verdict.beats`), with the figures it rests on."""
    ta, tb = counts[a], counts[b]
    both = ta.worker_seconds.keys() & tb.worker_seconds.keys()
    wa = sum(ta.worker_seconds[k] for k in both)
    wb = sum(tb.worker_seconds[k] for k in both)
    return (
        f"{a} beats {b}: **{'yes' if beats(ta, tb) else 'no'}** ({a} passes {ta.passed}, {b} "
        f"{tb.passed}; on the {len(both)} cells both pass, {wa:,.0f} against {wb:,.0f} worker-s)"
    )


def failure_counts(rows: Sequence[tuple[str, Sequence[Judged]]], policy: str) -> list[str]:
    """How often each verdict clause fails for `policy`, and on how many cells it alone fails
    (read from `sim.verdict.judge`'s words)."""
    kinds = {
        "misses the target": ("misses", "below the bound", "of the bound's"),
        "more worker-s than a tuned peer": ("worker-s > tuned",),
        "more worker-s than 1.03 x hindsight static": ("x hindsight",),
        "flaps": (" flaps",),
        "utilization at 300 s": ("utilization",),
    }
    seen = {k: 0 for k in kinds}
    alone = {k: 0 for k in kinds}
    for _, judged in rows:
        for j in judged:
            hit = {
                k
                for k, marks in kinds.items()
                for f in j.verdict_of(policy).failures
                if any(m in f for m in marks)
            }
            for k in hit:
                seen[k] += 1
                alone[k] += len(hit) == 1
    return [f"{k} in {seen[k]} cells ({alone[k]} on this alone)" for k in kinds if seen[k]]


def ablation_lines(
    rows: Sequence[tuple[str, Sequence[Judged]]], full: str, variants: Mapping[str, str]
) -> list[str]:
    """The ablation of `full`: per mechanism (`variants`: the label of `full` with it off ->
    the mechanism), the cells it gains (`full` passes, the variant does not) and loses (the
    variant passes, `full` does not), and the worker-seconds with and without it over every
    cell. A mechanism stays only when it gains a cell and loses none."""
    every = [j for _, judged in rows for j in judged]
    head = ["mechanism", "passes with it", "without it", "cells it gains", "cells it loses",
            "worker-s with it", "without it", "stays"]  # fmt: skip
    lines = [row(head), row(["---", *["---:"] * 6, "---"])]
    details = []
    for label, mechanism in variants.items():
        gained = [j.key for j in every if j.verdict_of(full).passed > j.verdict_of(label).passed]
        lost = [j.key for j in every if j.verdict_of(full).passed < j.verdict_of(label).passed]
        stays = "no: loses a cell" if lost else ("yes" if gained else "no: gains none")
        lines.append(
            row(
                [
                    f"`{mechanism}` (`{label}`)",
                    str(sum(j.verdict_of(full).passed for j in every)),
                    str(sum(j.verdict_of(label).passed for j in every)),
                    str(len(gained)),
                    str(len(lost)),
                    f"{sum(j.run_of(full).worker_seconds for j in every):,.0f}",
                    f"{sum(j.run_of(label).worker_seconds for j in every):,.0f}",
                    stays,
                ]
            )
        )
        details.append(
            f"- `{mechanism}` gains {', '.join(gained) or 'no cell'}; loses "
            f"{', '.join(lost) or 'no cell'}."
        )
    return [*lines, "", *details]


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


def results_markdown(  # noqa: PLR0913 - the results file's parts, each named
    rows: Sequence[tuple[str, Sequence[Judged]]],
    set_name: str,
    command: str,
    base_command: str,
    setup: Sequence[str],
    wall_seconds: float,
    machine: str,
    pending: Sequence[str] = (),
    ablation: Mapping[str, str] | None = None,
) -> str:
    """The results file for one set (with the ablation of the first judged policy when
    `ablation` maps its variants to the mechanism each switches off)."""
    counts = tallies(rows)
    policies = list(counts)
    lines = [
        f"# Policy frontier: the verdict on each {set_name} cell",
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
        f"- Judged: {', '.join(f'`{p}`' for p in policies)}, each configured for the "
        "cell's SLA and target (percentile = target), `seed-hybrid` for the SLA as seeded. "
        "The verdict: `sim/verdict.py` (docs/benchmarks.md).",
        "",
        "## Verdict",
        "",
    ]
    for p in policies:
        by_sla = ", ".join(
            f"{sla:g} s {t[p].passed}/{t[p].cells}" for sla, t in sla_tallies(rows).items()
        )
        lines.append(
            f"- {p} passes **{counts[p].passed} of {counts[p].cells}** cells "
            f"({by_sla}). Fails: {'; '.join(failure_counts(rows, p)) or 'none'}."
        )
    lines += [f"- {beats_words(policies[0], p, counts)}." for p in policies[1:]]
    if pending:
        lines.append(
            f"- **Not judged here** ({len(pending)} of the set's rows: left out by `--rows` or "
            f"not reached): {', '.join(pending)}."
        )
    targets = sorted({j.cell.target for _, judged in rows for j in judged})
    lines += [
        "",
        row(["row", "SLA s", *[f"{p} {t:.1%}" for p in policies for t in targets]]),
        row(["---", "---:", *["---"] * (len(policies) * len(targets))]),
        *summary_lines(rows),
        "",
    ]
    if ablation:
        lines += ["## Ablation", "", *ablation_lines(rows, policies[0], ablation), ""]
    for label, judged in rows:
        lines += [f"## {label}", "", *cell_lines(judged), ""]
    return "\n".join(lines) + "\n"
