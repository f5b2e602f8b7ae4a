"""The stack's own monthly AWS bill: pure arithmetic over what the stack does per tick, per
event and per day, at the pinned prices of `operator.prices`.

`usage` turns a workload (queues, interval, events per queue-second, retentions), the stack's
shape (what template.yaml sets: `operator.cost_template`) and the measured per-tick and
per-batch bytes and calls (`operator.cost_inputs`: Workload, StackShape, MEASURED) into monthly
quantities; `bill` prices them. A month is
AWS's 730 hours. No free tier is subtracted.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final

from queue_autoscale.controller.tick import DECIDE_SHARE, tick_count
from queue_autoscale.core.shard import DEFAULT_TICK_COST, plan_shards, vcpus_for_memory
from queue_autoscale.core.snapshot import counter_lookback_seconds
from queue_autoscale.operator.cost_archive import archive_objects, decision_log, event_archive
from queue_autoscale.operator.cost_inputs import (
    AGE_READ_SHARE,
    ALARM_METRIC_HOUR_SHARE,
    DAYS_PER_MONTH,
    DECISION_EVENT_SHARE,
    EVENTS_PER_JOB,
    GB,
    MEASURED,
    MINUTES_PER_MONTH,
    SECONDS_PER_MONTH,
    STATE_WRITE_UNITS,
    StackShape,
    Usage,
    Workload,
    has_tick_queue,
    share_at,
    stack_hour_share,
)
from queue_autoscale.operator.cost_jumps import jump_usage
from queue_autoscale.operator.cost_record import IngestRates, ingest_rates
from queue_autoscale.operator.prices import Prices, metrics_month_usd


@dataclass(frozen=True, slots=True)
class EvaluatePlan:
    """How the evaluate function runs a month: shards, invocations and their billed time."""

    shards: int
    invocations_per_minute: int
    """Per shard: 1 (loop mode) or the minute's ticks (tick mode)."""
    seconds: float
    """Billed seconds per invocation."""

    @property
    def invocations(self) -> float:
        """Invocations a month, all shards."""
        return self.shards * self.invocations_per_minute * MINUTES_PER_MONTH


def evaluate_plan(workload: Workload, shape: StackShape) -> EvaluatePlan:
    """The evaluate function's month: the dispatcher's own shard plan, and per shard either an
    invocation per tick that lasts the tick's work (its calls, and the tick claim), or one per
    minute that ticks every interval, sleeping between ticks, then ends."""
    vcpus = vcpus_for_memory(shape.evaluate.memory_mb)
    plan = plan_shards(
        workload.queues,
        budget_seconds=DECIDE_SHARE * workload.interval_seconds,
        max_shards=shape.max_evaluate_shards,
        vcpus=vcpus,
    )
    per_queue = DEFAULT_TICK_COST.per_queue_seconds(vcpus, 16)
    fixed = (
        MEASURED.shard_cpu_seconds / vcpus
        + MEASURED.shard_chain_calls * DEFAULT_TICK_COST.call_seconds
    )
    ticks = tick_count(workload.interval_seconds)
    if shape.evaluate_per_tick:  # every tick billed: the shards' average share, not the largest
        tick_seconds = workload.queues / plan.count * per_queue + fixed
        return EvaluatePlan(plan.count, ticks, tick_seconds + DEFAULT_TICK_COST.call_seconds)
    tick_seconds = math.ceil(workload.queues / plan.count) * per_queue + fixed
    return EvaluatePlan(plan.count, 1, (ticks - 1) * workload.interval_seconds + tick_seconds)


def derived_evaluate_memory(workload: Workload, shape: StackShape) -> int:
    """The evaluate memory (MB) with the least GB-seconds whose shard plan fits the interval
    within the shard cap (the largest candidate when none fits)."""
    best: tuple[float, int] | None = None
    for memory in EVALUATE_MEMORY_CHOICES_MB:
        trial = replace(shape, evaluate=replace(shape.evaluate, memory_mb=memory))
        plan = plan_shards(
            workload.queues,
            budget_seconds=DECIDE_SHARE * workload.interval_seconds,
            max_shards=shape.max_evaluate_shards,
            vcpus=vcpus_for_memory(memory),
        )
        if not plan.fits:
            continue
        month = evaluate_plan(workload, trial)
        gb_seconds = month.invocations * month.seconds * memory / 1024
        if best is None or gb_seconds < best[0]:
            best = (gb_seconds, memory)
    return best[1] if best else EVALUATE_MEMORY_CHOICES_MB[-1]


