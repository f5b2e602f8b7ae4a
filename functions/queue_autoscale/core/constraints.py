"""The constraints after the sizing terms: poison guard, caps, floors, activation, and the
movement rules (cooldowns, the delayed off, the hold while orders start). DESIGN.md section 4.
Pure."""

from __future__ import annotations

import math
from typing import NamedTuple

from queue_autoscale.core.measures import Measures
from queue_autoscale.core.models import (
    Constraint,
    ControllerState,
    QueueSettings,
    QueueSnapshot,
    Terms,
)
from queue_autoscale.core.text import n_workers

POISON_FAILURE_RATIO = 0.5
"""A failure share at or above this (with work in flight) suspects poison messages."""
REVISIT_SECONDS = 300.0
"""How long after a provisioning lead a scale-out still reverses a scale-in, s: the bench's
flap (a scale-out within one lead plus 5 minutes of a scale-in, sim/scores.py `flaps`), the
churn a user sees as a task stopped and another started."""


class Step(NamedTuple):
    """One constraint that changed (or pinned) the target (a tuple: made on most ticks, and
    read as the (code, words) pair the decision record keeps)."""

    code: Constraint
    words: str


def bounds(
    raw: int,
    terms: Terms,
    m: Measures,
    snapshot: QueueSnapshot,
    state: ControllerState,
    settings: QueueSettings,
) -> tuple[int, list[Step], int]:
    """Caps and floors that hold whatever the fleet did before: the recommendation.

    Also returns what the stabilization window remembers: the sustained need, max(steady,
    trend) within min_workers and the caps. Not the drain term: the workers it adds clear a
    backlog and are not needed once it is gone (remembering them kept spike-sized fleets for a
    whole window). Not the in-flight floor: whenever every worker happens to be busy at a tick
    (often, at a high utilization) the window would record the current size and never let the
    fleet shrink.
    """
    steps: list[Step] = []
    target = raw
    if target > m.current and _poison_suspected(snapshot, state, m):
        target = _poison_hold(target, m, steps)
    cap = max_allowed(settings)
    if target > cap:
        limit = binding_cap(settings, cap)
        wanted = f"more than {cap}" if target == cap + 1 else str(target)
        steps.append(Step(limit, f"capped at {limit} {cap} (wanted {wanted})"))
        target = cap
    if target < settings.min_workers:
        steps.append(Step(Constraint.MIN_WORKERS, f"raised to min_workers {settings.min_workers}"))
        target = settings.min_workers
    remembered = min(max(terms.steady, terms.trend, settings.min_workers), cap)
    target = _activation(target, m, settings, cap, steps)
    busy = busy_workers(m, settings)
    if target < busy:
        busy = min(busy, cap)
        steps.append(
            Step(Constraint.IN_FLIGHT, f"kept {n_workers(busy)} busy with {m.in_flight} jobs")
        )
        target = busy
    return target, steps, remembered


def busy_workers(m: Measures, settings: QueueSettings) -> int:
    """Workers busy now, at most: the in-flight floor.

    A worker holds messages beyond its running jobs only while every slot is busy (the runtime
    starts a held message as soon as a slot frees), so a worker holding anything is busy, and
    busy workers are running ones: ceil(in flight / concurrency), never above the running
    tasks. Messages a worker prefetched are in flight too; without the running cap they
    counted as workers of their own, and more workers held more of them, which raised the
    floor again (the demo's quiet phase went 2 -> 4 -> 1 -> 2 within 15 s)."""
    return min(math.ceil(m.in_flight / settings.worker_concurrency), m.running)


def _poison_hold(target: int, m: Measures, steps: list[Step]) -> int:
    """The poison guard: no climbing past the current fleet (one worker for a waiting queue at
    zero), since more workers would only feed the DLQ; appends its step when it binds."""
    held = max(m.current, 1 if m.visible > 0 else 0)
    if held >= target:
        return target
    steps.append(
        Step(
            Constraint.POISON_GUARD,
            f"poison guard: jobs fail or stall while in flight, so not climbing "
            f"past {held} (more workers would only feed the DLQ)",
        )
    )
    return held


def _activation(
    target: int, m: Measures, settings: QueueSettings, cap: int, steps: list[Step]
) -> int:
    """Scaling from zero: stay at zero below the activation threshold unless a waiting job
    would be late; start one worker for waiting jobs the terms did not size. Appends its step."""
    waiting = m.visible + m.in_flight
    if m.current == 0 and target > 0 and waiting < settings.activation_threshold:
        if _late_at_zero(m, settings):
            steps.append(
                Step(
                    Constraint.ACTIVATION,
                    f"scale from zero below the activation threshold "
                    f"{settings.activation_threshold}: the oldest of {waiting} waiting "
                    f"({m.oldest_age_seconds:.0f} s) would pass its {settings.sla_seconds:g} s "
                    f"SLA before a worker ordered at the next tick lands",
                )
            )
            return target
        steps.append(
            Step(
                Constraint.ACTIVATION,
                f"staying at zero: {waiting} jobs waiting is below the activation "
                f"threshold {settings.activation_threshold}",
            )
        )
        return 0
    if (
        m.current == 0
        and target == 0
        and m.visible > 0
        and (m.visible >= settings.activation_threshold or _late_at_zero(m, settings))
    ):
        steps.append(
            Step(
                Constraint.ACTIVATION,
                f"scale from zero: {m.visible} jobs waiting; cold start accepted",
            )
        )
        return min(1, cap)
    return target


