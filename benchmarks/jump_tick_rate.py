"""How many jump ticks the record path asks for an hour: the input the stack's bill assumes
(`operator.cost_jumps.JUMP_TICKS_PER_QUEUE_HOUR`).

Runs `predictive` on validation rows as the verdict does (`frontier_verdict.py`'s jitter and
the record path 2 s late, the events queue's batching window), at SLAs where jump ticks apply
(S <= L + I: 10, 30 and 60 s at the 60 s lead and 10 s interval), and counts the ticks that fall
between the clock's, after the warm-up.

    .venv/bin/python benchmarks/jump_tick_rate.py [--rows steady:1 spike:1 bursty:1 nasa:46]

Writes `results/jump_tick_rate.md`.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "functions"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import header, write  # noqa: E402
from frontier_verdict import DEFAULT_TRACE, run_spec  # noqa: E402

from queue_autoscale.ingest.lateness import EVENTS_BATCHING_WINDOW_SECONDS  # noqa: E402
from queue_autoscale.sim.engine import run_policy  # noqa: E402
from queue_autoscale.sim.policies import CorePolicy, initial_workers, make_policy  # noqa: E402
from queue_autoscale.sim.tuning import Row, row_runs  # noqa: E402

SLAS = (10.0, 30.0, 60.0)
"""SLAs (s) where the verdict's controller has jump ticks (S <= L + I = 70 s)."""
TARGET = 0.99


def row_of(label: str) -> Row:
    """`nasa:46` or `bursty:1` -> the verdict's row."""
    name, number = label.split(":")
    return Row("nasa", 1, int(number)) if name == "nasa" else Row(name, int(number))


def jump_ticks(row: Row, sla: float) -> tuple[int, float]:
    """(jump ticks after the warm-up, scored hours) of `predictive` on `row` at `sla`."""
    runs = row_runs(row, DEFAULT_TRACE, run_spec(), (sla,))
    cell = replace(runs.spec, sla_seconds=sla, percentile=TARGET)
    settings = cell.settings()
    policy = make_policy("predictive", settings, runs.counts, True)
    assert isinstance(policy, CorePolicy)
    warm = float(runs.counts[:300].mean())
    fleet = cell.fleet()
    result = run_policy(runs.workload, policy, fleet, initial_workers(policy, settings, warm))
    warmup = runs.workload.warmup_seconds
    interval = round(settings.evaluation_interval_seconds)
    off_clock = [
        decision
        for decision in policy.decisions
        if decision.at - fleet.base_epoch >= warmup
        and round(decision.at - fleet.base_epoch) % interval
    ]
    hours = (len(result.series.desired) - warmup) / 3600
    return len(off_clock), hours


def main(argv: list[str]) -> int:
    """Print and write the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", nargs="+", default=["steady:1", "spike:1", "bursty:1", "nasa:46"])
    parser.add_argument("--out", default="jump_tick_rate.md")
    args = parser.parse_args(argv)
    lines = [
        header("Jump ticks an hour, as the verdict's controller asks for them"),
        f"`predictive` at {TARGET:.0%}, the verdict's run settings, the record path "
        f"{EVENTS_BATCHING_WINDOW_SECONDS} s late; ticks between the clock's after the warm-up. "
        "The line a jump passes reads the arrival rate and its dispersion alone, not the SLA, "
        "so wherever jump ticks apply a row asks for the same ones.",
        "",
        "| row | SLA s | jump ticks | hours | per hour |",
        "|---|---:|---:|---:|---:|",
    ]
    for label in args.rows:
        row = row_of(label)
        for sla in SLAS:
            count, hours = jump_ticks(row, sla)
            lines.append(f"| {row.label} | {sla:g} | {count} | {hours:.1f} | {count / hours:.1f} |")
    write(args.out, "\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
