"""`queue-autoscale cost`: the arithmetic on a small case worked by hand, the price tiers, the
shape read from template.yaml, and the command."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import replace

import pytest
from typer.testing import CliRunner

from queue_autoscale.cli import app
from queue_autoscale.demo.template import is_condition_true, load_template
from queue_autoscale.operator.cost import (
    Usage,
    derived_evaluate_memory,
    evaluate_plan,
    idle_queue_usd,
    total_usd,
    usage,
)
from queue_autoscale.operator.cost_command import template_shape
from queue_autoscale.operator.cost_inputs import (
    FunctionShape,
    StackShape,
    StreamBuffer,
    Workload,
    share_at,
)
from queue_autoscale.operator.cost_record import ingest_rates
from queue_autoscale.operator.cost_template import shape as shape_of
from queue_autoscale.operator.cost_template import stack_capacity
from queue_autoscale.operator.prices import (
    PRICE_SOURCES,
    UNVERIFIED,
    US_EAST_1,
    Prices,
    metrics_month_usd,
)

SHAPE = StackShape(
    evaluate=FunctionShape(memory_mb=1769, arm64=True),
    record=FunctionShape(memory_mb=256, arm64=True),
    record_batch_messages=100,
    max_evaluate_shards=32,
    alarms_per_queue=6,
    fleet_alarm_metrics=4,
    dashboards=1,
    glue_dpus_per_day=4.0,
    glue_runs_per_day=2,
    glue_flex=False,
    queue_metrics=12,
    fleet_metrics=1,
)
TWO_IDLE = Workload(queues=2, interval_seconds=30.0, events_per_second=0.0)


def line(lines: list[Usage], service: str, starts: str) -> float:
    (found,) = [x.usd for x in lines if x.service == service and x.item.startswith(starts)]
    return found


def test_two_idle_queues_worked_by_hand() -> None:
    """2 queues, 30 s interval (2 ticks a minute), no events, 1,769 MB arm64, 43,800 minutes.

    evaluate: 1 shard; an invocation lasts 1 x 30 s + its last tick: 2 queues x (7 ms CPU on
    one vCPU + 4 calls x 30 ms / 16 threads = 14.5 ms) + the shard's own 13 ms of CPU and its
    4 calls one after another at 30 ms (0.133 s) = 30.162 s.
    """
    lines = usage(TWO_IDLE, SHAPE, US_EAST_1)
    gb_seconds = 43_800 * 30.162 * 1769 / 1024  # 2,282,282 GB-s
    assert line(lines, "Lambda", "evaluate duration") == pytest.approx(gb_seconds * 0.0000133334)
    assert line(lines, "Lambda", "evaluate duration") == pytest.approx(30.43, abs=0.01)
    # 2 queues x 2 ticks x 43,800 minutes = 175,200 queue-ticks; an idle queue's age is never
    # read (no visible message), a busy one's at most once a minute: at 0.1 jobs/s in 8.5 % of
    # its minutes (age_reads.md), 87,600 x 0.085 = 7,446 metrics
    assert line(lines, "CloudWatch", "GetMetricData") == 0
    busy = usage(replace(TWO_IDLE, events_per_second=0.3), SHAPE, US_EAST_1)
    assert line(busy, "CloudWatch", "GetMetricData") == pytest.approx(7_446 / 1000 * 0.01)
    # and the upper bound, every minute read, is named beside it
    (read,) = [x for x in busy if x.item.startswith("GetMetricData")]
    assert "8.5% of minutes at 0.1 jobs/s; every minute $0.88" in read.item
    assert line(lines, "SQS", "GetQueueAttributes") == pytest.approx(175_200 / 1e6 * 0.40)
    # STATE: an idle queue's item (508 bytes, samples packed) is 1 WRU a write; the shard lock 2
    # writes a minute
    assert line(lines, "DynamoDB", "STATE write") == pytest.approx((175_200 + 87_600) / 1e6 * 0.625)
    # no events: 12 metrics a queue + ConfigErrors; 6 alarms a queue + 4 fleet alarm metrics
    assert line(lines, "CloudWatch", "custom metrics") == pytest.approx(25 * 0.30)
    assert line(lines, "CloudWatch", "alarms") == pytest.approx(16 * 0.10)
    assert line(lines, "CloudWatch", "dashboard") == pytest.approx(3.00)
    # 4 DPU a day x 120 s x 30.4167 days x $0.44
    assert line(lines, "Glue", "2 daily") == pytest.approx(4 * 120 / 3600 * 730 / 24 * 0.44)
    # no events: no producer sends, no batches; the event source still polls 15 times a minute
    assert line(lines, "SQS", "events queue") == pytest.approx(15 * 43_800 / 1e6 * 0.40)
    assert line(lines, "S3", "event-archive") == 0
    assert total_usd(lines) == pytest.approx(sum(x.usd for x in lines))


def test_decision_events_are_the_ticks_whose_headline_changed() -> None:
    """2 queues at 30 s: 175,200 queue-ticks a month. A busy queue publishes ScalingDecisionMade
    on 0.1 % of them (decision_events.md, predictive): 175.2 events at $1.00 a million; an idle
    one none."""
    busy = usage(replace(TWO_IDLE, events_per_second=0.3), SHAPE, US_EAST_1)
    assert line(busy, "EventBridge", "decision events") == pytest.approx(175.2 / 1e6 * 1.00)
    assert line(usage(TWO_IDLE, SHAPE, US_EAST_1), "EventBridge", "decision events") == 0


def test_a_share_is_read_between_the_rates_it_was_measured_at() -> None:
    # GIVEN a curve measured at 1 and 3 jobs/s (10 % and 50 %)
    curve = ((1.0, 0.1), (3.0, 0.5))
    # THEN halfway between them it is halfway between the shares; outside them the nearest
    # end's; an idle queue's is 0
    assert share_at(curve, 2.0) == pytest.approx(0.3)
    assert share_at(curve, 1.5) == pytest.approx(0.2)
    assert share_at(curve, 0.5) == 0.1
    assert share_at(curve, 5.0) == 0.5
    assert share_at(curve, 0.0) == 0.0


def test_decision_events_and_age_reads_follow_the_rate() -> None:
    """2 queues at 30 s, 3 jobs/s (9 events/s), predictive's measured shares: ScalingDecisionMade
    on 19.2 % of 175,200 queue-ticks = 33,638.4 events; the age read in 89.3 % of 87,600
    queue-minutes = 78,226.8; the STATE item (975 bytes at 3 jobs/s) 1.00 write unit a tick,
    175,200 units."""
    busy = usage(replace(TWO_IDLE, events_per_second=9.0), SHAPE, US_EAST_1)
    assert line(busy, "EventBridge", "decision events") == pytest.approx(33_638.4 / 1e6 * 1.00)
    assert line(busy, "CloudWatch", "GetMetricData") == pytest.approx(78_226.8 / 1000 * 0.01)
    # the shard lock's 87,600 writes beside them
    state = (175_200 + 87_600) / 1e6 * 0.625
    assert line(busy, "DynamoDB", "STATE write") == pytest.approx(state)


def test_one_queue_record_path_worked_by_hand() -> None:
    """1 queue at 0.3 events/s, producers flushing every 1 s, 3 s windows, 2,628,000 s a month.

    A flush holds events with probability 1 - e^-0.3 = 0.259182: 0.259182 SendMessageBatch
    calls and messages a second. A 3 s window holds a message with probability
    1 - e^-(0.259182 x 3) = 0.540467: 0.180156 batches (invocations, archive objects) a second,
    each one ReceiveMessage and one DeleteMessageBatch. A second holds an event with
    probability 0.259182: that many counter writes a second.
    """
    shape = replace(SHAPE, producer_flush_seconds=1.0, record_window_seconds=3.0)
    lines = usage(Workload(queues=1, events_per_second=0.3), shape, US_EAST_1)
    # (0.259182 + 2 x 0.180156) x 2,628,000 + 15 polls x 43,800 minutes = 2,285,029 requests
    assert line(lines, "SQS", "events queue") == pytest.approx(2_285_029 / 1e6 * 0.40, rel=1e-5)
    assert line(lines, "S3", "event-archive") == pytest.approx(473_449 / 1000 * 0.005, rel=1e-5)
    assert line(lines, "Lambda", "record_events requests") == pytest.approx(
        473_449 / 1e6 * 0.20, rel=1e-5
    )
    # a 120-byte counter item is 1 WRU a write
    assert line(lines, "DynamoDB", "counter UpdateItem") == pytest.approx(
        681_130 / 1e6 * 0.625, rel=1e-5
    )


def test_the_archive_through_firehose_worked_by_hand() -> None:
    """The record path above (473,449 batches a month) and two idle queues' decision log, each
    through a stream buffering 300 s or 128 MiB, $0.029 a GB in 5,120-byte record steps.

    Events: 0.3 x 2,628,000 = 788,400 a month, 1.6652 a batch x 141 bytes = 234.8 bytes: one
    record billed 5,120 bytes. Decisions: 2 queues x 770 bytes = 1,540 bytes a shard tick,
    87,600 shard ticks (2 a minute), each billed 5,120 bytes. Each stream writes one object per
    300 s: 2,628,000 / 300 = 8,760 PutObjects (the 111 MB of events a month never fill 128 MiB).
    """
    streams = StreamBuffer(seconds=300.0, mib=128.0)
    shape = replace(
        SHAPE,
        producer_flush_seconds=1.0,
        record_window_seconds=3.0,
        events_stream=streams,
        decisions_stream=streams,
    )
    busy = usage(Workload(queues=1, events_per_second=0.3), shape, US_EAST_1)
    assert line(busy, "Firehose", "event archive ingested") == pytest.approx(
        473_449 * 5_120 / 1e9 * 0.029, rel=1e-5
    )
    assert line(busy, "Firehose", "event archive ingested") == pytest.approx(0.0703, abs=1e-4)
    assert line(busy, "S3", "event archive objects") == pytest.approx(8_760 / 1000 * 0.005)
    assert not [x for x in busy if "PutObject" in x.item]
    idle = usage(TWO_IDLE, shape, US_EAST_1)
    assert line(idle, "Firehose", "decision log ingested") == pytest.approx(
        87_600 * 5_120 / 1e9 * 0.029
    )
    assert line(idle, "S3", "decision log objects") == pytest.approx(8_760 / 1000 * 0.005)
    # no events: the events stream ingests nothing and writes no object
    assert line(idle, "Firehose", "event archive ingested") == 0
    assert line(idle, "S3", "event archive objects") == 0
    # against one PutObject per batch and per tick: $2.37 + $0.44 -> $0.07 + $0.04 + $0.01 + $0.04
    plain = usage(Workload(queues=1, events_per_second=0.3), replace(shape, events_stream=None,
                  decisions_stream=None), US_EAST_1)  # fmt: skip
    assert line(plain, "S3", "event-archive PutObject") == pytest.approx(473_449 / 1000 * 0.005)


def test_a_shard_ticks_decisions_are_billed_in_whole_5_kb_steps() -> None:
    """400 queues on one shard x 770 bytes = 308,000 bytes a shard tick: 61 steps of 5,120 =
    312,320 bytes, 87,600 shard ticks a month (2 a minute)."""
    shape = replace(SHAPE, decisions_stream=StreamBuffer(seconds=300.0, mib=128.0))
    workload = Workload(queues=400, interval_seconds=30.0, events_per_second=0.0)
    assert evaluate_plan(workload, shape).shards == 1
    lines = usage(workload, shape, US_EAST_1)
    assert line(lines, "Firehose", "decision log ingested") == pytest.approx(
        87_600 * 312_320 / 1e9 * 0.029
    )


def test_an_idle_queue_bills_only_the_metrics_it_publishes_while_zero() -> None:
    """2 idle queues: 12 - 8 silent = 4 metrics each, + ConfigErrors: 9 metrics, $2.70. Busy:
    12 - ControllerErrors + AcceptedEvents = 12 each, + ConfigErrors: 25 metrics, $7.50."""
    quiet = replace(SHAPE, idle_silent_metrics=8, healthy_silent_metrics=1)
    assert line(usage(TWO_IDLE, quiet, US_EAST_1), "CloudWatch", "custom metrics") == (
        pytest.approx(9 * 0.30)
    )
    busy = replace(TWO_IDLE, events_per_second=0.3)
    assert line(usage(busy, quiet, US_EAST_1), "CloudWatch", "custom metrics") == (
        pytest.approx(25 * 0.30)
    )


def test_the_alarm_only_fleet_metrics_are_billed_for_the_hours_they_are_sent() -> None:
    """A shape that sends MaxLoadRatio every tick, MaxSlaUsage and MaxFleetUsage only in hours
    at their alarm's threshold. At 3 jobs/s (9 events/s) a queue's
    fleet is at FleetUsageThreshold in 0.6 % of its hours, its SLA usage never: 1 queue bills
    1.006 metrics; 1,000 queues 1 + (1 - 0.994^1000) = 1.9976 (some queue near max in almost
    every hour)."""
    threshold = replace(
        SHAPE,
        queue_metrics=0,
        ingest_metrics_per_queue=0,
        fleet_metrics=3,
        fleet_threshold_metrics=frozenset({"MaxSlaUsage", "MaxFleetUsage"}),
    )
    one = Workload(queues=1, events_per_second=9.0)
    (item,) = [x for x in usage(one, threshold, US_EAST_1) if x.item.startswith("custom metrics")]
    assert item.quantity == pytest.approx(1.006)
    assert item.usd == pytest.approx(1.006 * 0.30)
    assert "MaxFleetUsage 0.6%, MaxSlaUsage 0.0%" in item.item
    many = replace(one, queues=1_000)
    (item,) = [x for x in usage(many, threshold, US_EAST_1) if x.item.startswith("custom metrics")]
    assert item.quantity == pytest.approx(2 - 0.994**1000)
    # AND sent every tick (the dashboard on, or a template from before), all three count
    every = replace(threshold, fleet_threshold_metrics=frozenset())
    assert line(usage(one, every, US_EAST_1), "CloudWatch", "custom metrics") == (
        pytest.approx(3 * 0.30)
    )


def test_the_template_sends_the_alarmed_maxima_at_their_threshold_only_without_the_dashboard() -> (
    None
):
    # GIVEN template.yaml, which passes the evaluate function the alarms' four thresholds
    everything = {"MaxLoadRatio", "MaxSlaUsage", "MaxFleetUsage"}
    assert template_shape().fleet_threshold_metrics == everything
    # WHEN the dashboard charts them THEN they are sent every tick
    assert template_shape(dashboard=True).fleet_threshold_metrics == frozenset()
    # AND a metric whose function gets not every threshold of its alarms is sent every tick
    for missing, metric in [
        ("SLA_USAGE_THRESHOLD", "MaxSlaUsage"),
        ("OVERLOADED_THRESHOLD", "MaxLoadRatio"),
    ]:
        template = load_template()
        variables = template["Resources"]["EvaluateFunction"]["Properties"]["Environment"]
        del variables["Variables"][missing]
        assert shape_of(template).fleet_threshold_metrics == everything - {metric}


@pytest.mark.parametrize(
    ("metrics", "usd"),
    [
        pytest.param(1, 0.30, id="one"),
        pytest.param(10_000, 3_000.0, id="first-tier-full"),
        pytest.param(12_000, 3_000.0 + 200.0, id="into-second-tier"),
        pytest.param(250_000, 3_000.0 + 24_000.0, id="second-tier-full"),
        pytest.param(1_100_000, 3_000.0 + 24_000.0 + 37_500.0 + 2_000.0, id="fourth-tier"),
    ],
)
def test_metric_tiers(metrics: int, usd: float) -> None:
    assert metrics_month_usd(metrics, US_EAST_1) == pytest.approx(usd)


def test_idle_queue_adds_its_metrics_alarms_and_tick_calls() -> None:
    """An idle queue: 12 metrics ($3.60), 6 alarms ($0.60), GetQueueAttributes, reads and the
    STATE write; its share of the shard's time (no GetMetricData: it has no visible message)."""
    added = idle_queue_usd(TWO_IDLE, SHAPE, US_EAST_1)
    floor = 3.60 + 0.60
    assert floor < added < floor + 0.5


