"""The constraints after the sizing terms: poison guard, caps, floors, activation, and the
movement rules (cooldowns, stabilization, step limit). DESIGN.md section 4. Pure."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

from queue_autoscale.core import recurrence
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
"""How long after a provisioning lead a scale-out still reverses a scale-in: issue 15's flap
(a scale-out within one lead plus 5 minutes of a scale-in, sim/honest.py), the churn a user
sees as a task stopped and another started."""


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
    floor again (issue 35's quiet phase: 2 -> 4 -> 1 -> 2 within 15 s)."""
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


def load_release(
    recommendation: int, m: Measures, snapshot: QueueSnapshot, steps: list[Step]
) -> int:
    """On a loose SLA (`drain.carried_wait_seconds` > 0), a scale-down stops one worker under
    the load, ceil(lambda / mu) - 1, lambda the lower of the sizing rate and the short window's
    (after a burst the short window has already fallen); appends its step when it binds.

    There the backlog carries the load: the in-flight floor holds every busy worker while jobs
    wait, so the fleet goes down only once the queue has emptied, and the carried term then asks
    for far fewer workers than the load (B = 0: lambda H / (mu (W + H)), 7 at 20 jobs/s) to
    let a backlog build. A worker released below the load saves nothing, since the work it
    leaves is done later, and it is ordered back once the backlog carries W, billed a lead
    before it serves. One worker under the load builds the backlog as well (at lambda - c mu),
    with one re-order instead of the step limit's (steady at 300 s: 21 -> 15, six re-orders,
    about 400 worker-s each time the queue empties)."""
    if recommendation >= m.current or m.service_rate <= 0:
        return recommendation
    rate = m.arrival_rate
    short = snapshot.arrival_rate_short
    if short is not None and math.isfinite(short):
        rate = min(rate, max(0.0, short))
    load = rate / m.service_rate  # workers' worth; inf for a rate near the float maximum
    floor = m.current if load >= m.current + 1 else min(m.current, math.ceil(load - 1e-9) - 1)
    if floor <= recommendation:
        return recommendation
    steps.append(
        Step(
            Constraint.LOAD_RELEASE,
            f"released to {floor}, one worker under the load of {rate:.2f} jobs/s: on a loose "
            f"SLA the backlog carries the load, and a worker released below it is only ordered "
            f"back later",
        )
    )
    return floor


def burst_floor(
    rec: recurrence.Recurrence,
    recommendation: int,
    remembered: int,
    current: int,
    cap: int,
    steps: list[Step],
) -> tuple[int, int]:
    """The burst floor of core/recurrence.py over the recommendation (never past the poison
    guard): a recurring burst's need kept through its onset (anticipation), or the last burst's
    need held after it (delayed off); before `early` it keeps at most the `current` fleet.
    Returns (recommendation, remembered); appends its step."""
    floor = rec.floor if rec.orders else min(rec.floor, current)
    if floor <= recommendation or Constraint.POISON_GUARD in (f.code for f in steps):
        return recommendation, remembered
    recommendation = min(floor, cap)
    if rec.recurring:
        remembered = max(remembered, recommendation)  # kept through the onset
        steps.append(Step(Constraint.ANTICIPATION, _anticipation_words(rec, recommendation)))
    else:
        steps.append(
            Step(
                Constraint.BURST_HOLD,
                f"delayed off: the last bursts came {rec.held_for or 0:.0f} s apart; kept "
                f"{n_workers(recommendation)}, the last one's need, from a lead before another "
                f"as far after it is due (and the lead it takes to start workers) until that "
                f"gap plus a lead has passed since its onset",
            )
        )
    return recommendation, remembered


def _drain_surplus(state: ControllerState, settings: QueueSettings, now: float) -> bool:
    """True when the fleet being scaled down went up within the stabilization window, at least
    one provisioning lead ago.

    The window remembers the sustained need (steady and trend terms) of every tick, so a fleet
    above all of it that last went up within the window went up past the sustained need of its
    own tick: the drain term (or a floor) ordered those workers for a backlog. Once they have
    had a lead to land, the backlog they were ordered for is gone and they are released at once
    (paced at 25 % a minute, a drain of ten times the need cost more worker-seconds than the
    whole burst). Within the lead the step limit applies as to any capacity: cancelling workers
    still starting because the running fleet cleared a backlog for a moment re-ordered them a
    few ticks later on the NASA day.
    """
    last_up = state.last_scale_up_at
    if last_up is None:
        return False
    since = now - last_up
    return settings.provisioning_lead_seconds <= since <= settings.stabilization_window_seconds


_SURPLUS_WORDS = (
    "the fleet above it went up past every sustained need, for a backlog gone since they landed"
)


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