EVALUATE_MEMORY_CHOICES_MB: Final = (256, 512, 1024, 1769)
"""Memory sizes the derivation picks from: 256 MB holds the handler's measured peak (about
120 MB); 1,769 MB is one full vCPU, where a single-threaded tick stops getting faster."""


def _traces(item: str, traces: float, prices: Prices) -> Usage:
    """X-Ray: traces recorded a month."""
    return Usage("X-Ray", item, traces, "traces", traces / 1e6 * prices.xray_per_million_traces)


def _evaluate(workload: Workload, shape: StackShape, prices: Prices) -> list[Usage]:
    month = evaluate_plan(workload, shape)
    invocations = month.invocations
    gb_seconds = invocations * month.seconds * shape.evaluate.memory_mb / 1024
    arch = "arm64" if shape.evaluate.arm64 else "x86_64"
    if shape.evaluate_per_tick:
        each = f"{month.invocations_per_minute} tick(s) a minute x {month.seconds:.2f} s"
    else:
        each = f"{month.seconds:.1f} s a minute"
    lines = [
        Usage(
            "Lambda",
            f"evaluate duration ({month.shards} shard(s) x {each}, "
            f"{shape.evaluate.memory_mb} MB {arch})",
            gb_seconds,
            "GB-s",
            gb_seconds * shape.evaluate.gb_second_usd(prices),
        ),
        Usage(
            "Lambda",
            "evaluate requests",
            invocations,
            "requests",
            invocations / 1e6 * prices.lambda_per_million_requests,
        ),
        Usage(
            "EventBridge Scheduler",
            "rate(1 minute) invocations",
            MINUTES_PER_MONTH,
            "invocations",
            MINUTES_PER_MONTH / 1e6 * prices.scheduler_per_million_invocations,
        ),
    ]
    if has_tick_queue(workload, shape):
        lines.append(_tick_queue(workload, prices))
    if shape.evaluate.tracing:
        lines.append(_traces("evaluate traces (one per invocation)", invocations, prices))
    return lines


def _tick_queue(workload: Workload, prices: Prices) -> Usage:
    """Tick mode's queue: the scheduled invocation's SendMessageBatch of the minute's later
    ticks, one delete a tick by the event source, and its polls (the same assumption as the
    events queue's)."""
    later = tick_count(workload.interval_seconds) - 1
    per_minute = math.ceil(later / 10) + later + MEASURED.esm_polls_per_minute
    requests = per_minute * MINUTES_PER_MONTH
    return Usage(
        "SQS",
        "tick queue: the minute's queued ticks, event-source polls, deletes",
        requests,
        "requests",
        requests / 1e6 * prices.sqs_per_million_requests,
    )


