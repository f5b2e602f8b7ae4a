"""What template.yaml deploys, read for `queue-autoscale cost`: memory and architecture of the
functions, the record batch size, the alarms per queue and fleet-wide, dashboards, the daily
Glue runs, tracing, the metrics the code publishes. Read from the template, never restated."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from queue_autoscale.constants import (
    CONFIG_METRICS,
    FLEET_METRICS,
    FLEET_SILENT_BELOW_THRESHOLD,
    FLEET_SILENT_WHEN_ZERO,
    LOGGED_ONLY_METRICS,
    QUEUE_METRICS,
    SILENT_WHEN_ZERO_METRICS,
)
from queue_autoscale.demo.template import translate
from queue_autoscale.operator.cost_inputs import (
    FunctionShape,
    StackShape,
    StreamBuffer,
)

CLOUDFORMATION_MAX_RESOURCES = 500
"""Resources one CloudFormation stack may hold (AWS CloudFormation quotas)."""
GLUE_DPU_PER_WORKER = {"G.025X": 0.25, "G.1X": 1.0, "G.2X": 2.0, "G.4X": 4.0, "G.8X": 8.0}
"""DPUs a Glue worker type bills (AWS Glue pricing)."""


def _value(template: Mapping[str, Any], value: Any, overrides: Mapping[str, Any]) -> Any:
    """A property's value, with `{"Ref": Parameter}` resolved to the override or default."""
    if isinstance(value, Mapping) and set(value) == {"Ref"}:
        name = value["Ref"]
        if name in overrides:
            return overrides[name]
        return template["Parameters"][name]["Default"]
    return value


def _deployed(template: Mapping[str, Any], resource: Mapping[str, Any], overrides: Any) -> bool:
    """Whether a resource is deployed: no Condition, or a Condition of the form
    `!Equals [!Ref Parameter, value]` that holds (any other form is counted as deployed)."""
    name = resource.get("Condition")
    if name is None:
        return True
    condition = template.get("Conditions", {}).get(name, {})
    equals = condition.get("Fn::Equals") if isinstance(condition, Mapping) else None
    if not (isinstance(equals, list) and len(equals) == 2):
        return True
    left, right = (str(_value(template, side, overrides)) for side in equals)
    return left == right


def _function(
    template: Mapping[str, Any], logical_id: str, overrides: Mapping[str, Any]
) -> FunctionShape:
    globals_ = template.get("Globals", {}).get("Function", {})
    properties = {**globals_, **template["Resources"][logical_id]["Properties"]}
    architectures = _value(template, properties.get("Architectures", ["x86_64"]), overrides)
    memory = int(_value(template, properties.get("MemorySize", 128), overrides))
    tracing = _value(template, properties.get("Tracing", "PassThrough"), overrides) == "Active"
    logging_config = properties.get("LoggingConfig", {})
    system_level = _value(template, logging_config.get("SystemLogLevel", "INFO"), overrides)
    return FunctionShape(
        memory_mb=memory,
        arm64=list(architectures) == ["arm64"],
        tracing=tracing,
        platform_lines=system_level != "WARN",
    )


def _alarm_metrics(properties: Mapping[str, Any]) -> int:
    """Metrics one alarm evaluates (billed per metric): 1, or the MetricStat queries of its
    metric-math expression."""
    metrics = properties.get("Metrics")
    if not metrics:
        return 1
    return sum(1 for query in metrics if "MetricStat" in query) or 1


def _per_queue_alarms(resources: Mapping[str, Any]) -> int:
    total = 0
    for key, value in resources.items():
        if key.startswith("Fn::ForEach::"):
            body = value[2]
            total += sum(
                _alarm_metrics(item.get("Properties", {}))
                for item in body.values()
                if item.get("Type") == "AWS::CloudWatch::Alarm"
            )
    return total


def _stream(resources: Mapping[str, Any], logical_id: str) -> StreamBuffer | None:
    """A delivery stream's buffer (None: the template has no such stream)."""
    stream = resources.get(logical_id)
    if stream is None:
        return None
    hints = stream["Properties"]["ExtendedS3DestinationConfiguration"]["BufferingHints"]
    return StreamBuffer(float(hints["IntervalInSeconds"]), float(hints["SizeInMBs"]))


def _threshold_metrics(template: Mapping[str, Any], overrides: Mapping[str, Any]) -> frozenset[str]:
    """FLEET_SILENT_BELOW_THRESHOLD's metrics the evaluate function sends only at their alarms'
    threshold: each all of whose threshold parameters the template passes it, when no dashboard
    is deployed (a template from before passes none: sent every tick)."""
    dashboard = template["Resources"].get("Dashboard")
    if dashboard is not None and _deployed(template, dashboard, overrides):
        return frozenset()
    variables = template["Resources"]["EvaluateFunction"]["Properties"].get("Environment", {})
    passed = {json.dumps(v) for v in variables.get("Variables", {}).values()}
    return frozenset(
        metric
        for metric, parameters in FLEET_SILENT_BELOW_THRESHOLD.items()
        if all(json.dumps({"Ref": parameter}) in passed for parameter in parameters)
    )


