"""The decision record's JSON: enums inside, the same plain words outside."""

from __future__ import annotations

import json

import pytest

from queue_autoscale.core import Constraint, ControllerState, Winner, decide, decision_to_dict
from queue_autoscale.core.records import decision_from_dict
from tests.unit.core.builders import NOW, settings, snapshot


def capped_drain() -> dict[str, object]:
    """A drain decision capped at max_workers, as the decision log writes it."""
    snap = snapshot(visible=5000, oldest_age_seconds=20.0, arrival_rate=50.0)
    decision = decide(snap, settings(max_workers=12), ControllerState("jobs"), NOW).decision
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
    raw = decision_to_dict(decide(snapshot(), settings(), ControllerState("jobs"), NOW).decision)
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
