"""The pure decision core: stdlib only, no boto3, no I/O, no clock reads (`now` is passed in)."""

from __future__ import annotations

from collections.abc import Callable

from queue_autoscale.core.counters import (
    CounterRow,
    Rates,
    oldest_age,
    pickup_seconds,
    window_rates,
)
from queue_autoscale.core.measures import Measures, measure
from queue_autoscale.core.models import (
    DEFAULT_EVALUATION_INTERVAL_SECONDS,
    Action,
    AgeSource,
    Constraint,
    ControllerState,
    Decision,
    Evaluation,
    QueueSettings,
    QueueSnapshot,
    Sample,
    Terms,
    TrendModel,
    Urgency,
    Winner,
)
from queue_autoscale.core.predictive import decide_predictive
from queue_autoscale.core.queueing import (
    erlang_c,
    load_ratio,
    load_states,
    servers_for_sla,
    service_rate,
    urgency_for,
    wait_exceeds_probability,
    workers_for_sla,
)
from queue_autoscale.core.records import decision_to_dict
from queue_autoscale.core.seed_hybrid import decide_seed_hybrid
from queue_autoscale.core.snapshot import (
    DepthReading,
    FleetReading,
    OldestAge,
    RateWindows,
    Readings,
    build_snapshot,
)
from queue_autoscale.core.state import (
    model_from_dict,
    model_to_dict,
    state_from_dict,
    state_to_dict,
)

Policy = Callable[
    [QueueSnapshot, QueueSettings, ControllerState, float, TrendModel | None], Evaluation
]
"""A pure policy: (snapshot, settings, state, now, model) -> decision and next state."""

POLICIES: dict[str, Policy] = {
    "seed-hybrid": decide_seed_hybrid,
    "predictive": decide_predictive,
}
DEFAULT_POLICY = "predictive"
"""The policy the controller runs when none is named (a key of `POLICIES`)."""

__all__ = [
    "DEFAULT_EVALUATION_INTERVAL_SECONDS",
    "DEFAULT_POLICY",
    "POLICIES",
    "Action",
    "AgeSource",
    "Constraint",
    "ControllerState",
    "CounterRow",
    "Decision",
    "DepthReading",
    "Evaluation",
    "FleetReading",
    "Measures",
    "OldestAge",
    "Policy",
    "QueueSettings",
    "QueueSnapshot",
    "RateWindows",
    "Rates",
    "Readings",
    "Sample",
    "Terms",
    "TrendModel",
    "Urgency",
    "Winner",
    "build_snapshot",
    "decide_predictive",
    "decide_seed_hybrid",
    "decision_to_dict",
    "erlang_c",
    "load_ratio",
    "load_states",
    "measure",
    "model_from_dict",
    "model_to_dict",
    "oldest_age",
    "pickup_seconds",
    "servers_for_sla",
    "service_rate",
    "state_from_dict",
    "state_to_dict",
    "urgency_for",
    "wait_exceeds_probability",
    "window_rates",
    "workers_for_sla",
]