def _anticipation_words(rec: recurrence.Recurrence, floor: int) -> str:
    when = rec.expected_in or 0.0
    due = f"due in {when:.0f} s" if when >= 0 else f"{-when:.0f} s overdue"
    return (
        f"anticipation: bursts recur every {rec.period or 0:.0f} s, the next {due}; kept at "
        f"least {n_workers(floor)}, its expected need, so they run when it starts"
    )


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
    unread: Sequence[tuple[float, float]] = (),
) -> tuple[int, list[Step]]:
    """Cooldowns, stabilization and the step limit: how far to move toward the recommendation.

    `unread`: spans [start, end) of epoch seconds whose recommendations the stabilization
    window does not read (a burst's reaction, `hybrid._reaction_spans`); whether the window
    has a whole window of history still counts every sample."""
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
    window = settings.stabilization_window_seconds
    seen = [
        s.raw_target
        for s in state.samples
        if now - s.at <= window
        and (not unread or not any(start <= s.at < end for start, end in unread))
    ]
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
    surplus = _drain_surplus(state, settings, now)
    if highest > target:
        words = f"down only to {highest}, the highest in the last {window:g} s"
        if surplus:
            words += " (at once: " + _SURPLUS_WORDS + ")"
        steps.append(Step(Constraint.STABILIZATION, words))
        target = highest
    last_down = state.last_scale_down_at
    if last_down is not None and now - last_down < settings.scale_down_cooldown_seconds:
        wait = settings.scale_down_cooldown_seconds - (now - last_down)
        return current, [Step(Constraint.DOWN_COOLDOWN, f"down-cooldown: {wait:.0f} s left")]
    if surplus:  # what the drain ordered above every sustained need goes at once
        return target, steps
    step = max(settings.scale_down_step, math.ceil(current * settings.scale_down_percent / 100))
    if target < current - step:
        steps.append(Step(Constraint.STEP, f"step limit: down by at most {step}"))
        target = current - step
    return target, steps


def _scale_down_held(snapshot: QueueSnapshot, state: ControllerState) -> Step | None:
    """Why a scale-down waits, or None: a deployment rolls, or tasks ordered earlier have not
    started (ECS pendingCount) and the visible backlog is above the last tick's. That order
    was placed for this backlog, which has not stopped growing, and a rate estimate that fell
    between two ticks is no reason to cancel it (issue 35's demo: 10 -> 5 with 124 waiting,
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


def confirm_reorder(
    target: int,
    current: int,
    state: ControllerState,
    settings: QueueSettings,
    now: float,
    *,
    spare: float,
    service_rate: float,
    bursty: bool,
) -> tuple[int, Step | None]:
    """A scale-out that would reverse a recent scale-in waits one interval to be confirmed, when
    the miss budget pays for the wait. Returns (target, the step when it deferred).

    Within one lead plus `REVISIT_SECONDS` of the last scale-in, a scale-out re-orders workers
    just released: each costs a lead of start-up that serves nothing, and on bursty traffic
    most such orders chase a backlog that one interval later is gone (the NASA day at 60 s,
    p95: 186 flaps in four hours, the median 25 s after the scale-in). So the first tick that
    wants one holds, and the next tick that still wants one orders what it then needs. Paid
    for by the SLA loop's unspent budget (`spare`, jobs): the one interval's delay can make
    late at most the jobs the extra workers would have picked up in it, (target - current) x
    mu x interval. A surge asks for many workers, which the budget does not cover: it is
    ordered at once. At most one interval of delay per order (`reorder_deferred_at`). Never
    below `min_workers`, and never an empty fleet's first worker (activation waits for nothing).

    Only on `bursty` traffic (per-second arrivals more dispersed than Poisson, hot.poisson_like):
    there the interval's backlog growth the drain reads is mostly noise that does not persist.
    On Poisson-like traffic the sizing terms already size for the windows' noise, so a re-order
    is need; deferring it only reshuffled the steady run's 20/21 alternation (30 s: 3 -> 4)."""
    if target <= current or not bursty or current < max(settings.min_workers, 1):
        return target, None  # an empty fleet's activation or a raised minimum is never deferred
    last_down = state.last_scale_down_at
    lead, interval = settings.provisioning_lead_seconds, settings.evaluation_interval_seconds
    if last_down is None or now - last_down > lead + REVISIT_SECONDS:
        return target, None
    deferred = state.reorder_deferred_at
    if deferred is not None and 0 < now - deferred <= settings.stale_after:
        return target, None  # the tick before deferred it and it is still wanted: confirmed
    at_risk = (target - current) * service_rate * interval
    if not at_risk <= spare:
        return target, None
    words = (
        f"re-order confirm: up to {target} waits one interval, {now - last_down:.0f} s after "
        f"a scale-in (within the lead + {REVISIT_SECONDS:.0f} s a re-order reverses it); the "
        f"miss budget ({spare:.0f} jobs) pays for the {at_risk:.0f} jobs the wait can delay"
    )
    return current, Step(Constraint.REORDER_CONFIRM, words)
