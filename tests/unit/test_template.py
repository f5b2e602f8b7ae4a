"""template.yaml: alarms name what the code publishes; IAM and encryption cannot loosen silently.

The IAM rules are checked on the *translated* template (aws-sam-translator, what
`sam deploy` submits), so anything SAM adds is checked too.
"""

from __future__ import annotations

import copy
import fnmatch
import importlib.util
import json
import os
import re
import tomllib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from infra import sync_dashboard
from infra.template import (
    TEMPLATE_PATH,
    expand_for_each,
    function_environment,
    is_condition_true,
    load_template,
    translate,
)
from queue_autoscale.adapters import s3 as s3_keys
from queue_autoscale.adapters.aws import make_clients, make_session
from queue_autoscale.adapters.dynamodb import (
    COUNTER_FIELDS,
    JUMP_FIELD,
    LoadTable,
    counter_pk,
    queue_pk,
    shard_pk,
)
from queue_autoscale.adapters.firehose import ARCHIVE_BUFFER_SECONDS
from queue_autoscale.constants import (
    CONFIG_DIMENSION,
    CONFIG_METRICS,
    FLEET_DIMENSION,
    FLEET_METRICS,
    FLEET_SILENT_BELOW_THRESHOLD,
    FLEET_SILENT_WHEN_ZERO,
    INGEST_METRICS,
    LOGGED_ONLY_METRICS,
    METRIC_DIMENSION,
    METRIC_NAMESPACE,
    QUEUE_METRICS,
    SILENT_WHEN_ZERO_METRICS,
)
from queue_autoscale.controller import runtime, tick
from queue_autoscale.controller.config_loader import (
    ConfigUnavailable,
    QueueConfigLoader,
    store_reader,
)
from queue_autoscale.core.jump import JumpLine, line_to_dict
from queue_autoscale.core.models import ControllerState, TrendModel
from queue_autoscale.core.state import model_to_dict, state_to_dict
from queue_autoscale.demo.driver import TICK_BATCH_SIZE
from queue_autoscale.handlers import evaluate
from queue_autoscale.ingest.lateness import EVENTS_BATCHING_WINDOW_SECONDS
from queue_autoscale.operator.live import DECISION_LOOKBACK_SECONDS
from queue_autoscale.settings import EvaluateSettings, RecordSettings, TickMode
from queue_autoscale.telemetry import FleetSink, emf_metrics

PER_QUEUE = (set(QUEUE_METRICS) - LOGGED_ONLY_METRICS) | set(INGEST_METRICS)
"""Extracted into CloudWatch metrics with dimension Queue, only with PerQueueMetrics."""
PUBLISHED = PER_QUEUE | set(CONFIG_METRICS) | set(FLEET_METRICS)
"""Extracted into CloudWatch metrics (the logged-only ones stay plain fields of the EMF line)."""
# AWS's own metrics an alarm may use, with the dimensions they carry.
AWS_METRICS = {
    ("AWS/SQS", "ApproximateNumberOfMessagesVisible"): {"QueueName"},
    ("AWS/Lambda", "Errors"): {"FunctionName"},
    ("AWS/Logs", "IncomingLogEvents"): {"LogGroupName"},
}
# APIs without resource-level permissions: the only actions allowed on Resource "*".
STAR_RESOURCE_ACTIONS = {
    "cloudwatch:GetMetricData",
    "cloudwatch:PutMetricData",
    "xray:PutTraceSegments",
    "xray:PutTelemetryRecords",
}
INSIGHTS = re.compile(
    r'^SELECT\s+(?P<stat>[A-Z]+)\((?P<metric>\w+)\)\s+FROM\s+SCHEMA\("(?P<namespace>[^"]+)",'
    r"\s*(?P<dims>[\w, ]+)\)(?:\s+GROUP BY\s+(?P<group>\w+))?$"
)


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return load_template()


@pytest.fixture(scope="module")
def expanded(template: dict[str, Any]) -> dict[str, Any]:
    """The template as CloudFormation sees it (no Fn::ForEach is left to expand)."""
    return expand_for_each(template)


@pytest.fixture(scope="module")
def translated(template: dict[str, Any]) -> dict[str, Any]:
    return translate(template)


