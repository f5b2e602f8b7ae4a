"""The decision record's JSON: enums inside, the same plain words outside."""

from __future__ import annotations

import json

import pytest

from queue_autoscale.core import Constraint, ControllerState, Winner, decision_to_dict
from queue_autoscale.core.records import decision_from_dict
from tests.unit.core.builders import NOW, decide_default, settings, snapshot


def capped_drain() -> dict[str, object]:
    """A drain decision capped at max_workers, as the decision log writes it: 3,000 jobs
    waiting, the oldest 20 s of a 60 s SLA, on 20 busy workers at 20 jobs/s (the steady state
    asks 21): picking them up by their deadlines takes more than the cap of 40 workers."""
    snap = snapshot(
        visible=3000,
        oldest_age_seconds=20.0,
        arrival_rate=20.0,
        running=20,
        desired=20,
        in_flight=20,
        completion_rate=20.0,
    )
    cfg = settings(max_workers=40, sla_seconds=60.0, provisioning_lead_seconds=30.0)
    decision = decide_default(snap, cfg, ControllerState("jobs"), NOW).decision
    assert decision.winner is Winner.DRAIN
    assert decision.constraints == (Constraint.MAX_WORKERS,)
    loaded: dict[str, object] = json.loads(json.dumps(decision_to_dict(decision)))
    return loaded


def test_json_keeps_the_plain_words() -> None:
    record = capped_drain()
    assert record["winner"] == "drain"
    assert record["constraints"] == ["max_workers"]
    assert record["oldest_age_source"] == "given"
    # plain strings in the dict, not enum members a stricter encoder might refuse
    idle = decide_default(snapshot(), settings(), ControllerState("jobs"), NOW).decision
    raw = decision_to_dict(idle)
    assert type(raw["winner"]) is str and type(raw["oldest_age_source"]) is str


def test_a_logged_record_reads_back_as_enums() -> None:
    decision = decision_from_dict(capped_drain())
    assert decision.winner is Winner.DRAIN
    assert decision.constraints == (Constraint.MAX_WORKERS,)


def test_an_unknown_code_is_rejected_by_name() -> None:
    record = capped_drain()
    record["constraints"] = ["max_workers", "bogus_cap"]
    with pytest.raises(ValueError, match="bogus_cap"):
        decision_from_dict(record)
