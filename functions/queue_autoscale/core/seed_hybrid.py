"""Seeds 000 and 001 taken literally, so the difference from `hybrid` is visible and testable.

- steady: Little's Law, lambda * S workers (runs the fleet at rho = 1);
- trend: forecast lambda * S;
- drain: backlog / (time remaining / S), ignoring arrivals during that time; from 80% SLA
  usage times the safety margin rounded to two decimals as the seed's worked examples print it
  (1.23x); at breach, max_workers at once;
- one 60 s cooldown for both directions; min/max; nothing else.
"""

from __future__ import annotations

import math

from queue_autoscale.core.drain import WARNING_USAGE, safety_margin
from queue_autoscale.core.hybrid import build_decision, hold_on_bad_inputs, next_state
from queue_autoscale.core.measures import Measures, input_problems, measure
from queue_autoscale.core.models import (
    ControllerState,
    Evaluation,
    QueueSettings,
    QueueSnapshot,
    Terms,
    TrendModel,
)
from queue_autoscale.core.queueing import bounded_workers
from queue_autoscale.core.trend import forecast_rate

POLICY = "seed-hybrid"
COOLDOWN_SECONDS = 60.0
"""Seed 001's global `scaling.cooldown_seconds`."""


def seed_drain(m: Measures, settings: QueueSettings) -> int:
    """Seed 000's backlog drain with its buffer, seed-literal."""
    if m.visible <= 0:
        return 0
    remaining = settings.sla_seconds - m.oldest_age_seconds
    if remaining <= 0:
        return settings.max_workers
    workers = bounded_workers(m.visible / remaining / m.service_rate, settings.max_workers)
    if m.sla_usage >= WARNING_USAGE:
        workers = math.ceil(workers * round(safety_margin(m.sla_usage), 2) - 1e-9)
    return workers


def decide_seed_hybrid(
    snapshot: QueueSnapshot,
    settings: QueueSettings,
    state: ControllerState,
    now: float,
    model: TrendModel | None = None,
) -> Evaluation:
    """One tick of the seed's hybrid for one queue."""
    m = measure(snapshot, settings, now)
    problems = input_problems(snapshot, settings, now)
    if problems:
        return hold_on_bad_inputs(snapshot, settings, state, now, m, problems, POLICY)
    per_worker = m.mean_job_seconds / settings.worker_concurrency
    forecast = forecast_rate(
        state.samples,
        m.arrival_rate,
        now,
        settings.forecast_horizon_seconds,
        settings.trend_window_seconds,
        model,
    )
    terms = Terms(
        steady=bounded_workers(m.arrival_rate * per_worker, settings.max_workers),
        trend=bounded_workers(forecast * per_worker, settings.max_workers),
        drain=seed_drain(m, settings),
    )
    raw = max(terms.steady, terms.trend, terms.drain)
    winner = "none"
    for name in ("steady", "trend", "drain"):
        if raw > 0 and getattr(terms, name) == raw:
            winner = name
            break
    why = f"{winner} won: max(steady {terms.steady}, trend {terms.trend}, drain {terms.drain})"
    steps: list[tuple[str, str]] = []
    target = min(max(raw, settings.min_workers), settings.max_workers)
    last = max(state.last_scale_up_at or -math.inf, state.last_scale_down_at or -math.inf)
    if target != m.current and now - last < COOLDOWN_SECONDS:
        steps.append(("cooldown", f"cooldown: {COOLDOWN_SECONDS - (now - last):.0f} s left"))
        target = m.current
    decision = build_decision(
        snapshot, settings, now, m, terms, raw, winner, target, why, steps, POLICY, forecast
    )
    return Evaluation(decision, next_state(state, settings, now, m, raw, decision))
