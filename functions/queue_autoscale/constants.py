"""Names shared by the code that publishes metrics and events and by template.yaml's alarms."""

from __future__ import annotations

from typing import Final

METRIC_NAMESPACE: Final = "QueueAutoscale"
METRIC_DIMENSION: Final = "Queue"

# Per-queue metrics the evaluate function logs (field Queue), with their CloudWatch units. They are
# fields of a log line, not CloudWatch metrics, unless the stack's PerQueueMetrics is "true"
# (environment PER_QUEUE_METRICS): then CloudWatch extracts them with dimension Queue.
QUEUE_METRICS: Final[dict[str, str]] = {
    "LoadRatio": "None",
    "ArrivalRate": "Count/Second",
    "ServiceRate": "Count/Second",
    "BacklogPerInstance": "Count",
    "OldestJobAgeSeconds": "Seconds",
    "SlaUsage": "None",
    "PredictedPickupSeconds": "Seconds",
    "CurrentWorkers": "Count",
    "TargetWorkers": "Count",
    "FleetUsage": "None",
    "ControllerErrors": "Count",
    "RealizedCompliance": "None",
}
# Of QUEUE_METRICS, the ones no dashboard widget or target tracking policy reads: they stay in
# the same EMF log line as plain fields (Logs Insights and the decision log have them) and
# CloudWatch never extracts them into metrics, which are billed per metric-month.
LOGGED_ONLY_METRICS: Final[frozenset[str]] = frozenset({"RealizedCompliance"})
# Of QUEUE_METRICS, the ones every reader takes a missing value as 0: nonnegative, alarmed
# only with Maximum or Sum at a threshold above 0 and missing data not breaching, charted only
# as MAX or SUM (a template test checks this). When 0 they stay plain fields of the EMF line,
# not metrics: an idle queue publishes only TargetWorkers, ArrivalRate and ServiceRate (charted
# as AVG, where a missing 0 would count).
SILENT_WHEN_ZERO_METRICS: Final[frozenset[str]] = frozenset(
    {
        "LoadRatio",
        "BacklogPerInstance",
        "OldestJobAgeSeconds",
        "SlaUsage",
        "PredictedPickupSeconds",
        "CurrentWorkers",
        "FleetUsage",
        "ControllerErrors",
    }
)
# What every shard tick publishes for the queues it ticked (dimension Stack: the stack's name),
# with their units: the stack's alarms read these, one alarm per condition whatever the queue
# count. The decision log and `queue-autoscale status` name the queues in each condition.
FLEET_METRICS: Final[dict[str, str]] = {
    "MaxLoadRatio": "None",  # the highest LoadRatio (0 when none decided)
    "MaxSlaUsage": "None",  # the highest SlaUsage
    "MaxFleetUsage": "None",  # the highest FleetUsage (running / max_workers)
    "QueueErrors": "Count",  # the sum of the queues' ControllerErrors
    "UndecidedQueues": "Count",  # configured queues of the shard that got no decision
}
FLEET_DIMENSION: Final = "Stack"
# Of FLEET_METRICS, the ones every reader takes a missing value as 0 (as SILENT_WHEN_ZERO_METRICS):
# all but MaxLoadRatio, whose sample count is the dashboard's "ticks" chart.
FLEET_SILENT_WHEN_ZERO: Final[frozenset[str]] = frozenset(FLEET_METRICS) - {"MaxLoadRatio"}
# Of FLEET_METRICS, the ones only alarms read when the dashboard is off, each alarm Maximum over
# 60 s >= the named template parameter with missing data not breaching: below the lowest of those
# thresholds a missing datapoint and a datapoint count alike, so without the dashboard they stay
# plain fields of the tick's fleet line below it (`controller.runtime.fleet_floors`). The line
# itself is printed every tick: the controller-silent alarm counts the evaluate function's log
# events (AWS/Logs IncomingLogEvents, free), not a metric of ours.
FLEET_SILENT_BELOW_THRESHOLD: Final[dict[str, tuple[str, ...]]] = {
    "MaxLoadRatio": ("OverloadingThreshold", "OverloadedThreshold"),
    "MaxSlaUsage": ("SlaUsageThreshold",),
    "MaxFleetUsage": ("FleetUsageThreshold",),
}
# Published by record_events (field Queue, a metric only with PerQueueMetrics; the queue is
# "unknown" when it could not be read).
INGEST_METRICS: Final[dict[str, str]] = {"RejectedEvents": "Count", "AcceptedEvents": "Count"}
# Published by both functions' config loader (dimension ConfigParameter: the store's SSM
# parameter name, or "$QUEUES_CONFIG"): a store that cannot be read or a document rejected.
CONFIG_METRICS: Final[dict[str, str]] = {"ConfigErrors": "Count"}
CONFIG_DIMENSION: Final = "ConfigParameter"

EVENT_SOURCE: Final = "queue-autoscale"
DECISION_EVENT: Final = "ScalingDecisionMade"
SCALED_EVENT: Final = "WorkersScaled"
BREACH_EVENT: Final = "SlaBreachPredicted"
