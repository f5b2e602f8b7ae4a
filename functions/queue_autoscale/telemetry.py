"""Telemetry the handlers and the controller share: Powertools logger, tracer and metrics per
queue, and a clock type."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.metrics import EphemeralMetrics

from queue_autoscale.constants import (
    CONFIG_DIMENSION,
    CONFIG_METRICS,
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


MetricsSink = Callable[[str, Mapping[str, float]], None]
"""Publishes one queue's metrics: (queue, {metric name: value}); units come from constants.py."""


def metric_unit(name: str) -> str:
    """The CloudWatch unit of a project metric."""
    units = {**QUEUE_METRICS, **INGEST_METRICS, **CONFIG_METRICS}
    if name not in units:
        raise KeyError(f"metric {name!r} is not declared in constants.py")
    return units[name]


def emf_metrics(queue: str, values: Mapping[str, float]) -> None:
    """Print one EMF document (Powertools) holding `values` with dimension Queue=queue.

    Lambda ships stdout to CloudWatch Logs, which turns EMF into metrics: no API call, no
    latency, no failure mode inside the handler. The dimensions are exactly [Queue], what
    template.yaml's alarms and dashboard query; LOGGED_ONLY_METRICS, and
    SILENT_WHEN_ZERO_METRICS when 0, are plain fields of the same line, not extracted into
    metrics (nothing is printed when no value would be a metric). `service=""` stops
    Powertools from adding a `service` dimension taken from POWERTOOLS_SERVICE_NAME (which the
    functions set for logs and traces).
    """
    _emf(METRIC_DIMENSION, queue, values)


def emf_config_metrics(source: str, values: Mapping[str, float]) -> None:
    """Like `emf_metrics`, for the config loader: dimension ConfigParameter=source only (the
    store's parameter name), what the stack's config-errors alarm queries."""
    _emf(CONFIG_DIMENSION, source, values)


def _emf(dimension: str, value: str, values: Mapping[str, float]) -> None:
    if not values:
        return
    namespace = os.environ.get("POWERTOOLS_METRICS_NAMESPACE") or METRIC_NAMESPACE
    metrics = EphemeralMetrics(namespace=namespace, service="")
    metrics.add_dimension(name=dimension, value=value)
    extracted = 0
    for name, number in values.items():
        unit = metric_unit(name)  # an undeclared name fails here, extracted or not
        if name in LOGGED_ONLY_METRICS or (number == 0 and name in SILENT_WHEN_ZERO_METRICS):
            metrics.add_metadata(key=name, value=float(number))
        else:
            metrics.add_metric(name=name, unit=unit, value=float(number))
            extracted += 1
    if extracted:
        metrics.flush_metrics()