def test_one_invocation_per_tick_worked_by_hand() -> None:
    """The same 2 idle queues in tick mode: 2 ticks a minute, each an invocation of 2 x 14.5 ms
    + 0.133 s + one 30 ms claim = 0.192 s, 87,600 a month."""
    lines = usage(TWO_IDLE, replace(SHAPE, evaluate_per_tick=True), US_EAST_1)
    gb_seconds = 87_600 * 0.192 * 1769 / 1024  # 29,055 GB-s
    assert line(lines, "Lambda", "evaluate duration") == pytest.approx(gb_seconds * 0.0000133334)
    assert line(lines, "Lambda", "evaluate duration") == pytest.approx(0.387, abs=0.001)
    assert line(lines, "Lambda", "evaluate requests") == pytest.approx(87_600 / 1e6 * 0.20)
    # the tick queue a minute: 1 SendMessageBatch (the second tick), 1 delete, 15 polls
    assert line(lines, "SQS", "tick queue") == pytest.approx(17 * 43_800 / 1e6 * 0.40)
    # STATE 1 WRU per queue-tick; the shard claims its tick: 1 WRU a tick, no lock
    assert line(lines, "DynamoDB", "STATE write") == pytest.approx((175_200 + 87_600) / 1e6 * 0.625)
    # loop mode billed 30.162 s a minute for the same work
    loop = line(usage(TWO_IDLE, SHAPE, US_EAST_1), "Lambda", "evaluate duration")
    assert line(lines, "Lambda", "evaluate duration") < loop / 27


