"""Run every benchmark in benchmarks/ in sequence and say where each result went.

    .venv/bin/python benchmarks/run_all.py            # default sizes (tens of minutes)
    .venv/bin/python benchmarks/run_all.py --quick    # small sizes, a few minutes
    .venv/bin/python benchmarks/run_all.py --only controller_tick ingest_throughput

One at a time (the machine has 2 cores; two benchmarks at once would measure each
other). A benchmark that fails, or whose optional external piece is missing (PostgreSQL
for backlog_vs_postgres), is reported as skipped with the reason and the others still
run. With --quick every result goes to `<name>.quick.md`, so the committed full-size
results are not overwritten by small runs (for scripts without an output option the
full-size file is kept aside and put back).
"""

from __future__ import annotations

import argparse
import glob
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PYTHON = sys.executable


@dataclass(frozen=True)
class Bench:
    """One benchmark: how to run it at full and quick size, and what it writes."""

    name: str
    command: list[str]
    quick: list[str]
    results: str
    quick_results: str
    needs: str | None = None
    """An optional external program; without it the benchmark is skipped."""
    has_out: bool = True
    """False: the script always writes `results`; a quick run's file is renamed afterwards."""


JITTER_CELL = ("--row", "bursty seed 1", "--sla", "60", "--target", "0.99")
"""The cell `make bench` runs under other start-up jitter draws (`cell_jitter.py`)."""


def _cli() -> str:
    """The queue-autoscale console script of this interpreter's environment."""
    script = Path(PYTHON).parent / "queue-autoscale"
    return str(script) if script.exists() else "queue-autoscale"


def _py(script: str, *args: str) -> list[str]:
    return [PYTHON, str(HERE / script), *args]


def benches() -> list[Bench]:
    """Every benchmark, in the order they run (cheap first)."""
    cli = _cli()
    return [
        Bench(
            "decision_throughput",
            _py("decision_throughput.py"),
            _py("decision_throughput.py", "--decisions", "5000"),
            "decision_throughput.md",
            "decision_throughput.quick.md",
            has_out=False,
        ),
        Bench(
            "flash_crowd_bound",
            _py("flash_crowd_bound.py"),
            _py("flash_crowd_bound.py", "--seeds", "1", "--out", "flash_crowd_bound.quick.md"),
            "flash_crowd_bound.md",
            "flash_crowd_bound.quick.md",
        ),
        Bench(
            "cell_jitter",
            _py("cell_jitter.py", *JITTER_CELL, "--seeds", "16"),
            _py("cell_jitter.py", *JITTER_CELL, "--seeds", "2", "--out", "cell_jitter.quick.md"),
            "cell_jitter.md",
            "cell_jitter.quick.md",
        ),
        Bench(
            "miss_episodes",
            _py("miss_episodes.py"),
            _py("miss_episodes.py", "--limit", "2", "--out", "miss_episodes.quick.md"),
            "miss_episodes.md",
            "miss_episodes.quick.md",
        ),
        Bench(
            "ingest_throughput",
            _py("ingest_throughput.py"),
            _py(
                "ingest_throughput.py",
                "--batches",
                "5",
                "--repeat",
                "2",
                "--out",
                "ingest_throughput.quick.md",
            ),
            "ingest_throughput.md",
            "ingest_throughput.quick.md",
        ),
        Bench(
            "controller_tick",
            _py("controller_tick.py"),
            _py(
                "controller_tick.py",
                "--sizes",
                "1",
                "10",
                "--repeat",
                "1",
                "--out",
                "controller_tick.quick.md",
            ),
            "controller_tick.md",
            "controller_tick.quick.md",
        ),
        Bench(
            "ingest_conservation",
            _py("ingest_conservation.py"),
            _py("ingest_conservation.py", "--events", "20000"),
            "ingest_conservation.md",
            "ingest_conservation.quick.md",
            has_out=False,
        ),
        Bench(
            "policy_quality",
            [cli, "bench"],
            [
                cli,
                "bench",
                "--quick",
                "--trace-length",
                "3600",
                "--no-speed",
                "--out",
                "benchmarks/results/policy_quality.quick.md",
                "--frontier-out",
                "benchmarks/results/policy_sweep.quick.md",
            ],
            "policy_quality.md",
            "policy_quality.quick.md",
        ),
        Bench(
            "nasa_hindsight",
            _py("nasa_hindsight.py"),
            _py("nasa_hindsight.py", "--sizes", "40:64:4", "--extra", "1"),
            "nasa_hindsight_sla10.md",
            "nasa_hindsight_sla10.quick.md",
            has_out=False,
        ),
        *(
            Bench(
                f"nasa_hindsight_sla30{suffix}",
                _py("nasa_hindsight.py", "--sla", "30", "--target", target),
                _py(
                    "nasa_hindsight.py",
                    *("--sla", "30", "--target", target, "--sizes", "40:64:4", "--extra", "1"),
                ),
                f"nasa_hindsight_sla30{suffix}.md",
                f"nasa_hindsight_sla30{suffix}.quick.md",
                has_out=False,
            )
            for target, suffix in (("0.95", ""), ("0.99", "_p99"))
        ),
        Bench(
            "frontier_seeds",
            _py("frontier_seeds.py", "--seeds", "0", "1", "2", "3"),
            _py("frontier_seeds.py", "--quick", "--seeds", "1", "--out", "frontier_seeds.quick.md"),
            "frontier_seeds.md",
            "frontier_seeds.quick.md",
        ),
        Bench(
            "backlog_vs_postgres",
            _py("backlog_vs_postgres.py"),
            _py(
                "backlog_vs_postgres.py",
                "--sizes",
                "1000",
                "10000",
                "--out",
                "backlog_vs_postgres.quick.md",
            ),
            "backlog_vs_postgres.md",
            "backlog_vs_postgres.quick.md",
            needs="postgres",
        ),
        Bench(
            "sla_report_vs_duckdb",
            _py("sla_report_vs_duckdb.py"),
            _py(
                "sla_report_vs_duckdb.py",
                "--jobs",
                "100000",
                "--out",
                "sla_report_vs_duckdb.quick.md",
            ),
            "sla_report_vs_duckdb.md",
            "sla_report_vs_duckdb.quick.md",
        ),
        Bench(
            "incremental_cost_curve",
            _py("incremental_cost_curve.py"),
            _py(
                "incremental_cost_curve.py",
                "--days",
                "5",
                "--jobs-per-day",
                "20000",
                "--out",
                "incremental_cost_curve.quick.md",
            ),
            "incremental_cost_curve.md",
            "incremental_cost_curve.quick.md",
        ),
    ]


