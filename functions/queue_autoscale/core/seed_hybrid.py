"""Seeds 000 and 001 taken literally, so the difference from `hybrid` is visible and testable.

- steady: Little's Law, lambda * S workers (runs the fleet at rho = 1);
- trend: forecast lambda * S;
- drain: backlog / (time remaining / S), ignoring arrivals during that time; from 80% SLA
  usage times the safety margin rounded to two decimals as the seed's worked examples print it
  (1.23x); at breach, max_workers at once;
- seed 000's three patterns, as it writes them:
  - cascade buffer: when the drain rate of the last five depth samples predicts a breach within
    two minutes (the queue will not empty before the oldest job reaches the SLA), the drain
    term x 1.5;
  - gradual escalation: the drain term x min(2, 1 + 0.1 x consecutive earlier ticks at >= 80 %
    usage), so a first high tick is the seed's worked examples unchanged;
  - post-breach recovery: for a stabilization window after a tick in breach, at least
    0.8 x max_workers (the seed leaves "recently" open; we take the stabilization window);
- one 60 s cooldown for both directions; min/max; nothing else.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from queue_autoscale.core.decision import build_decision, hold_on_bad_inputs, next_state
from queue_autoscale.core.drain import WARNING_USAGE, safety_margin
from queue_autoscale.core.measures import Measures, input_problems, measure
from queue_autoscale.core.models import (
    Constraint,
    ControllerState,
    Evaluation,
    QueueSettings,
    QueueSnapshot,
    Terms,
    TrendModel,
    Winner,
)
from queue_autoscale.core.queueing import bounded_workers
from queue_autoscale.core.text import n_workers
from queue_autoscale.core.trend import linear_forecast_rate

POLICY = "seed-hybrid"
COOLDOWN_SECONDS = 60.0
"""Seed 001's global `scaling.cooldown_seconds`."""
CASCADE_HORIZON_SECONDS = 120.0
"""A breach predicted within this many seconds adds the cascade buffer (seed 000)."""
CASCADE_BUFFER = 1.5
DRAIN_RATE_SAMPLES = 5
"""Depth samples the seed's drain rate spans (the last five)."""
ESCALATION_STEP = 0.1
"""Per consecutive tick at >= 80 % SLA usage, up to ESCALATION_CAP."""
ESCALATION_CAP = 2.0
RECOVERY_SHARE = 0.8
"""After a breach, at least this share of max_workers for the recovery period."""
RECOVERY_SECONDS = 300.0
"""The recovery period after a breach, s (seed 000 names none; five minutes, as KEDA's and
HPA's default scale-down stabilization window)."""


def seed_drain_rate(depths: Sequence[int], interval_seconds: float) -> float:
    """Seed 000's drain rate, jobs/s: (first - last) of the last five depths over five sample
    intervals (its span counts the samples, not the gaps); 0 when the queue did not shrink."""
    if len(depths) < 2:
        return 0.0
    recent = depths[-DRAIN_RATE_SAMPLES:]
    return max(0.0, (recent[0] - recent[-1]) / (len(recent) * interval_seconds))


def predict_breach_seconds(
    visible: int, oldest_age_seconds: float, drain_rate: float, sla_seconds: float
) -> float | None:
    """Seed 000's predicted breach: None when it cannot tell (no drain, nothing waiting) or the
    queue empties first; else the seconds left to the SLA (<= 0: breaching now)."""
    if drain_rate <= 0 or visible == 0:
        return None
    to_empty = visible / drain_rate
    to_breach = sla_seconds - oldest_age_seconds
    if to_empty < to_breach:
        return None
    return float(math.ceil(to_breach))


def escalation(high_usage_ticks: int) -> float:
    """Seed 000's escalation factor after this many consecutive ticks at >= 80 % usage."""
    return min(ESCALATION_CAP, 1.0 + high_usage_ticks * ESCALATION_STEP)


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
    m = measure(snapshot, settings)
    problems = input_problems(snapshot, settings, now)
    if problems:
        return hold_on_bad_inputs(snapshot, settings, state, now, m, problems, POLICY)
    per_worker = m.mean_job_seconds / settings.worker_concurrency
    forecast = linear_forecast_rate(state.samples, m.arrival_rate, now, settings, model)
    high = state.high_usage_ticks + 1 if m.sla_usage >= WARNING_USAGE else 0
    drain = seed_drain(m, settings)
    depths = [s.visible for s in state.samples[-(DRAIN_RATE_SAMPLES - 1) :]] + [m.visible]
    rate = seed_drain_rate(depths, settings.evaluation_interval_seconds)
    breach_in = predict_breach_seconds(m.visible, m.oldest_age_seconds, rate, settings.sla_seconds)
    patterns: list[str] = []
    if breach_in is not None and breach_in <= CASCADE_HORIZON_SECONDS and drain > 0:
        drain = math.ceil(drain * CASCADE_BUFFER - 1e-9)
        patterns.append(f"breach predicted in {breach_in:.0f} s: cascade buffer x{CASCADE_BUFFER}")
    if high > 1 and drain > 0:  # the factor of the ticks before this one
        drain = math.ceil(drain * escalation(high - 1) - 1e-9)
        patterns.append(f"{high} ticks at >= 80% usage: escalation x{escalation(high - 1):.1f}")
    terms = Terms(
        steady=bounded_workers(m.arrival_rate * per_worker, settings.max_workers),
        trend=bounded_workers(forecast * per_worker, settings.max_workers),
        drain=min(drain, settings.max_workers),
    )
    raw = max(terms.steady, terms.trend, terms.drain)
    winner = Winner.NONE
    for name in (Winner.STEADY, Winner.TREND, Winner.DRAIN):
        if raw > 0 and getattr(terms, name.value) == raw:
            winner = name
            break
    why = f"{winner} won: max(steady {terms.steady}, trend {terms.trend}, drain {terms.drain})"
    if patterns:
        why += " (" + "; ".join(patterns) + ")"
    steps: list[tuple[Constraint, str]] = []
    target = min(max(raw, settings.min_workers), settings.max_workers)
    breached_at = now if m.sla_usage >= 1.0 else state.last_breach_at
    if breached_at is not None and now - breached_at <= RECOVERY_SECONDS:
        floor = math.ceil(settings.max_workers * RECOVERY_SHARE - 1e-9)
        if target < floor:
            steps.append(
                (
                    Constraint.POST_BREACH_RECOVERY,
                    f"post-breach recovery: at least {n_workers(floor)} (80% of max) for "
                    f"{RECOVERY_SECONDS:g} s after the breach at "
                    f"{breached_at:.0f}",
                )
            )
            target = floor
    last = max(state.last_scale_up_at or -math.inf, state.last_scale_down_at or -math.inf)
    if target != m.current and now - last < COOLDOWN_SECONDS:
        wait = COOLDOWN_SECONDS - (now - last)
        steps.append((Constraint.COOLDOWN, f"cooldown: {wait:.0f} s left"))
        target = m.current
    decision = build_decision(
        snapshot=snapshot,
        settings=settings,
        now=now,
        measures=m,
        terms=terms,
        raw=raw,
        winner=winner,
        forecast=forecast,
        target=target,
        why=why,
        steps=steps,
        policy=POLICY,
    )
    seed_state = {"high_usage_ticks": high, "last_breach_at": breached_at}
    return Evaluation(decision, next_state(state, settings, now, m, raw, decision, seed_state))