def shape(template: Mapping[str, Any], overrides: Mapping[str, Any] | None = None) -> StackShape:
    """The StackShape of a loaded template (`demo.template.load_template`); `overrides` maps
    parameter names to values other than their defaults."""
    given = dict(overrides or {})
    # a template without the parameter (before it existed) extracted every per-queue value
    per_queue = "PerQueueMetrics" not in template["Parameters"] or (
        str(_value(template, {"Ref": "PerQueueMetrics"}, given)) == "true"
    )
    resources = template["Resources"]
    plain = {key: value for key, value in resources.items() if not key.startswith("Fn::")}
    fleet_alarms = sum(
        _alarm_metrics(value.get("Properties", {}))
        for value in plain.values()
        if value.get("Type") == "AWS::CloudWatch::Alarm"
    )
    jobs = [
        value["Properties"] for value in plain.values() if value.get("Type") == "AWS::Glue::Job"
    ]
    record = resources["RecordEventsFunction"]["Properties"]
    source = record["Events"]["Events"]["Properties"]
    threshold = _threshold_metrics(template, given)
    return StackShape(
        evaluate=_function(template, "EvaluateFunction", given),
        record=_function(template, "RecordEventsFunction", given),
        record_batch_messages=int(source.get("BatchSize", 10)),
        record_window_seconds=float(source.get("MaximumBatchingWindowInSeconds", 0)),
        max_evaluate_shards=int(_value(template, {"Ref": "MaxEvaluateShards"}, given)),
        alarms_per_queue=_per_queue_alarms(resources),
        fleet_alarm_metrics=fleet_alarms,
        dashboards=sum(
            1
            for value in plain.values()
            if value.get("Type") == "AWS::CloudWatch::Dashboard"
            and _deployed(template, value, given)
        ),
        glue_dpus_per_day=sum(
            int(job["NumberOfWorkers"]) * GLUE_DPU_PER_WORKER[job["WorkerType"]] for job in jobs
        ),
        glue_runs_per_day=len(jobs),
        glue_flex=bool(jobs) and all(job.get("ExecutionClass") == "FLEX" for job in jobs),
        queue_metrics=len(set(QUEUE_METRICS) - LOGGED_ONLY_METRICS) if per_queue else 0,
        fleet_metrics=len(CONFIG_METRICS) + len(FLEET_METRICS),
        idle_silent_metrics=len(SILENT_WHEN_ZERO_METRICS - LOGGED_ONLY_METRICS) if per_queue else 0,
        healthy_silent_metrics=len(SILENT_WHEN_ZERO_METRICS & {"ControllerErrors"})
        if per_queue
        else 0,
        ingest_metrics_per_queue=1 if per_queue else 0,
        # the config loader publishes ConfigErrors only for a rejected or unreadable config
        # (controller/config_loader.py): a healthy stack never sends it
        fleet_silent_metrics=len(FLEET_SILENT_WHEN_ZERO | threshold) + len(CONFIG_METRICS),
        fleet_healthy_silent_metrics=len(
            FLEET_SILENT_WHEN_ZERO & {"QueueErrors", "UndecidedQueues"}
        )
        + len(CONFIG_METRICS),
        fleet_threshold_metrics=threshold,
        events_stream=_stream(resources, "EventsDeliveryStream"),
        decisions_stream=_stream(resources, "DecisionsDeliveryStream"),
        evaluate_per_tick="EvaluateTickMode" in template["Parameters"]
        and _value(template, {"Ref": "EvaluateTickMode"}, given) == "tick",
        jump_ticks="JumpTicks" in template["Parameters"]
        and _value(template, {"Ref": "JumpTicks"}, given) == "true",
    )


# sam-translator's own usage metrics are never published here; it warns at exit that they
# were not, which is noise on the command's output.
logging.getLogger("samtranslator.metrics.metrics").setLevel(logging.ERROR)


def queue_parameters(count: int) -> dict[str, Any]:
    """Every parameter that names queues, for `count` queues of one cluster: the config
    document and the listed scope's ARN lists (what `deploy` derives, in its longest form)."""
    names = [f"q{index}" for index in range(count)]
    return {
        "QueuesConfig": json.dumps([{"queue": name, "cluster": "c"} for name in names]),
        "QueueArns": [f"arn:aws:sqs:us-east-1:123456789012:{name}" for name in names],
        "ServiceArns": [f"arn:aws:ecs:us-east-1:123456789012:service/c/{name}" for name in names],
        "EcsClusterName": "c",
    }


def resource_count(template: Mapping[str, Any], parameters: Mapping[str, Any]) -> int:
    """Resources of the template translated as `sam deploy` would, for these parameters."""
    return len(translate(template, parameters)["Resources"])


def stack_capacity(template: Mapping[str, Any]) -> tuple[int, int, int | None]:
    """(resources with one queue, resources each further queue adds, most queues one stack
    holds, None when no resource grows with the queues): the template translated with one and
    with two queues."""
    one = resource_count(template, queue_parameters(1))
    per_queue = resource_count(template, queue_parameters(2)) - one
    if per_queue <= 0:
        return one, 0, None
    return one, per_queue, (CLOUDFORMATION_MAX_RESOURCES - (one - per_queue)) // per_queue