@pytest.mark.parametrize("interval", [15, 30, 45, 60])
def test_the_tick_queue_is_billed_where_the_template_creates_it(interval: int) -> None:
    """The bill has the tick queue's line exactly where template.yaml's HasTickQueue holds:
    in tick mode with later ticks in the minute. Worked by hand: 17 requests a minute at 30 s
    and 45 s (1 SendMessageBatch, 1 delete, 15 idle polls); none at 60 s, where the scheduled
    invocation is the minute's only tick."""
    template = load_template()
    values = {"EvaluationIntervalSeconds": str(interval), "EvaluateTickMode": "tick"}
    queued = is_condition_true(template, "HasTickQueue", values)
    lines = usage(
        replace(TWO_IDLE, interval_seconds=float(interval)),
        replace(SHAPE, evaluate_per_tick=True),
        US_EAST_1,
    )
    billed = [x for x in lines if x.service == "SQS" and x.item.startswith("tick queue")]
    assert queued is (interval < 60)
    assert bool(billed) is queued
    if interval in (30, 45):
        assert billed[0].usd == pytest.approx(17 * 43_800 / 1e6 * 0.40)


def test_derived_memory_is_the_least_gb_seconds_that_fits() -> None:
    assert derived_evaluate_memory(Workload(queues=1), SHAPE) == 256
    assert derived_evaluate_memory(Workload(queues=10_000), SHAPE) == 1769


