"""The pinned AWS price table `queue-autoscale cost` bills with: us-east-1 list prices, no free
tier (a busy account has spent it). Never fetched at run time: a price changes here, in a
commit, with its date."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

PRICED_ON: Final = "2026-11-28"
"""When these values were transcribed from the pages below."""
SOURCES: Final[tuple[str, ...]] = (
    "https://aws.amazon.com/lambda/pricing/",
    "https://aws.amazon.com/cloudwatch/pricing/",
    "https://aws.amazon.com/dynamodb/pricing/on-demand/",
    "https://aws.amazon.com/s3/pricing/",
    "https://aws.amazon.com/sqs/pricing/",
    "https://aws.amazon.com/eventbridge/pricing/",
    "https://aws.amazon.com/glue/pricing/",
    "https://aws.amazon.com/xray/pricing/",
    "https://aws.amazon.com/fargate/pricing/",
)
"""AWS's public price pages (us-east-1 selected), the source of every value in US_EAST_1."""


@dataclass(frozen=True, slots=True)
class MetricTier:
    """Custom metrics up to `up_to` (None: no limit) cost `usd` per metric-month."""

    up_to: int | None
    usd: float


@dataclass(frozen=True, slots=True)
class Prices:
    """USD list prices of one region. Units are in each field's name."""

    region: str
    lambda_x86_gb_second: float
    lambda_arm_gb_second: float
    lambda_per_million_requests: float
    scheduler_per_million_invocations: float
    eventbridge_per_million_events: float
    """PutEvents, custom events; each 64 KB of an entry is one event."""
    sqs_per_million_requests: float
    """Standard queues; each 64 KB of a request's payload is one request."""
    dynamodb_per_million_write_units: float
    dynamodb_per_million_read_units: float
    dynamodb_gb_month: float
    dynamodb_pitr_gb_month: float
    s3_gb_month: float
    s3_per_thousand_puts: float
    s3_per_thousand_gets: float
    metric_tiers: tuple[MetricTier, ...]
    alarm_metric_month: float
    """A standard-resolution alarm, per metric it evaluates."""
    dashboard_month: float
    logs_ingest_gb: float
    logs_gb_month: float
    get_metric_data_per_thousand_metrics: float
    put_metric_data_per_thousand: float
    xray_per_million_traces: float
    glue_dpu_hour: float
    glue_flex_dpu_hour: float
    glue_minimum_seconds: float
    """Glue 2.0 and later bill a job run for at least this long."""
    fargate_vcpu_hour: float
    fargate_gb_hour: float


US_EAST_1: Final = Prices(
    region="us-east-1",
    lambda_x86_gb_second=0.0000166667,
    lambda_arm_gb_second=0.0000133334,
    lambda_per_million_requests=0.20,
    scheduler_per_million_invocations=1.00,
    eventbridge_per_million_events=1.00,
    sqs_per_million_requests=0.40,
    dynamodb_per_million_write_units=0.625,
    dynamodb_per_million_read_units=0.125,
    dynamodb_gb_month=0.25,
    dynamodb_pitr_gb_month=0.20,
    s3_gb_month=0.023,
    s3_per_thousand_puts=0.005,
    s3_per_thousand_gets=0.0004,
    metric_tiers=(
        MetricTier(10_000, 0.30),
        MetricTier(250_000, 0.10),
        MetricTier(1_000_000, 0.05),
        MetricTier(None, 0.02),
    ),
    alarm_metric_month=0.10,
    dashboard_month=3.00,
    logs_ingest_gb=0.50,
    logs_gb_month=0.03,
    get_metric_data_per_thousand_metrics=0.01,
    put_metric_data_per_thousand=0.01,
    xray_per_million_traces=5.00,
    glue_dpu_hour=0.44,
    glue_flex_dpu_hour=0.29,
    glue_minimum_seconds=60.0,
    fargate_vcpu_hour=0.04048,
    fargate_gb_hour=0.004445,
)


def metrics_month_usd(metrics: float, prices: Prices) -> float:
    """The monthly charge of `metrics` custom metrics at the tiered price (USD)."""
    total, floor = 0.0, 0
    for tier in prices.metric_tiers:
        top = metrics if tier.up_to is None else min(metrics, tier.up_to)
        if top > floor:
            total += (top - floor) * tier.usd
        if tier.up_to is None or metrics <= tier.up_to:
            break
        floor = tier.up_to
    return total
