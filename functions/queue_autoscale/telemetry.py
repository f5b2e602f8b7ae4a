"""Telemetry the handlers and the controller share: Powertools logger, tracer, the per-queue
log line (CloudWatch metrics only with PerQueueMetrics), the fleet metrics, and a clock type."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.metrics import EphemeralMetrics

from queue_autoscale.constants import (
    CONFIG_DIMENSION,
    CONFIG_METRICS,
    FLEET_DIMENSION,
    FLEET_METRICS,
    FLEET_SILENT_WHEN_ZERO,
    INGEST_METRICS,
    LOGGED_ONLY_METRICS,
    METRIC_DIMENSION,
    METRIC_NAMESPACE,
    QUEUE_METRICS,
    SILENT_WHEN_ZERO_METRICS,
)

SERVICE = os.environ.get("POWERTOOLS_SERVICE_NAME") or "queue-autoscale"
logger = Logger(service=SERVICE)
"""The controller's structured logger (the evaluate handler injects the Lambda context)."""
tracer = Tracer(service=SERVICE)

Clock = Callable[[], float]
"""Returns epoch seconds."""


Floors = Mapping[str, float]
"""Metric name -> the value below which it stays a plain field of the EMF line, not a metric
(0.0: only a 0 does). Only for a metric every reader of which takes a missing value as one
below its floor (constants.py: SILENT_WHEN_ZERO_METRICS, FLEET_SILENT_BELOW_THRESHOLD)."""
QUEUE_FLOORS: Floors = dict.fromkeys(SILENT_WHEN_ZERO_METRICS, 0.0)
FLEET_ZERO_FLOORS: Floors = dict.fromkeys(FLEET_SILENT_WHEN_ZERO, 0.0)
"""The fleet metrics' floors whatever the stack's settings: FLEET_SILENT_WHEN_ZERO at 0."""

MetricsSink = Callable[[str, Mapping[str, float]], None]
"""Publishes one queue's metrics: (queue, {metric name: value}); units come from constants.py."""
FleetSink = Callable[[Mapping[str, float]], None]
"""Publishes one tick's fleet metrics ({FLEET_METRICS name: value})."""

PER_QUEUE_METRICS_ENV = "PER_QUEUE_METRICS"
""""true": CloudWatch extracts the per-queue values into metrics (template: PerQueueMetrics)."""
STACK_NAME_ENV = "STACK_NAME"
"""The fleet metrics' Stack dimension (template: the stack's name)."""
DEFAULT_STACK_NAME = "queue-autoscale"


def per_queue_metrics() -> bool:
    """Whether per-queue values become CloudWatch metrics (only the exact word "true" says so)."""
    return os.environ.get(PER_QUEUE_METRICS_ENV, "").strip().lower() == "true"


def stack_name() -> str:
    """The fleet metrics' Stack dimension value."""
    return os.environ.get(STACK_NAME_ENV, "").strip() or DEFAULT_STACK_NAME


def metric_unit(name: str) -> str:
    """The CloudWatch unit of a project metric."""
    units = {**QUEUE_METRICS, **INGEST_METRICS, **CONFIG_METRICS, **FLEET_METRICS}
    if name not in units:
        raise KeyError(f"metric {name!r} is not declared in constants.py")
    return units[name]


def emf_metrics(queue: str, values: Mapping[str, float]) -> None:
    """Print one queue's values as one log line, with the field Queue=queue.

    Without PerQueueMetrics (the default) the line is plain JSON: Logs Insights and the
    dashboard's log widgets read its fields, and CloudWatch bills no metric for them. With it,
    the line is an EMF document (Powertools) and CloudWatch Logs extracts the values into
    metrics with exactly the dimension [Queue], what the dashboard's metric charts and a
    target tracking policy query: no API call, no failure mode inside the handler;
    LOGGED_ONLY_METRICS, and SILENT_WHEN_ZERO_METRICS when 0, stay plain fields of the line.
    """
    if not values:
        return
    for name in values:
        metric_unit(name)  # an undeclared name fails here, extracted or not
    if not per_queue_metrics():
        _plain(METRIC_DIMENSION, queue, values)
        return
    _emf(METRIC_DIMENSION, queue, values, QUEUE_FLOORS)


def emf_fleet_metrics(values: Mapping[str, float], floors: Floors = FLEET_ZERO_FLOORS) -> None:
    """Print one tick's FLEET_METRICS as one line with the field Stack=<stack name>: what the
    stack's alarms read, a handful of metrics whatever the queue count. A value below its floor
    (`floors`; the evaluate function's come from `controller.runtime.fleet_floors`) stays a
    plain field; with no metric left the line is plain JSON. The line is printed every tick:
    the controller-silent alarm counts the log group's events."""
    stack = stack_name()
    if not _emf(FLEET_DIMENSION, stack, values, floors):
        _plain(FLEET_DIMENSION, stack, values)


def emf_config_metrics(source: str, values: Mapping[str, float]) -> None:
    """Like `emf_metrics`, for the config loader: dimension ConfigParameter=source only (the
    store's parameter name), what the stack's config-errors alarm queries."""
    _emf(CONFIG_DIMENSION, source, values)


def below_floor(name: str, number: float, floors: Floors) -> bool:
    """Whether `name`'s value stays a plain field: it has a floor and is 0 or below it."""
    floor = floors.get(name)
    return floor is not None and (number == 0 or number < floor)


def _plain(dimension: str, value: str, values: Mapping[str, float]) -> None:
    """One plain JSON line: the field `dimension`=`value` and `values` as floats (no metric)."""
    print(json.dumps({dimension: value, **{k: float(v) for k, v in values.items()}}))


def _emf(
    dimension: str,
    value: str,
    values: Mapping[str, float],
    floors: Floors | None = None,
) -> bool:
    """One EMF document: `values` with one dimension. Logged-only names, and names below their
    floor (`below_floor`), are plain fields; nothing is printed (False) when no value would be
    a metric.
    `service=""` stops Powertools from adding a `service` dimension taken from
    POWERTOOLS_SERVICE_NAME (which the functions set for logs and traces)."""
    if not values:
        return False
    namespace = os.environ.get("POWERTOOLS_METRICS_NAMESPACE") or METRIC_NAMESPACE
    metrics = EphemeralMetrics(namespace=namespace, service="")
    metrics.add_dimension(name=dimension, value=value)
    extracted = 0
    for name, number in values.items():
        unit = metric_unit(name)  # an undeclared name fails here, extracted or not
        if name in LOGGED_ONLY_METRICS or below_floor(name, number, floors or {}):
            metrics.add_metadata(key=name, value=float(number))
        else:
            metrics.add_metric(name=name, unit=unit, value=float(number))
            extracted += 1
    if extracted:
        metrics.flush_metrics()
    return extracted > 0
