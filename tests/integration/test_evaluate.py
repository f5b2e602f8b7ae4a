"""evaluate against an AWS endpoint: backlog -> desiredCount, dry-run, metrics, state race."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from queue_autoscale.adapters.dynamodb import LoadTable, counter_pk, second_sk
from queue_autoscale.adapters.s3 import decode_jsonl_gz
from queue_autoscale.config import parse_config
from queue_autoscale.constants import (
    EVENT_SOURCE,
    LOGGED_ONLY_METRICS,
    QUEUE_METRICS,
    SILENT_WHEN_ZERO_METRICS,
)
from queue_autoscale.core import DEFAULT_POLICY, POLICIES, AgeSource, ControllerState
from queue_autoscale.handlers import evaluate
from queue_autoscale.settings import EvaluateSettings
from tests.integration.conftest import emf_documents, json_lines
from tests.unit.core.builders import snapshot as build

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("moto")]

NOW = 1_763_000_000.0
"""2025-11-13T02:13:20Z, the controller's clock in these tests."""
SECOND = int(NOW)


class World:
    """One queue, its ECS service, the load table, archive and a decision-event sink."""

    def __init__(
        self, kit: Any, clients: Any, environ: Any, running: int, **overrides: Any
    ) -> None:
        kit.require_ecs()
        self.kit = kit
        self.clients = clients
        self.environ = environ
        self.queue = kit.name("orders")
        self.queue_url = kit.queue("orders")
        self.cluster = kit.name("workers")
        kit.service(self.cluster, self.queue, running)
        self.table = kit.load_table()
        self.bucket = kit.bucket()
        self.sink_url = kit.event_sink("decisions", {"source": [EVENT_SOURCE]})
        self.config = {"queue": self.queue, "cluster": self.cluster, **overrides}
        self.counters = LoadTable(clients.dynamodb, self.table)

    def runtime(self, *extra_queues: dict[str, Any], dry_run: bool = False) -> Any:
        # the evaluate function's environment as template.yaml sets it, with this world's names
        settings = EvaluateSettings.from_environ(
            self.environ(
                "EvaluateFunction",
                QueuesConfig=json.dumps([self.config, *extra_queues]),
                LoadTable=self.table,
                ArchiveBucket=self.bucket,
                EvaluationIntervalSeconds="30",
                DryRun="true" if dry_run else "false",
            )
        )
        runtime = evaluate.build_runtime(settings, self.clients, clock=lambda: NOW)
        evaluate.set_runtime(runtime)
        return runtime

    def send_jobs(self, count: int) -> None:
        for first in range(0, count, 10):
            self.clients.sqs.send_message_batch(
                QueueUrl=self.queue_url,
                Entries=[
                    {"Id": str(i), "MessageBody": f"job {first + i}"}
                    for i in range(min(10, count - first))
                ],
            )

    def count(self, seconds: range, **counts: int) -> None:
        """Seed counter items as record_events leaves them (25 per BatchWriteItem, for speed)."""
        items = [
            {
                "pk": {"S": counter_pk(self.queue)},
                "sk": {"S": second_sk(second)},
                "expires_at": {"N": str(second + 86_400)},
                **{name: {"N": str(value)} for name, value in counts.items()},
            }
            for second in seconds
        ]
        for first in range(0, len(items), 25):
            requests = [{"PutRequest": {"Item": item}} for item in items[first : first + 25]]
            answer = self.clients.dynamodb.batch_write_item(RequestItems={self.table: requests})
            assert not answer.get("UnprocessedItems")

    def desired(self) -> int:
        answer = self.clients.ecs.describe_services(cluster=self.cluster, services=[self.queue])
        return int(answer["services"][0]["desiredCount"])

    def decision_events(self, count: int) -> list[dict[str, Any]]:
        """The events delivered to the sink, polled until `count` arrived (EventBridge
        delivers after PutEvents returns), plus any that arrive within a second more."""
        messages = self.kit.receive_until(self.sink_url, count)
        messages += self.kit.receive_until(self.sink_url, 1, timeout=1.0)
        return [json.loads(m["Body"]) for m in messages]


@pytest.fixture
def reset_runtime() -> Iterator[None]:
    yield
    evaluate.set_runtime(None)


def backlog_world(kit: Any, clients: Any, environ: Any) -> World:
    """120 jobs waiting, all queued in the last 20 s (6/s), 1 s jobs, 2 workers."""
    world = World(kit, clients, environ, running=2, max_workers=50)
    world.send_jobs(120)
    world.count(range(SECOND - 20, SECOND), queued=6)
    world.count(range(SECOND - 300, SECOND - 20), completed=1, busy_ms=1_000)
    return world