def postgres_available() -> bool:
    """PostgreSQL's server binaries are on PATH or in Debian's versioned directory."""
    if shutil.which("initdb") and shutil.which("postgres"):
        return True
    return bool(glob.glob("/usr/lib/postgresql/*/bin/initdb"))


def can_install_postgres() -> bool:
    """backlog_vs_postgres installs PostgreSQL with apt-get when it may (root or sudo)."""
    return shutil.which("apt-get") is not None


def last_lines(text: str, count: int = 3) -> str:
    """The last non-empty lines of a process's output (the usual place of the reason)."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return " / ".join(lines[-count:]) or "no output"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, a few minutes")
    parser.add_argument("--only", nargs="+", help="run only these benchmarks (by name)")
    args = parser.parse_args()
    chosen = [b for b in benches() if not args.only or b.name in args.only]
    unknown = set(args.only or []) - {b.name for b in benches()}
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(sorted(unknown))}")

    summary: list[tuple[str, str, str]] = []
    for bench in chosen:
        command = bench.quick if args.quick else bench.command
        results = HERE / "results" / (bench.quick_results if args.quick else bench.results)
        if bench.needs == "postgres" and not postgres_available() and not can_install_postgres():
            summary.append((bench.name, "skipped", "PostgreSQL not installed, no apt-get"))
            continue
        full = HERE / "results" / bench.results
        kept = full.read_bytes() if args.quick and not bench.has_out and full.exists() else None
        print(f"\n=== {bench.name}: {' '.join(command)}", flush=True)
        started = time.perf_counter()
        # Output streams through; only the tail is kept for a failure's reason.
        process = subprocess.Popen(
            command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        assert process.stdout is not None
        tail: list[str] = []
        for line in process.stdout:
            print(line, end="", flush=True)
            tail = [*tail[-20:], line]
        code = process.wait()
        seconds = time.perf_counter() - started
        if args.quick and not bench.has_out:
            if full.exists():
                full.replace(results)
            if kept is not None:
                full.write_bytes(kept)
        if code == 0:
            summary.append((bench.name, f"ok in {seconds:.0f} s", str(results.relative_to(ROOT))))
        else:
            status = "skipped" if bench.needs else "FAILED"
            summary.append((bench.name, f"{status} (exit {code})", last_lines("".join(tail))))

    print("\n=== summary")
    width = max(len(name) for name, _, _ in summary) if summary else 0
    for name, status, where in summary:
        print(f"{name:<{width}}  {status:<16}  {where}")
    return 1 if any(status.startswith("FAILED") for _, status, _ in summary) else 0


if __name__ == "__main__":
    sys.exit(main())
