"""template.yaml's fleet alarms fire and clear on an endpoint that evaluates alarms.

LocalStack evaluates plain metric alarms (metric name + dimensions) on a schedule; moto
stores alarms but never evaluates them, so this test skips on the embedded server.

The metrics come from the project's own publishing path: the evaluate function's fleet
publisher, wired by `build_runtime` from its environment in template.yaml (the stack's name,
the alarms' thresholds, no dashboard), prints one line a tick, EMF when a value is at its
alarms' threshold. On AWS, CloudWatch Logs turns those lines into metrics and counts them in
the log group's IncomingLogEvents (the controller-silent alarm's heartbeat). LocalStack's
CloudWatch Logs does neither, so here `put_emf` does the equivalent PutMetricData, datum for
datum (namespace, dimensions, names, units and timestamp as the document declares them), and
`put_log_events_count` the log group's count, one event a line.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from infra.template import load_template, translate
from queue_autoscale.constants import FLEET_METRICS
from queue_autoscale.demo.direct import create_direct
from queue_autoscale.demo.emulator import session
from queue_autoscale.demo.intrinsics import Resolver
from queue_autoscale.handlers import evaluate
from queue_autoscale.settings import EvaluateSettings
from queue_autoscale.telemetry import FleetSink, emf_config_metrics
from tests.integration.conftest import REGION, emf_documents

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("alarms")]

ALARM_DEADLINE = 120.0
"""Seconds to wait for ALARM: the alarms are evaluated when created, then every minute."""
OK_DEADLINE = 360.0
"""Seconds to wait for OK: LocalStack counts a datapoint for EvaluationPeriods + 2 periods
(3 minutes here), then re-evaluates once a minute."""

BREACHING = {
    "MaxLoadRatio": 1.25,
    "MaxSlaUsage": 1.5,
    "MaxFleetUsage": 0.9,
    "QueueErrors": 2.0,
    "UndecidedQueues": 1.0,
}
"""A tick whose worst queue is overloaded, breaching and nearly full, with errors and a queue
left undecided: over every condition alarm's threshold; its line (the heartbeat) ends the
silence."""
HEALTHY = {
    "MaxLoadRatio": 0.3,
    "MaxSlaUsage": 0.2,
    "MaxFleetUsage": 0.4,
    "QueueErrors": 0.0,
    "UndecidedQueues": 0.0,
}
"""Under every threshold: no datum, every value a plain field of the line, which still counts
as the log event the controller-silent alarm reads."""
IDLE = dict.fromkeys(HEALTHY, 0.0)
"""A tick that decided nothing to scale (no load): a plain line too."""
TICK_SECONDS = 10.0
"""How often the test's 'controller' publishes while it waits (a tick's cadence)."""


def put_emf(cloudwatch: Any, document: dict[str, Any]) -> int:
    """PutMetricData for one EMF document, as CloudWatch Logs extracts it; datums sent."""
    declared = document["_aws"]
    stamp = datetime.fromtimestamp(declared["Timestamp"] / 1000, UTC)
    sent = 0
    for directive in declared["CloudWatchMetrics"]:
        for dimension_set in directive["Dimensions"]:
            dimensions = [{"Name": name, "Value": document[name]} for name in dimension_set]
            data = []
            for metric in directive["Metrics"]:
                values = document[metric["Name"]]
                data.extend(
                    {
                        "MetricName": metric["Name"],
                        "Dimensions": dimensions,
                        "Timestamp": stamp,
                        "Value": float(value),
                        "Unit": metric.get("Unit", "None"),
                    }
                    for value in (values if isinstance(values, list) else [values])
                )
            cloudwatch.put_metric_data(Namespace=directive["Namespace"], MetricData=data)
            sent += len(data)
    return sent


def put_log_events_count(cloudwatch: Any, log_group: str, events: int) -> None:
    """The log group's IncomingLogEvents datum for `events` log events now, as CloudWatch Logs
    publishes it on AWS (namespace AWS/Logs, dimension LogGroupName)."""
    cloudwatch.put_metric_data(
        Namespace="AWS/Logs",
        MetricData=[
            {
                "MetricName": "IncomingLogEvents",
                "Dimensions": [{"Name": "LogGroupName", "Value": log_group}],
                "Timestamp": datetime.now(UTC),
                "Value": float(events),
                "Unit": "None",
            }
        ],
    )


def publish(
    cloudwatch: Any, sink: FleetSink, values: dict[str, float], capsys: Any, log_group: str
) -> dict[str, Any]:
    """Publish one tick's fleet metrics through the function's `sink` and deliver what CloudWatch
    Logs makes of its one line: a log event of `log_group` and, from an EMF document, metrics."""
    capsys.readouterr()
    sink(values)
    (line,) = capsys.readouterr().out.splitlines()
    document: dict[str, Any] = json.loads(line)
    put_log_events_count(cloudwatch, log_group, 1)
    if "_aws" in document:
        assert put_emf(cloudwatch, document) == len(declared(document))
    return document


def declared(document: dict[str, Any]) -> list[str]:
    """The metrics a printed line declares (none for plain JSON; the rest are plain fields)."""
    directives = document.get("_aws", {}).get("CloudWatchMetrics", [])
    return [m["Name"] for d in directives for m in d["Metrics"]]


def states(cloudwatch: Any, names: list[str]) -> dict[str, dict[str, Any]]:
    """The alarms as described now, by name."""
    answer = cloudwatch.describe_alarms(AlarmNames=names)["MetricAlarms"]
    return {alarm["AlarmName"]: alarm for alarm in answer}


def wait_for(
    cloudwatch: Any,
    wanted: dict[str, str],
    deadline: float,
    tick: Callable[[], object] = lambda: None,
) -> dict[str, Any]:
    """Call `tick` every TICK_SECONDS (a controller publishing) until every alarm named in
    `wanted` is in its state; the alarms as described then."""
    end = time.monotonic() + deadline
    while True:
        tick()
        alarms = states(cloudwatch, list(wanted))
        now = {name: alarms[name]["StateValue"] for name in wanted}
        if now == wanted:
            return alarms
        if time.monotonic() > end:
            pytest.fail(f"not {wanted} after {deadline:.0f} s: {now}")
        time.sleep(TICK_SECONDS)


def one_queue_parameters(queue: str, **extra: str) -> dict[str, str]:
    """The template's parameters for a stack serving `queue` alone, plus `extra`."""
    return {
        "QueuesConfig": json.dumps({"queue": queue}),
        "EcsClusterName": "c",
        **extra,
    }