def test_template_shape_is_what_template_yaml_sets() -> None:
    shape = template_shape()
    assert shape.alarms_per_queue == 0
    # 7 on the fleet metrics; config errors, events DLQ, function errors (2 metrics)
    assert shape.fleet_alarm_metrics == 11
    assert (shape.evaluate.arm64, shape.record.arm64) == (True, True)
    assert (shape.evaluate.memory_mb, shape.record.memory_mb) == (256, 512)
    # X-Ray is opt-in: EvaluateTracing defaults to PassThrough, the record function never traces
    assert (shape.evaluate.tracing, shape.record.tracing) == (False, False)
    assert template_shape(tracing=True).evaluate.tracing
    assert shape.dashboards == 0  # DashboardEnabled defaults to "false": opt-in
    assert template_shape(dashboard=True).dashboards == 1
    # per-queue values are log fields, not metrics, unless PerQueueMetrics is "true"
    assert (shape.queue_metrics, shape.ingest_metrics_per_queue) == (0, 0)
    # 5 fleet metrics and ConfigErrors; all silent in a healthy idle fleet: MaxLoadRatio below
    # its alarms' threshold, the others at 0 (ConfigErrors is sent only for a rejected config)
    assert (shape.fleet_metrics, shape.fleet_silent_metrics) == (6, 6)
    assert shape.fleet_healthy_silent_metrics == 3  # QueueErrors, UndecidedQueues, ConfigErrors
    opted = template_shape(per_queue_metrics=True)
    assert opted.queue_metrics == 11  # QUEUE_METRICS but RealizedCompliance (logged only)
    assert (opted.idle_silent_metrics, opted.healthy_silent_metrics) == (8, 1)
    assert opted.ingest_metrics_per_queue == 1  # AcceptedEvents
    assert shape.glue_runs_per_day == 1  # the daily job: the report, then the trend fit
    assert shape.evaluate_per_tick  # EvaluateTickMode defaults to tick
    assert shape.jump_ticks  # JumpTicks defaults to true
    assert not template_shape(jump_ticks=False).jump_ticks
    assert not shape_of(load_template(), {"EvaluateTickMode": "loop"}).evaluate_per_tick
    assert shape.glue_dpus_per_day == 2.0
    assert shape.glue_flex
    # the archive goes through two delivery streams of 300 s / 128 MiB buffers
    assert shape.events_stream == shape.decisions_stream == StreamBuffer(300.0, 128.0)
    assert template_shape(evaluate_memory_mb=1769).evaluate.memory_mb == 1769


