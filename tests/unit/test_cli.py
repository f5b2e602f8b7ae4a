"""`queue-autoscale explain` and `validate-config` as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from queue_autoscale.cli import app
from queue_autoscale.commands import load_config, pick_queue, read_snapshot, read_state
from queue_autoscale.core import DEFAULT_POLICY, POLICIES, decide_predictive, decision_to_dict

EXAMPLES = Path(__file__).resolve().parents[2] / "infra" / "examples"
runner = CliRunner()


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def explain_spike(*policy: str) -> tuple[int, str, str]:
    """`explain --json` on seed 001's worked spike example (which evaluates every 30 s), with
    `policy` ("--policy", NAME) if given."""
    name = "seed001-spike-1002"
    return run(
        "explain",
        *policy,
        "--config",
        str(EXAMPLES / f"{name}.config.json"),
        "--snapshot",
        str(EXAMPLES / f"{name}.snapshot.json"),
        "--state",
        str(EXAMPLES / f"{name}.state.json"),
        "--interval",
        "30",
        "--json",
    )


def test_explain_runs_the_controllers_default_policy() -> None:
    # GIVEN seed 001's spike: 200 waiting (oldest 15 s), 20 workers of 0.5 jobs/s, the backlog
    # grown since the last tick as 60 jobs/s would
    code, out, _ = explain_spike()
    # WHEN explain runs with no --policy, THEN the controller's own policy decides: the plan
    # for the jobs due within lead + interval + SLA (90 s) is the largest term, and its
    # predicted miss share is within the 95 % target's 5 % budget
    assert code == 0
    data = json.loads(out)
    assert data["policy"] == DEFAULT_POLICY == "predictive"
    assert data["terms"] == {"steady": 99, "trend": 118, "drain": 194}
    assert (data["current"], data["target"], data["action"]) == (20, 194, "up")
    assert "plan 194 (predicted miss share 4.01% of the jobs due within 90 s" in data["reason"]
    assert "budget 5.00%" in data["reason"]


def test_explain_json_has_the_documented_keys() -> None:
    code, out, _ = explain_spike()
    assert code == 0
    data = json.loads(out)
    for key in (
        "target",
        "current",
        "action",
        "load_ratio",
        "overloading",
        "overloaded",
        "backlog_per_instance",
        "urgency",
        "terms",
        "predicted_pickup_seconds",
        "reason",
    ):
        assert key in data
    assert set(data["terms"]) == {"steady", "trend", "drain"}


def test_explain_seed_hybrid_policy() -> None:
    code, out, _ = explain_spike("--policy", "seed-hybrid")
    assert code == 0
    assert json.loads(out)["terms"] == {"steady": 100, "trend": 120, "drain": 27}


def test_explain_table_is_readable() -> None:
    code, out, _ = run(
        "explain",
        "--config",
        str(EXAMPLES / "seed002-underloaded.config.json"),
        "--snapshot",
        str(EXAMPLES / "seed002-underloaded.snapshot.json"),
    )
    assert code == 0
    assert "load ratio" in out and "0.500" in out


def test_explain_examples_prints_every_example_with_every_core_policy() -> None:
    code, out, _ = run("explain", "--examples", str(EXAMPLES), "--json")
    assert code == 0
    rows = json.loads(out)
    names = {row["example"] for row in rows}
    assert len(rows) == len(POLICIES) * len(names) and "seed000-ex4-breach" in names
    breach = {r["policy"]: r["target"] for r in rows if r["example"] == "seed000-ex4-breach"}
    # the default policy: the 300 waiting (65 s old, SLA 60 s) are late already and due within
    # the reach (lead + interval, 70 s), where no worker ordered now lands in time; the steady
    # state at 5 jobs/s of 0.2 s jobs asks 2 (Erlang C: one worker would run at the load).
    # The seed jumps to max_workers, 20.
    assert breach["seed-hybrid"] == 20 and breach[DEFAULT_POLICY] == 2


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        pytest.param(lambda d: d.pop("visible"), "missing key 'visible'", id="missing key"),
        pytest.param(lambda d: d.update(running="many"), "key 'running' = \"many\"", id="bad type"),
        pytest.param(lambda d: d.update(extra=1), "key 'extra'", id="unknown key"),
    ],
)
def test_explain_bad_snapshot_is_one_line_exit_2(tmp_path: Path, mutate, message: str) -> None:
    data = json.loads((EXAMPLES / "seed002-underloaded.snapshot.json").read_text())
    mutate(data)
    bad = tmp_path / "snap.json"
    bad.write_text(json.dumps(data))
    code, _, err = run(
        "explain",
        "--config",
        str(EXAMPLES / "seed002-underloaded.config.json"),
        "--snapshot",
        str(bad),
    )
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1


def test_explain_reads_the_snapshots_dispersion(tmp_path: Path) -> None:
    # GIVEN the example's 10 jobs/s on both windows, with each window's index of dispersion
    data = json.loads((EXAMPLES / "seed002-underloaded.snapshot.json").read_text())
    data.update(arrival_rate_short=10.0, arrival_dispersion=4.0, arrival_dispersion_short=3.0)
    snap = tmp_path / "snap.json"
    snap.write_text(json.dumps(data))
    config = str(EXAMPLES / "seed002-underloaded.config.json")
    # WHEN it is explained, and with a negative index
    code, out, _ = run("explain", "--config", config, "--snapshot", str(snap), "--json")
    data["arrival_dispersion_short"] = -1.0
    snap.write_text(json.dumps(data))
    bad, _, err = run("explain", "--config", config, "--snapshot", str(snap))
    # THEN the plan reads the long window's index as measured (no move to take out of it)
    assert code == 0 and "dispersion 4.00" in json.loads(out)["reason"]
    # AND a negative one is a one-line error naming the key
    assert bad == 2 and "arrival_dispersion_short" in err and len(err.strip().splitlines()) == 1


def test_explain_bad_json_names_the_position(tmp_path: Path) -> None:
    bad = tmp_path / "snap.json"
    bad.write_text('{"queue": "x",\n "now": }')
    code, _, err = run(
        "explain",
        "--config",
        str(EXAMPLES / "seed002-underloaded.config.json"),
        "--snapshot",
        str(bad),
    )
    assert code == 2 and "invalid JSON at line 2" in err


def test_explain_unknown_policy(tmp_path: Path) -> None:
    code, _, err = run(
        "explain",
        "--policy",
        "magic",
        "--config",
        str(EXAMPLES / "seed002-underloaded.config.json"),
        "--snapshot",
        str(EXAMPLES / "seed002-underloaded.snapshot.json"),
    )
    assert code == 2 and "--policy 'magic'" in err and DEFAULT_POLICY in err


def test_validate_config_prints_effective_settings() -> None:
    code, out, _ = run("validate-config", str(EXAMPLES / "queues.json"))
    assert code == 0
    assert "thumbnails" in out and "sla_seconds" in out and "10.0" in out


def test_validate_config_names_queue_field_and_value(tmp_path: Path) -> None:
    bad = tmp_path / "q.json"
    bad.write_text(json.dumps([{"queue": "emails", "max_workers": -3}]))
    code, _, err = run("validate-config", str(bad))
    assert code == 2
    assert "queue 'emails': field 'max_workers' = -3" in err


def test_explain_peer_reads_aws_documented_example() -> None:
    # AWS's SQS example: 1,500 visible, 10 running, 0.1 s jobs, 10 s acceptable latency ->
    # acceptable backlog 100 per task -> 15 tasks once the alarm's 3 datapoints breach.
    code, out, _ = run(
        "explain",
        "--policy",
        "target-tracking",
        "--json",
        "--config",
        str(EXAMPLES / "aws-backlog-per-task.config.json"),
        "--snapshot",
        str(EXAMPLES / "aws-backlog-per-task.snapshot.json"),
    )
    assert code == 0
    assert json.loads(out)["target"] == 15


def _snapshot_with(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "snap.json"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def _snapshot_text(**changes: object) -> str:
    data = json.loads((EXAMPLES / "seed002-underloaded.snapshot.json").read_text())
    data.update(changes)
    return json.dumps(data)


@pytest.mark.parametrize(
    ("content", "words"),
    [
        pytest.param(b"\xff\xfe{}", "not UTF-8 text (byte 0xff at offset 0)", id="non-UTF-8"),
        pytest.param(
            _snapshot_text().replace('"dlq_depth": 0', '"dlq_depth": ' + "9" * 5_000),
            "invalid JSON: Exceeds the limit (4300 digits)",
            id="5,000-digit number",
        ),
        pytest.param(
            _snapshot_text().replace('"dlq_depth": 0', '"dlq_depth": NaN'),
            "NaN is not a JSON number",
            id="NaN literal",
        ),
        pytest.param(_snapshot_text(visible=10**30), "key 'visible' = ", id="count beyond 64 bits"),
        pytest.param(
            _snapshot_text().replace('"failure_rate": 0.0', '"failure_rate": 1e400'),
            "key 'failure_rate'",
            id="float overflow",
        ),
        pytest.param("[" * 100_000, "nested too deeply", id="deep nesting"),
    ],
)
def test_explain_answers_a_hostile_file_in_one_line_exit_2(
    tmp_path: Path, content: str | bytes, words: str
) -> None:
    # WHEN explain reads a snapshot file a user or a tool got badly wrong
    code, _, err = run(
        "explain",
        "--config",
        str(EXAMPLES / "seed002-underloaded.config.json"),
        "--snapshot",
        str(_snapshot_with(tmp_path, content)),
    )
    # THEN one line names the file and the problem, exit 2, no traceback
    assert code == 2, err
    assert words in err and "snap.json" in err and len(err.strip().splitlines()) == 1


def test_explain_with_an_absurd_job_time_answers_at_once_and_prints_valid_json(
    tmp_path: Path,
) -> None:
    # GIVEN a snapshot with an absurd (finite) mean job time and arrival rate
    text = _snapshot_text(mean_job_seconds=1e308, arrival_rate=1e300, visible=10**12)
    # WHEN explained as JSON, THEN it comes back capped at max, and the output is strict JSON
    code, out, err = run(
        "explain",
        "--config",
        str(EXAMPLES / "seed002-underloaded.config.json"),
        "--snapshot",
        str(_snapshot_with(tmp_path, text)),
        "--json",
    )
    assert code == 0, err
    data = json.loads(out, parse_constant=lambda name: pytest.fail(f"{name} in JSON output"))
    assert data["constraints"] and "max_workers" in data["constraints"]


def test_validate_config_warns_when_the_floors_make_the_sla_unreachable(tmp_path: Path) -> None:
    # GIVEN a 3 s SLA, and a 40 s SLA that may scale to zero with a 60 s start-up lead
    config = tmp_path / "q.json"
    config.write_text(
        json.dumps(
            [
                {"queue": "fast", "sla_seconds": 3, "min_workers": 2},
                {"queue": "idle", "sla_seconds": 40, "min_workers": 0},
                {"queue": "fine", "sla_seconds": 300, "min_workers": 0},
            ]
        )
    )
    # WHEN validated at a 30 s interval
    code, _, err = run("validate-config", str(config), "--interval", "30")
    # THEN it passes with a warning for each, saying what would be needed; none for "fine"
    assert code == 0
    warnings = err.strip().splitlines()
    assert len(warnings) == 2
    assert "'fast'" in warnings[0] and "an SLA of at least 5 s is needed" in warnings[0]
    assert "'idle'" in warnings[1] and "30 s poll interval + 60 s start-up lead" in warnings[1]
    assert "set min_workers >= 1, or an SLA of at least 95 s" in warnings[1]


def test_validate_config_help_says_what_file_holds() -> None:
    # typer 0.20 under click 8.5 drops an Argument's own help (click's Parameter.__init__
    # resets it), so the command's text says what FILE is
    code, out, _ = run("validate-config", "--help")
    assert code == 0
    text = " ".join(out.replace("│", " ").split())
    assert 'Check a config FILE (JSON: one queue, a list, or {"queues": [...]})' in text


def test_explain_reads_the_snapshots_queue_from_trend_fits_model_file(tmp_path: Path) -> None:
    # GIVEN trend_fit's trend_model.json ({"models": [...]}, what the job writes) with a model
    # for another queue first and one for the snapshot's queue ('reports', 4 jobs/s now)
    snapshot = EXAMPLES / "seed000-ex1-normal.snapshot.json"
    model = {
        "queue": "reports",
        "fitted_at": 1_767_222_000.0,
        "level": 50.0,
        "slope_per_hour": 0.0,
        "seasonal": [1.0] * 168,
        "mase": 0.2,
        "naive_mase": 1.0,
    }
    models = tmp_path / "trend_model.json"
    models.write_text(json.dumps({"models": [{**model, "queue": "other"}, model]}))

    # WHEN explain decides the snapshot with it (the file was read as one model: KeyError)
    code, out, err = run(
        "explain",
        "--config",
        str(EXAMPLES / "seed000-ex1-normal.config.json"),
        "--snapshot",
        str(snapshot),
        "--model",
        str(models),
        "--json",
    )

    # THEN the queue's own model drives the trend: its skill 1 - 0.2 / 1.0 = 0.8 is its
    # weight, and forecasts 4 + 0.8 x (50 - 4) = 40.8 jobs/s; at 5 jobs/s a worker that is 8.16
    # busy workers, and 8 run hot (docs/decision.md, section 3): the load's lower bound, 40.8 -
    # 1.645 sqrt(2 x 40.8 / 300) = 39.9 jobs/s, rounds up to 8, and over the reach (70 s) at
    # 40.8 + 1.645 sqrt(40.8 / 300) = 41.4 jobs/s their backlog walks from 100 to 100 + 1.4 x
    # 70 + 1.645 sqrt(81.4 x 70) = 323 jobs, within the 8 x 5 x 60 = 2,400 they pick up in the
    # SLA
    assert code == 0, err
    data = json.loads(out)
    assert data["forecast_rate"] == pytest.approx(40.8)
    assert data["terms"]["trend"] == 8

    # AND a file without the snapshot's queue says which queues it has
    models.write_text(json.dumps({"models": [{**model, "queue": "other"}]}))
    code, _, err = run(
        "explain",
        "--config",
        str(EXAMPLES / "seed000-ex1-normal.config.json"),
        "--snapshot",
        str(snapshot),
        "--model",
        str(models),
    )
    assert code == 2
    assert err.strip() == f"error: model {models}: no model for queue 'reports' (it has: 'other')"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param(
            '"hello"',
            'expected a JSON object: one model, or trend_fit\'s {"models": [...]}',
            id="a-string",
        ),
        pytest.param(
            "[]", 'expected a JSON object: one model, or trend_fit\'s {"models": [...]}', id="list"
        ),
        pytest.param('{"queue": "reports", "level": 1}', "missing key 'fitted_at'", id="no-time"),
    ],
)
def test_explain_names_a_malformed_model_file_in_one_line(
    tmp_path: Path, content: str, message: str
) -> None:
    # GIVEN a --model file of the wrong shape (it said "KeyError: 'fitted_at'" or
    # "AttributeError: 'str' object has no attribute 'get'")
    model = tmp_path / "model.json"
    model.write_text(content, encoding="utf-8")

    # WHEN explain reads it
    code, _, err = run(
        "explain",
        "--config",
        str(EXAMPLES / "seed000-ex1-normal.config.json"),
        "--snapshot",
        str(EXAMPLES / "seed000-ex1-normal.snapshot.json"),
        "--model",
        str(model),
    )

    # THEN one line names the file and what is wrong, exit 2
    assert code == 2
    assert err.strip() == f"error: model {model}: {message}"


def test_explain_reproduces_a_predictive_decision_exactly() -> None:
    # GIVEN an example's snapshot, state and config, decided directly by the policy
    name = "seed001-spike-1002"
    snapshot = read_snapshot(EXAMPLES / f"{name}.snapshot.json")
    state = read_state(EXAMPLES / f"{name}.state.json", snapshot.queue)
    config = pick_queue(load_config(EXAMPLES / f"{name}.config.json"), snapshot.queue, EXAMPLES)
    direct = decide_predictive(snapshot, config.settings(30.0), state, snapshot.taken_at)
    # WHEN explain decides the same files with --policy predictive
    code, out, _ = explain_spike("--policy", "predictive")
    # THEN every field of the record is the same, reason included
    assert code == 0
    assert json.loads(out) == json.loads(json.dumps(decision_to_dict(direct.decision)))
    assert json.loads(out)["policy"] == "predictive"