def _tick_calls(workload: Workload, shape: StackShape, prices: Prices) -> list[Usage]:
    """The calls every tick makes (benchmarks/results/controller_tick.md counts them)."""
    month = evaluate_plan(workload, shape)
    shards = month.shards
    ticks = tick_count(workload.interval_seconds) * MINUTES_PER_MONTH
    queue_ticks = workload.queues * ticks
    m = MEASURED
    lookback = counter_lookback_seconds(workload.sla_seconds)
    busy_seconds = lookback * -math.expm1(-workload.events_per_second)
    query_units = 0.5 * max(1, math.ceil(busy_seconds * m.counter_item_bytes / 4096))
    read_units = queue_ticks * (query_units + 2 * 0.5)  # Query + BatchGetItem STATE, MODEL
    jobs_per_second = workload.events_per_second / EVENTS_PER_JOB
    # a PutItem is at least 1 unit: an idle queue's item too
    write_units = queue_ticks * max(1.0, share_at(STATE_WRITE_UNITS, jobs_per_second))
    if shape.evaluate_per_tick:
        write_units += shards * ticks  # each shard's tick claim
        shard_writes = "shard tick claims"
    else:
        write_units += shards * MINUTES_PER_MONTH * 2  # the shard lock: taken and released
        shard_writes = "shard locks"
    events = queue_ticks * share_at(DECISION_EVENT_SHARE, jobs_per_second)
    puts = shards * ticks
    # OldestAgeReader asks for a queue's age once per minute (SQS publishes it once a minute),
    # and only while the queue shows visible messages (the core takes an empty queue's age as
    # 0): none for an idle queue; a busy one in the share of minutes measured at its rate.
    every_minute = workload.queues * MINUTES_PER_MONTH if workload.events_per_second > 0 else 0.0
    read_share = share_at(AGE_READ_SHARE, jobs_per_second)
    age_reads = every_minute * read_share
    upper = every_minute / 1000 * prices.get_metric_data_per_thousand_metrics
    return [
        Usage(
            "SQS",
            "GetQueueAttributes (one per queue per tick)",
            queue_ticks,
            "requests",
            queue_ticks / 1e6 * prices.sqs_per_million_requests,
        ),
        Usage(
            "CloudWatch",
            f"GetMetricData (one age metric per queue and minute with visible messages: "
            f"{read_share:.1%} of minutes at {jobs_per_second:g} jobs/s; every minute "
            f"${upper:,.2f})",
            age_reads,
            "metrics",
            age_reads / 1000 * prices.get_metric_data_per_thousand_metrics,
        ),
        Usage(
            "DynamoDB",
            "tick reads (counters Query, STATE and MODEL)",
            read_units,
            "read units",
            read_units / 1e6 * prices.dynamodb_per_million_read_units,
        ),
        Usage(
            "DynamoDB",
            f"STATE write per queue per tick, {shard_writes}",
            write_units,
            "write units",
            write_units / 1e6 * prices.dynamodb_per_million_write_units,
        ),
        Usage(
            "EventBridge",
            "decision events (PutEvents entries)",
            events,
            "events",
            events / 1e6 * prices.eventbridge_per_million_events,
        ),
        *decision_log(workload, shards, puts, shape.decisions_stream, prices),
    ]


def _ingest_rates(workload: Workload, shape: StackShape) -> IngestRates:
    """The record path's calls per second (`operator.cost_record`)."""
    return ingest_rates(
        workload.queues,
        workload.events_per_second,
        flush_seconds=shape.producer_flush_seconds,
        window_seconds=shape.record_window_seconds,
        batch_messages=shape.record_batch_messages,
    )


def _record(workload: Workload, shape: StackShape, prices: Prices) -> list[Usage]:
    m = MEASURED
    rates = _ingest_rates(workload, shape)
    events = workload.queues * workload.events_per_second * SECONDS_PER_MONTH
    invocations = rates.batches * SECONDS_PER_MONTH
    busy = invocations * m.record_batch_seconds + events * m.record_event_seconds
    gb_seconds = busy * shape.record.memory_mb / 1024
    polls = m.esm_polls_per_minute * MINUTES_PER_MONTH
    sqs = (rates.sends + rates.receives + rates.deletes) * SECONDS_PER_MONTH + polls
    write_units = rates.writes * SECONDS_PER_MONTH * math.ceil(m.counter_item_bytes / 1024)
    lines = [
        Usage(
            "Lambda",
            f"record_events duration ({shape.record.memory_mb} MB "
            f"{'arm64' if shape.record.arm64 else 'x86_64'})",
            gb_seconds,
            "GB-s",
            gb_seconds * shape.record.gb_second_usd(prices),
        ),
        Usage(
            "Lambda",
            "record_events requests",
            invocations,
            "requests",
            invocations / 1e6 * prices.lambda_per_million_requests,
        ),
        Usage(
            "SQS",
            f"events queue: producers' sends (every {shape.producer_flush_seconds:g} s), "
            "event-source receives and polls, deletes",
            sqs,
            "requests",
            sqs / 1e6 * prices.sqs_per_million_requests,
        ),
        Usage(
            "DynamoDB",
            "counter UpdateItem per (queue, second) per batch",
            write_units,
            "write units",
            write_units / 1e6 * prices.dynamodb_per_million_write_units,
        ),
        *event_archive(workload, shape, rates, prices),
        *jump_usage(
            workload,
            shape,
            rates,
            prices,
            evaluate_plan(replace(workload, queues=1), shape).seconds,
        ),
    ]
    if shape.record.tracing:
        batches = rates.batches
        traces = (min(batches, 1.0) + 0.05 * max(0.0, batches - 1)) * SECONDS_PER_MONTH
        lines.append(_traces("record_events traces (1/s + 5% sampled)", traces, prices))
    return lines


