"""The pinned AWS price table `queue-autoscale cost` bills with: us-east-1 list prices, no free
tier (a busy account has spent it). Never fetched at run time: a price changes here, in a
commit, with its date."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

PRICED_ON: Final = "2026-12-02"
"""When the values below were last checked against the pages in PRICE_SOURCES."""
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
    "https://aws.amazon.com/firehose/pricing/",
)
"""AWS's public price pages (us-east-1 selected), where every value in US_EAST_1 is published.
Most of their rate tables are drawn by the browser, so the stored copies the values were checked
against (PRICE_SOURCES) are mostly other pages quoting them."""


@dataclass(frozen=True, slots=True)
class PriceSource:
    """A page that states a price, as read on `read_on` (a stored copy of the page)."""

    url: str
    says: str
    """What the page says, in its own figures."""
    dated: str
    """The page's own date ('undated' when it shows none)."""
    aws: bool = False
    """AWS's own page (or a copy of it); otherwise a page quoting AWS."""


READ_ON: Final = "2026-12-02"
"""When the pages below were read."""

_CLOUDBURN_SQS = "https://cloudburn.io/blog/amazon-sqs-pricing"
_CLOUDBURN_EVENTBRIDGE = "https://cloudburn.io/blog/amazon-eventbridge-pricing"
_FACTUALMINDS_CLOUDWATCH = (
    "https://www.factualminds.com/blog/amazon-cloudwatch-pricing-metrics-logs-alarms-dashboards/"
)
PRICE_SOURCES: Final[dict[str, tuple[PriceSource, ...]]] = {
    "lambda_x86_gb_second": (
        PriceSource(
            "https://cloudchipr.com/blog/aws-lambda-pricing",
            "x86 first 6 billion GB-s a month $0.0000166667 per GB-s (US East)",
            "2024",
        ),
    ),
    "lambda_arm_gb_second": (
        PriceSource(
            "https://cloudchipr.com/blog/aws-lambda-pricing",
            "Arm first 7.5 billion GB-s a month $0.0000133334 per GB-s (US East)",
            "2024",
        ),
        PriceSource(
            "https://app.unpkg.com/artillery@2.0.28/files/lib/platform/aws-lambda/prices.js",
            "base arm64 1333340 (GB-s price x 1e11), citing aws.amazon.com/lambda/pricing",
            "undated",
        ),
    ),
    "lambda_per_million_requests": (
        PriceSource(
            "https://gist.github.com/bluejack/68dd851e8ff1c480d623fc0b09e0423b",
            "Lambda $0.20 per 1M requests",
            "2019-12-27",
        ),
        PriceSource(
            "https://raw.githubusercontent.com/api-evangelist/aws-lambda/refs/heads/main/plans/"
            "aws-lambda-plans-pricing.yml",
            "'$0.20 per million requests', found verbatim on aws.amazon.com/lambda/pricing "
            "(the Managed Instances request charge)",
            "2026-09-20",
        ),
    ),
    "scheduler_per_million_invocations": (
        PriceSource(_CLOUDBURN_EVENTBRIDGE, "Scheduler $1.00 per million invocations", "2026-03"),
    ),
    "eventbridge_per_million_events": (
        PriceSource(_CLOUDBURN_EVENTBRIDGE, "custom events $1.00 per million", "2026-03"),
        PriceSource(
            "https://www.factualminds.com/blog/amazon-eventbridge-pricing-events-pipes-schema-archive/",
            "custom events $1 per million (us-east-1)",
            "2026-06",
        ),
    ),
    "sqs_per_million_requests": (
        PriceSource(
            _CLOUDBURN_SQS,
            "Standard $0.40/M for the first 100 billion requests a month ($0.30, $0.24 beyond)",
            "2026-03",
        ),
        PriceSource(
            "https://www.factualminds.com/blog/amazon-sqs-pricing-64kb-rule-fifo-vs-standard/",
            "$0.40 per million standard requests; each 64 KB chunk is a request",
            "2026-06-13",
        ),
    ),
    "dynamodb_per_million_write_units": (
        PriceSource(
            "https://airbyte.com/data-engineering-resources/dynamodb-pricing",
            "on-demand WRU $0.625 per million (US East), after the November 2024 cut",
            "2025-07-21",
        ),
    ),
    "dynamodb_per_million_read_units": (
        PriceSource(
            "https://airbyte.com/data-engineering-resources/dynamodb-pricing",
            "on-demand RRU $0.125 per million (US East), after the November 2024 cut",
            "2025-07-21",
        ),
    ),
    "dynamodb_gb_month": (
        PriceSource(
            "https://gist.github.com/bluejack/68dd851e8ff1c480d623fc0b09e0423b",
            "DynamoDB $0.25/GB (storage; the November 2024 cut was to throughput)",
            "2019-12-27",
        ),
    ),
    "dynamodb_pitr_gb_month": (),
    "s3_gb_month": (
        PriceSource(
            "https://deepeshsoni.com/archives/256",
            "S3 Standard around $0.023 per GB-month for the first 50 TB (US East)",
            "undated",
        ),
    ),
    "s3_per_thousand_puts": (
        PriceSource(
            "https://c3x.dev/blog/s3-request-fees-explained",
            "S3 Standard PUT, COPY, POST, LIST $0.005 per 1,000",
            "undated",
        ),
        PriceSource(
            "https://awsi.click/en/articles/s3-request-pricing-get-put-difference/",
            "PUT/COPY/POST/LIST $0.005 per 1,000 (us-east-1)",
            "undated",
        ),
    ),
    "s3_per_thousand_gets": (
        PriceSource(
            "https://c3x.dev/blog/s3-request-fees-explained",
            "S3 Standard GET, HEAD, SELECT $0.0004 per 1,000",
            "undated",
        ),
    ),
    "metric_tiers": (
        PriceSource(
            "https://signoz.io/guides/cloudwatch-pricing",
            "custom metrics $0.30 a month for the first 10,000 (the later tiers not quoted)",
            "2026-02-15",
        ),
        PriceSource(
            "https://cal53.calculator.city/cloudwatch-custom-metrics-calculator/",
            "$0.30 per metric-month for the first 10,000, $0.10 beyond",
            "undated",
        ),
    ),
    "alarm_metric_month": (
        PriceSource(
            "https://c3x.dev/resources/aws/aws_cloudwatch_metric_alarm",
            "standard resolution $0.10 per alarm-month",
            "undated",
        ),
    ),
    "dashboard_month": (
        PriceSource(_FACTUALMINDS_CLOUDWATCH, "dashboards at $3 each", "2026-06-13"),
    ),
    "logs_ingest_gb": (
        PriceSource(
            "https://hykell.com/kb/platform-specific-guides/aws-cloudwatch-logs-pricing",
            "$0.50 per GB collected (us-east-1)",
            "undated",
        ),
        PriceSource(
            "https://www.duckbillgroup.com/?p=9080",
            "Lambda logs tiered from 2025-05-01; the first tier is the old $0.50 per GB",
            "2025-05",
        ),
    ),
    "logs_gb_month": (
        PriceSource(
            "https://hykell.com/kb/platform-specific-guides/aws-cloudwatch-logs-pricing",
            "$0.03 per GB per month archival storage (us-east-1)",
            "undated",
        ),
    ),
    "get_metric_data_per_thousand_metrics": (
        PriceSource(
            "https://support.site24x7.com/portal/en/kb/articles/aws-cloudwatch-metrics-cost-calculation",
            "GetMetricData $0.01 per 1,000 metric requests",
            "undated",
        ),
    ),
    "put_metric_data_per_thousand": (),
    "xray_per_million_traces": (
        PriceSource(
            "https://aws.amazon.com/de/xray/pricing/",
            "aufgezeichnete Ablaufverfolgungen 5 USD pro Million (0,000005 USD)",
            "undated",
            aws=True,
        ),
    ),
    "glue_dpu_hour": (
        PriceSource(
            "http://elcssyosw.uat.app2one.com/tr/glue/pricing",
            "a copy of aws.amazon.com/tr/glue/pricing: '1 DPU saatinin fiyatı 0,44 USD'",
            "undated",
            aws=True,
        ),
        PriceSource(
            "https://awsnegotiations.com/glue-job-cost-optimization.html",
            "Spark jobs $0.44 per DPU-hour, one-minute minimum, billed per second",
            "2026-05",
        ),
    ),
    "glue_flex_dpu_hour": (),
    "glue_minimum_seconds": (
        PriceSource(
            "https://awsnegotiations.com/glue-job-cost-optimization.html",
            "one-minute minimum, billed per second",
            "2026-05",
        ),
    ),
    "firehose_per_gb": (),
    "firehose_record_increment_bytes": (
        PriceSource(
            "https://aws.amazon.com/de/kinesis/data-firehose/pricing/",
            "ingested volume = records sent x each record's size rounded up to the next 5 KB "
            "(5 120 bytes); a 42 KB record counts as 45 KB (Direct PUT)",
            "undated",
            aws=True,
        ),
    ),
    "fargate_vcpu_hour": (
        PriceSource(
            "https://www.vantage.sh/blog/fargate-pricing",
            "Linux/x86 $0.04048 per vCPU per hour (us-east-1)",
            "undated",
        ),
        PriceSource(
            "https://www.wring.co/blog/aws-fargate-pricing-guide",
            "$0.04048 per vCPU-hour (US East)",
            "2026-03-10",
        ),
    ),
    "fargate_gb_hour": (
        PriceSource(
            "https://www.vantage.sh/blog/fargate-pricing",
            "Linux/x86 $0.004445 per GB per hour (us-east-1)",
            "undated",
        ),
        PriceSource(
            "https://www.wring.co/blog/aws-fargate-pricing-guide",
            "$0.004445 per GB-hour (US East)",
            "2026-03-10",
        ),
    ),
}
"""Per field of `Prices`, the pages its value was checked against on READ_ON (an empty tuple:
no page found that states it; UNVERIFIED lists those)."""

UNVERIFIED: Final = frozenset(field for field, found in PRICE_SOURCES.items() if not found)
"""Prices no page read on READ_ON states: still the 2026-11-28 transcription from memory. Of
`metric_tiers`, only the first two tiers ($0.30, $0.10) were found; $0.05 and $0.02 were not.
Glue Flex's $0.29 agrees with the 'up to 34 %' saving AWS and others quote, not with a stated
price. Firehose's $0.029 a GB is quoted in public projects' cost notes (one citing
aws.amazon.com/firehose/pricing), on no stored page: AWS's copy states only the 5 KB rounding."""


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
    firehose_per_gb: float
    """Amazon Data Firehose, Direct PUT ingestion, the first 500 TB a month, per GB after each
    record's rounding (no charge of its own for delivery to S3 or for GZIP)."""
    firehose_record_increment_bytes: int
    """Each record's ingested size is rounded up to a multiple of this."""
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
    firehose_per_gb=0.029,
    firehose_record_increment_bytes=5120,
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