def _late_at_zero(m: Measures, settings: QueueSettings) -> bool:
    """True when a job waiting at zero workers would pass its SLA if the fleet waited one more
    tick: age + interval + provisioning lead >= SLA (activation never strands a job)."""
    reaction = settings.forecast_horizon_seconds
    return m.visible > 0 and m.oldest_age_seconds + reaction >= settings.sla_seconds


def _poison_suspected(snapshot: QueueSnapshot, state: ControllerState, m: Measures) -> bool:
    """Seed 003's trap: adding workers cannot help when jobs fail or never finish."""
    last = state.samples[-1] if state.samples else None
    dlq_grew = last is not None and m.dlq_depth > last.dlq_depth
    failure_rate = snapshot.failure_rate or 0.0  # unknown: no failures seen
    failing = m.in_flight > 0 and failure_rate >= POISON_FAILURE_RATIO
    stalled = (
        snapshot.completion_rate == 0
        and snapshot.mean_job_seconds is not None
        and m.in_flight > 0
        and 3 * snapshot.mean_job_seconds <= snapshot.rate_window_seconds
    )
    return dlq_grew or failing or stalled


def max_allowed(settings: QueueSettings) -> int:
    """The hard ceiling: max_workers, or the capacity or partition cap when lower (never below
    min_workers: config.py rejects a cap under the minimum, this keeps the core total anyway)."""
    if settings.capacity_cap is None and settings.partition_cap is None:
        return settings.max_workers  # the common case, three times a tick
    caps = [c for c in (settings.capacity_cap, settings.partition_cap) if c is not None]
    return max(settings.min_workers, min(settings.max_workers, *caps))


def binding_cap(settings: QueueSettings, cap: int) -> Constraint:
    """The constraint code of the ceiling `cap` (the partition cap wins a tie: it says why)."""
    if settings.partition_cap is not None and settings.partition_cap <= cap:
        return Constraint.PARTITION_CAP
    if settings.capacity_cap is not None and settings.capacity_cap <= cap:
        return Constraint.CAPACITY_CAP
    return Constraint.MAX_WORKERS


def history_covers(state: ControllerState, seconds: float, now: float) -> bool:
    """Whether the state's samples reach back `seconds` from `now` (epoch s); a fresh state
    covers no window."""
    return bool(state.samples) and now - state.samples[0].at >= seconds


def movement(  # noqa: PLR0911 - a constraint that pins the fleet ends it
    recommendation: int,
    current: int,
    snapshot: QueueSnapshot,
    state: ControllerState,
    settings: QueueSettings,
    now: float,
    window: float,
    down_cooldown: float,
) -> tuple[int, list[Step]]:
    """How far to move toward the recommendation: up at once (unless the fleet is stuck or the
    configured scale-up cooldown runs); down only to the highest recommendation of the trailing
    `window` s (the policy's delayed off), not while orders for a growing backlog are still
    starting or a deployment rolls, and not within `down_cooldown` s of the last scale-down
    that stopped running workers. A release is not paced further: scale-in drains."""
    target = recommendation
    if target > current:
        unmet = state.unmet_since
        running = snapshot.running or 0
        if unmet is not None and running < current and now - unmet >= settings.stuck_after:
            return current, [
                Step(
                    Constraint.FLEET_STUCK,
                    f"fleet stuck: {running} of {current} tasks running for {now - unmet:.0f} s "
                    f"(quota, capacity or failing tasks?); not asking for more until they start",
                )
            ]
        last_up = state.last_scale_up_at
        if last_up is not None and now - last_up < settings.scale_up_cooldown_seconds:
            wait = settings.scale_up_cooldown_seconds - (now - last_up)
            return current, [Step(Constraint.UP_COOLDOWN, f"up-cooldown: {wait:.0f} s left")]
        return target, []
    if target == current:
        return target, []
    held = _scale_down_held(snapshot, state)
    if held is not None:
        return current, [held]
    seen = [s.raw_target for s in state.samples if now - s.at <= window]
    covered = history_covers(state, window, now)
    highest = max(seen, default=recommendation)
    if not covered:
        highest = max(highest, current)
    if highest >= current:
        why = (
            f"stabilization: {n_workers(highest)} recommended within the last {window:g} s"
            if covered
            else f"stabilization: less than {window:g} s of history, not scaling down yet"
        )
        return current, [Step(Constraint.STABILIZATION, why)]
    steps: list[Step] = []
    if highest > target:
        words = f"down only to {highest}, the highest in the last {window:g} s"
        steps.append(Step(Constraint.STABILIZATION, words))
        target = highest
    last_down = state.last_scale_down_at
    if last_down is not None and now - last_down < down_cooldown:
        wait = down_cooldown - (now - last_down)
        return current, [Step(Constraint.DOWN_COOLDOWN, f"down-cooldown: {wait:.0f} s left")]
    return target, steps


def _scale_down_held(snapshot: QueueSnapshot, state: ControllerState) -> Step | None:
    """Why a scale-down waits, or None: a deployment rolls, or tasks ordered earlier have not
    started (ECS pendingCount) and the visible backlog is above the last tick's. That order
    was placed for this backlog, which has not stopped growing, and a rate estimate that fell
    between two ticks is no reason to cancel it (the demo went 10 -> 5 with 124 waiting, and
    5 -> 10 a tick later)."""
    if snapshot.deployment_in_progress:
        return Step(Constraint.DEPLOYMENT, "no scale-down while a deployment rolls")
    pending, visible = snapshot.pending, snapshot.visible
    if not pending or pending <= 0 or visible is None or not state.samples:
        return None
    before = state.samples[-1].visible
    if visible <= before:
        return None
    return Step(
        Constraint.ORDERS_PENDING,
        f"no scale-down while {pending} ordered tasks have not started and the backlog "
        f"grows ({before} -> {visible} waiting)",
    )
