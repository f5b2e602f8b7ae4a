"""How long the daily Spark work takes as one job (the SLA report, then the trend fit, in one
session: `glue_jobs/daily.py`) against the two jobs it replaced, each in its own process.

Each variant runs in a fresh Python process on local Spark (`local[*]`), from the process start
to its exit, so a session's start-up is counted once per job as Glue counts one per run, over
a copy of a demo's archive (`queue-autoscale demo` writes it to demo-output/archive). Local
seconds say what the merge saves in start-ups and the work's share; a Glue run's seconds are
not these (Glue's start-up and `--additional-python-modules` install come on top), so the bill
keeps its assumed Glue run length.

    nice -n 10 .venv/bin/python benchmarks/glue_daily_run.py --archive demo-output/archive

Writes benchmarks/results/glue_daily_run.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from _report import header, write  # noqa: E402

REPORT = "from glue_jobs.sla_report import main; main()"
FIT = "from glue_jobs.trend_fit import main; main()"
DAILY = "from glue_jobs.daily import main; main()"


def tree_cpu(root: int, seen: dict[int, float]) -> None:
    """Record into `seen` the CPU seconds (user + system) so far of `root` and every process
    below it (the JVM the Python process starts), read from /proc."""
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry.name)] = int(fields[1])
        cpu[int(entry.name)] = (int(fields[11]) + int(fields[12])) / CLOCK
    for pid, seconds in cpu.items():
        ancestor = pid
        while ancestor != root and ancestor in parents and ancestor > 1:
            ancestor = parents[ancestor]
        if ancestor == root:
            seen[pid] = max(seen.get(pid, 0.0), seconds)


CLOCK = os.sysconf("SC_CLK_TCK")


def timed(code: str, *options: str) -> tuple[float, float]:
    """(wall-clock seconds, CPU seconds of it and its JVM, sampled from /proc every 0.2 s) of
    one fresh process running `code` with `options` as its argv."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "functions")]),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
    }
    seen: dict[int, float] = {}
    started = time.perf_counter()
    with subprocess.Popen(
        [sys.executable, "-c", code, *options],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    ) as process:
        while process.poll() is None:
            tree_cpu(process.pid, seen)
            time.sleep(0.2)
    if process.returncode != 0:
        raise SystemExit(f"{code} {options} failed: exit {process.returncode}")
    return time.perf_counter() - started, sum(seen.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--archive", type=Path, required=True, help="a demo's archive folder")
    parser.add_argument("--interval", default="10", help="backlog interval, s (the demo's)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default="glue_daily_run.md")
    args = parser.parse_args()
    files = [path for path in args.archive.rglob("*") if path.is_file()]
    rows: list[tuple[tuple[float, float], ...]] = []
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory(prefix="glue-daily-run-") as scratch:
            two, one = Path(scratch) / "two", Path(scratch) / "one"
            report = ["--input_uri", str(args.archive), "--output_uri", str(two)]
            first = timed(REPORT, *report, "--interval_seconds", args.interval)
            fit = timed(FIT, "--input_uri", str(two), "--output_uri", str(two))
            daily = ["--input_uri", str(args.archive), "--output_uri", str(one)]
            both = timed(DAILY, *daily, "--interval_seconds", args.interval)
            shutil.rmtree(two, ignore_errors=True)
        rows.append((first, fit, both))
        print(f"report {first} s, fit {fit} s, one job {both} s", flush=True)
    out = [
        header("The daily Spark work: one job against two"),
        f"A demo's archive ({len(files)} files, {sum(p.stat().st_size for p in files):,} bytes), "
        f"backlog interval {args.interval} s, local Spark, a fresh process per job (its "
        "session's start-up included), no config and no load table. Seconds: wall clock, and in "
        "brackets the CPU seconds of the process and its JVM, sampled from /proc every 0.2 s (the "
        "machine is shared with other sessions' benchmarks, so the wall clock includes waiting "
        "for a core; the CPU seconds do not).",
        "",
        "| run | report job | trend-fit job | the two jobs | one job (report, then fit) | saved |",
        "|---:|---:|---:|---:|---:|---:|",
    ]

    def cell(wall: float, cpu: float) -> str:
        return f"{wall:.1f} ({cpu:.1f})"

    for index, (first, fit, both) in enumerate(rows, 1):
        pair = (first[0] + fit[0], first[1] + fit[1])
        saved = (pair[0] - both[0], pair[1] - both[1])
        out.append(
            f"| {index} | {cell(*first)} | {cell(*fit)} | {cell(*pair)} | {cell(*both)} | "
            f"{cell(*saved)} |"
        )
    write(args.out, "\n".join(out))


if __name__ == "__main__":
    main()