def expected_backlog_target(world: World) -> int:
    """The core's answer for the snapshot the backlog world should produce (built by hand)."""
    settings = parse_config([world.config])[0].settings(30.0)
    snapshot = build(
        queue=world.queue,
        taken_at=NOW,
        visible=120,
        in_flight=0,
        oldest_age_seconds=20.0,  # 6 jobs/s over the last 20 s add up to the 120 visible
        oldest_age_source=AgeSource.COUNTERS,
        arrival_rate=120 / 300,
        arrival_rate_short=120 / 60,
        # per-second counts of 6 for 20 s and 0 for 280 s: variance 36 * 20 / 300 - 0.4^2 =
        # 2.24 over the mean 0.4
        arrival_dispersion=5.6,
        mean_job_seconds=1.0,
        completion_rate=280 / 300,
        running=2,
        desired=2,
    )
    decide = POLICIES[DEFAULT_POLICY]
    return decide(snapshot, settings, ControllerState(queue=world.queue), NOW, None).decision.target


def test_a_backlog_scales_the_service_and_a_broken_queue_does_not_stop_it(
    kit: Any,
    clients: Any,
    function_environ: Any,
    lambda_context: Any,
    reset_runtime: Any,
    emf_output: Any,
) -> None:
    # GIVEN a backlogged queue and a second configured queue that does not exist
    world = backlog_world(kit, clients, function_environ)
    missing = {"queue": kit.name("ghost"), "cluster": world.cluster}
    world.runtime(missing)
    expected = expected_backlog_target(world)
    # By hand: the plan is the fewest workers whose predicted share of late jobs, among those
    # due within lead + interval + SLA (120 s), fits the 95 % target's 5 % budget. The 2
    # running workers only keep pace with the 2 jobs/s arriving (short window), so the 120
    # waiting wait for workers ordered now: 6 workers leave 5.06 % of those jobs late, 7 leave
    # 1.25 % (the same world as tests/unit/handlers/test_evaluate_handler.py).
    assert expected == 7

    # WHEN one tick runs
    answer = evaluate.handler({"once": True}, lambda_context)

    # THEN the service's desiredCount is the core's target for the measured snapshot
    assert world.desired() == expected
    ours = next(d for d in answer["decisions"] if d["queue"] == world.queue)
    assert (ours["current"], ours["target"], ours["action"], ours["applied"]) == (
        2,
        expected,
        "up",
        True,
    )
    # AND the broken queue held and reported its errors without stopping the good one
    ghost = next(d for d in answer["decisions"] if d["queue"] == missing["queue"])
    assert ghost["applied"] is False
    assert ghost["errors"], "the missing queue and service must be reported"
    # AND the tick's fleet metrics count them, for the controller-errors alarm
    (fleet,) = [doc for doc in emf_output() if "Stack" in doc]
    assert fleet["QueueErrors"][0] >= len(ghost["errors"])
    # AND the decision events went out: a decision per queue and one scaling event
    kinds = sorted(event["detail-type"] for event in world.decision_events(3))
    assert kinds.count("ScalingDecisionMade") == 2
    assert kinds.count("WorkersScaled") == 1
    # AND the decision log holds both queues, with what the oldest-age rule chose
    keys = kit.archive_keys(world.bucket, "decisions/dt=2025-11-13/")
    assert len(keys) == 1
    log = decode_jsonl_gz(clients.s3.get_object(Bucket=world.bucket, Key=keys[0])["Body"].read())
    line = next(record for record in log if record["queue"] == world.queue)
    assert (line["oldest_age_seconds"], line["oldest_age_source"], line["running"]) == (
        20.0,
        "counters",
        2,
    )
    assert line["arrival_rate"] == 2.0


def test_dry_run_decides_but_changes_nothing(
    kit: Any,
    clients: Any,
    function_environ: Any,
    lambda_context: Any,
    reset_runtime: Any,
) -> None:
    # GIVEN the backlogged queue and DRY_RUN=true
    world = backlog_world(kit, clients, function_environ)
    world.runtime(dry_run=True)

    # WHEN one tick runs
    answer = evaluate.handler({"once": True}, lambda_context)

    # THEN the decision says up, but the service is untouched and no scaling event went out
    (decision,) = answer["decisions"]
    assert (decision["action"], decision["applied"], decision["dry_run"]) == ("up", False, True)
    assert decision["target"] == expected_backlog_target(world)
    assert world.desired() == 2
    kinds = [event["detail-type"] for event in world.decision_events(1)]
    assert "WorkersScaled" not in kinds
    assert "ScalingDecisionMade" in kinds


