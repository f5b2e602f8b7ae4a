"""The demo's run-to-run spread, and how far the simulator fed the demo's own jobs is from it.

    .venv/bin/python benchmarks/demo_agreement.py                   # 5 demo runs (~3 min each)
    .venv/bin/python benchmarks/demo_agreement.py --runs 2 --out /tmp/agreement.md
    .venv/bin/python benchmarks/demo_agreement.py --folders out/run-1 out/run-2   # analyse only

Each run is `queue-autoscale demo --no-report` (the default two minutes: the same seeded jobs
every run, real worker processes, the emulator's ECS lifecycle). The spread of the five runs
(their compliance, billed worker-seconds, and the share of ticks whose targets two runs agree
on within +-1 worker) sets the tolerance; then each run's archive is replayed through the
simulator with the demo's settings (`simulate --archive`'s path: the jobs' own arrivals and
durations, the queue's config, the decision log's tick gap and starting fleet) and compared
with that run's "as run" row: `simulate --archive`'s fidelity line (demo/agreement.py,
sim/as_run.py), the one agreement measure. The spread is measured on the same figures: each
run's "as run" compliance and billed worker-seconds (the decision log's desired count until
the next tick: a task from its order to its stop, over the replay's span) and its logged
targets. Each figure's tolerance is as far as two runs are apart: compliance and worker-seconds
as the largest difference between two runs (worker-seconds relative to the smaller, as a
replay's share is relative to its run), at least one job's share; targets the least share of
ticks two runs agree on, at most all but one.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "functions"))

from queue_autoscale.demo.agreement import (  # noqa: E402
    Agreement,
    Tolerance,
    from_first,
    logged_targets,
    simulate_archive,
    within_one,
)
from queue_autoscale.demo.options import DemoOptions, demo_queue  # noqa: E402

QUEUE = "demo-jobs"


@dataclass(frozen=True)
class Run:
    """One demo run as measured, and the simulator on its jobs."""

    folder: Path
    jobs: int
    compliance: float
    worker_seconds: float
    """Billed as run (from the decision log), the same rule as the simulator's."""
    flaps: int
    wrong_way: int
    errors: int
    """Controller errors (a tick not finished in its budget on a loaded machine): such a run is
    shown but left out of the tolerance, as its world is not the one modelled."""
    targets: list[tuple[float, int]]
    """(s from the first, target) of every decision the demo's controller logged."""
    agreement: Agreement


def run_demo(folder: Path) -> float:
    """One `queue-autoscale demo --no-report` into `folder`; its wall seconds."""
    began = time.monotonic()
    command = [str(Path(sys.executable).parent / "queue-autoscale"), "demo", "--no-report"]
    subprocess.run(
        [*command, "--output", str(folder)],
        check=False,
        stdout=subprocess.DEVNULL,
        timeout=900,
    )
    return time.monotonic() - began


def analyse(folder: Path) -> Run:
    """The demo's own figures and the simulator's on the same jobs."""
    summary = json.loads((folder / "summary.json").read_text())
    config = demo_queue(DemoOptions())
    found = simulate_archive(folder / "archive", config)
    compliance = found.compliance - found.compliance_points / 100.0
    billed = found.as_run_worker_seconds
    return Run(
        folder=folder,
        jobs=int(summary["jobs_produced"]),
        compliance=compliance,
        worker_seconds=billed,
        flaps=int(summary.get("flaps", 0)),
        wrong_way=int(summary.get("wrong_way_scale_downs", 0)),
        errors=int(summary.get("controller_errors", 0)),
        targets=from_first(logged_targets(folder / "archive", QUEUE)),
        agreement=found,
    )


def report(runs: Sequence[Run], command: str, wall: float) -> str:
    """The results file's text."""
    clean = [r for r in runs if r.errors == 0] or list(runs)
    comp = [r.compliance for r in clean]
    work = [r.worker_seconds for r in clean]
    pairs = [within_one(a.targets, b.targets) for i, a in enumerate(clean) for b in clean[i + 1 :]]
    # at least one job's share: runs that all met the SLA have no spread to read
    comp_tol = max(max(comp) - min(comp), 1.0 / max(1, min(r.jobs for r in clean)))
    # as far as two runs are apart, each read against the other (the share divides by the
    # run): a replay in the other run's mode is then within it either way
    work_tol = (max(work) - min(work)) / min(work) if work and min(work) > 0 else 0.0
    # at least one tick's share, as at least one job's: five runs that all agree cannot tell it
    ticks = min((len(r.targets) for r in clean), default=0)
    tick_floor = min(min(pairs, default=1.0), 1.0 - 1.0 / ticks) if ticks else 0.0
    lines = [
        "# Demo run-to-run spread and simulator agreement",
        "",
        f"Command: `{command}` ({len(runs)} runs, {wall / 60:.0f} min wall; "
        f"{platform.machine()}, {platform.python_version()}, 2 shared cores). "
        "Each run: `queue-autoscale demo --no-report`, the same seeded jobs.",
        "",
        f"## The demo against itself ({len(runs)} runs)",
        "",
        "| run | within SLA | billed worker-s | flaps | wrong-way | controller errors |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for i, r in enumerate(runs, 1):
        left_out = " (left out of the spread)" if r not in clean else ""
        lines.append(
            f"| {i} | {r.compliance:.1%} | {r.worker_seconds:.0f} | {r.flaps} | {r.wrong_way} "
            f"| {r.errors}{left_out} |"
        )
    lines += [
        "",
        f"Spread of the {len(clean)} runs without a controller error: compliance "
        f"{min(comp):.1%}..{max(comp):.1%} ({(max(comp) - min(comp)) * 100:.1f} points); "
        f"billed worker-seconds {min(work):.0f}..{max(work):.0f} "
        f"({work_tol:.0%} of the least); targets within +-1 worker between two runs on "
        f"{min(pairs, default=0):.0%}..{max(pairs, default=0):.0%} of ticks.",
        "",
        f"Tolerance set from it: compliance within {comp_tol * 100:.1f} points (at least one "
        f"job), worker-seconds "
        f"within {work_tol:.0%}, targets within +-1 on at least {tick_floor:.0%} of ticks "
        "(all but one, at most).",
        "",
        "## The simulator on each run's jobs",
        "",
        "| run | sim within SLA | diff, points | sim worker-s | diff | targets +-1 | verdict |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    measured = Tolerance(comp_tol * 100, work_tol, tick_floor)
    for i, r in enumerate(runs, 1):
        a = r.agreement
        lines.append(
            f"| {i} | {a.compliance:.1%} | {a.compliance_points:+.1f} | {a.worker_seconds:.0f} "
            f"| {a.worker_seconds_share:+.0%} | {a.ticks_within_one:.0%} "
            f"| {'within' if a.within(measured) else 'outside'} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    """Run (or read) the demo runs and write the results file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--folders", nargs="*", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "demo_agreement.md")
    args = parser.parse_args()
    began = time.monotonic()
    folders = args.folders
    if not folders:
        scratch = Path(tempfile.mkdtemp(prefix="demo-agreement-"))
        folders = [scratch / f"run-{i}" for i in range(1, args.runs + 1)]
        for folder in folders:
            print(f"{folder}: {run_demo(folder):.0f} s", flush=True)
    runs = [analyse(folder) for folder in folders]
    command = "python benchmarks/demo_agreement.py " + " ".join(sys.argv[1:])
    args.out.write_text(report(runs, command.strip(), time.monotonic() - began))
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