def test_fleet_alarms_fire_and_clear_from_published_metrics(
    endpoint: Any, clients: Any, suffix: str, function_environ: Any, capsys: Any
) -> None:
    if endpoint.embedded:
        pytest.skip("the embedded moto server stores alarms but never evaluates them")
    queue, stack = f"orders-{suffix}", f"qa-alarms-{suffix}"
    # GIVEN the evaluate function's environment from template.yaml for this stack's name
    environment = function_environ("EvaluateFunction", **{"AWS::StackName": stack})
    settings = EvaluateSettings.from_environ(environment)
    sink = evaluate.build_runtime(settings, clients).publish_fleet_metrics
    # AND the template's alarms on the fleet metrics, one-minute windows so the test is short
    parameters = one_queue_parameters(queue, AlarmEvaluationMinutes="1", SilentAlarmMinutes="1")
    translated = translate(load_template(), parameters)
    fleet_alarms = {
        logical_id: resource["Properties"]
        for logical_id, resource in translated["Resources"].items()
        if resource["Type"] == "AWS::CloudWatch::Alarm"
        and resource["Properties"].get("MetricName") in FLEET_METRICS
    }
    assert len(fleet_alarms) == 6
    # AND the controller-silent alarm on the evaluate function's log group
    fleet_alarms["ControllerSilentAlarm"] = translated["Resources"]["ControllerSilentAlarm"][
        "Properties"
    ]
    physical: dict[str, str] = {}
    resolver = Resolver(
        session(endpoint.url, REGION), translated, parameters, physical, stack, REGION
    )
    group = translated["Resources"]["EvaluateLogGroup"]["Properties"]["LogGroupName"]
    log_group = physical["EvaluateLogGroup"] = resolver.resolve(group)
    assert log_group == f"/aws/lambda/{stack}-evaluate"
    cloudwatch = clients.cloudwatch
    names = {}
    for logical_id, properties in fleet_alarms.items():
        resolved = resolver.resolve(properties)
        silent_alarm = logical_id == "ControllerSilentAlarm"
        name, value = ("LogGroupName", log_group) if silent_alarm else ("Stack", stack)
        assert resolved["Dimensions"] == [{"Name": name, "Value": value}]
        names[logical_id] = create_direct(
            session(endpoint.url, REGION), "AWS::CloudWatch::Alarm", resolved
        )
    silent = names["ControllerSilentAlarm"]
    conditions = [name for key, name in names.items() if key != "ControllerSilentAlarm"]
    try:
        # WHEN no tick has published yet
        # THEN controller-silent fires (missing data breaches) and no condition alarm does
        alarms = wait_for(cloudwatch, {silent: "ALARM"}, ALARM_DEADLINE)
        assert json.loads(alarms[silent]["StateReasonData"])["recentDatapoints"] == []
        assert {a["StateValue"] for a in states(cloudwatch, conditions).values()} <= {
            "OK",
            "INSUFFICIENT_DATA",
        }

        # WHEN ticks publish a fleet whose worst queue breaches every condition
        document = publish(cloudwatch, sink, BREACHING, capsys, log_group)
        assert document["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["Stack"]]
        assert sorted(declared(document)) == sorted(BREACHING)
        wanted = {**dict.fromkeys(conditions, "ALARM"), silent: "OK"}
        alarms = wait_for(
            cloudwatch,
            wanted,
            ALARM_DEADLINE * 2,
            lambda: publish(cloudwatch, sink, BREACHING, capsys, log_group),
        )
        # THEN each condition alarm fires on the published value, and the line's log event ends
        # the silence
        for name in conditions:
            alarm = alarms[name]
            points = json.loads(alarm["StateReasonData"])["recentDatapoints"]
            if alarm["Statistic"] == "Maximum":
                assert set(points) == {BREACHING[alarm["MetricName"]]}, name
            else:  # QueueErrors, a Sum of the minute's ticks
                assert all(point >= BREACHING[alarm["MetricName"]] for point in points), name

        # WHEN ticks publish a healthy fleet and an idle one (every value 0): no metric, only
        # their lines' log events
        assert declared(publish(cloudwatch, sink, HEALTHY, capsys, log_group)) == []
        # THEN every alarm is OK once the breach has aged out (the conditions on no datapoint
        # at all): an idle tick still beats
        wait_for(
            cloudwatch,
            dict.fromkeys(names.values(), "OK"),
            OK_DEADLINE,
            lambda: (
                publish(cloudwatch, sink, HEALTHY, capsys, log_group),
                publish(cloudwatch, sink, IDLE, capsys, log_group),
            ),
        )
    finally:
        cloudwatch.delete_alarms(AlarmNames=list(names.values()))


@pytest.mark.xdist_group("config-alarm")  # its own group: runs beside the queue alarms' test
def test_config_errors_alarm_fires_and_clears_from_the_loaders_metric(
    endpoint: Any, clients: Any, suffix: str, function_environ: Any, capsys: Any
) -> None:
    if endpoint.embedded:
        pytest.skip("the embedded moto server stores alarms but never evaluates them")
    queue, stack = f"orders-{suffix}", f"qa-config-{suffix}"
    parameter = f"/{stack}/queues-config"
    # GIVEN the evaluate function's environment and the template's config-errors alarm, its
    # ConfigParameter dimension naming the store's parameter
    function_environ("EvaluateFunction")
    parameters = one_queue_parameters(queue)
    translated = translate(load_template(), parameters)
    properties = dict(translated["Resources"]["ConfigErrorsAlarm"]["Properties"])
    properties["Dimensions"] = [{"Name": "ConfigParameter", "Value": parameter}]
    resolver = Resolver(session(endpoint.url, REGION), translated, parameters, {}, stack, REGION)
    cloudwatch = clients.cloudwatch
    # WHEN the loader counts a rejected document through its own EMF path
    capsys.readouterr()
    emf_config_metrics(parameter, {"ConfigErrors": 1.0})
    (document,) = emf_documents(capsys.readouterr().out)
    assert document["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["ConfigParameter"]]
    assert put_emf(cloudwatch, document) == 1
    name = create_direct(
        session(endpoint.url, REGION), "AWS::CloudWatch::Alarm", resolver.resolve(properties)
    )
    try:
        # THEN the alarm fires on that datapoint
        (alarm,) = wait_for(cloudwatch, {name: "ALARM"}, ALARM_DEADLINE).values()
        assert json.loads(alarm["StateReasonData"])["recentDatapoints"] == [1.0]
        # AND clears once no error is counted (missing data does not breach)
        wait_for(cloudwatch, {name: "OK"}, OK_DEADLINE)
    finally:
        cloudwatch.delete_alarms(AlarmNames=[name])
