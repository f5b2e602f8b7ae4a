"""`status`'s pure part: the live view built from decision records, state and events."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from queue_autoscale.adapters.cloudwatch import AlarmState, parse_alarms
from queue_autoscale.config import parse_config
from queue_autoscale.operator import live, views

NOW = 1_790_000_000.0
(ORDERS,) = parse_config({"queue": "orders", "sla_seconds": 30, "percentile": 0.95})


def started(queue: str, at: float, pickup_ms: int | None, event_id: str) -> dict[str, object]:
    return {
        "type": "started",
        "queue": queue,
        "job_id": event_id,
        "at": int(at * 1000),
        "pickup_ms": pickup_ms,
        "event_id": event_id,
    }


@pytest.mark.parametrize(
    ("events", "expected"),
    [
        pytest.param([], (None, 0), id="no-jobs-is-unknown-not-100%"),
        pytest.param(
            [started("orders", NOW - 60, 1_000, "a"), started("orders", NOW - 50, 31_000, "b")],
            (0.5, 2),
            id="one-of-two-late",
        ),
        pytest.param(
            [started("orders", NOW - 60, 30_000, "a")], (1.0, 1), id="exactly-the-sla-is-within"
        ),
        pytest.param(
            [started("orders", NOW - 60, 1_000, "a"), started("orders", NOW - 60, 1_000, "a")],
            (1.0, 1),
            id="redelivered-event-counts-once",
        ),
        pytest.param(
            [
                started("orders", NOW - 3_700, 99_000, "old"),
                started("emails", NOW - 10, 99_000, "other-queue"),
                started("orders", NOW - 10, None, "no-pickup"),
                {"type": "queued", "queue": "orders", "at": int(NOW * 1000), "event_id": "q"},
                started("orders", NOW - 10, 2_000, "kept"),
            ],
            (1.0, 1),
            id="only-this-queue's-started-jobs-in-the-hour",
        ),
    ],
)
def test_realized_compliance(events, expected) -> None:
    assert live.realized_compliance(events, "orders", 30.0, NOW - 3600, NOW) == expected


def test_latest_decision_per_queue_wins_by_time_and_skips_failed_records() -> None:
    records = [
        {"queue": "orders", "at": NOW - 10, "target": 3},
        {"queue": "orders", "at": NOW - 5, "target": 4},
        {"queue": "orders", "at": NOW - 1},  # a queue whose tick failed: no decision
        {"queue": "emails", "at": NOW - 20, "target": 1},
    ]
    latest = live.latest_decisions(records)
    assert latest["orders"]["target"] == 4 and latest["emails"]["target"] == 1


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        pytest.param(None, (None, None), id="no-state"),
        pytest.param({"last_set_desired": 3}, (None, None), id="never-scaled"),
        pytest.param(
            {"last_scale_up_at": NOW - 100, "last_scale_down_at": NOW - 50, "last_set_desired": 2},
            ("down to 2", NOW - 50),
            id="latest-move-wins",
        ),
        pytest.param(
            {"last_scale_up_at": NOW - 10, "last_set_desired": 7},
            ("up to 7", NOW - 10),
            id="up",
        ),
    ],
)
def test_last_action(state, expected) -> None:
    assert live.last_action(state) == expected


def decision(**changes: object) -> dict[str, object]:
    base: dict[str, object] = {
        "queue": "orders",
        "at": NOW - 12,
        "current": 2,
        "running": 2,
        "target": 5,
        "action": "up",
        "winner": "drain",
        "load_ratio": 1.25,
        "backlog_per_instance": 40.0,
        "oldest_age_seconds": 21.0,
        "sla_usage": 0.7,
        "urgency": "ELEVATED",
        "predicted_pickup_seconds": 18.5,
        "reason": "up 2 -> 5: drain won: 80 jobs waiting",
    }
    base.update(changes)
    return base


def test_build_status_and_the_view_fit_80_columns() -> None:
    alarms = [AlarmState("st-sla-breach", "ALARM", "threshold crossed", NOW - 30)]
    status = live.build_status(
        "st",
        NOW,
        [ORDERS],
        [decision()],
        {"orders": {"last_scale_up_at": NOW - 12, "last_set_desired": 5}},
        [started("orders", NOW - 30, 1_000, "a"), started("orders", NOW - 20, 45_000, "b")],
        False,
        alarms,
    )
    (queue,) = status.queues
    assert (queue.running, queue.target, queue.winner) == (2, 5, "drain")
    assert queue.last_action == "up to 5" and queue.compliance == 0.5
    assert status.to_dict()["queues"][0]["urgency"] == "ELEVATED"

    out = io.StringIO()
    Console(file=out, width=80, color_system=None).print(views.status_view(status))
    text = out.getvalue()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "2 running, target 5 (up; winning term: drain)" in text
    assert "21.0 s of a 30 s SLA (70% of it)" in text
    assert "50.0% of 2 jobs within 30 s (target 95%)" in text
    assert "up to 5, 12 s ago" in text
    assert "sla-breach" in text and "ALARM" in text


def test_each_fleet_alarm_names_the_queues_in_its_condition_now() -> None:
    # GIVEN four queues: one overloaded and breaching, one near its max with an error, one
    # healthy, one with no decision in the log; and the stack's fleet alarms as described
    queues = [parse_config({"queue": name, "sla_seconds": 30})[0] for name in "abcd"]
    decisions = [
        decision(queue="a", load_ratio=1.3, sla_usage=1.2, fleet_usage=0.5, errors=[]),
        decision(queue="b", load_ratio=0.5, sla_usage=0.1, fleet_usage=0.8, errors=["x"]),
        decision(queue="c", load_ratio=0.79, sla_usage=0.99, fleet_usage=0.1, errors=[]),
    ]
    alarms = [
        AlarmState("st-overloading", "ALARM", "", NOW, "MaxLoadRatio", 0.8),
        AlarmState("st-sla-breach", "ALARM", "", NOW, "MaxSlaUsage", 1.0),
        AlarmState("st-fleet-near-max", "OK", "", NOW, "MaxFleetUsage", 0.8),
        AlarmState("st-controller-errors", "OK", "", NOW, "QueueErrors", 1.0),
        AlarmState("st-queue-silent", "OK", "", NOW, "UndecidedQueues", 1.0),
        AlarmState("st-controller-silent", "OK", "", NOW, "Heartbeat", 1.0),
        AlarmState("st-function-errors", "OK", "", NOW),
    ]
    # WHEN the status is built
    status = live.build_status("st", NOW, queues, decisions, {}, [], False, alarms)
    # THEN each alarm names the queues whose latest decision meets its condition
    assert status.conditions == {
        "st-overloading": ("a",),
        "st-sla-breach": ("a",),
        "st-fleet-near-max": ("b",),
        "st-controller-errors": ("b",),
        "st-queue-silent": ("d",),
        "st-controller-silent": (),
        "st-function-errors": (),
    }
    assert status.to_dict()["conditions"]["st-overloading"] == ["a"]
    # AND the plain view says so in the alarm's row
    out = io.StringIO()
    Console(file=out, width=80, color_system=None).print(views.status_view(status))
    (row,) = [line for line in out.getvalue().splitlines() if "overloading" in line]
    assert row.split()[-1] == "a"
    assert views.named(("a", "b", "c", "d", "e")) == "a, b, c and 2 more"


def test_a_store_that_could_not_be_read_leaves_its_fields_unknown() -> None:
    status = live.build_status(
        "st", NOW, [ORDERS], None, None, None, False, None, ["decision log: AccessDenied"]
    )
    (queue,) = status.queues
    assert queue.target is None and queue.compliance is None and queue.last_action is None
    assert status.alarms is None and status.errors == ("decision log: AccessDenied",)
    out = io.StringIO()
    Console(file=out, width=80, color_system=None).print(views.status_view(status))
    assert "alarms: could not be read" in out.getvalue()
    assert "read error: decision log: AccessDenied" in out.getvalue()


def test_non_finite_numbers_are_null_in_json() -> None:
    status = live.build_status(
        "st", NOW, [ORDERS], [decision(load_ratio=float("inf"))], {}, [], False, []
    )
    assert status.to_dict()["queues"][0]["load_ratio"] is None


def test_parse_alarms_reads_states_and_rejects_nameless_alarms() -> None:
    from datetime import UTC, datetime

    from queue_autoscale.adapters.errors import MalformedResponse

    moment = datetime.fromtimestamp(NOW, UTC)
    parsed = parse_alarms(
        {
            "MetricAlarms": [
                {"AlarmName": "st-b", "StateValue": "OK", "StateUpdatedTimestamp": moment},
                {"AlarmName": "st-a", "StateValue": "ALARM", "StateReason": "why"},
            ]
        }
    )
    assert [(a.name, a.state, a.updated_at) for a in parsed] == [
        ("st-a", "ALARM", None),
        ("st-b", "OK", NOW),
    ]
    with pytest.raises(MalformedResponse):
        parse_alarms({"MetricAlarms": [{"StateValue": "OK"}]})


def test_watch_prints_each_refresh_in_a_log_until_interrupted(monkeypatch) -> None:
    from typer.testing import CliRunner

    from queue_autoscale.cli import app
    from queue_autoscale.operator import commands

    reads: list[float] = []

    def fake_read(stack, clients, now, queue):
        reads.append(now)
        return live.build_status(
            stack, NOW, [ORDERS], [decision(target=len(reads))], {}, [], False, []
        )

    sleeps: list[float] = []

    def fake_sleep(seconds: float) -> None:
        sleeps.append(seconds)
        if len(sleeps) == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(commands, "read_status", fake_read)
    regions: list[str | None] = []
    monkeypatch.setattr(
        commands.StackClients,
        "create",
        classmethod(lambda cls, region=None: regions.append(region)),
    )
    monkeypatch.setattr(commands, "pause", fake_sleep)

    answer = CliRunner().invoke(app, ["status", "--stack", "st", "--watch", "--every", "5"])
    as_json = CliRunner().invoke(
        app, ["status", "--stack", "st", "--json", "--region", "eu-west-1"]
    )

    assert answer.exit_code == 0, answer.output
    assert sleeps == [5.0, 5.0] and len(reads) == 3  # watch: two views, then Ctrl-C; json: one
    assert "target 1 (up" in answer.stdout and "target 2 (up" in answer.stdout
    assert json.loads(as_json.stdout)["queues"][0]["target"] == 3
    assert regions == [None, "eu-west-1"]  # the AWS config's region, then --region's


def test_decision_from_dict_inverts_decision_to_dict() -> None:
    from pathlib import Path

    from queue_autoscale.commands import explain_one
    from queue_autoscale.core import DEFAULT_POLICY, decision_to_dict
    from queue_autoscale.core.records import decision_from_dict

    examples = Path(__file__).resolve().parents[2] / "infra" / "examples"
    for name in ("seed000-ex4-breach", "seed001-spike-1002", "ecs-read-failed"):
        state = examples / f"{name}.state.json"
        decided = explain_one(
            examples / f"{name}.config.json",
            examples / f"{name}.snapshot.json",
            state if state.exists() else None,
            None,
            DEFAULT_POLICY,
        )
        record = decision_to_dict(decided)
        assert decision_to_dict(decision_from_dict(record)) == record
