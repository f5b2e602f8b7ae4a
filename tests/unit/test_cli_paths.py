"""Every command's --help, and path arguments that are no regular file or too large: refused in
one line, in a subprocess bounded in time and memory (reading /dev/zero grew without end, and a
fifo blocked forever)."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from queue_autoscale.cli import app
from queue_autoscale.config import MAX_INPUT_BYTES

EXAMPLES = Path(__file__).resolve().parents[2] / "infra" / "examples"
MEMORY_LIMIT_BYTES = 2 * 1024**3
"""The subprocess's address space: far above the CLI's own, far below what /dev/zero reached."""
TIME_LIMIT_SECONDS = 60


def command_paths(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every leaf command's words under `command` (a group has `commands`)."""
    children = getattr(command, "commands", None)
    if children:
        for name, child in children.items():
            yield from command_paths(child, (*path, name))
    else:
        yield path


COMMANDS = sorted(command_paths(get_command(app)))


@pytest.mark.parametrize("words", COMMANDS, ids=[" ".join(w) for w in COMMANDS])
def test_every_command_help_works(words: tuple[str, ...]) -> None:
    result = CliRunner().invoke(app, [*words, "--help"])
    assert result.exit_code == 0, result.output + repr(result.exception)
    assert "Usage:" in result.output


def test_the_help_walk_sees_the_commands() -> None:
    assert {("report",), ("validate-config",), ("explain",), ("migrate-counters",)} <= set(COMMANDS)


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The CLI in a child process limited to MEMORY_LIMIT_BYTES and TIME_LIMIT_SECONDS."""
    return subprocess.run(
        [sys.executable, "-m", "queue_autoscale.cli", *args],
        capture_output=True,
        text=True,
        timeout=TIME_LIMIT_SECONDS,
        preexec_fn=_limit,
        check=False,
        env={**os.environ, "COLUMNS": "200"},
    )


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


@pytest.fixture
def huge(tmp_path: Path) -> Path:
    path = tmp_path / "huge.json"
    with path.open("wb") as handle:
        handle.truncate(MAX_INPUT_BYTES + 1)  # sparse: no disk used
    return path


@pytest.mark.parametrize(
    ("where", "message"),
    [
        pytest.param("/dev/zero", "not a regular file (a device)", id="device"),
        pytest.param("fifo", "not a regular file (a fifo)", id="fifo"),
        pytest.param("huge", f"over the {MAX_INPUT_BYTES} byte limit", id="too-large"),
    ],
)
@pytest.mark.parametrize("command", ["validate-config", "explain --snapshot"])
def test_a_path_that_is_no_regular_file_or_too_large_is_refused_in_one_line(
    command: str, where: str, message: str, request: pytest.FixtureRequest
) -> None:
    path = where if where.startswith("/") else str(request.getfixturevalue(where))
    config = str(EXAMPLES / "seed000-ex1-normal.config.json")
    args = [path] if command == "validate-config" else ["--config", config, "--snapshot", path]
    result = run_cli(*command.split()[:1], *args)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert message in lines[0] and path in lines[0]


def test_a_regular_file_still_reads(tmp_path: Path) -> None:
    path = tmp_path / "queues.json"
    path.write_text(json.dumps([{"queue": "orders"}]), encoding="utf-8")
    result = CliRunner().invoke(app, ["validate-config", str(path)])
    assert result.exit_code == 0, result.output
