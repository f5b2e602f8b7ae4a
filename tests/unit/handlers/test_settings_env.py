"""Handler settings from the environment: defaults, and errors that name the variable."""

from __future__ import annotations

import json

import pytest

from queue_autoscale.core import DEFAULT_EVALUATION_INTERVAL_SECONDS
from queue_autoscale.settings import EvaluateSettings, RecordSettings, SettingsError

QUEUES = json.dumps([{"queue": "orders"}, {"queue": "emails", "profile": "bursty"}])
BASE = {"QUEUES_CONFIG": QUEUES, "LOAD_TABLE": "load-table", "ARCHIVE_BUCKET": "archive-bucket"}


def test_evaluate_defaults() -> None:
    settings = EvaluateSettings.from_environ(BASE)
    assert (settings.queues_config, settings.config_parameter) == (QUEUES, None)
    assert settings.config_max_age_seconds == 5
    assert (settings.evaluation_interval_seconds, settings.dry_run, settings.event_bus_name) == (
        DEFAULT_EVALUATION_INTERVAL_SECONDS,
        False,
        "default",
    )
    # no alarm threshold known: MaxSlaUsage and MaxFleetUsage are metrics every tick
    assert (settings.sla_usage_threshold, settings.fleet_usage_threshold) == (None, None)
    assert settings.dashboard is False


def test_record_defaults() -> None:
    settings = RecordSettings.from_environ({**BASE, "EVENTS_DLQ_URL": "https://sqs/q"})
    assert (settings.max_clock_skew_seconds, settings.counter_ttl_seconds) == (300.0, 172_800)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        pytest.param({"LOAD_TABLE": ""}, "$LOAD_TABLE is not set", id="empty-is-unset"),
        pytest.param(
            {"EVALUATION_INTERVAL_SECONDS": "90"},
            '$EVALUATION_INTERVAL_SECONDS = "90": Input should be less than or equal to 60',
            id="interval-too-long",
        ),
        pytest.param(
            {"DRY_RUN": "maybe"},
            '$DRY_RUN = "maybe": Input should be a valid boolean, unable to interpret input',
            id="bad-boolean",
        ),
        pytest.param(
            {"SLA_USAGE_THRESHOLD": "0"},
            '$SLA_USAGE_THRESHOLD = "0": Input should be greater than 0',
            id="threshold-zero",
        ),
        pytest.param(
            {"FLEET_USAGE_THRESHOLD": "1.5"},
            '$FLEET_USAGE_THRESHOLD = "1.5": Input should be less than or equal to 1',
            id="fleet-threshold-over-one",
        ),
        pytest.param(
            {"QUEUES_CONFIG": "[{"},
            '$QUEUES_CONFIG = "[{": $QUEUES_CONFIG: invalid JSON at line 1 column 3: '
            "Expecting property name enclosed in double quotes",
            id="bad-json",
        ),
        pytest.param(
            {"QUEUES_CONFIG": json.dumps([{"queue": "orders", "max_workers": -1}])},
            "field 'max_workers' = -1",
            id="bad-queue-field",
        ),
    ],
)
def test_errors_name_the_variable_and_value(changes: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError) as caught:
        EvaluateSettings.from_environ({**BASE, **changes})
    assert message in str(caught.value)
