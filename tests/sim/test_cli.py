"""`queue-autoscale simulate`: the table, the JSON scores, the plot, and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from queue_autoscale.cli import app

runner = CliRunner()
KEYS = {"policy", "jobs", "sla_compliance", "p99_pickup_seconds", "max_pickup_seconds",
        "worker_seconds", "busy_seconds", "utilization", "scaling_actions"}  # fmt: skip


def test_simulate_writes_table_json_and_plot(tmp_path: Path) -> None:
    out, png = tmp_path / "scores.json", tmp_path / "run.png"
    result = runner.invoke(
        app,
        ["simulate", "--scenario", "flash-crowd", "--length", "1200", "--policy",
         "predictive,keda,static", "--sla", "30", "--service-time", "0.5", "--seed", "3",
         "--json", str(out), "--plot", str(png)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "predictive" in result.output and "keda" in result.output and "Fargate" in result.output
    scores = json.loads(out.read_text())
    assert [s["policy"] for s in scores] == ["predictive", "keda", "static"]
    for s in scores:
        assert s.keys() >= KEYS
        assert s["jobs"] == scores[0]["jobs"] > 5000  # same jobs replayed under every policy
        assert 0.0 <= s["sla_compliance"] <= 1.0
        assert 0.0 < s["utilization"] <= 1.0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_simulate_a_trace_window(tmp_path: Path) -> None:
    trace = tmp_path / "t.txt"
    trace.write_text(" ".join(["2", "0", "1", "3"] * 300))
    out = tmp_path / "s.json"
    result = runner.invoke(
        app,
        ["simulate", "--trace", str(trace), "--scale", "3", "--start", "100", "--length",
         "600", "--policy", "static", "--json", str(out)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())[0]["jobs"] == 600 // 4 * 6 * 3


def test_a_length_past_the_trace_says_it_was_cut(tmp_path: Path) -> None:
    # GIVEN a 1,200 s trace and a window asked from second 100 for 5,000 s
    trace = tmp_path / "t.txt"
    trace.write_text(" ".join(["2", "0", "1", "3"] * 300))
    result = runner.invoke(
        app,
        ["simulate", "--trace", str(trace), "--start", "100", "--length", "5000", "--policy",
         "static"],
    )  # fmt: skip
    # THEN it runs the 1,100 s there are, and says so
    assert result.exit_code == 0, result.output
    assert "note: --length 5,000 s cut to the 1,100 s the trace holds from second 100" in (
        " ".join(result.output.split())
    )
    assert "[100s +1100s]" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["--scenario", "storm"], "unknown scenario 'storm'", id="scenario"),
        pytest.param(
            ["--scenario", "steady", "--policy", "hpa"], "unknown policy 'hpa'", id="policy"
        ),
        pytest.param(["--trace", "/nonexistent/t.tbz2"], "trace file not found", id="trace"),
        pytest.param([], "give exactly one of --scenario", id="neither"),
        pytest.param(["--scenario", "steady", "--sla", "0"], "sla = 0.0", id="sla"),
        pytest.param(
            ["--scenario", "steady", "--short-window", "0"],
            "short-window = 0: out of range",
            id="short-window",
        ),
    ],
)
def test_errors_are_one_line_and_exit_2(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["simulate", *args])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and message in lines[0], result.output


def test_simulate_writes_every_core_decision(tmp_path: Path) -> None:
    out = tmp_path / "decisions.jsonl"
    result = runner.invoke(
        app,
        ["simulate", "--scenario", "steady", "--length", "600", "--policy", "predictive,keda",
         "--interval", "10", "--decisions", str(out)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in out.read_text().splitlines()]
    # 600 s warm-up + 600 s window, a tick every 10 s (and on while a job still waits at the
    # end); keda is not a core policy
    assert 120 <= len(records) <= 125
    assert {r["policy"] for r in records} == {"predictive"}
    assert [r["elapsed_seconds"] for r in records] == [10.0 * i for i in range(len(records))]
    last = records[-1]
    assert {"terms", "target", "reason", "constraints", "oldest_age_seconds"} <= last.keys()
    assert 15 <= last["target"] <= 40  # 20 jobs/s of 1 s jobs


@pytest.mark.parametrize(
    ("args", "jumps"),
    [
        pytest.param([], True, id="default"),
        pytest.param(["--no-jump-ticks"], False, id="no-jump-ticks"),
        pytest.param(["--interval", "60"], False, id="no-tick-queue-at-60-s"),
    ],
)
def test_simulate_ticks_on_jumps_as_the_stack_does(
    tmp_path: Path, args: list[str], jumps: bool
) -> None:
    # GIVEN a flash crowd at a 30 s SLA, which a clock tick's order cannot save (lead 60 s)
    out = tmp_path / "decisions.jsonl"
    result = runner.invoke(
        app,
        ["simulate", "--scenario", "flash-crowd", "--policy", "predictive", "--sla", "30",
         "--decisions", str(out), *args],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    # THEN as the stack deployed with its defaults, our controller also ticks between clock
    # ticks when the arrivals jump; with JumpTicks off, or at a 60 s interval (no tick queue to
    # carry them), on the clock alone
    interval = 60.0 if "60" in args else 10.0
    off_clock = [
        r["elapsed_seconds"]
        for r in map(json.loads, out.read_text().splitlines())
        if r["elapsed_seconds"] % interval
    ]
    assert bool(off_clock) is jumps
    # the crowd begins at 2,400 s (600 s of warm-up, then 30 minutes at 5 jobs/s): the jumps
    # are its first minute's (2,403, 2,406, 2,409, 2,415 and 2,428 s)
    assert not jumps or all(2400 < at < 2460 for at in off_clock)
