"""What both handlers share (defined in `queue_autoscale.telemetry`, which the controller uses)."""

from queue_autoscale.telemetry import Clock, MetricsSink, emf_metrics, metric_unit

__all__ = ["Clock", "MetricsSink", "emf_metrics", "metric_unit"]