def test_no_resource_grows_with_the_queues() -> None:
    """The template translated for one and for two queues holds the same resources."""
    one, per_queue, most = stack_capacity(load_template())
    assert (per_queue, most) == (0, None)
    assert 30 < one < 60
    large = CliRunner().invoke(app, ["cost", "--queues", "10000"])
    assert "Not deployable as one stack" not in large.output


def test_cost_command_prints_the_bill() -> None:
    result = CliRunner().invoke(app, ["cost", "--queues", "3", "--events-per-second", "0"])
    assert result.exit_code == 0, result.output
    assert "| CloudWatch | alarms (0 per queue, 11 fleet-wide) | 11 alarm metrics | 1.10 |" in (
        result.output
    )
    # an idle, healthy fleet publishes no metric: every value is below its alarms' threshold
    assert "| CloudWatch | custom metrics (0 per queue, 0 fleet-wide) | 0 metrics | 0.00 |" in (
        result.output
    )
    assert "per queue-month" in result.output
    assert "| CloudWatch | dashboard | 0 dashboards | 0.00 |" in result.output


def test_cost_command_bills_the_dashboard_when_it_is_turned_on() -> None:
    plain = CliRunner().invoke(app, ["cost", "--events-per-second", "0", "--json"])
    opted = CliRunner().invoke(app, ["cost", "--events-per-second", "0", "--json", "--dashboard"])
    assert plain.exit_code == opted.exit_code == 0, plain.output + opted.output
    before, after = json.loads(plain.output), json.loads(opted.output)
    # the dashboard itself, and MaxLoadRatio, which it charts every tick (its sample count is
    # the ticks chart): a metric, and an EMF fleet line instead of a plain one every tick
    ticks = 6 * 43_800
    logs = ticks * (445.0 - 166.0) / 1e9 * (0.50 + 0.15 * 30 / (365 / 12) * 0.03)
    assert after["total_usd"] - before["total_usd"] == pytest.approx(3.00 + 0.30 + logs, rel=1e-4)


