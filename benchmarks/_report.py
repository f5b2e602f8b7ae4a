"""Shared pieces of the benchmark scripts: the header of their tables (machine, date, versions and
the command that made them), the policy a measurement runs, and the bench command's own
defaults."""

from __future__ import annotations

import argparse
import datetime as dt
import inspect
import os
import platform
import shlex
import sys
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from queue_autoscale.sim.arrivals import Counts

RESULTS = Path(__file__).resolve().parent / "results"


def _memory_gib() -> str:
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            kib = int(handle.readline().split()[1])
        return f"{kib / 1024 / 1024:.0f} GiB"
    except (OSError, ValueError, IndexError):
        return "unknown"


def header(title: str, packages: tuple[str, ...] = ()) -> str:
    """Markdown lines naming the machine, the date, versions and the exact command."""
    versions = [f"Python {platform.python_version()}"]
    for name in packages:
        try:
            versions.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{name} (not installed)")
    command = " ".join(shlex.quote(a) for a in [".venv/bin/python", *sys.argv])
    return "\n".join(
        [
            f"# {title}",
            "",
            f"- date: {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC",
            f"- machine: {platform.machine()}, {os.cpu_count()} cores, {_memory_gib()} memory, "
            f"{platform.processor() or platform.platform()}",
            f"- versions: {', '.join(versions)}",
            f"- command: `{command}`",
            "",
        ]
    )


def write(name: str, text: str) -> Path:
    """Print the table and save it under benchmarks/results/ (`name` may also be a path of
    its own: an absolute one is written where it says)."""
    print(text)
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / name
    path.write_text(text + "\n", encoding="utf-8")
    root = RESULTS.parent.parent
    print(f"written to {path.relative_to(root) if path.is_relative_to(root) else path}")
    return path


def add_policy_option(parser: argparse.ArgumentParser) -> None:
    """`--policy`: the core policy a measurement runs in the simulator, by default the one the
    controller runs (`core.DEFAULT_POLICY`), so what is measured is what ships."""
    from queue_autoscale.core import DEFAULT_POLICY, POLICIES

    parser.add_argument(
        "--policy",
        choices=sorted(POLICIES),
        default=DEFAULT_POLICY,
        help=f"the core policy to run (default: the controller's, {DEFAULT_POLICY})",
    )


def policy_words(policy: str) -> str:
    """The policy as a results table names it: 'predictive (the controller's default policy)'
    when it is the default."""
    from queue_autoscale.core import DEFAULT_POLICY

    return f"{policy} (the controller's default policy)" if policy == DEFAULT_POLICY else policy


def bench_trace_defaults() -> dict[str, object]:
    """The bench command's trace, scale, start and length (its own defaults, not restated)."""
    import typer

    from queue_autoscale.sim.commands import DEFAULT_TRACE, register

    app = typer.Typer()
    register(app)
    command = next(
        c for c in app.registered_commands if getattr(c.callback, "__name__", "") == "bench"
    )
    params = inspect.signature(command.callback).parameters  # type: ignore[arg-type]
    names = ("trace_scale", "trace_start", "trace_length")
    return {"trace": DEFAULT_TRACE, **{name: params[name].default for name in names}}


def bench_workloads(seed: int, length: int | None) -> tuple[list[tuple[str, Counts, str]], str]:
    """The bench's workloads at `seed` (`sim.bench._workloads` on the bench command's trace
    defaults, a relative trace taken from the repository root; `length` s of each scenario, or
    all): (label, per-second counts, description) each, and the note when the trace was
    skipped."""
    from queue_autoscale.sim.bench import _workloads

    trace = bench_trace_defaults()
    path = Path(str(trace["trace"]))
    root = Path(__file__).resolve().parents[1]
    return _workloads(
        seed,
        length,
        path if path.is_absolute() else root / path,
        int(str(trace["trace_scale"])),
        int(str(trace["trace_start"])),
        int(str(trace["trace_length"])),
    )
