"""The inputs of the stack's bill (`operator.cost`): the workload an operator runs, the stack's
shape as template.yaml sets it, and what a tick and a record batch measurably write (MEASURED,
from `benchmarks/stack_cost.py`). A month is AWS's 730 hours.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from queue_autoscale.core.jump import tick_queue_at
from queue_autoscale.core.models import DEFAULT_EVALUATION_INTERVAL_SECONDS
from queue_autoscale.ingest.lateness import EVENTS_BATCHING_WINDOW_SECONDS, PRODUCER_FLUSH_SECONDS

if TYPE_CHECKING:
    from queue_autoscale.operator.prices import Prices

HOURS_PER_MONTH: Final = 730.0
MINUTES_PER_MONTH: Final = HOURS_PER_MONTH * 60
SECONDS_PER_MONTH: Final = HOURS_PER_MONTH * 3600
DAYS_PER_MONTH: Final = HOURS_PER_MONTH / 24
GB: Final = 1e9
"""AWS bills storage and log volume in GB of 10^9 bytes (GiB for Lambda memory: MB / 1024)."""


@dataclass(frozen=True, slots=True)
class Workload:
    """What the operator runs: the inputs of `queue-autoscale cost`."""

    queues: int
    interval_seconds: float = DEFAULT_EVALUATION_INTERVAL_SECONDS
    events_per_second: float = 0.3
    """Per queue: each job is three events (queued, started, completed)."""
    log_retention_days: int = 30
    archive_retention_days: int = 400
    sla_seconds: float = 30.0
    """Sets the counters a tick reads (`core.snapshot.counter_lookback_seconds`)."""


@dataclass(frozen=True, slots=True)
class FunctionShape:
    """A Lambda function as the template sets it."""

    memory_mb: int
    arm64: bool
    tracing: bool = False
    """Active X-Ray tracing (PassThrough records no trace of its own)."""
    platform_lines: bool = True
    """Lambda writes its START, END and REPORT lines (SystemLogLevel INFO or DEBUG, or no
    LoggingConfig level); WARN writes none."""

    def gb_second_usd(self, prices: Prices) -> float:
        """Lambda's price of one GB-second on this function's architecture."""
        return prices.lambda_arm_gb_second if self.arm64 else prices.lambda_x86_gb_second


@dataclass(frozen=True, slots=True)
class StreamBuffer:
    """A Firehose delivery stream's buffer (template.yaml's BufferingHints): it writes an object
    when either fills."""

    seconds: float
    mib: float
    """MiB of records as sent (before GZIP)."""


@dataclass(frozen=True, slots=True)
class StackShape:
    """What template.yaml deploys, as far as the bill depends on it (`cost_template.shape`)."""

    evaluate: FunctionShape
    record: FunctionShape
    record_batch_messages: int
    max_evaluate_shards: int
    alarms_per_queue: int
    fleet_alarm_metrics: int
    dashboards: int
    glue_dpus_per_day: float
    """Sum over the daily Glue runs of workers x DPU per worker."""
    glue_runs_per_day: int
    glue_flex: bool
    queue_metrics: int
    """Per-queue metrics the functions publish with metric extraction (constants.py)."""
    fleet_metrics: int
    idle_silent_metrics: int = 0
    """Of `queue_metrics`, those not extracted while 0 (SILENT_WHEN_ZERO_METRICS): all 0 on an
    idle queue scaled to zero."""
    healthy_silent_metrics: int = 0
    """Of those, the ones 0 on a busy queue whose controller is healthy (ControllerErrors)."""
    ingest_metrics_per_queue: int = 1
    """Per-queue metrics record_events publishes for a busy queue (AcceptedEvents)."""
    fleet_silent_metrics: int = 0
    """Of `fleet_metrics`, those not extracted in a healthy fleet scaled to zero (at 0, or below
    their alarms' threshold)."""
    fleet_healthy_silent_metrics: int = 0
    """Of those, the ones 0 in a busy, healthy fleet (QueueErrors, UndecidedQueues)."""
    fleet_threshold_metrics: frozenset[str] = frozenset()
    """Of the fleet metrics a busy, healthy fleet sends, those sent only in the hours a value
    reaches its alarm's threshold (FLEET_SILENT_BELOW_THRESHOLD, without the dashboard)."""
    record_window_seconds: float = EVENTS_BATCHING_WINDOW_SECONDS
    """The events queue's batching window (MaximumBatchingWindowInSeconds), s."""
    producer_flush_seconds: float = PRODUCER_FLUSH_SECONDS
    """How often each queue's producer sends what it buffered (EventRecorder's default), s."""
    evaluate_per_tick: bool = False
    """EvaluateTickMode=tick: one evaluate invocation per shard and tick (else one per shard
    and minute that loops the minute)."""
    jump_ticks: bool = False
    """JumpTicks=true: jump lines and ticks where the tick queue exists (`operator.cost_jumps`)."""
    events_stream: StreamBuffer | None = None
    """The events' delivery stream (None: one archive PutObject per record batch)."""
    decisions_stream: StreamBuffer | None = None
    """The decision log's delivery stream (None: one PutObject per shard tick)."""


@dataclass(frozen=True, slots=True)
class Measured:
    """Bytes and calls measured on the emulator (benchmarks/results/stack_cost_inputs.md, by
    benchmarks/stack_cost.py) or, where named, assumed. Per queue per tick unless the name says
    otherwise."""

    emf_bytes: float = 884.0
    """The queue's EMF document with PerQueueMetrics (stack_cost.py's tick)."""
    queue_line_bytes: float = 294.0
    """The queue's plain JSON line without PerQueueMetrics (the default), measured 2026-12-02 by
    printing one tick of 50 backlogged queues (tests/unit/handlers/evaluate_world) through
    `telemetry.emf_metrics`; the same tick's EMF documents were 836 bytes a queue."""
    fleet_emf_bytes: float = 445.0
    """Per shard tick: the fleet metrics' EMF document (the same measurement)."""
    fleet_line_bytes: float = 166.0
    """Per shard tick with no fleet metric at its floor: the fleet line as plain JSON, measured
    2026-12-03 through `telemetry.emf_fleet_metrics` with 16-digit ratios and the default stack
    name (queue-autoscale)."""
    log_line_bytes: float = 818.0
    """The `decision` INFO line (Powertools JSON with the Lambda context and the reason in
    words), logged only on a tick that is news for the queue (DECISION_EVENT_SHARE; the others
    log it at DEBUG): the median of the demo's decisions (benchmarks/results/
    decision_line_bytes.md)."""
    invocation_log_bytes: float = 350.0
    """Per invocation of a function with `platform_lines`: Lambda's START, END and REPORT lines
    (assumed: their usual length as text; JSON's are longer)."""
    decision_archive_bytes: float = 19.7
    """Gzipped decision-log bytes (one object per shard tick)."""
    decision_record_bytes: float = 770.0
    """The queue's decision record as a JSON line, before GZIP: what the decisions stream
    ingests (stack_cost.py, 2026-12-02)."""
    state_item_bytes: float = 858.0
    """The STATE item DynamoDB stores (its storage), by DynamoDB's sizing rules
    (`adapters.dynamodb.item_bytes`), its samples packed (`adapters.state_codec`): the largest
    the controller's default policy (predictive) wrote at 0.1 jobs/s and 10 s in the simulator
    with a 26-character queue name, each more character 2 bytes
    (benchmarks/results/state_writes.md). Its rewrite each tick is billed by
    STATE_WRITE_UNITS."""
    counter_item_bytes: float = 120.0
    archive_event_bytes: float = 29.0
    """Gzipped archive bytes per event (batches of 30 or more)."""
    event_line_bytes: float = 141.0
    """One archived event as a JSON line, before GZIP: what the events stream ingests
    (stack_cost.py, 2026-12-02: 140 to 142 bytes at 3 to 3,000 events a batch)."""
    archive_object_bytes: float = 130.0
    """Gzip and JSON overhead of one archive object."""
    record_emf_bytes_per_queue: float = 212.0
    """One AcceptedEvents EMF document per queue in a batch."""
    record_batch_seconds: float = 0.05
    """Billed duration of one record_events batch (calls on AWS; assumed)."""
    record_event_seconds: float = 21e-6
    """CPU per event (benchmarks/results/ingest_throughput.md: ingest at 21 µs/event)."""
    shard_cpu_seconds: float = 0.013
    """A shard tick's own CPU beside its queues', s on one full vCPU: benchmarks/controller_tick.py
    at one queue (moto, 2026-12-02) measured 0.02 s a steady tick, less the 7 ms of the queue
    (`core.shard.TickCost.cpu_seconds`)."""
    shard_chain_calls: int = 4
    """Calls a shard tick waits for one after another (`controller/tick.py`): the config read
    (the store's cache lasts 5 s, so every tick from a 10 s interval on), the gather (its reads
    run at once: one call's latency), the STATE write, the decision log's PutRecordBatch. The
    tick claim is counted apart; an SQS age read adds one in the minutes it is made."""
    glue_run_seconds: float = 120.0
    """One daily Spark run (assumed: small inputs, no Glue run timed; Glue bills at least a
    minute). The stack's one run does the SLA report and then the trend fit in one session;
    locally it used 162 CPU-seconds against the two jobs' 187 (benchmarks/results/
    glue_daily_run.md)."""
    esm_polls_per_minute: float = 15.0
    """Lambda's SQS event source polls an idle queue (assumed: 5 pollers, 20 s long polls)."""
    log_compression: float = 0.15
    """Stored log bytes per ingested byte (CloudWatch Logs bills storage compressed; assumed)."""


MEASURED: Final = Measured()


EVENTS_PER_JOB: Final = 3
"""A job's events: queued, started, completed (the workload's rate is in events/s)."""

RateCurve = tuple[tuple[float, float], ...]
"""(jobs/s, share) points measured at rising Poisson rates; the bill reads the share at a
queue's rate linearly between them, and the nearest end's outside them."""

AGE_READ_SHARE: Final[RateCurve] = (
    (0.03, 0.000),
    (0.1, 0.085),
    (0.3, 0.423),
    (1.0, 0.592),
    (3.0, 0.893),
    (10.0, 0.985),
    (30.0, 0.962),
)
"""Of a busy queue's minutes, those in which a tick sees visible messages and so asks
CloudWatch for the queue's age (one GetMetricData metric): benchmarks/results/age_reads.md's
Poisson rows (the controller's default policy, predictive, in the simulator at the default
10 s, 2 h a rate, seed 0). In production
the share also depends on the job's length and the fleet's slack, so the bill shows every minute
read (the upper bound) beside it."""

DECISION_EVENT_SHARE: Final[RateCurve] = (
    (0.03, 0.001),
    (0.1, 0.001),
    (0.3, 0.006),
    (1.0, 0.014),
    (3.0, 0.192),
    (10.0, 0.324),
    (30.0, 0.214),
)
"""EventBridge entries per busy queue and tick: ScalingDecisionMade is published when the
decision's headline changes (benchmarks/results/decision_events.md's Poisson rows, the
controller's default policy, predictive, in the simulator at the default 10 s; 25 to 47 % on
its steady, bursty and NASA runs; an idle queue publishes on 1 tick in 780, counted as none).
WorkersScaled and breach events are rarer still."""


STATE_WRITE_UNITS: Final[RateCurve] = (
    (0.03, 1.00),
    (0.1, 1.00),
    (0.3, 1.00),
    (1.0, 1.00),
    (3.0, 1.00),
    (10.0, 1.25),
    (30.0, 1.78),
)
"""Write units of a busy queue's STATE PutItem a tick (1 WRU per KB begun):
benchmarks/results/state_writes.md's Poisson rows (the controller's default policy, predictive,
in the simulator at the default 10 s; the item's samples grow with the rate, 789 bytes at
0.1 jobs/s, 910 at 0.3, 934 to 1,097 from 1 jobs/s; an idle queue's 469 bytes is 1 unit).
Every tick changes what the next one reads (the sample; the SLA loop's clock and decayed sums),
so each tick writes it."""


LOAD_ALARM_HOUR_SHARE: Final[RateCurve] = (
    (0.03, 0.0),
    (0.1, 0.0),
    (0.3, 0.0),
    (1.0, 8 / 169),
    (3.0, 1.0),
    (10.0, 1.0),
    (30.0, 1.0),
)
"""Of a busy queue's hours, those holding a tick at LoadRatio >= the lower of OverloadingThreshold
and OverloadedThreshold (the defaults, 0.8 and 1.0): without the dashboard MaxLoadRatio is a
metric only then. benchmarks/results/alarm_metric_hours.md's Poisson rows (the same runs as
SLA_ALARM_HOUR_SHARE's): none up to 0.3 jobs/s, 8 of 169 hours at 1 job/s, every hour from 3 jobs/s
on, where the default policy runs its fleet near 0.8 of its capacity."""

SLA_ALARM_HOUR_SHARE: Final[RateCurve] = (
    (0.03, 0.0),
    (0.1, 0.0),
    (0.3, 0.0),
    (1.0, 0.0),
    (3.0, 0.0),
    (10.0, 0.0),
    (30.0, 0.0),
)
"""Of a busy queue's hours, those holding a tick at SlaUsage >= SlaUsageThreshold (the default,
1.0): without the dashboard MaxSlaUsage is a metric only then.
benchmarks/results/alarm_metric_hours.md's Poisson rows (the controller's default policy,
predictive, in the simulator at the default 10 s, a week a rate): no hour at any rate. Bursts
beyond what the fleet absorbs breach and are billed as they happen, not here."""

FLEET_ALARM_HOUR_SHARE: Final[RateCurve] = (
    (0.03, 0.0),
    (0.1, 0.0),
    (0.3, 0.0),
    (1.0, 0.0),
    (3.0, 0.006),
)
"""Of a busy queue's hours, those holding a tick at FleetUsage >= FleetUsageThreshold (the
default, 0.8): the same runs with the balanced profile's 1..10 workers, up to 3 jobs/s (the
nearest end's share above: the share depends on how far above the load max_workers is set)."""

ALARM_METRIC_HOUR_SHARE: Final[dict[str, RateCurve]] = {
    "MaxLoadRatio": LOAD_ALARM_HOUR_SHARE,
    "MaxSlaUsage": SLA_ALARM_HOUR_SHARE,
    "MaxFleetUsage": FLEET_ALARM_HOUR_SHARE,
}
"""Each of FLEET_SILENT_BELOW_THRESHOLD's metrics: its queue's share of hours at its alarm's
threshold."""


def stack_hour_share(share: float, queues: int) -> float:
    """Of a stack's hours, those in which some of its `queues` queues is at its alarm's
    threshold, each `share` of its hours (the queues taken as independent)."""
    return 1.0 - (1.0 - share) ** queues


def share_at(curve: RateCurve, jobs_per_second: float) -> float:
    """The curve's share at `jobs_per_second`: linear between its measured points, the nearest
    end's outside them; 0 for an idle queue."""
    if jobs_per_second <= 0:
        return 0.0
    rates = [rate for rate, _ in curve]
    at = bisect.bisect_left(rates, jobs_per_second)
    if at == 0:
        return curve[0][1]
    if at == len(curve):
        return curve[-1][1]
    (low, below), (high, above) = curve[at - 1], curve[at]
    return below + (above - below) * (jobs_per_second - low) / (high - low)


@dataclass(frozen=True, slots=True)
class Usage:
    """One line item: a monthly quantity of a priced unit."""

    service: str
    item: str
    quantity: float
    unit: str
    usd: float


def has_tick_queue(workload: Workload, shape: StackShape) -> bool:
    """The template's HasTickQueue: tick mode with later ticks in the minute (none at 60 s)."""
    return shape.evaluate_per_tick and tick_queue_at(workload.interval_seconds)