def resources_of(document: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {
        name: resource["Properties"]
        for name, resource in document["Resources"].items()
        if resource["Type"] == kind
    }


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


# ------------------------------------------------------------------ metrics and alarms


def metrics_named(alarm: dict[str, Any]) -> Iterator[tuple[str, str, frozenset[str]]]:
    """(namespace, metric, dimension names) of every metric an alarm reads."""
    if "MetricName" in alarm:
        dims = frozenset(d["Name"] for d in alarm.get("Dimensions", []))
        yield alarm["Namespace"], alarm["MetricName"], dims
    for query in alarm.get("Metrics", []):
        if "MetricStat" in query:
            metric = query["MetricStat"]["Metric"]
            dims = frozenset(d["Name"] for d in metric.get("Dimensions", []))
            yield metric["Namespace"], metric["MetricName"], dims
        elif query.get("Expression", "").startswith("SELECT"):
            yield from insights_metrics(query["Expression"])


def insights_metrics(expression: str) -> Iterator[tuple[str, str, frozenset[str]]]:
    match = INSIGHTS.match(expression.strip())
    assert match, f"unparsed Metrics Insights query: {expression}"
    dims = frozenset(part.strip() for part in match["dims"].split(","))
    yield match["namespace"], match["metric"], dims


def metric_problems(namespace: str, metric: str, dims: frozenset[str]) -> list[str]:
    if namespace == METRIC_NAMESPACE:
        problems = []
        if metric not in PUBLISHED:
            problems.append(f"{metric} is not published (constants.py)")
        wanted = (
            CONFIG_DIMENSION
            if metric in CONFIG_METRICS
            else FLEET_DIMENSION
            if metric in FLEET_METRICS
            else METRIC_DIMENSION
        )
        if dims != {wanted}:
            problems.append(f"{metric}: dimensions {sorted(dims)} != [{wanted}]")
        return problems
    expected = AWS_METRICS.get((namespace, metric))
    if expected is None:
        return [f"{namespace}/{metric} is not a metric this stack alarms on"]
    return [] if dims == expected else [f"{namespace}/{metric}: dimensions {sorted(dims)}"]


def dashboard_metrics() -> Iterator[tuple[str, str, frozenset[str], str]]:
    """(namespace, metric, dimension names, statistic) of every metric a dashboard chart reads
    (the array form: namespace, metric name, then dimension name and value pairs, options)."""
    dashboard = json.loads(sync_dashboard.DASHBOARD.read_text(encoding="utf-8"))
    for widget in dashboard["widgets"]:
        if widget["type"] != "metric":
            continue
        for row in widget["properties"]["metrics"]:
            options = row[-1] if isinstance(row[-1], dict) else {}
            names = [item for item in row if isinstance(item, str)]
            assert "expression" not in options, f"a chart computes; read a metric: {row}"
            dims = frozenset(names[2::2])
            yield names[0], names[1], dims, options.get("stat", "Average")


def dashboard_log_queries() -> list[str]:
    """The Logs Insights queries of the dashboard's log widgets."""
    dashboard = json.loads(sync_dashboard.DASHBOARD.read_text(encoding="utf-8"))
    return [w["properties"]["query"] for w in dashboard["widgets"] if w["type"] == "log"]


def test_every_alarm_reads_only_metrics_the_code_publishes(expanded: dict[str, Any]) -> None:
    alarms = resources_of(expanded, "AWS::CloudWatch::Alarm")
    problems = [
        f"{name}: {problem}"
        for name, alarm in alarms.items()
        for named in metrics_named(alarm)
        for problem in metric_problems(*named)
    ]
    assert problems == []
    assert all(list(metrics_named(alarm)) for alarm in alarms.values())


def test_every_fleet_metric_is_read_by_an_alarm_or_the_dashboard(
    expanded: dict[str, Any],
) -> None:
    """A metric is billed per month whether or not anything reads it: every metric extracted
    by default (the fleet's and the config loader's) is read by an alarm or a chart."""
    read = {
        metric
        for alarm in resources_of(expanded, "AWS::CloudWatch::Alarm").values()
        for namespace, metric, _ in metrics_named(alarm)
        if namespace == METRIC_NAMESPACE
    }
    read |= {metric for namespace, metric, _, _ in dashboard_metrics()}
    assert sorted((set(FLEET_METRICS) | set(CONFIG_METRICS)) - read) == []
    # AND no alarm or chart reads a per-queue metric, which exists only with PerQueueMetrics
    assert sorted(read & PER_QUEUE) == []


def test_the_dashboards_log_queries_read_fields_the_functions_log() -> None:
    """The per-queue tables and the events chart read the log lines' fields (Logs Insights):
    every capitalized field a query names is a value the functions log, or the Queue field."""
    logged = set(QUEUE_METRICS) | set(INGEST_METRICS) | {METRIC_DIMENSION}
    queries = dashboard_log_queries()
    assert len(queries) >= 3
    parameters = set(load_template()["Parameters"]) | {"AWS::StackName"}
    for query in queries:
        # the thresholds are the alarms' own parameters, substituted by the template's !Sub
        assert set(re.findall(r"\$\{([^}]+)\}", query)) <= parameters, query
        body = re.sub(r"\$\{[^}]+\}", "", query.split("|", 1)[1])
        fields = set(re.findall(r"\b([A-Z][A-Za-z]+)\b", body))
        assert sorted(fields - logged) == [], query


@pytest.mark.parametrize("logical_id", ["EvaluateFunction", "RecordEventsFunction"])
def test_handlers_run_with_the_log_variables_lambda_sets(
    template: dict[str, Any], logical_id: str
) -> None:
    """A JSON LoggingConfig makes Lambda set AWS_LAMBDA_LOG_FORMAT and AWS_LAMBDA_LOG_LEVEL
    (INFO: no ApplicationLogLevel), which Powertools reads; the tests' environment has both."""
    environment = function_environment(template, logical_id, TEMPLATE_VALUES)
    assert environment["AWS_LAMBDA_LOG_FORMAT"] == "JSON"
    assert environment["AWS_LAMBDA_LOG_LEVEL"] == environment["POWERTOOLS_LOG_LEVEL"] == "INFO"


def test_per_queue_values_are_a_plain_log_line_by_default(
    template: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """PerQueueMetrics defaults to "false": the evaluate function logs each queue's values as
    one JSON line with the field Queue, and CloudWatch extracts no metric from it."""
    assert template["Parameters"]["PerQueueMetrics"]["Default"] == "false"
    # GIVEN the evaluate function's environment with the template's defaults
    for name, value in function_environment(template, "EvaluateFunction", TEMPLATE_VALUES).items():
        monkeypatch.setenv(name, value)
    capsys.readouterr()
    # WHEN one queue's values are published
    emf_metrics("orders", {"LoadRatio": 1.25, "TargetWorkers": 3.0, "ControllerErrors": 0.0})
    (line,) = capsys.readouterr().out.splitlines()
    # THEN the line holds every value and no EMF directive
    assert json.loads(line) == {
        "Queue": "orders",
        "LoadRatio": 1.25,
        "TargetWorkers": 3.0,
        "ControllerErrors": 0.0,
    }


def test_an_idle_queue_extracts_only_what_a_missing_zero_would_change(
    template: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every metric is billed per month it is published in: a 0 that every reader takes as
    missing stays a plain field of the EMF line (the line still carries every value)."""
    emitted = emitted_under(template, "EvaluateFunction", QUEUE_METRICS, monkeypatch, capsys, 0.0)
    assert sorted(metric for _, metric, _ in emitted) == [
        "ArrivalRate",
        "ServiceRate",
        "TargetWorkers",
    ]


def _positive(template: dict[str, Any], threshold: Any) -> bool:
    """A threshold above 0: a number, or a parameter whose MinValue is above 0."""
    if isinstance(threshold, dict):
        return float(template["Parameters"][threshold["Ref"]].get("MinValue", 0)) > 0
    return float(threshold) > 0


def test_a_metric_silent_when_zero_is_read_by_every_reader_as_zero_when_missing(
    template: dict[str, Any], expanded: dict[str, Any]
) -> None:
    """SILENT_WHEN_ZERO_METRICS and FLEET_SILENT_WHEN_ZERO are left out when 0: each alarm on
    one must not breach on a 0 or on no data, and each chart must aggregate with Maximum or
    Sum (an Average would change)."""
    silent = SILENT_WHEN_ZERO_METRICS | FLEET_SILENT_WHEN_ZERO
    problems = []
    for name, alarm in resources_of(expanded, "AWS::CloudWatch::Alarm").items():
        if {metric for _, metric, _ in metrics_named(alarm)} & silent:
            if alarm.get("Metrics") or alarm.get("Statistic") not in ("Maximum", "Sum"):
                problems.append(f"{name}: not a Maximum or Sum of one metric")
            elif alarm["ComparisonOperator"] not in (
                "GreaterThanThreshold",
                "GreaterThanOrEqualToThreshold",
            ) or not _positive(template, alarm["Threshold"]):
                problems.append(f"{name}: a 0 could breach")
            elif alarm.get("TreatMissingData") != "notBreaching":
                problems.append(f"{name}: missing data is not notBreaching")
    for _, metric, _, stat in dashboard_metrics():
        if metric in silent and stat not in ("Maximum", "Sum"):
            problems.append(f"dashboard: {stat} of {metric}")
    assert problems == []


def test_the_metric_check_rejects_a_misspelt_metric() -> None:
    # GIVEN an alarm on a metric nobody publishes WHEN checked THEN it is reported
    alarm = {
        "Metrics": [
            {"Id": "a", "Expression": 'SELECT MAX(LoadRatios) FROM SCHEMA("QueueAutoscale", Queue)'}
        ]
    }
    problems = [p for named in metrics_named(alarm) for p in metric_problems(*named)]
    assert problems == ["LoadRatios is not published (constants.py)"]
    wrong_dim = {
        "Namespace": "QueueAutoscale",
        "MetricName": "LoadRatio",
        "Dimensions": [{"Name": "QueueName", "Value": "x"}],
    }
    assert metric_problems(*next(metrics_named(wrong_dim))) == [
        "LoadRatio: dimensions ['QueueName'] != [Queue]"
    ]


FLEET_ALARMS = {
    "OverloadingAlarm": (
        "MaxLoadRatio",
        "Maximum",
        "OverloadingThreshold",
        "AlarmEvaluationMinutes",
    ),
    "OverloadedAlarm": ("MaxLoadRatio", "Maximum", "OverloadedThreshold", "AlarmEvaluationMinutes"),
    "SlaBreachAlarm": ("MaxSlaUsage", "Maximum", "SlaUsageThreshold", 1),
    "FleetNearMaxAlarm": (
        "MaxFleetUsage",
        "Maximum",
        "FleetUsageThreshold",
        "AlarmEvaluationMinutes",
    ),
    "ControllerErrorsAlarm": ("QueueErrors", "Sum", 1, 2),
    "QueueSilentAlarm": ("UndecidedQueues", "Maximum", 1, "SilentAlarmMinutes"),
}
"""The stack's alarms on the fleet metrics: (metric, statistic, threshold, minutes), a str
naming the parameter that sets it."""


def _ref(value: str | int) -> Any:
    return {"Ref": value} if isinstance(value, str) else value


@pytest.mark.parametrize("logical_id", sorted(FLEET_ALARMS))
def test_fleet_alarms_are_plain_alarms_on_the_stacks_fleet_metric(
    expanded: dict[str, Any], logical_id: str
) -> None:
    # one plain metric alarm per condition, on the Stack dimension: what CloudWatch and
    # LocalStack evaluate, whatever the queue count
    alarm = resources_of(expanded, "AWS::CloudWatch::Alarm")[logical_id]
    metric, statistic, threshold, minutes = FLEET_ALARMS[logical_id]
    assert (alarm["Namespace"], alarm["MetricName"]) == (METRIC_NAMESPACE, metric)
    assert alarm["Dimensions"] == [{"Name": FLEET_DIMENSION, "Value": {"Ref": "AWS::StackName"}}]
    assert "Metrics" not in alarm
    assert (alarm["Statistic"], alarm["Period"]) == (statistic, 60)
    assert alarm["Threshold"] == _ref(threshold)
    assert alarm["EvaluationPeriods"] == alarm["DatapointsToAlarm"] == _ref(minutes)


@pytest.mark.parametrize(
    ("logical_id", "metric", "operator"),
    [
        pytest.param(
            "EventsDlqNotEmptyAlarm",
            "ApproximateNumberOfMessagesVisible",
            "GreaterThanOrEqualToThreshold",
            id="dlq",
        ),
        pytest.param(
            "ConfigErrorsAlarm", "ConfigErrors", "GreaterThanOrEqualToThreshold", id="config"
        ),
    ],
)
def test_design_alarms_exist(
    expanded: dict[str, Any], logical_id: str, metric: str, operator: str
) -> None:
    alarms = resources_of(expanded, "AWS::CloudWatch::Alarm")
    assert metric in {named[1] for named in metrics_named(alarms[logical_id])}
    assert alarms[logical_id]["ComparisonOperator"] == operator


def test_no_alarm_or_parameter_grows_with_the_queues(expanded: dict[str, Any]) -> None:
    # the stack's alarms are the fleet's and three on AWS's and the loader's metrics
    alarms = resources_of(expanded, "AWS::CloudWatch::Alarm")
    assert set(alarms) == {
        *FLEET_ALARMS,
        "ControllerSilentAlarm",
        "EventsDlqNotEmptyAlarm",
        "FunctionErrorsAlarm",
        "ConfigErrorsAlarm",
    }
    assert not any(key.startswith("Fn::ForEach") for key in expanded["Resources"])
    assert "QueueNames" not in expanded["Parameters"]


def test_thresholds_come_from_parameters(expanded: dict[str, Any]) -> None:
    alarms = resources_of(expanded, "AWS::CloudWatch::Alarm")
    assert expanded["Parameters"]["OverloadingThreshold"]["Default"] == 0.8
    assert expanded["Parameters"]["FleetUsageThreshold"]["Default"] == 0.8
    for logical_id in FLEET_ALARMS:
        assert alarms[logical_id]["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    # no fleet alarm breaches on missing data (a 0 is not published: FLEET_SILENT_WHEN_ZERO)
    assert {alarms[name]["TreatMissingData"] for name in FLEET_ALARMS} == {"notBreaching"}


def test_the_controller_silent_alarm_counts_the_evaluate_functions_log_events(
    expanded: dict[str, Any],
) -> None:
    # the heartbeat is free: CloudWatch Logs counts the events of the log group the evaluate
    # function writes to, and every shard tick prints its fleet line there
    alarm = resources_of(expanded, "AWS::CloudWatch::Alarm")["ControllerSilentAlarm"]
    function = expanded["Resources"]["EvaluateFunction"]["Properties"]
    assert (alarm["Namespace"], alarm["MetricName"]) == ("AWS/Logs", "IncomingLogEvents")
    assert alarm["Dimensions"] == [{"Name": "LogGroupName", "Value": {"Ref": "EvaluateLogGroup"}}]
    assert function["LoggingConfig"]["LogGroup"] == {"Ref": "EvaluateLogGroup"}
    assert (alarm["Statistic"], alarm["Period"]) == ("Sum", 60)
    assert (alarm["ComparisonOperator"], alarm["Threshold"]) == ("LessThanThreshold", 1)
    assert alarm["EvaluationPeriods"] == alarm["DatapointsToAlarm"] == {"Ref": "SilentAlarmMinutes"}
    # silence is what it is for: a minute without a log event must breach
    assert alarm["TreatMissingData"] == "breaching"


def test_for_each_expands_like_cloudformation() -> None:
    # GIVEN a ForEach over a list parameter, with &{} in the key and the item in Ref and Sub
    template = {
        "Transform": ["AWS::LanguageExtensions", "AWS::Serverless-2016-10-31"],
        "Parameters": {"Names": {"Type": "CommaDelimitedList", "Default": "a-1,b"}},
        "Resources": {
            "Keep": {"Type": "AWS::SQS::Queue"},
            "Fn::ForEach::Each": [
                "N",
                {"Ref": "Names"},
                {
                    "Q&{N}": {
                        "Type": "T",
                        "Properties": {"A": {"Ref": "N"}, "B": {"Fn::Sub": "x-${N}"}},
                    }
                },
            ],
        },
    }
    # WHEN expanded with the default, and with a given value
    default = expand_for_each(template)
    given = expand_for_each(template, {"Names": ["c"]})
    # THEN one resource per item, the rest untouched, the transform consumed
    assert default["Resources"] == {
        "Keep": {"Type": "AWS::SQS::Queue"},
        "Qa1": {"Type": "T", "Properties": {"A": "a-1", "B": {"Fn::Sub": "x-a-1"}}},
        "Qb": {"Type": "T", "Properties": {"A": "b", "B": {"Fn::Sub": "x-b"}}},
    }
    assert default["Transform"] == "AWS::Serverless-2016-10-31"
    assert set(given["Resources"]) == {"Keep", "Qc"}
    # AND two items that compact to one logical ID are refused, not silently merged
    with pytest.raises(ValueError, match="repeats the logical ID Qab"):
        expand_for_each(template, {"Names": "a-b,ab"})


# ------------------------------------------------------------------ what is emitted vs queried

TEMPLATE_VALUES = {
    "QueuesConfig": '{"queue": "orders"}',
    "QueueConfigParameter": "/stack/queues-config",
    "LoadTable": "stack-load",
    "ArchiveBucket": "stack-archive",
    "EventsDeadLetterQueue": "https://sqs.us-east-1.amazonaws.com/123456789012/stack-events-dlq",
    "EventBusName": "default",
    "EvaluationIntervalSeconds": "15",
    "DryRun": "false",
    "EvaluateTickMode": "tick",
    "EvaluateTickQueue": "https://sqs.us-east-1.amazonaws.com/123456789012/stack-evaluate-ticks",
    "EventsDeliveryStream": "stack-events",
    "DecisionsDeliveryStream": "stack-decisions",
    "AWS::StackName": "stack",
}
WITH_PER_QUEUE_METRICS = {**TEMPLATE_VALUES, "PerQueueMetrics": "true"}


def emitted_under(
    template: dict[str, Any],
    logical_id: str,
    names: Iterable[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    number: float = 1.0,
) -> list[tuple[str, str, dict[str, str]]]:
    """(namespace, metric, {dimension: value}) for every metric the function's publishing
    path prints under exactly the environment template.yaml gives it with PerQueueMetrics
    "true" (queue "orders", every metric at `number`)."""
    for name in list(os.environ):
        if name.startswith("POWERTOOLS_"):
            monkeypatch.delenv(name)
    for name, value in function_environment(template, logical_id, WITH_PER_QUEUE_METRICS).items():
        monkeypatch.setenv(name, value)
    capsys.readouterr()
    emf_metrics("orders", dict.fromkeys(names, number))
    emitted = []
    for line in capsys.readouterr().out.splitlines():
        document = json.loads(line)
        # every value is in the line: a metric as [number], a plain field as number
        assert all(document[name] in (number, [number]) for name in names)
        for declared in document["_aws"]["CloudWatchMetrics"]:
            for dimension_set in declared["Dimensions"]:
                dimensions = {name: document[name] for name in dimension_set}
                emitted.extend(
                    (declared["Namespace"], metric["Name"], dimensions)
                    for metric in declared["Metrics"]
                )
    return emitted


@pytest.mark.parametrize(
    ("logical_id", "names"),
    [
        pytest.param("EvaluateFunction", QUEUE_METRICS, id="evaluate"),
        pytest.param("RecordEventsFunction", INGEST_METRICS, id="record-events"),
    ],
)
def test_emitted_metrics_carry_exactly_what_alarms_and_dashboard_query(
    template: dict[str, Any],
    logical_id: str,
    names: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN the function's environment from template.yaml (POWERTOOLS_SERVICE_NAME included)
    # WHEN the real publishing path prints its EMF
    emitted = emitted_under(template, logical_id, names, monkeypatch, capsys)
    # THEN every metric but the logged-only ones is published once, in the namespace, with
    # the dimension Queue only
    assert sorted(metric for _, metric, _ in emitted) == sorted(set(names) - LOGGED_ONLY_METRICS)
    assert {(ns, tuple(sorted(dims.items()))) for ns, _, dims in emitted} == {
        (METRIC_NAMESPACE, ((METRIC_DIMENSION, "orders"),))
    }
    # AND no alarm or chart reads them: they exist for the user's own charts and target
    # tracking policies, which query exactly [Queue]
    read = {
        metric
        for alarm in resources_of(expand_for_each(template), "AWS::CloudWatch::Alarm").values()
        for _, metric, _ in metrics_named(alarm)
    }
    assert read & {metric for _, metric, _ in emitted} == set()


def test_fleet_metrics_are_emitted_as_the_fleet_alarms_query(
    template: dict[str, Any],
    expanded: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN the evaluate function's publisher as its environment from template.yaml wires it
    # (service name, stack name, the alarms' thresholds)
    environment = function_environment(template, "EvaluateFunction", TEMPLATE_VALUES)
    publish = template_fleet_sink(environment, monkeypatch)
    capsys.readouterr()
    # WHEN a tick's fleet metrics go through the real publishing path, each at 1
    publish(dict.fromkeys(FLEET_METRICS, 1.0))
    (document,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    (declared,) = document["_aws"]["CloudWatchMetrics"]
    # THEN every fleet metric is extracted once, in the namespace, with dimension Stack only
    assert sorted(m["Name"] for m in declared["Metrics"]) == sorted(FLEET_METRICS)
    assert (declared["Namespace"], declared["Dimensions"]) == (METRIC_NAMESPACE, [["Stack"]])
    assert document["Stack"] == TEMPLATE_VALUES["AWS::StackName"]
    # AND each fleet alarm matches it exactly: its dimension is the stack's name, the value the
    # template passes the function as STACK_NAME
    assert environment["STACK_NAME"] == TEMPLATE_VALUES["AWS::StackName"]
    for name in FLEET_ALARMS:
        alarm = resources_of(expanded, "AWS::CloudWatch::Alarm")[name]
        assert alarm["MetricName"] in FLEET_METRICS
        assert alarm["Dimensions"] == [{"Name": "Stack", "Value": {"Ref": "AWS::StackName"}}]
    # AND a tick of an idle fleet (every value 0) extracts no metric but still prints its line,
    # the log event the controller-silent alarm counts: silence means no tick, not an idle fleet
    capsys.readouterr()
    publish(tick.fleet_metrics([]))
    (idle,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert idle == {"Stack": TEMPLATE_VALUES["AWS::StackName"], **dict.fromkeys(FLEET_METRICS, 0.0)}
    # AND the dashboard's charts read them on the same dimension
    charted = {metric: dims for _, metric, dims, _ in dashboard_metrics()}
    assert charted and all(dims == {"Stack"} for dims in charted.values())


def template_fleet_sink(environment: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> FleetSink:
    """The evaluate function's fleet-metrics publisher as `build_runtime` wires it from
    `environment` (set in the process too: the stack's name and Powertools read it)."""
    for name in list(os.environ):
        if name.startswith("POWERTOOLS_"):
            monkeypatch.delenv(name)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    session = make_session("us-east-1", {"AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y"})
    settings = EvaluateSettings.from_environ(environment)
    sink = evaluate.build_runtime(settings, make_clients(session=session)).publish_fleet_metrics
    return sink


def extracted(out: str) -> dict[str, float]:
    """The metrics the printed EMF documents declare, with their values; {} when none (a plain
    line declares none)."""
    documents = [json.loads(line) for line in out.splitlines()]
    return {
        metric["Name"]: document[metric["Name"]]
        for document in documents
        for declared in document.get("_aws", {}).get("CloudWatchMetrics", [])
        for metric in declared["Metrics"]
    }


@pytest.mark.parametrize("metric", sorted(FLEET_SILENT_BELOW_THRESHOLD))
@pytest.mark.parametrize(
    "case",
    [
        pytest.param(("false", None, 0.01), id="default-threshold"),
        pytest.param(("false", "0.6", 0.01), id="given-threshold"),
        pytest.param(("true", None, 0.5), id="dashboard"),
    ],
)
def test_the_alarmed_fleet_maxima_are_metrics_only_at_their_alarms_threshold_without_dashboard(
    template: dict[str, Any],
    expanded: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    metric: str,
    case: tuple[str, str | None, float],
) -> None:
    """Without the dashboard MaxLoadRatio, MaxSlaUsage and MaxFleetUsage are read only by their
    alarms, which take a missing datapoint as one below the threshold: below the lowest of their
    thresholds they stay plain fields of the line (no metric-hour billed); with the dashboard
    (which charts them) they are metrics. `case`: DashboardEnabled, the thresholds' value (None:
    the parameters' defaults), how far below the floor the low value is."""
    dashboard, threshold, step = case
    parameters = FLEET_SILENT_BELOW_THRESHOLD[metric]
    alarms = [
        a
        for a in resources_of(expanded, "AWS::CloudWatch::Alarm").values()
        if a.get("MetricName") == metric
    ]
    assert sorted(a["Threshold"]["Ref"] for a in alarms) == sorted(parameters)
    defaults = [float(expanded["Parameters"][p]["Default"]) for p in parameters]
    floor = float(threshold) if threshold is not None else min(defaults)
    # GIVEN the evaluate function's environment from template.yaml with the thresholds and
    # DashboardEnabled as given
    given = dict.fromkeys(parameters, threshold) if threshold is not None else {}
    values = {**TEMPLATE_VALUES, **given, "DashboardEnabled": dashboard}
    environment = function_environment(template, "EvaluateFunction", values)
    publish = template_fleet_sink(environment, monkeypatch)
    for value, wanted in [(floor, True), (floor - step, dashboard == "true")]:
        capsys.readouterr()
        # WHEN a tick's worst queue is at `value`
        publish({metric: value})
        out = capsys.readouterr().out
        # THEN the tick prints one line, which carries the value, as a metric only at or above
        # the floor
        (document,) = [json.loads(line) for line in out.splitlines()]
        assert document[metric] in (value, [value])
        assert extracted(out) == ({metric: [value]} if wanted else {})
    # AND a 0 stays a plain field whatever the dashboard, but for MaxLoadRatio with it (the
    # dashboard's "ticks" chart counts its samples)
    capsys.readouterr()
    publish({metric: 0.0})
    counted = dashboard == "true" and metric not in FLEET_SILENT_WHEN_ZERO
    assert extracted(capsys.readouterr().out) == ({metric: [0.0]} if counted else {})


def test_the_fleet_thresholds_reach_the_function_from_the_alarms_parameters(
    template: dict[str, Any], expanded: dict[str, Any]
) -> None:
    # GIVEN template.yaml's defaults WHEN the evaluate function's settings are read
    environment = function_environment(template, "EvaluateFunction", TEMPLATE_VALUES)
    settings = EvaluateSettings.from_environ(environment)
    parameters = expanded["Parameters"]
    # THEN each threshold is its alarm's parameter's default, one source, and the dashboard off
    default = {name: float(parameters[name]["Default"]) for name in THRESHOLD_SETTINGS.values()}
    assert {field: getattr(settings, field) for field in THRESHOLD_SETTINGS} == {
        field: default[name] for field, name in THRESHOLD_SETTINGS.items()
    }
    assert settings.dashboard is (parameters["DashboardEnabled"]["Default"] == "true") is False
    variables = template["Resources"]["EvaluateFunction"]["Properties"]["Environment"]
    named = {**{f.upper(): p for f, p in THRESHOLD_SETTINGS.items()}, "DASHBOARD_ENABLED": ""}
    assert {name: variables["Variables"][name] for name in named} == {
        **{name: {"Ref": p} for name, p in named.items() if p},
        "DASHBOARD_ENABLED": {"Ref": "DashboardEnabled"},
    }
    # AND each floor is the lowest threshold of the alarms on that metric
    floors = runtime.fleet_floors(settings)
    assert floors["MaxLoadRatio"] == min(
        default["OverloadingThreshold"], default["OverloadedThreshold"]
    )
    assert floors["MaxSlaUsage"] == default["SlaUsageThreshold"]
    assert floors["MaxFleetUsage"] == default["FleetUsageThreshold"]
    # AND each of those metrics' alarms is a Maximum over 60 s, >= its parameter, missing
    # data not breaching: a missing datapoint and one below the threshold count alike
    alarms = resources_of(expanded, "AWS::CloudWatch::Alarm").values()
    for metric, names in FLEET_SILENT_BELOW_THRESHOLD.items():
        reading = [a for a in alarms if metric in {m for _, m, _ in metrics_named(a)}]
        assert sorted(a["Threshold"]["Ref"] for a in reading) == sorted(names)
        for alarm in reading:
            assert (alarm["Statistic"], alarm["Period"], alarm["ComparisonOperator"]) == (
                "Maximum",
                60,
                "GreaterThanOrEqualToThreshold",
            )
            assert alarm["TreatMissingData"] == "notBreaching"


THRESHOLD_SETTINGS = {
    "overloading_threshold": "OverloadingThreshold",
    "overloaded_threshold": "OverloadedThreshold",
    "sla_usage_threshold": "SlaUsageThreshold",
    "fleet_usage_threshold": "FleetUsageThreshold",
}
"""EvaluateSettings' alarm thresholds -> the template parameter each comes from."""


@pytest.mark.parametrize(
    ("logical_id", "settings_type"),
    [
        pytest.param("EvaluateFunction", EvaluateSettings, id="evaluate"),
        pytest.param("RecordEventsFunction", RecordSettings, id="record-events"),
    ],
)
def test_config_errors_are_emitted_as_the_config_alarm_queries(
    template: dict[str, Any],
    expanded: dict[str, Any],
    logical_id: str,
    settings_type: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN the function's settings from template.yaml's environment, and a store that fails
    from botocore.stub import Stubber

    from queue_autoscale.adapters.aws import make_client

    environment = function_environment(template, logical_id, TEMPLATE_VALUES)
    for name in list(os.environ):
        if name.startswith("POWERTOOLS_"):
            monkeypatch.delenv(name)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    settings = settings_type.from_environ(environment)
    session = make_session("us-east-1", {"AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y"})
    ssm = make_client("ssm", session=session)
    stubber = Stubber(ssm)
    stubber.add_client_error("get_parameter", "ParameterNotFound", http_status_code=400)
    stubber.activate()
    loader = QueueConfigLoader(store_reader(settings, ssm, make_client("s3", session=session)))
    # WHEN the loader's real publishing path reports the failed read
    capsys.readouterr()
    with pytest.raises(ConfigUnavailable):
        loader.load(0.0)
    documents = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    emitted = [
        (declared["Namespace"], metric["Name"], {d: doc[d] for d in dimension_set})
        for doc in documents
        if "_aws" in doc
        for declared in doc["_aws"]["CloudWatchMetrics"]
        for dimension_set in declared["Dimensions"]
        for metric in declared["Metrics"]
    ]
    # THEN it is exactly what the stack's config-errors alarm reads: same namespace, metric,
    # dimension name and value (the parameter the template passes the function)
    alarm = resources_of(expanded, "AWS::CloudWatch::Alarm")["ConfigErrorsAlarm"]
    assert alarm["Dimensions"] == [
        {"Name": CONFIG_DIMENSION, "Value": {"Ref": "QueueConfigParameter"}}
    ]
    wanted = {CONFIG_DIMENSION: TEMPLATE_VALUES["QueueConfigParameter"]}
    assert emitted == [(alarm["Namespace"], alarm["MetricName"], wanted)]
    assert set(CONFIG_METRICS) == {alarm["MetricName"]}


def test_the_emitted_check_sees_a_service_dimension(
    template: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN Powertools' default behaviour (service taken from POWERTOOLS_SERVICE_NAME)
    from aws_lambda_powertools.metrics import EphemeralMetrics

    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "evaluate")
    capsys.readouterr()
    metrics = EphemeralMetrics(namespace=METRIC_NAMESPACE)
    metrics.add_dimension(name=METRIC_DIMENSION, value="orders")
    metrics.add_metric(name="LoadRatio", unit="None", value=1.0)
    metrics.flush_metrics()
    # THEN the document carries [Queue, service], which no alarm or widget would match:
    # the bug emf_metrics avoids, so the check above is not vacuous
    document = json.loads(capsys.readouterr().out.strip())
    assert document["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["Queue", "service"]]


def test_dashboard_is_the_committed_json_and_reads_published_metrics(
    template: dict[str, Any],
) -> None:
    text = TEMPLATE_PATH.read_text(encoding="utf-8")
    dashboard_text = sync_dashboard.DASHBOARD.read_text(encoding="utf-8")
    assert sync_dashboard.render(text, dashboard_text) == text, "run infra/sync_dashboard.py"
    body = template["Resources"]["Dashboard"]["Properties"]["DashboardBody"]["Fn::Sub"]
    assert json.loads(body) == json.loads(dashboard_text)
    charted = list(dashboard_metrics())
    assert len(charted) >= 6
    for namespace, metric, dims, _ in charted:
        assert metric_problems(namespace, metric, dims) == [], metric


# ------------------------------------------------------------------ IAM


def branches(statement: dict[str, Any]) -> list[dict[str, Any]]:
    """A statement, or each statement a conditional one (`Fn::If`) may become (not NoValue)."""
    if set(statement) != {"Fn::If"}:
        return [statement]
    _, *chosen = statement["Fn::If"]
    return [s for s in chosen if s != {"Ref": "AWS::NoValue"}]


def role_statements(document: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for name, role in resources_of(document, "AWS::IAM::Role").items():
        for policy in role.get("Policies", []):
            for statement in as_list(policy["PolicyDocument"]["Statement"]):
                yield from ((name, s) for s in branches(statement))
    for name, policy in resources_of(document, "AWS::IAM::Policy").items():
        for statement in as_list(policy["PolicyDocument"]["Statement"]):
            yield from ((name, s) for s in branches(statement))


def iam_problems(document: dict[str, Any]) -> list[str]:
    """Every way the roles break least privilege (empty when they are tight)."""
    problems = []
    for name, role in resources_of(document, "AWS::IAM::Role").items():
        if role.get("ManagedPolicyArns"):
            problems.append(f"{name}: managed policies {role['ManagedPolicyArns']}")
    for name, statement in role_statements(document):
        if statement.get("Effect") != "Allow":
            continue
        actions = as_list(statement["Action"])
        sid = statement.get("Sid", "?")
        problems.extend(f"{name}/{sid}: wildcard action {a}" for a in actions if "*" in a)
        resources = as_list(statement.get("Resource"))
        if "*" in resources:
            loose = sorted(set(actions) - STAR_RESOURCE_ACTIONS)
            if loose:
                problems.append(f"{name}/{sid}: Resource * for {loose}")
        if "NotAction" in statement or "NotResource" in statement:
            problems.append(f"{name}/{sid}: NotAction/NotResource")
        if "cloudwatch:PutMetricData" in actions:
            namespace = (
                statement.get("Condition", {}).get("StringEquals", {}).get("cloudwatch:namespace")
            )
            if not namespace:
                problems.append(f"{name}/{sid}: PutMetricData without a namespace condition")
    return problems


def test_roles_are_least_privilege(translated: dict[str, Any]) -> None:
    assert iam_problems(translated) == []


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        pytest.param(
            {
                "Sid": "X",
                "Effect": "Allow",
                "Action": "sqs:*",
                "Resource": "arn:aws:sqs:us-east-1:1:q",
            },
            "EvaluateRole/X: wildcard action sqs:*",
            id="wildcard-action",
        ),
        pytest.param(
            {"Sid": "X", "Effect": "Allow", "Action": "dynamodb:GetItem", "Resource": "*"},
            "EvaluateRole/X: Resource * for ['dynamodb:GetItem']",
            id="star-resource",
        ),
        pytest.param(
            {"Sid": "X", "Effect": "Allow", "Action": "cloudwatch:PutMetricData", "Resource": "*"},
            "EvaluateRole/X: PutMetricData without a namespace condition",
            id="unconditioned-putmetricdata",
        ),
    ],
)
def test_a_loosened_role_is_caught(
    translated: dict[str, Any], change: dict[str, Any], expected: str
) -> None:
    # GIVEN one extra loose statement WHEN checked THEN exactly that problem is reported
    loosened = copy.deepcopy(translated)
    role = loosened["Resources"]["EvaluateRole"]["Properties"]
    role["Policies"][0]["PolicyDocument"]["Statement"].append(change)
    assert iam_problems(loosened) == [expected]


def statements_by_sid(document: dict[str, Any], role: str) -> dict[str, dict[str, Any]]:
    return {s["Sid"]: s for name, s in role_statements(document) if name == role}


def test_metrics_may_be_published_to_the_project_namespace_only(translated: dict[str, Any]) -> None:
    for role in ("RecordEventsRole", "EvaluateRole"):
        put = [
            s
            for s in statements_by_sid(translated, role).values()
            if "cloudwatch:PutMetricData" in as_list(s["Action"])
        ]
        assert len(put) == 1
        assert put[0]["Condition"] == {"StringEquals": {"cloudwatch:namespace": METRIC_NAMESPACE}}


def _branch(value: Any, condition: str, holds: bool) -> Any:
    """One side of an `Fn::If` on `condition` (the value itself when it is no such If)."""
    if isinstance(value, dict) and "Fn::If" in value and value["Fn::If"][0] == condition:
        return value["Fn::If"][1 if holds else 2]
    return value


SERVICES_OF_CLUSTER = {
    "Fn::Sub": "arn:${AWS::Partition}:ecs:${AWS::Region}:${AWS::AccountId}:service/"
    "${EcsClusterName}/*"
}


def test_controller_resizes_only_the_configured_services(translated: dict[str, Any]) -> None:
    statements = statements_by_sid(translated, "EvaluateRole")
    assert statements["ResizeServices"]["Action"] == "ecs:UpdateService"
    assert "ecs:cluster" in statements["ResizeServices"]["Condition"]["ArnEquals"]
    for sid in ("ResizeServices", "DescribeServices"):
        resource = statements[sid]["Resource"]
        # the listed services, or with none listed the services of the one cluster
        assert _branch(resource, "HasServiceArns", True) == {"Ref": "ServiceArns"}
        assert _branch(resource, "HasServiceArns", False) == SERVICES_OF_CLUSTER
    read = statements["ReadWorkQueues"]
    assert _branch(read["Resource"], "HasQueueArns", True) == {"Ref": "QueueArns"}
    assert _branch(read["Condition"], "HasQueueArns", True) == {"Ref": "AWS::NoValue"}
    # with none listed: any queue of the account and region, only when tagged with the stack
    assert _branch(read["Resource"], "HasQueueArns", False) == {
        "Fn::Sub": "arn:${AWS::Partition}:sqs:${AWS::Region}:${AWS::AccountId}:*"
    }
    assert _branch(read["Condition"], "HasQueueArns", False) == {
        "StringEquals": {"aws:ResourceTag/queue-autoscale": {"Ref": "AWS::StackName"}}
    }
    assert statements["ArchiveDecisions"] == {
        "Sid": "ArchiveDecisions",
        "Effect": "Allow",
        "Action": "firehose:PutRecordBatch",
        "Resource": {"Fn::GetAtt": ["DecisionsDeliveryStream", "Arn"]},
    }


def test_scheduler_may_only_invoke_the_evaluate_function(translated: dict[str, Any]) -> None:
    statements = statements_by_sid(translated, "SchedulerRole")
    assert statements["InvokeEvaluate"]["Action"] == "lambda:InvokeFunction"
    assert statements["InvokeEvaluate"]["Resource"] == {"Fn::GetAtt": ["EvaluateFunction", "Arn"]}
    schedule = resources_of(translated, "AWS::Scheduler::Schedule")["EvaluateSchedule"]
    assert schedule["ScheduleExpression"] == "rate(1 minute)"
    assert schedule["Target"]["RoleArn"] == {"Fn::GetAtt": ["SchedulerRole", "Arn"]}


# ------------------------------------------------------------------ storage


def test_every_queue_is_encrypted(translated: dict[str, Any]) -> None:
    queues = resources_of(translated, "AWS::SQS::Queue")
    assert set(queues) == {
        "EventsQueue",
        "EventsDeadLetterQueue",
        "EvaluateDeadLetterQueue",
        "EvaluateTickQueue",
    }
    for name, queue in queues.items():
        assert queue.get("SqsManagedSseEnabled") is True or "KmsMasterKeyId" in queue, name
    redrive = queues["EventsQueue"]["RedrivePolicy"]
    assert redrive["deadLetterTargetArn"] == {"Fn::GetAtt": ["EventsDeadLetterQueue", "Arn"]}


def test_load_table_contract(translated: dict[str, Any]) -> None:
    table = resources_of(translated, "AWS::DynamoDB::Table")["LoadTable"]
    assert table["BillingMode"] == "PAY_PER_REQUEST"
    assert table["KeySchema"] == [
        {"AttributeName": "pk", "KeyType": "HASH"},
        {"AttributeName": "sk", "KeyType": "RANGE"},
    ]
    assert {(a["AttributeName"], a["AttributeType"]) for a in table["AttributeDefinitions"]} == {
        ("pk", "S"),
        ("sk", "S"),
    }
    assert table["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}
    assert table["SSESpecification"]["SSEEnabled"] is True
    assert table["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True


def test_archive_bucket_is_private_encrypted_and_tls_only(translated: dict[str, Any]) -> None:
    bucket = resources_of(translated, "AWS::S3::Bucket")["ArchiveBucket"]
    rule = bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]
    assert rule["ServerSideEncryptionByDefault"]["SSEAlgorithm"] in {"AES256", "aws:kms"}
    assert bucket["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    assert {r["Prefix"] for r in bucket["LifecycleConfiguration"]["Rules"] if "Prefix" in r} == {
        "events/",
        "decisions/",
        "rejected/",
        "delivery-errors/",
    }
    policy = resources_of(translated, "AWS::S3::BucketPolicy")["ArchiveBucketPolicy"]
    deny = [s for s in policy["PolicyDocument"]["Statement"] if s["Effect"] == "Deny"]
    assert len(deny) == 1
    assert deny[0]["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    assert deny[0]["Action"] == "s3:*"
    assert {"Fn::Sub": "${ArchiveBucket.Arn}/*"} in deny[0]["Resource"]


# ------------------------------------------------------------------ functions and jobs

REQUIRED_ENVIRONMENT = {
    "QUEUES_CONFIG_PARAMETER",
    "LOAD_TABLE",
    "ARCHIVE_BUCKET",
    "EVENTS_DLQ_URL",
    "EVENT_BUS_NAME",
    "EVALUATION_INTERVAL_SECONDS",
    "DRY_RUN",
    "POWERTOOLS_SERVICE_NAME",
    "POWERTOOLS_METRICS_NAMESPACE",
}


@pytest.mark.parametrize(
    ("logical_id", "handler"),
    [
        pytest.param(
            "RecordEventsFunction", "queue_autoscale.handlers.record_events.handler", id="record"
        ),
        pytest.param(
            "EvaluateFunction", "queue_autoscale.handlers.evaluate.handler", id="evaluate"
        ),
    ],
)
def test_functions(translated: dict[str, Any], logical_id: str, handler: str) -> None:
    function = resources_of(translated, "AWS::Lambda::Function")[logical_id]
    assert function["Handler"] == handler
    # python3.13: supported by Lambda to mid-2029; the test suite also runs on 3.13 (.venv313)
    assert function["Runtime"] == "python3.13"
    variables = function["Environment"]["Variables"]
    assert REQUIRED_ENVIRONMENT - set(variables) == set()
    assert variables["POWERTOOLS_METRICS_NAMESPACE"] == METRIC_NAMESPACE
    # JSON logs, so Lambda's own START, END and REPORT lines follow FunctionSystemLogLevel
    # (WARN: none; docs/cost.md); the application's lines keep their INFO level
    logging_config = function["LoggingConfig"]
    assert logging_config["LogFormat"] == "JSON"
    assert "ApplicationLogLevel" not in logging_config
    assert logging_config["SystemLogLevel"] == {"Ref": "FunctionSystemLogLevel"}
    assert translated["Parameters"]["FunctionSystemLogLevel"]["Default"] == "WARN"
    module, _, attribute = handler.rpartition(".")
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None, module
    source = Path(spec.origin).read_text(encoding="utf-8")
    assert re.search(rf"^(def {attribute}\(|{attribute} = )", source, re.MULTILINE), handler


def test_evaluate_runs_one_invocation_per_shard_and_tick(
    translated: dict[str, Any],
) -> None:
    function = resources_of(translated, "AWS::Lambda::Function")["EvaluateFunction"]
    assert 60 < function["Timeout"] <= 90
    assert function["ReservedConcurrentExecutions"] == {"Ref": "MaxEvaluateShards"}
    (invoke_config,) = resources_of(translated, "AWS::Lambda::EventInvokeConfig").values()
    assert (invoke_config["MaximumRetryAttempts"], invoke_config["MaximumEventAgeInSeconds"]) == (
        0,
        60,
    )
    shards = statements_by_sid(translated, "EvaluateRole")["StartOwnShards"]
    assert shards["Action"] == "lambda:InvokeFunction"
    assert shards["Resource"]["Fn::Sub"].endswith(":function:${AWS::StackName}-evaluate")
    assert function["FunctionName"] == {"Fn::Sub": "${AWS::StackName}-evaluate"}
    interval = translated["Parameters"]["EvaluationIntervalSeconds"]
    assert (interval["MinValue"], interval["MaxValue"]) == (5, 60)


def test_record_events_reports_partial_batch_failures(translated: dict[str, Any]) -> None:
    mappings = resources_of(translated, "AWS::Lambda::EventSourceMapping")
    assert set(mappings) == {"RecordEventsFunctionEvents", "EvaluateFunctionTick"}
    mapping = mappings["RecordEventsFunctionEvents"]
    assert mapping["EventSourceArn"] == {"Fn::GetAtt": ["EventsQueue", "Arn"]}
    assert mapping["FunctionName"] == {"Ref": "RecordEventsFunction"}
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    # the window is what the lateness bound leaves after the producers' flush and the batch
    assert mapping["MaximumBatchingWindowInSeconds"] == EVENTS_BATCHING_WINDOW_SECONDS == 2


def test_the_tick_queue_invokes_one_tick_a_message_and_keeps_no_failed_tick(
    translated: dict[str, Any],
) -> None:
    # GIVEN the tick queue's event source and the queue
    mapping = resources_of(translated, "AWS::Lambda::EventSourceMapping")["EvaluateFunctionTick"]
    queue = resources_of(translated, "AWS::SQS::Queue")["EvaluateTickQueue"]
    function = resources_of(translated, "AWS::Lambda::Function")["EvaluateFunction"]
    # THEN each message is one tick of the evaluate function (parse_request takes one record),
    # as the demo delivers them too
    assert mapping["FunctionName"] == {"Ref": "EvaluateFunction"}
    assert mapping["EventSourceArn"] == {"Fn::GetAtt": ["EvaluateTickQueue", "Arn"]}
    assert mapping["BatchSize"] == TICK_BATCH_SIZE == 1
    # AND a failed tick is never retried (it would be late): the DLQ takes it at once
    assert queue["RedrivePolicy"] == {
        "deadLetterTargetArn": {"Fn::GetAtt": ["EvaluateDeadLetterQueue", "Arn"]},
        "maxReceiveCount": 1,
    }
    # AND the visibility timeout is the function's timeout (Lambda refuses less), and the
    # timeout is one tick's longest budget (the largest interval) plus the handler's margin
    interval = translated["Parameters"]["EvaluationIntervalSeconds"]
    assert function["Timeout"] == interval["MaxValue"] + evaluate.DEADLINE_MARGIN_SECONDS
    assert queue["VisibilityTimeout"] == function["Timeout"]
    # AND no message outlives its use: queued at most a minute ahead, stale an interval later
    assert queue["MessageRetentionPeriod"] == 60 + interval["MaxValue"]
    # AND the default is one invocation per tick, named in the function's environment
    assert translated["Parameters"]["EvaluateTickMode"]["Default"] == TickMode.TICK.value
    variables = function["Environment"]["Variables"]
    assert variables["TICK_MODE"] == {"Ref": "EvaluateTickMode"}
    assert variables["TICK_QUEUE_URL"] == {
        "Fn::If": ["HasTickQueue", {"Ref": "EvaluateTickQueue"}, {"Ref": "AWS::NoValue"}]
    }
    # AND the schedule passes its scheduled time, so a duplicate claims the same tick
    schedule = resources_of(translated, "AWS::Scheduler::Schedule")["EvaluateSchedule"]
    assert "<aws.scheduler.scheduled-time>" in schedule["Target"]["Input"]


@pytest.mark.parametrize(
    ("interval", "mode", "queued"),
    [("15", "tick", True), ("30", "tick", True), ("60", "tick", False), ("15", "loop", False)],
)
def test_the_tick_queue_exists_only_where_a_minute_has_later_ticks(
    template: dict[str, Any],
    translated: dict[str, Any],
    interval: str,
    mode: str,
    queued: bool,
) -> None:
    """At a 60 s interval the scheduled invocation is the minute's only tick, and loop mode
    ticks inside it: neither creates the tick queue or its event source (whose idle polls are
    billed), nor grants the roles its actions (nor the jump lines', which only a tick queue can
    act on), nor names it to the functions."""
    # GIVEN the stack's parameters
    values = {**TEMPLATE_VALUES, "EvaluationIntervalSeconds": interval, "EvaluateTickMode": mode}
    # THEN the queue, its event source and the roles' statements share one condition
    assert is_condition_true(template, "HasTickQueue", values) is queued
    for logical_id in ("EvaluateTickQueue", "EvaluateFunctionTick"):
        assert translated["Resources"][logical_id]["Condition"] == "HasTickQueue"
    tick_queue = {"Fn::GetAtt": ["EvaluateTickQueue", "Arn"]}
    for role, sids in (
        (
            "EvaluateRole",
            {("HasTickQueue", "QueueAndConsumeTicks")},
        ),
        (
            "RecordEventsRole",
            {
                ("HasJumpTicks", "ReadJumpLines"),
                ("HasJumpTicks", "CountQueuedSinceJumpLines"),
                ("HasJumpTicks", "ClaimJumpLines"),
                ("HasJumpTicks", "AskForJumpTicks"),
            },
        ),
    ):
        conditional = [
            s["Fn::If"]
            for s in translated["Resources"][role]["Properties"]["Policies"][0]["PolicyDocument"][
                "Statement"
            ]
            if "Fn::If" in s
        ]
        assert {(branch[0], branch[1]["Sid"]) for branch in conditional} == sids
        assert all(branch[2] == {"Ref": "AWS::NoValue"} for branch in conditional)
        sqs = [b[1] for b in conditional if str(as_list(b[1]["Action"])[0]).startswith("sqs:")]
        assert [statement["Resource"] for statement in sqs] == [tick_queue]
    # AND jump ticks need the tick queue, and JumpTicks (on by default) turns them off
    assert is_condition_true(template, "HasJumpTicks", values) is queued
    assert not is_condition_true(template, "HasJumpTicks", {**values, "JumpTicks": "false"})
    # AND both functions run with the queue's URL exactly where the queue exists
    environment = function_environment(template, "EvaluateFunction", values)
    assert ("TICK_QUEUE_URL" in environment) is queued
    assert EvaluateSettings.from_environ(environment).jump_ticks is queued
    recording = function_environment(template, "RecordEventsFunction", values)
    assert ("TICK_QUEUE_URL" in recording) is queued
    assert (RecordSettings.from_environ(recording).tick_queue_url is not None) is queued
    # AND without jump ticks the record function is not told of the queue, nor evaluate to
    # leave lines
    off = {**values, "JumpTicks": "false"}
    assert "TICK_QUEUE_URL" not in function_environment(template, "RecordEventsFunction", off)
    assert not EvaluateSettings.from_environ(
        function_environment(template, "EvaluateFunction", off)
    ).jump_ticks
    # AND its settings load either way, and a minute has later ticks only where they have a
    # queue to wait in (loop mode runs them inside the scheduled invocation)
    settings = EvaluateSettings.from_environ(environment)
    assert (settings.tick_queue_url is not None) is queued
    later = tick.tick_count(settings.evaluation_interval_seconds) - 1
    assert (later > 0 and mode == "tick") is queued


def test_glue_job(translated: dict[str, Any]) -> None:
    # one daily job: the SLA report, then the trend fit on its hourly table, in one session
    jobs = resources_of(translated, "AWS::Glue::Job")
    assert set(jobs) == {"DailySparkJob"}
    props = jobs["DailySparkJob"]
    assert props["GlueVersion"] == "5.0"
    # daily, not urgent: Flex (Glue 3.0+, glueetl, G.1X or G.2X workers)
    assert (props["ExecutionClass"], props["WorkerType"]) == ("FLEX", "G.1X")
    assert props["Command"]["ScriptLocation"] == {"Fn::Sub": "s3://${ArchiveBucket}/glue/daily.py"}
    args = props["DefaultArguments"]
    assert args["--extra-py-files"] == {"Fn::Sub": "s3://${ArchiveBucket}/glue/glue_jobs.zip"}
    # the report reads the config store through Powertools Parameters, as the functions do
    # the Lambda's own pins (pyproject.toml), so a dependency update cannot leave Glue behind
    pinned = dict(spec.split("==", 1) for spec in project_pins())
    powertools = "aws-lambda-powertools==" + pinned["aws-lambda-powertools[parser,tracer]"]
    assert args["--additional-python-modules"] == f"pydantic=={pinned['pydantic']},{powertools}"
    assert args["--input_uri"] == {"Fn::Sub": "s3://${ArchiveBucket}/"}
    # the report's tables, which the fit then reads (sla_hourly), and the fitted model
    assert args["--output_uri"] == {"Fn::Sub": "s3://${ArchiveBucket}/reports/"}
    # the config store's name, not a copy of the document
    assert args["--config_parameter"] == {"Ref": "QueueConfigParameter"}
    assert args["--interval_seconds"] == "60"
    assert args["--table_name"] == {"Ref": "LoadTable"}
    assert args["--holdout_days"] == "7"
    # only these of the job's options (tests/spark runs daily.main with them under argparse,
    # which rejects unknown ones)
    assert {name for name in args if "_" in name} == {
        "--input_uri",
        "--output_uri",
        "--config_parameter",
        "--interval_seconds",
        "--table_name",
        "--holdout_days",
    }
    triggers = resources_of(translated, "AWS::Glue::Trigger")
    assert set(triggers) == {"DailySparkTrigger"}
    daily = triggers["DailySparkTrigger"]
    assert daily["Type"] == "SCHEDULED"
    assert daily["Actions"] == [{"JobName": {"Ref": "DailySparkJob"}}]


def object_patterns(document: dict[str, Any], role: str, action: str) -> list[str]:
    """The object ARNs (as `${ArchiveBucket.Arn}/prefix/*` patterns) a role may `action`."""
    patterns = []
    for name, statement in role_statements(document):
        if name == role and action in as_list(statement["Action"]):
            for resource in as_list(statement["Resource"]):
                if isinstance(resource, dict) and "Fn::Sub" in resource:
                    patterns.append(resource["Fn::Sub"].removeprefix("${ArchiveBucket.Arn}/"))
    return patterns


@pytest.mark.parametrize(
    ("role", "key"),
    [
        pytest.param("ArchiveDeliveryRole", s3_keys.events_key(0, "b"), id="deliver-events"),
        pytest.param("RecordEventsRole", s3_keys.rejected_key(0, "id"), id="record-rejected"),
        pytest.param("ArchiveDeliveryRole", s3_keys.decisions_key(0, "t"), id="deliver-decisions"),
        pytest.param("ArchiveDeliveryRole", "delivery-errors/events/x", id="delivery-errors"),
    ],
)
def test_roles_may_write_every_key_the_code_writes(
    translated: dict[str, Any], role: str, key: str
) -> None:
    # the archive adapter's own key builders, so a new prefix without a grant fails here
    patterns = object_patterns(translated, role, "s3:PutObject")
    assert any(fnmatch.fnmatchcase(key, pattern) for pattern in patterns), (key, patterns)


def project_pins() -> list[str]:
    """pyproject.toml's runtime dependencies, as `name==version`."""
    pyproject = tomllib.loads((TEMPLATE_PATH.parent / "pyproject.toml").read_text(encoding="utf-8"))
    return list(pyproject["project"]["dependencies"])


def test_lambda_requirements_pin_what_pyproject_pins() -> None:
    # sam build installs functions/requirements.txt; it must not drift from the project's pins
    pinned = dict(spec.split("==", 1) for spec in project_pins())
    lines = (TEMPLATE_PATH.parent / "functions" / "requirements.txt").read_text(encoding="utf-8")
    required = dict(
        line.split("==", 1)
        for line in lines.splitlines()
        if line.strip() and not line.startswith("#")
    )
    assert required, "functions/requirements.txt is empty"
    for name, version in required.items():
        assert pinned.get(name) == version, f"{name}=={version} vs pyproject {pinned.get(name)}"


class RecordingDynamo:
    """A DynamoDB client that keeps each write's partition key and attribute names."""

    def __init__(self) -> None:
        self.writes: list[tuple[str, str, set[str]]] = []

    def update_item(self, **kwargs: Any) -> dict[str, Any]:
        names = set(kwargs.get("ExpressionAttributeNames", {}).values()) | set(kwargs["Key"])
        self.writes.append(("dynamodb:UpdateItem", kwargs["Key"]["pk"]["S"], names))
        return {}

    def put_item(self, **kwargs: Any) -> dict[str, Any]:
        self.writes.append(("dynamodb:PutItem", kwargs["Item"]["pk"]["S"], set(kwargs["Item"])))
        return {}


def dynamodb_grants(document: dict[str, Any], role: str, action: str) -> list[dict[str, Any]]:
    return [
        s
        for name, s in role_statements(document)
        if name == role and action in as_list(s["Action"])
    ]


def granted(statement: dict[str, Any], pk: str, attributes: set[str]) -> bool:
    """Whether the statement's LeadingKeys and Attributes conditions admit this write."""
    condition = statement.get("Condition", {})
    leading = condition.get("ForAllValues:StringLike", {}).get("dynamodb:LeadingKeys")
    allowed = condition.get("ForAllValues:StringEquals", {}).get("dynamodb:Attributes")
    if leading is None:
        return True
    if not any(fnmatch.fnmatchcase(pk, pattern) for pattern in as_list(leading)):
        return False
    return allowed is None or attributes <= set(as_list(allowed))


def test_each_role_writes_only_its_own_items_with_their_attributes(
    translated: dict[str, Any],
) -> None:
    # GIVEN the writes each function's adapter code makes (recorded from the adapter itself)
    record, evaluate = RecordingDynamo(), RecordingDynamo()
    LoadTable(record, "t").add_counters_once(
        "orders", 1, {"m": dict.fromkeys(COUNTER_FIELDS, 1)}, expires_at=2
    )
    assert LoadTable(record, "t").claim_jump("orders", 1.0, 2.0)
    table = LoadTable(evaluate, "t")
    document = {**state_to_dict(ControllerState(queue="orders")), "shard": "0/1", "ticked_at": 1.0}
    line = JumpLine(1.0, 2.0, 1.0, 3.64, ticked_at=1.2, expires_at=21.2)
    document[JUMP_FIELD] = line_to_dict(line)
    table.write_state("orders", document, 0)
    table.acquire_lock("0/1", 0, "owner", 1.0, 2.0)
    table.claim_tick("0/1", 0, 1_000, 1.0)
    glue = RecordingDynamo()
    model = TrendModel(
        "orders", fitted_at=1.0, level=2.0, slope_per_hour=0.1, seasonal=(1.0,) * 168
    )
    LoadTable(glue, "t").put_model("orders", model_to_dict(model))
    # THEN each role may make exactly those writes
    roles = (("RecordEventsRole", record), ("EvaluateRole", evaluate), ("GlueJobRole", glue))
    for role, client in roles:
        for action, pk, attributes in client.writes:
            grants = dynamodb_grants(translated, role, action)
            assert any(granted(s, pk, attributes) for s in grants), (role, action, pk, attributes)
    # AND every DynamoDB write grant names its partition keys and attributes
    for role in ("RecordEventsRole", "EvaluateRole", "GlueJobRole"):
        for action in ("dynamodb:UpdateItem", "dynamodb:PutItem"):
            for statement in dynamodb_grants(translated, role, action):
                condition = statement.get("Condition", {})
                assert "dynamodb:LeadingKeys" in condition.get("ForAllValues:StringLike", {})
                assert "dynamodb:Attributes" in condition.get("ForAllValues:StringEquals", {})
    # AND record_events cannot write STATE (but claim its jump line), MODEL or a lock;
    # evaluate cannot write a counter
    counters = {"queued", "expires_at"}
    assert not any(
        granted(s, queue_pk("orders"), {"pk", "sk", "version"})
        or granted(s, queue_pk("orders"), {"pk", "sk", "samples"})
        or granted(s, shard_pk(0), {"pk", "sk", "owner"})
        for action in ("dynamodb:UpdateItem", "dynamodb:PutItem")
        for s in dynamodb_grants(translated, "RecordEventsRole", action)
    )
    assert not dynamodb_grants(translated, "RecordEventsRole", "dynamodb:PutItem")
    assert not any(
        granted(s, counter_pk("orders"), {"pk", "sk", *counters})
        for action in ("dynamodb:UpdateItem", "dynamodb:PutItem")
        for s in dynamodb_grants(translated, "EvaluateRole", action)
    )
    # AND neither evaluate nor the Glue jobs can write the other's item shape
    state = {"pk", "sk", "version", "samples"}
    model_shape = {"pk", "sk", "level", "seasonal"}
    assert not any(
        granted(s, queue_pk("orders"), model_shape)
        for s in dynamodb_grants(translated, "EvaluateRole", "dynamodb:PutItem")
    )
    assert not any(
        granted(s, queue_pk("orders"), state) or granted(s, counter_pk("orders"), model_shape)
        for s in dynamodb_grants(translated, "GlueJobRole", "dynamodb:PutItem")
    )
    assert dynamodb_grants(translated, "EvaluateRole", "dynamodb:UpdateItem") == []
    assert dynamodb_grants(translated, "RecordEventsRole", "dynamodb:PutItem") == []


ARCHIVE_STREAMS = {
    "EventsDeliveryStream": ("events/dt=!{timestamp:yyyy-MM-dd}/hour=!{timestamp:HH}/", "events"),
    "DecisionsDeliveryStream": ("decisions/dt=!{timestamp:yyyy-MM-dd}/", "decisions"),
}


@pytest.mark.parametrize("logical_id", sorted(ARCHIVE_STREAMS))
def test_delivery_streams_file_what_the_archive_readers_list(
    translated: dict[str, Any], logical_id: str
) -> None:
    stream = resources_of(translated, "AWS::KinesisFirehose::DeliveryStream")[logical_id]
    s3 = stream["ExtendedS3DestinationConfiguration"]
    prefix, kind = ARCHIVE_STREAMS[logical_id]
    # Hive-style UTC folders as the S3 writer's key builders make them, gzipped JSON lines
    assert s3["Prefix"] == prefix
    moment = "dt=1970-01-01/hour=00/" if kind == "events" else "dt=1970-01-01/"
    key = (s3_keys.events_key if kind == "events" else s3_keys.decisions_key)(0, "x")
    assert key == f"{kind}/{moment}x.jsonl.gz"
    assert (s3["CompressionFormat"], s3["FileExtension"]) == ("GZIP", ".jsonl.gz")
    # failed deliveries go outside every folder a reader lists, and expire with the archive
    assert s3["ErrorOutputPrefix"].startswith("delivery-errors/")
    assert "!{firehose:error-output-type}" in s3["ErrorOutputPrefix"]
    rules = translated["Resources"]["ArchiveBucket"]["Properties"]["LifecycleConfiguration"]
    assert {
        "Id": "expire-delivery-errors",
        "Status": "Enabled",
        "Prefix": "delivery-errors/",
        "ExpirationInDays": {"Ref": "ArchiveRetentionDays"},
    } in rules["Rules"]
    # status's decision window always holds delivered objects: at least two buffers long
    interval = s3["BufferingHints"]["IntervalInSeconds"]
    assert interval == ARCHIVE_BUFFER_SECONDS
    assert 2 * interval <= DECISION_LOOKBACK_SECONDS
    assert s3["BufferingHints"]["SizeInMBs"] == 128
    assert s3["RoleARN"] == {"Fn::GetAtt": ["ArchiveDeliveryRole", "Arn"]}


def test_each_function_puts_records_only_to_its_own_stream(translated: dict[str, Any]) -> None:
    granted = {
        (name, json.dumps(statement["Resource"], sort_keys=True))
        for name, statement in role_statements(translated)
        if "firehose:PutRecordBatch" in as_list(statement["Action"])
    }
    assert granted == {
        ("RecordEventsRole", json.dumps({"Fn::GetAtt": ["EventsDeliveryStream", "Arn"]})),
        ("EvaluateRole", json.dumps({"Fn::GetAtt": ["DecisionsDeliveryStream", "Arn"]})),
    }
    # and the functions no longer write events or decisions objects themselves
    assert object_patterns(translated, "RecordEventsRole", "s3:PutObject") == ["rejected/*"]
    assert object_patterns(translated, "EvaluateRole", "s3:PutObject") == []
    record = function_environment(translated, "RecordEventsFunction", TEMPLATE_VALUES)
    evaluate = function_environment(translated, "EvaluateFunction", TEMPLATE_VALUES)
    assert record["EVENTS_DELIVERY_STREAM"] == "stack-events"
    assert evaluate["DECISIONS_DELIVERY_STREAM"] == "stack-decisions"
