"""The decision record as a JSON-safe dict (`explain --json`, the decision log, events)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from queue_autoscale.core.models import (
    Action,
    AgeSource,
    Constraint,
    Decision,
    Terms,
    Urgency,
    Winner,
)


def _finite(value: float | None) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return round(value, 6)


def decision_to_dict(decision: Decision) -> dict[str, Any]:
    """Every field of the decision; floats rounded to 6 places, non-finite ones as null."""
    return {
        "queue": decision.queue,
        "at": decision.at,
        "policy": decision.policy,
        "current": decision.current,
        "target": decision.target,
        "action": decision.action.value,
        "terms": {
            "steady": decision.terms.steady,
            "trend": decision.terms.trend,
            "drain": decision.terms.drain,
        },
        "raw_target": decision.raw_target,
        "winner": decision.winner.value,
        "reason": decision.reason,
        "constraints": [code.value for code in decision.constraints],
        "urgency": decision.urgency.value,
        "sla_usage": _finite(decision.sla_usage),
        "load_ratio": _finite(decision.load_ratio),
        "overloading": decision.overloading,
        "overloaded": decision.overloaded,
        "backlog_per_instance": _finite(decision.backlog_per_instance),
        "predicted_pickup_seconds": _finite(decision.predicted_pickup_seconds),
        "predicted_breach_seconds": _finite(decision.predicted_breach_seconds),
        "arrival_rate": _finite(decision.arrival_rate),
        "forecast_rate": _finite(decision.forecast_rate),
        "service_rate": _finite(decision.service_rate),
        "oldest_age_seconds": _finite(decision.oldest_age_seconds),
        "oldest_age_source": decision.oldest_age_source.value,
        "inputs_ok": decision.inputs_ok,
        "fleet_usage": _finite(decision.fleet_usage),
        "realized_compliance": _finite(decision.realized_compliance),
        "headroom": _finite(decision.headroom),
        "sla_seconds": decision.sla_seconds,
        "percentile": decision.percentile,
    }


def _float(value: Any) -> float:
    return float("nan") if value is None else float(value)


def decision_from_dict(record: Mapping[str, Any]) -> Decision:
    """The decision back from `decision_to_dict`'s form (a decision-log line); KeyError or
    ValueError name what is missing or wrong. Nulls of always-set floats read as NaN."""
    terms = record["terms"]
    return Decision(
        queue=str(record["queue"]),
        at=float(record["at"]),
        policy=str(record["policy"]),
        current=int(record["current"]),
        target=int(record["target"]),
        action=Action(record["action"]),
        terms=Terms(int(terms["steady"]), int(terms["trend"]), int(terms["drain"])),
        raw_target=int(record["raw_target"]),
        winner=Winner(record["winner"]),
        reason=str(record["reason"]),
        constraints=tuple(Constraint(code) for code in record["constraints"]),
        urgency=Urgency(record["urgency"]),
        sla_usage=_float(record["sla_usage"]),
        load_ratio=_float(record["load_ratio"]),
        overloading=bool(record["overloading"]),
        overloaded=bool(record["overloaded"]),
        backlog_per_instance=_float(record["backlog_per_instance"]),
        predicted_pickup_seconds=record["predicted_pickup_seconds"],
        predicted_breach_seconds=record["predicted_breach_seconds"],
        arrival_rate=_float(record["arrival_rate"]),
        forecast_rate=_float(record["forecast_rate"]),
        service_rate=_float(record["service_rate"]),
        oldest_age_seconds=_float(record["oldest_age_seconds"]),
        oldest_age_source=AgeSource(record["oldest_age_source"]),
        inputs_ok=bool(record["inputs_ok"]),
        fleet_usage=record.get("fleet_usage"),
        sla_seconds=record.get("sla_seconds"),
        percentile=record.get("percentile"),
        realized_compliance=record.get("realized_compliance"),
        headroom=float(record.get("headroom") or 0.0),
    )