def _storage(workload: Workload, shape: StackShape, prices: Prices) -> list[Usage]:
    m = MEASURED
    ticks = tick_count(workload.interval_seconds) * MINUTES_PER_MONTH
    rates = _ingest_rates(workload, shape)
    events = workload.queues * workload.events_per_second * SECONDS_PER_MONTH
    objects = archive_objects(workload, shape, rates)
    archived = events * m.archive_event_bytes + objects * m.archive_object_bytes
    archived += workload.queues * ticks * m.decision_archive_bytes
    held = archived * workload.archive_retention_days / DAYS_PER_MONTH / GB
    counter_ttl_seconds = 2 * 86_400  # RecordSettings.counter_ttl_seconds' default
    table = (rates.writes * counter_ttl_seconds * m.counter_item_bytes) / GB
    table += workload.queues * (m.state_item_bytes + m.counter_item_bytes) / GB
    return [
        Usage(
            "S3",
            f"archive storage ({workload.archive_retention_days} days of events and decisions)",
            held,
            "GB-month",
            held * prices.s3_gb_month,
        ),
        Usage("DynamoDB", "table storage", table, "GB-month", table * prices.dynamodb_gb_month),
        Usage(
            "DynamoDB",
            "point-in-time recovery",
            table,
            "GB-month",
            table * prices.dynamodb_pitr_gb_month,
        ),
    ]


def _custom_metrics(workload: Workload, shape: StackShape) -> tuple[int, float, str]:
    """(metrics per queue, fleet-wide metrics, the line item's words): a metric counts for the
    share of the month's hours in which it is sent."""
    if workload.events_per_second <= 0:  # an idle queue scaled to zero: its zeros are not metrics
        per_queue = shape.queue_metrics - shape.idle_silent_metrics
        fleet = shape.fleet_metrics - shape.fleet_silent_metrics
        return per_queue, fleet, f"custom metrics ({per_queue} per queue, {fleet} fleet-wide)"
    # AcceptedEvents; a healthy controller has no errors
    per_queue = shape.queue_metrics - shape.healthy_silent_metrics + shape.ingest_metrics_per_queue
    always = shape.fleet_metrics - shape.fleet_healthy_silent_metrics
    item = f"custom metrics ({per_queue} per queue, "
    if not shape.fleet_threshold_metrics:
        return per_queue, always, item + f"{always} fleet-wide)"
    always -= len(shape.fleet_threshold_metrics)
    jobs_per_second = workload.events_per_second / EVENTS_PER_JOB
    shares = {
        name: stack_hour_share(
            share_at(ALARM_METRIC_HOUR_SHARE[name], jobs_per_second), workload.queues
        )
        for name in sorted(shape.fleet_threshold_metrics)
    }
    sent = ", ".join(f"{name} {share:.1%}" for name, share in shares.items())
    item += f"{always} fleet-wide; {len(shares)} only in hours at an alarm's threshold: {sent})"
    return per_queue, always + sum(shares.values()), item


def _fleet_emf_share(workload: Workload, shape: StackShape) -> float:
    """Of the shard ticks, the share whose fleet line is an EMF document (some fleet metric at
    its floor) rather than plain JSON: every tick while MaxLoadRatio is sent every tick; else at
    most the share of the stack's hours in which a threshold metric is sent (an upper bound:
    every tick of such an hour)."""
    if "MaxLoadRatio" not in shape.fleet_threshold_metrics:
        return 1.0
    jobs_per_second = workload.events_per_second / EVENTS_PER_JOB
    quiet = 1.0
    for name in shape.fleet_threshold_metrics:
        share = share_at(ALARM_METRIC_HOUR_SHARE[name], jobs_per_second)
        quiet *= 1.0 - stack_hour_share(share, workload.queues)
    return 1.0 - quiet