def test_cost_command_bills_evaluate_traces_when_tracing_is_turned_on() -> None:
    """One queue at the default 10 s, tick mode: 6 invocations a minute x 43,800 minutes =
    262,800 traces at $5.00 a million: $1.314 a month, and nothing without --tracing."""
    plain = CliRunner().invoke(app, ["cost", "--json"])
    opted = CliRunner().invoke(app, ["cost", "--json", "--tracing"])
    assert plain.exit_code == opted.exit_code == 0, plain.output + opted.output
    traced = [x for x in json.loads(opted.output)["lines"] if x["service"] == "X-Ray"]
    assert [x["service"] for x in json.loads(plain.output)["lines"]].count("X-Ray") == 0
    assert [(x["quantity"], x["usd"]) for x in traced] == [(262_800, pytest.approx(1.314))]


def test_lambdas_invocation_lines_are_billed_only_at_an_info_system_log_level() -> None:
    """One queue at the default 10 s, tick mode: 6 evaluate invocations a minute x 43,800 minutes
    = 262,800,
    and record batches at 0.3 events/s: a flush holds an event in 1 - e^-0.3 = 25.9 % of seconds,
    a batch of the 2 s window in 1 - e^-(2 x 0.2592) = 40.45 % of 2 s windows: 0.20225 batches
    a second x 2,628,000 s = 531,521 a month. 794,321 invocations x 350 bytes of START, END and
    REPORT lines = 0.27801 GB at $0.50 a GB ingested: $0.1390 a month, only with
    FunctionSystemLogLevel=INFO; the template's WARN writes none."""
    assert template_shape().evaluate.platform_lines is False
    assert template_shape().record.platform_lines is False
    quiet = CliRunner().invoke(app, ["cost", "--json"])
    info = CliRunner().invoke(app, ["cost", "--json", "--platform-logs"])
    assert quiet.exit_code == info.exit_code == 0, quiet.output + info.output
    ingested = [
        {x["item"]: x for x in json.loads(result.output)["lines"]} for result in (quiet, info)
    ]
    (before,) = [x for x in ingested[0].values() if x["item"].startswith("logs ingested")]
    (after,) = [x for x in ingested[1].values() if x["item"].startswith("logs ingested")]
    assert after["quantity"] - before["quantity"] == pytest.approx(0.27801, rel=1e-4)
    assert after["usd"] - before["usd"] == pytest.approx(0.1390, abs=1e-4)
    assert after["item"].endswith("invocation lines)")
    assert not before["item"].endswith("invocation lines)")


