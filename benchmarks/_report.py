"""Shared header for benchmark tables: machine, date, versions and the command that made them."""

from __future__ import annotations

import datetime as dt
import os
import platform
import shlex
import sys
from importlib import metadata
from pathlib import Path

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
    """Print the table and save it under benchmarks/results/."""
    print(text)
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / name
    path.write_text(text + "\n", encoding="utf-8")
    print(f"written to {path.relative_to(RESULTS.parent.parent)}")
    return path