def _cloudwatch(workload: Workload, shape: StackShape, prices: Prices) -> list[Usage]:
    m = MEASURED
    month = evaluate_plan(workload, shape)
    ticks = tick_count(workload.interval_seconds) * MINUTES_PER_MONTH
    rates = _ingest_rates(workload, shape)
    queue_line = m.emf_bytes if shape.queue_metrics else m.queue_line_bytes
    news = share_at(DECISION_EVENT_SHARE, workload.events_per_second / EVENTS_PER_JOB)
    logged = workload.queues * ticks * (queue_line + news * m.log_line_bytes)
    emf_share = _fleet_emf_share(workload, shape)
    fleet_line = emf_share * m.fleet_emf_bytes + (1.0 - emf_share) * m.fleet_line_bytes
    logged += month.shards * ticks * fleet_line
    if shape.evaluate.platform_lines:
        logged += month.invocations * m.invocation_log_bytes
    if shape.record.platform_lines:
        logged += rates.batches * SECONDS_PER_MONTH * m.invocation_log_bytes
    logged += rates.queue_batches * SECONDS_PER_MONTH * m.record_emf_bytes_per_queue
    ingested = logged / GB
    platform_lines = shape.evaluate.platform_lines or shape.record.platform_lines
    stored = ingested * m.log_compression * workload.log_retention_days / DAYS_PER_MONTH
    per_queue, fleet, item = _custom_metrics(workload, shape)
    metrics = workload.queues * per_queue + fleet
    alarms = workload.queues * shape.alarms_per_queue + shape.fleet_alarm_metrics
    return [
        Usage("CloudWatch", item, metrics, "metrics", metrics_month_usd(metrics, prices)),
        Usage(
            "CloudWatch",
            f"alarms ({shape.alarms_per_queue} per queue, {shape.fleet_alarm_metrics} fleet-wide)",
            alarms,
            "alarm metrics",
            alarms * prices.alarm_metric_month,
        ),
        Usage(
            "CloudWatch",
            "dashboard",
            shape.dashboards,
            "dashboards",
            shape.dashboards * prices.dashboard_month,
        ),
        Usage(
            "CloudWatch",
            "logs ingested (EMF, decision lines"
            + (", invocation lines)" if platform_lines else ")"),
            ingested,
            "GB",
            ingested * prices.logs_ingest_gb,
        ),
        Usage(
            "CloudWatch",
            f"logs stored ({workload.log_retention_days} days, compressed)",
            stored,
            "GB-month",
            stored * prices.logs_gb_month,
        ),
    ]


def _glue(shape: StackShape, prices: Prices) -> list[Usage]:
    seconds = max(MEASURED.glue_run_seconds, prices.glue_minimum_seconds)
    dpu_hours = shape.glue_dpus_per_day * seconds / 3600 * DAYS_PER_MONTH
    price = prices.glue_flex_dpu_hour if shape.glue_flex else prices.glue_dpu_hour
    kind = "Flex" if shape.glue_flex else "standard"
    runs = shape.glue_runs_per_day
    return [
        Usage(
            "Glue",
            f"{runs} daily Spark run{'s' if runs != 1 else ''} ({kind}, {seconds:.0f} s each, "
            "assumed)",
            dpu_hours,
            "DPU-hours",
            dpu_hours * price,
        )
    ]


def usage(workload: Workload, shape: StackShape, prices: Prices) -> list[Usage]:
    """Every line item of one month of the stack at `workload`."""
    if workload.queues < 1:
        raise ValueError(f"queues {workload.queues}: at least 1")
    if workload.events_per_second < 0 or not math.isfinite(workload.events_per_second):
        raise ValueError(f"events per second {workload.events_per_second}: not >= 0")
    return [
        *_evaluate(workload, shape, prices),
        *_tick_calls(workload, shape, prices),
        *_record(workload, shape, prices),
        *_storage(workload, shape, prices),
        *_cloudwatch(workload, shape, prices),
        *_glue(shape, prices),
    ]


def total_usd(lines: Sequence[Usage]) -> float:
    """The month's bill of these line items (USD)."""
    return sum(line.usd for line in lines)


def by_service(lines: Sequence[Usage]) -> dict[str, float]:
    """USD per AWS service, largest first."""
    totals: dict[str, float] = {}
    for line in lines:
        totals[line.service] = totals.get(line.service, 0.0) + line.usd
    return dict(sorted(totals.items(), key=lambda item: -item[1]))


def idle_queue_usd(workload: Workload, shape: StackShape, prices: Prices) -> float:
    """What one more queue with no traffic adds to the month (USD)."""
    idle = replace(workload, events_per_second=0.0)
    more = replace(idle, queues=workload.queues + 1)
    return total_usd(usage(more, shape, prices)) - total_usd(usage(idle, shape, prices))
