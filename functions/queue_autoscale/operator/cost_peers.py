"""What the peers' own machinery costs a month for the same fleet: target tracking (AWS's SQS
backlog-per-task recipe) and KEDA's aws-sqs-queue scaler, at the pinned prices."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from queue_autoscale.operator.cost_inputs import (
    MINUTES_PER_MONTH,
    SECONDS_PER_MONTH,
)
from queue_autoscale.operator.prices import Prices, metrics_month_usd


@dataclass(frozen=True, slots=True)
class PeerCost:
    """A peer autoscaler's marginal monthly cost for a fleet of `queues` services (USD)."""

    name: str
    usd: float
    what: str


def peer_costs(queues: int, prices: Prices) -> list[PeerCost]:
    """Target tracking (AWS's SQS backlog-per-task recipe) and KEDA's aws-sqs-queue scaler."""
    tracking = (
        queues * 2 * prices.alarm_metric_month
        + metrics_month_usd(queues, prices)
        + queues * MINUTES_PER_MONTH / 1000 * prices.put_metric_data_per_thousand
    )
    keda_polls = queues * SECONDS_PER_MONTH / KEDA_POLLING_SECONDS
    return [
        PeerCost(
            "target tracking",
            tracking,
            "2 alarms per service (scale out, scale in), the backlog-per-task custom metric, "
            "its PutMetricData once a minute ($0.01 per 1,000); the publisher's compute is not "
            "counted",
        ),
        PeerCost(
            "KEDA",
            keda_polls / 1e6 * prices.sqs_per_million_requests,
            f"GetQueueAttributes every {KEDA_POLLING_SECONDS} s per ScaledObject; the KEDA "
            "operator runs in a Kubernetes cluster the team already pays for",
        ),
    ]


KEDA_POLLING_SECONDS: Final = 30
"""KEDA's default pollingInterval."""
