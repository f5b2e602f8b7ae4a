"""Everything a user types from the README and the docs is checked, so it cannot rot.

In every fenced code block of README.md, CONTRIBUTING.md and docs/*.md:

- a line that starts `.venv/bin/queue-autoscale` is an example to run as written: it runs
  offline (no AWS: explain on the shipped examples, validate-config, simulate, deploy
  --dry-run) and must exit 0;
- a line that starts `queue-autoscale` (a synopsis, or a command for a deployed stack) must
  name a command the CLI has, and only options that command has.

`make demo` (about 3 minutes, tests/integration/test_demo.py runs it) and `make test` are
not run from here.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
import typer

from queue_autoscale.cli import app

ROOT = Path(__file__).parents[3]
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^[ \t]*```[^\n]*\n(.*?)^[ \t]*```", re.MULTILINE | re.DOTALL)
RUN = ".venv/bin/queue-autoscale"


def _lines() -> list[tuple[str, str]]:
    """(page, command line) for every queue-autoscale line in a code block, continuations
    joined and comments dropped."""
    found = []
    for page in PAGES:
        for block in FENCE.findall(page.read_text(encoding="utf-8")):
            for raw in block.replace("\\\n", " ").splitlines():
                line = raw.split(" #", 1)[0].strip()
                if line.startswith((RUN + " ", "queue-autoscale ")):
                    found.append((page.relative_to(ROOT).as_posix(), line))
    return found


LINES = _lines()
RUNNABLE = [(page, line) for page, line in LINES if line.startswith(RUN)]


def _commands() -> dict[str, Any]:
    root = typer.main.get_command(app)
    ctx = root.make_context("queue-autoscale", [], resilient_parsing=True)
    return {name: root.get_command(ctx, name) for name in root.list_commands(ctx)}


COMMANDS = _commands()


def _options(command: Any) -> set[str]:
    return {name for p in command.params for name in (*p.opts, *p.secondary_opts)}


def test_the_docs_hold_runnable_examples() -> None:
    # the quickstart's four offline commands at least: explain, validate-config, simulate, deploy
    assert {line.split()[1] for _, line in RUNNABLE} >= {
        "explain",
        "validate-config",
        "simulate",
        "deploy",
    }


@pytest.mark.parametrize(("page", "line"), LINES, ids=[f"{p}:{ln[:60]}" for p, ln in LINES])
def test_every_command_and_option_typed_exists(page: str, line: str) -> None:
    words = line.split()
    name = words[1]
    assert name in COMMANDS, f"{page}: `queue-autoscale {name}` is no command"
    known = _options(COMMANDS[name])
    for word in words[2:]:
        flag = word.strip("[]").split("=", 1)[0]
        if flag.startswith("--"):
            assert flag in known, f"{page}: `queue-autoscale {name}` has no option {flag}"


@pytest.mark.parametrize(("page", "line"), RUNNABLE, ids=[f"{p}:{ln[:60]}" for p, ln in RUNNABLE])
def test_every_runnable_example_runs(page: str, line: str) -> None:
    # GIVEN no AWS endpoint that could answer (loopback port 9: nothing listens)
    env = {**os.environ, "AWS_ENDPOINT_URL": "http://127.0.0.1:9", "NO_COLOR": "1"}
    # WHEN the line runs as written, from the repository root
    result = subprocess.run(
        shlex.split(line),
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    # THEN it succeeds and prints something
    assert result.returncode == 0, f"{page}: {line}\n{result.stderr[-2000:]}"
    assert result.stdout.strip()


LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")


@pytest.mark.parametrize("page", [ROOT / "README.md", ROOT / "CONTRIBUTING.md"], ids=str)
def test_every_relative_link_outside_the_site_resolves(page: Path) -> None:
    # README and CONTRIBUTING are read on GitHub, not built by mkdocs: check their links here
    broken = [
        target
        for target in LINK.findall(page.read_text(encoding="utf-8"))
        if "://" not in target and not (page.parent / target).exists()
    ]
    assert not broken, f"{page.name}: links to missing files {broken}"
