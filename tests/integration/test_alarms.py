"""template.yaml's per-queue alarms fire and clear on an endpoint that evaluates alarms.

LocalStack evaluates plain metric alarms (metric name + dimensions) on a schedule; moto
stores alarms but never evaluates them, so this test skips on the embedded server.

The metrics come from the project's own publishing path: `emf_metrics` prints EMF under
the evaluate function's environment from template.yaml. On AWS, CloudWatch Logs turns
those lines into metrics; here `put_emf` does the equivalent PutMetricData, datum for
datum (namespace, dimensions, names, units and timestamp as the document declares them).
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any

import pytest

from infra.template import load_template, translate
from queue_autoscale.constants import METRIC_NAMESPACE, SILENT_WHEN_ZERO_METRICS
from queue_autoscale.demo.direct import create_direct
from queue_autoscale.demo.emulator import session
from queue_autoscale.demo.intrinsics import Resolver
from queue_autoscale.telemetry import emf_config_metrics, emf_metrics
from tests.integration.conftest import REGION, emf_documents

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("alarms")]

ALARM_DEADLINE = 120.0
"""Seconds to wait for ALARM: the alarms are evaluated when created, then every minute."""
OK_DEADLINE = 360.0
"""Seconds to wait for OK: LocalStack counts a datapoint for EvaluationPeriods + 2 periods
(3 minutes here), then re-evaluates once a minute."""

BREACHING = {"LoadRatio": 1.25, "SlaUsage": 1.5, "FleetUsage": 0.9, "ControllerErrors": 0.0}
"""Over every queue alarm's threshold (ControllerErrors 0: not extracted, a plain field of the
line, so that alarm sees no data at all and must stay OK)."""
HEALTHY = {
    "LoadRatio": 0.3,
    "SlaUsage": 0.2,
    "FleetUsage": 0.4,
    "ControllerErrors": 0.0,
    "TargetWorkers": 3.0,
}
"""Under every threshold, and a decision (TargetWorkers) that ends the silence."""


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


def publish(
    cloudwatch: Any, queue: str, values: dict[str, float], capsys: Any
) -> list[dict[str, Any]]:
    """Publish through emf_metrics and deliver its EMF; the documents it printed."""
    capsys.readouterr()
    emf_metrics(queue, values)
    documents = emf_documents(capsys.readouterr().out)
    assert documents, "emf_metrics printed no EMF document"
    # a 0 of SILENT_WHEN_ZERO_METRICS stays a plain field of the line: not a datum
    metrics = [k for k, v in values.items() if not (v == 0 and k in SILENT_WHEN_ZERO_METRICS)]
    for document in documents:
        assert put_emf(cloudwatch, document) == len(metrics)
    return documents


def wait_for(cloudwatch: Any, names: list[str], state: str, deadline: float) -> dict[str, Any]:
    """Poll until every alarm is in `state`; the alarms as described then."""
    end = time.monotonic() + deadline
    while True:
        alarms = {
            alarm["AlarmName"]: alarm
            for alarm in cloudwatch.describe_alarms(AlarmNames=names)["MetricAlarms"]
        }
        states = {name: alarms[name]["StateValue"] for name in names}
        if all(value == state for value in states.values()):
            return alarms
        if time.monotonic() > end:
            pytest.fail(f"not all {state} after {deadline:.0f} s: {states}")
        time.sleep(5)


def one_queue_parameters(queue: str, **extra: str) -> dict[str, str]:
    """The template's parameters for a stack serving `queue` alone, plus `extra`."""
    return {
        "QueuesConfig": json.dumps({"queue": queue}),
        "QueueNames": queue,
        "QueueArns": f"arn:aws:sqs:{REGION}:000000000000:{queue}",
        "ServiceArns": f"arn:aws:ecs:{REGION}:000000000000:service/c/{queue}",
        "EcsClusterName": "c",
        **extra,
    }


def test_queue_alarms_fire_and_clear_from_published_metrics(
    endpoint: Any, clients: Any, suffix: str, function_environ: Any, capsys: Any
) -> None:
    if endpoint.embedded:
        pytest.skip("the embedded moto server stores alarms but never evaluates them")
    queue, stack = f"orders-{suffix}", f"qa-alarms-{suffix}"
    # GIVEN the evaluate function's environment from template.yaml (service name included)
    function_environ("EvaluateFunction")
    # AND the template's alarms for one queue, one-minute windows so the test is short
    parameters = one_queue_parameters(queue, AlarmEvaluationMinutes="1", SilentAlarmMinutes="1")
    translated = translate(load_template(), parameters)
    queue_alarms = {
        logical_id: resource["Properties"]
        for logical_id, resource in translated["Resources"].items()
        if resource["Type"] == "AWS::CloudWatch::Alarm"
        and resource["Properties"].get("Namespace") == METRIC_NAMESPACE
        and any(d["Name"] == "Queue" for d in resource["Properties"].get("Dimensions", []))
    }
    assert len(queue_alarms) == 6
    resolver = Resolver(session(endpoint.url, REGION), translated, parameters, {}, stack, REGION)
    cloudwatch = clients.cloudwatch
    # WHEN the controller publishes an overloaded, breaching, nearly full queue, and no
    # decision yet (TargetWorkers absent), and the alarms are created
    (document,) = publish(cloudwatch, queue, BREACHING, capsys)
    assert document["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["Queue"]]
    names = {}
    for logical_id, properties in queue_alarms.items():
        resolved = resolver.resolve(properties)
        names[logical_id] = create_direct(
            session(endpoint.url, REGION), "AWS::CloudWatch::Alarm", resolved
        )
    try:
        firing = [names[k] for k in names if not k.startswith("ControllerErrors")]
        # THEN overloading, overloaded, sla-breach, fleet-near-max and controller-silent fire
        alarms = wait_for(cloudwatch, firing, "ALARM", ALARM_DEADLINE)
        for name, alarm in alarms.items():
            reason = json.loads(alarm["StateReasonData"])
            if alarm["MetricName"] in BREACHING:
                assert reason["recentDatapoints"] == [BREACHING[alarm["MetricName"]]], name
            else:  # controller-silent: no decision at all, missing data breaches
                assert (alarm["MetricName"], reason["recentDatapoints"]) == ("TargetWorkers", [])
        # AND controller-errors, whose 0 was not published as a metric, does not
        quiet = [n for k, n in names.items() if k.startswith("ControllerErrors")]
        states = cloudwatch.describe_alarms(AlarmNames=quiet)["MetricAlarms"]
        assert [alarm["StateValue"] for alarm in states] == ["OK"]

        # WHEN healthy values and a decision are published
        publish(cloudwatch, queue, HEALTHY, capsys)
        # THEN controller-silent clears first, and every alarm is OK once the breach ages out
        silent = [n for k, n in names.items() if k.startswith("ControllerSilent")]
        wait_for(cloudwatch, silent, "OK", ALARM_DEADLINE)
        wait_for(cloudwatch, list(names.values()), "OK", OK_DEADLINE)
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
        (alarm,) = wait_for(cloudwatch, [name], "ALARM", ALARM_DEADLINE).values()
        assert json.loads(alarm["StateReasonData"])["recentDatapoints"] == [1.0]
        # AND clears once no error is counted (missing data does not breach)
        wait_for(cloudwatch, [name], "OK", OK_DEADLINE)
    finally:
        cloudwatch.delete_alarms(AlarmNames=[name])