def test_seed_002_underloaded_fleet_publishes_load_ratio_one_half(
    kit: Any,
    clients: Any,
    function_environ: Any,
    lambda_context: Any,
    reset_runtime: Any,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN seed 002's case: 10 jobs/s arrive and complete, 1 s jobs, 20 workers, no backlog
    world = World(kit, clients, function_environ, running=20, max_workers=50)
    # (each second's 10 starts waited 0.2 s on average: within the SLA)
    world.count(
        range(SECOND - 300, SECOND),
        queued=10,
        started=10,
        pickup_ms=2_000,
        completed=10,
        busy_ms=10_000,
    )
    world.runtime()
    # AND the stack's PerQueueMetrics="true" (the template passes it as PER_QUEUE_METRICS)
    monkeypatch.setenv("PER_QUEUE_METRICS", "true")

    # WHEN one tick runs
    capsys.readouterr()
    answer = evaluate.handler({"once": True}, lambda_context)

    # THEN the tick's fleet line carries the queue's values (the highest of one queue), every one
    # a plain field: the load ratio 0.5 is under the template's OverloadingThreshold (0.8), the
    # fleet usage 0.4 under its FleetUsageThreshold (0.8), the rest 0, and the stack has no
    # dashboard, so no alarm could tell a datapoint from none; the line is still printed, the
    # log event the controller-silent alarm counts
    out = capsys.readouterr().out
    documents = emf_documents(out)
    (fleet,) = json_lines(out, "Stack")
    assert "_aws" not in fleet
    assert fleet["MaxLoadRatio"] == pytest.approx(0.5)
    assert fleet["MaxFleetUsage"] == pytest.approx(20 / 50)
    assert (fleet["MaxSlaUsage"], fleet["QueueErrors"], fleet["UndecidedQueues"]) == (0, 0, 0)
    # AND the published metrics carry the measured values under their declared names
    (document,) = [doc for doc in documents if doc.get("Queue") == world.queue]
    declared = document["_aws"]["CloudWatchMetrics"][0]
    assert declared["Namespace"] == "QueueAutoscale"
    assert declared["Dimensions"] == [["Queue"]]
    names = {metric["Name"] for metric in declared["Metrics"]}
    assert names <= set(QUEUE_METRICS) - LOGGED_ONLY_METRICS
    # the zeros every reader takes as missing stay plain fields (no metric-month billed)
    zeros = {"OldestJobAgeSeconds", "BacklogPerInstance", "SlaUsage", "ControllerErrors"}
    assert zeros <= SILENT_WHEN_ZERO_METRICS
    assert set(QUEUE_METRICS) - LOGGED_ONLY_METRICS - names == zeros | {"PredictedPickupSeconds"}
    assert document["LoadRatio"] == [pytest.approx(0.5)]
    assert document["ArrivalRate"] == [pytest.approx(10.0)]
    assert document["ServiceRate"] == [pytest.approx(1.0)]
    assert document["CurrentWorkers"] == [20.0]
    assert document["FleetUsage"] == [pytest.approx(20 / 50)]  # the fleet-near-max alarm's
    assert document["OldestJobAgeSeconds"] == 0.0
    assert document["BacklogPerInstance"] == 0.0
    assert document["RealizedCompliance"] == 1.0  # a plain field of the line, not a metric
    assert document["SlaUsage"] == 0.0
    assert document["ControllerErrors"] == 0.0
    (decision,) = answer["decisions"]
    assert document["TargetWorkers"] == [float(decision["target"])]


def test_a_lost_state_race_backs_off_without_scaling(
    kit: Any,
    clients: Any,
    function_environ: Any,
    lambda_context: Any,
    reset_runtime: Any,
) -> None:
    # GIVEN the backlogged queue and another controller that writes the state first
    world = backlog_world(kit, clients, function_environ)
    runtime = world.runtime()
    rival = LoadTable(clients.dynamodb, world.table)

    class RacedTable(LoadTable):
        def write_state(self, queue: str, state: Any, expected_version: int) -> int:
            rival.write_state(queue, {"queue": queue, "samples": []}, expected_version)
            return super().write_state(queue, state, expected_version)

    runtime.table = RacedTable(clients.dynamodb, world.table)

    # WHEN one tick runs
    answer = evaluate.handler({"once": True}, lambda_context)

    # THEN this controller did not act, and the rival's state stands
    (decision,) = answer["decisions"]
    assert (decision["conflict"], decision["applied"]) == (True, False)
    assert world.desired() == 2
    stored = rival.read_documents([world.queue])[world.queue][0]
    assert stored is not None
    assert (stored["version"], stored["samples"]) == (1, [])
