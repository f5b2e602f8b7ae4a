"""One source for each default: the evaluation interval the stack, the code and the CLI use."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from infra.template import load_template
from queue_autoscale.cli import app
from queue_autoscale.config import parse_queue
from queue_autoscale.core import DEFAULT_EVALUATION_INTERVAL_SECONDS, QueueSettings
from queue_autoscale.events import EVENTS_RETENTION_SECONDS, ValidationContext
from queue_autoscale.settings import EvaluateSettings
from queue_autoscale.sim.runner import RunSpec

EXAMPLES = Path(__file__).resolve().parents[2] / "infra" / "examples"


def test_the_templates_interval_is_the_codes_default() -> None:
    parameter = load_template()["Parameters"]["EvaluationIntervalSeconds"]
    assert float(parameter["Default"]) == DEFAULT_EVALUATION_INTERVAL_SECONDS


def test_the_event_age_limit_is_the_events_queues_retention() -> None:
    # the `at` an event may have is bounded by how long the events queue keeps a message
    queue = load_template()["Resources"]["EventsQueue"]["Properties"]
    assert int(queue["MessageRetentionPeriod"]) == EVENTS_RETENTION_SECONDS
    assert ValidationContext(queues=(), now_ms=0).max_age_seconds == EVENTS_RETENTION_SECONDS


def test_every_python_default_is_the_one_constant() -> None:
    environ = {"QUEUES_CONFIG": json.dumps([{"queue": "q"}]), "LOAD_TABLE": "table"}
    environ["ARCHIVE_BUCKET"] = "bucket"
    interval = DEFAULT_EVALUATION_INTERVAL_SECONDS
    assert EvaluateSettings.from_environ(environ).evaluation_interval_seconds == interval
    assert QueueSettings(queue="q").evaluation_interval_seconds == interval
    assert parse_queue({"queue": "q"}).settings().evaluation_interval_seconds == interval
    assert RunSpec().settings().evaluation_interval_seconds == interval


def test_explain_takes_the_stacks_interval() -> None:
    # GIVEN the seed's spike example (a rising rate in its state), explained at 5 s and at 60 s
    def explain(interval: int) -> dict[str, object]:
        result = CliRunner().invoke(
            app,
            [
                "explain",
                "--config",
                str(EXAMPLES / "seed001-spike-1003.config.json"),
                "--snapshot",
                str(EXAMPLES / "seed001-spike-1003.snapshot.json"),
                "--state",
                str(EXAMPLES / "seed001-spike-1003.state.json"),
                "--interval",
                str(interval),
                "--json",
            ],
        )
        assert result.exit_code == 0, result.output
        return dict(json.loads(result.stdout))

    fast, slow = explain(5), explain(60)
    # THEN the trend looks one 30 s provisioning lead plus that interval ahead: 35 s or 90 s
    assert (fast["forecast_rate"], slow["forecast_rate"]) == (55.833333, 65.0)
    terms = (fast["terms"], slow["terms"])
    assert (terms[0]["trend"], terms[1]["trend"]) == (110, 128)  # type: ignore[index]
    # AND the plan judges the jobs due within lead + interval + SLA: 65 s or 120 s
    assert "of the jobs due within 65 s" in str(fast["reason"])
    assert "of the jobs due within 120 s" in str(slow["reason"])