@pytest.mark.parametrize(
    "arguments",
    [
        pytest.param(["--queues", "0"], id="no-queues"),
        pytest.param(["--events-per-second", "nan"], id="nan-rate"),
        pytest.param(["--events-per-second", "-1"], id="negative-rate"),
        pytest.param(["--interval", "inf"], id="infinite-interval"),
        pytest.param(["--log-retention-days", "99999999999"], id="retention-beyond-ten-years"),
    ],
)
def test_cost_command_refuses_a_bad_input(arguments: list[str]) -> None:
    result = CliRunner().invoke(app, ["cost", *arguments])
    assert result.exit_code == 2, result.output


def test_every_price_names_the_pages_it_was_checked_against() -> None:
    # GIVEN the pinned table and its sources
    fields = {f.name for f in dataclasses.fields(Prices)} - {"region"}
    # THEN every price has an entry; these four have no page that states them
    assert set(PRICE_SOURCES) == fields
    assert {
        "dynamodb_pitr_gb_month",
        "put_metric_data_per_thousand",
        "glue_flex_dpu_hour",
        "firehose_per_gb",
    } == UNVERIFIED
    assert all(
        source.url.startswith(("http://", "https://"))
        for found in PRICE_SOURCES.values()
        for source in found
    )


@pytest.mark.parametrize(
    ("interval", "sla", "per_tick", "jump_ticks", "billed"),
    [
        pytest.param(10, 30.0, True, True, True, id="10s-tick-sla30"),
        pytest.param(10, 300.0, True, True, False, id="sla-past-the-reach"),
        pytest.param(60, 30.0, True, True, False, id="60s-no-tick-queue"),
        pytest.param(10, 30.0, False, True, False, id="loop-mode"),
        pytest.param(10, 30.0, True, False, False, id="jump-ticks-off"),
    ],
)
def test_jump_lines_are_billed_where_jump_ticks_exist(
    interval: int, sla: float, per_tick: bool, jump_ticks: bool, billed: bool
) -> None:
    """Jump ticks need JumpTicks, the tick queue (tick mode under 60 s) and an SLA within
    L + I."""
    workload = Workload(queues=1, interval_seconds=float(interval), sla_seconds=sla)
    shape = replace(SHAPE, evaluate_per_tick=per_tick, jump_ticks=jump_ticks)
    lines = usage(workload, shape, US_EAST_1)
    jumps = [x for x in lines if x.item.startswith(("jump lines", "jump ticks"))]
    assert bool(jumps) is billed


def test_jump_lines_worked_by_hand() -> None:
    """One busy queue at 10 s, 0.3 events/s. The line rides in the STATE item each tick writes
    anyway. Per (queue, batch): a GetItem of the 858-byte STATE item (0.5 read units) and a
    consistent Query of 10 counter rows (1.2 KB: 1 unit). Per jump tick (20 an hour, 14,600 a
    month): the claim and the tick's STATE write (1 unit each), and its reads (0.5 + 1 + 0.5)."""
    workload = Workload(queues=1, interval_seconds=10.0, sla_seconds=30.0)
    shape = replace(SHAPE, evaluate_per_tick=True, jump_ticks=True)
    lines = usage(workload, shape, US_EAST_1)
    writes = next(x for x in lines if x.item.startswith("jump ticks (assumed"))
    assert writes.quantity == pytest.approx(2 * 14_600)
    assert writes.usd == pytest.approx(29_200 / 1e6 * 0.625)
    reads = next(x for x in lines if x.item.startswith("jump lines: a STATE GetItem"))
    rates = ingest_rates(
        1,
        0.3,
        flush_seconds=shape.producer_flush_seconds,
        window_seconds=shape.record_window_seconds,
        batch_messages=shape.record_batch_messages,
    )
    assert reads.quantity == pytest.approx(rates.queue_batches * 2_628_000 * 1.5 + 2.0 * 14_600)
    sqs = next(x for x in lines if x.item.startswith("jump ticks: a send"))
    assert sqs.quantity == pytest.approx(2 * 14_600)
