"""What every policy derives from a snapshot before deciding: rates, rho, urgency, predictions."""

from __future__ import annotations

import math
from typing import NamedTuple

from queue_autoscale.core.drain import predicted_breach_seconds, predicted_pickup_seconds
from queue_autoscale.core.models import (
    JOB_TIME_RESOLUTION_SECONDS,
    QueueSettings,
    QueueSnapshot,
    Urgency,
)
from queue_autoscale.core.queueing import load_ratio, load_states, service_rate, urgency_for


class Measures(NamedTuple):
    """Derived inputs of one tick. Counts are >= 0 even when the snapshot had gaps.

    A tuple: built every tick, and a frozen dataclass of 20 fields costs several times more to
    make (copy one with `_replace`)."""

    current: int
    visible: int
    in_flight: int
    running: int
    dlq_depth: int
    arrival_rate: float
    """lambda used for sizing: the higher of the long and short windows, jobs/s."""
    window_rate: float
    """lambda as the windows measured it, jobs/s: `arrival_rate` unless the hybrid sizes on its
    settled load (core/hot.py); the samples keep this one."""
    short_rate: float | None
    """lambda over the short window alone, jobs/s (None when unknown); the samples keep it too."""
    mean_job_seconds: float
    """Measured mean job duration, or the configured prior."""
    prior_note: str
    service_rate: float
    """mu per worker, jobs/s."""
    oldest_age_seconds: float
    sla_usage: float
    urgency: Urgency
    load_ratio: float
    overloading: bool
    overloaded: bool
    backlog_per_instance: float
    predicted_pickup_seconds: float | None
    predicted_breach_seconds: float | None


def _count(value: int | None) -> int:
    """The count, 0 when unknown or negative (conditionals, not max(), here and in `_rate`:
    `measure` calls them seven times a tick)."""
    return value if value is not None and value > 0 else 0


def _rate(value: float | None) -> float:
    """The rate or age, 0.0 when unknown, not finite or negative."""
    return value if value is not None and value > 0.0 and math.isfinite(value) else 0.0


def _known_rate(value: float | None) -> float | None:
    """The rate, None when unknown, not finite or negative."""
    return value if value is not None and value >= 0.0 and math.isfinite(value) else None


def _plausible_job_seconds(measured: float, settings: QueueSettings) -> tuple[float, str]:
    """A measured mean job time within [1 ms resolution, max_job_seconds], and a note when it
    had to be brought there (a completion always counts, however short)."""
    if measured < JOB_TIME_RESOLUTION_SECONDS:
        return JOB_TIME_RESOLUTION_SECONDS, ""
    if measured > settings.max_job_seconds:
        return settings.max_job_seconds, (
            f" (mean job time {measured:.6g} s capped at max_job_seconds "
            f"{settings.max_job_seconds:g} s)"
        )
    return measured, ""


def measure(snapshot: QueueSnapshot, settings: QueueSettings) -> Measures:
    """Derive the tick's measures; tolerant of gaps (input_problems says whether to trust them).

    An unknown count, rate or age reads as 0 here only so a holding decision can still be
    described; `input_problems` is what makes the core hold on it.
    """
    visible = _count(snapshot.visible)
    in_flight = _count(snapshot.in_flight)
    running = _count(snapshot.running)
    if snapshot.desired is not None and snapshot.desired >= 0:
        current = snapshot.desired
    else:
        current = running
    lam = max(_rate(snapshot.arrival_rate), _rate(snapshot.arrival_rate_short))
    measured = snapshot.mean_job_seconds
    if measured is not None and math.isfinite(measured) and measured >= 0:
        mean_job, note = _plausible_job_seconds(measured, settings)
        mu_measured: float | None = service_rate(mean_job, settings.worker_concurrency)
    else:
        mean_job = settings.expected_job_seconds
        note = f" (job time prior {mean_job:g} s: none completed yet)"
        mu_measured = None
    mu = service_rate(mean_job, settings.worker_concurrency) if mu_measured is None else mu_measured
    age = _rate(snapshot.oldest_age_seconds)
    usage = age / settings.sla_seconds
    rho = load_ratio(lam, running, mu_measured)
    overloading, overloaded = load_states(rho, settings.overloading_threshold)
    return Measures(
        current=current,
        visible=visible,
        in_flight=in_flight,
        running=running,
        dlq_depth=_count(snapshot.dlq_depth),
        arrival_rate=lam,
        window_rate=lam,
        short_rate=_known_rate(snapshot.arrival_rate_short),
        mean_job_seconds=mean_job,
        prior_note=note,
        service_rate=mu,
        oldest_age_seconds=age,
        sla_usage=usage,
        urgency=urgency_for(age, settings.sla_seconds),
        load_ratio=rho,
        overloading=overloading,
        overloaded=overloaded,
        backlog_per_instance=visible / running if running > 0 else float(visible),
        predicted_pickup_seconds=predicted_pickup_seconds(
            visible=visible, running=running, service_rate=mu, arrival_rate=lam
        ),
        predicted_breach_seconds=predicted_breach_seconds(
            visible=visible,
            oldest_age_seconds=age,
            running=running,
            service_rate=mu,
            arrival_rate=lam,
            sla_seconds=settings.sla_seconds,
        ),
    )


def input_problems(snapshot: QueueSnapshot, settings: QueueSettings, now: float) -> list[str]:
    """Why the snapshot cannot be trusted to move the fleet (empty when it can)."""
    problems: list[str] = []
    required: tuple[tuple[str, float | int | None], ...] = (
        ("visible", snapshot.visible),
        ("in_flight", snapshot.in_flight),
        ("running", snapshot.running),
        ("arrival_rate", snapshot.arrival_rate),
        ("oldest_age_seconds", snapshot.oldest_age_seconds),
    )
    for name, value in required:
        if value is None:
            problems.append(f"{name} unknown")
        elif not math.isfinite(value):
            problems.append(f"{name} = {value} is not a number")
        elif value < 0:
            problems.append(f"{name} = {value} is negative")
    optional: tuple[tuple[str, float | int | None], ...] = (
        ("arrival_rate_short", snapshot.arrival_rate_short),
        ("mean_job_seconds", snapshot.mean_job_seconds),
        ("desired", snapshot.desired),
        ("pending", snapshot.pending),
        ("delayed", snapshot.delayed),
        ("dlq_depth", snapshot.dlq_depth),
    )
    for name, value in optional:
        if value is not None and (not math.isfinite(value) or value < 0):
            problems.append(f"{name} = {value} is out of range")
    if snapshot.failure_rate is not None and not 0.0 <= snapshot.failure_rate <= 1.0:
        problems.append(f"failure_rate = {snapshot.failure_rate} is outside 0..1")
    age, stale = now - snapshot.taken_at, settings.stale_after
    if age > stale:
        problems.append(f"snapshot is {age:.0f} s old (stale after {stale:g} s)")
    elif -age > stale:
        problems.append(f"snapshot is {-age:.0f} s in the future")
    return problems
