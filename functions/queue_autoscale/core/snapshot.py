"""The one snapshot builder: a queue's readings at `now` -> the core's QueueSnapshot.

The evaluate tick (readings from SQS, CloudWatch, ECS and the load table) and the simulator
(readings from its own queue and fleet) both call `build_snapshot`, so the simulator judges the
code that runs in production. A source that is not SQS (Kafka lag, RabbitMQ ready messages)
feeds the same builder by filling `Readings`. A reading that failed is None; what it would
have measured is None in the snapshot (unknown), never a zero, and the core holds on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from queue_autoscale.core.counters import CounterRow, oldest_age, pickup_seconds, window_rates
from queue_autoscale.core.models import (
    RATE_WINDOW_SECONDS,
    SHORT_WINDOW_SECONDS,
    AgeSource,
    ControllerState,
    QueueSnapshot,
)

COUNTER_LOOKBACK_CAP_SECONDS = 3600.0
"""The longest stretch of counters a tick reads (the oldest-age walk's reach), seconds."""


def counter_lookback_seconds(sla_seconds: float) -> int:
    """Seconds of counters a tick reads: the long rate window, and twice the SLA (capped) so the
    oldest-age walk reaches a backlog that is already late."""
    return int(max(RATE_WINDOW_SECONDS, min(COUNTER_LOOKBACK_CAP_SECONDS, 2 * sla_seconds)))


class DepthReading(Protocol):
    """A queue's depth, jobs (SQS: ApproximateNumberOf{Messages,MessagesNotVisible,Delayed})."""

    @property
    def visible(self) -> int: ...
    @property
    def in_flight(self) -> int: ...
    @property
    def delayed(self) -> int: ...


@dataclass(frozen=True, slots=True)
class OldestAge:
    """The latest age-of-oldest-job datapoint of a metrics store (CloudWatch's
    `ApproximateAgeOfOldestMessage`)."""

    age_seconds: float
    """Maximum age in the datapoint's period, seconds."""
    lag_seconds: float
    """Seconds from the end of that period to `now` (how stale the value is)."""


class FleetReading(Protocol):
    """The worker service's counts (ECS DescribeServices), workers."""

    @property
    def running(self) -> int: ...
    @property
    def desired(self) -> int: ...
    @property
    def pending(self) -> int: ...
    @property
    def deployment_in_progress(self) -> bool: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Readings:
    """What one source read about one queue; None where the read failed."""

    depth: DepthReading | None
    oldest_age: OldestAge | None
    """None also when the store has no datapoint yet (the counters may still know)."""
    fleet: FleetReading | None
    dlq_depth: int | None
    """Visible jobs on the dead-letter queue (None: unknown or no DLQ configured)."""
    rows: Sequence[CounterRow] | None
    """The load table's per-second counters of the lookback (None: the read failed)."""


@dataclass(frozen=True, slots=True)
class RateWindows:
    """The counter windows rates are measured over, seconds."""

    long_seconds: float = RATE_WINDOW_SECONDS
    short_seconds: float = SHORT_WINDOW_SECONDS


DEFAULT_WINDOWS = RateWindows()


def build_snapshot(
    queue: str, now: float, readings: Readings, windows: RateWindows = DEFAULT_WINDOWS
) -> QueueSnapshot:
    """The core's snapshot at `now` (epoch seconds) from one queue's readings."""
    depth, fleet, rows = readings.depth, readings.fleet, readings.rows
    rates = (
        None
        if rows is None
        else window_rates(rows, now, windows.long_seconds, windows.short_seconds)
    )
    age: float | None = None
    source = AgeSource.UNKNOWN
    if depth is not None:
        cloudwatch = readings.oldest_age
        age, source = oldest_age(
            now,
            depth.visible,
            cloudwatch.age_seconds if cloudwatch else None,
            cloudwatch.lag_seconds if cloudwatch else 0.0,
            rows or [],
        )
    return QueueSnapshot(
        queue=queue,
        taken_at=now,
        visible=depth.visible if depth else None,
        in_flight=depth.in_flight if depth else None,
        delayed=depth.delayed if depth else None,
        oldest_age_seconds=age,
        oldest_age_source=source,
        arrival_rate=rates.arrival_rate if rates else None,
        arrival_rate_short=rates.arrival_rate_short if rates else None,
        mean_job_seconds=rates.mean_job_seconds if rates else None,
        completion_rate=rates.completion_rate if rates else None,
        failure_rate=rates.failure_rate if rates else None,
        arrival_dispersion=rates.arrival_dispersion if rates else None,
        arrival_dispersion_short=rates.arrival_dispersion_short if rates else None,
        arrival_dispersion_steps=rates.arrival_dispersion_steps if rates else None,
        rate_window_seconds=windows.long_seconds,
        short_window_seconds=windows.short_seconds,
        running=fleet.running if fleet else None,
        desired=fleet.desired if fleet else None,
        pending=fleet.pending if fleet else None,
        deployment_in_progress=fleet.deployment_in_progress if fleet else None,
        dlq_depth=readings.dlq_depth,
        pickups=() if rows is None else pickup_seconds(rows),
        first_counter_second=(
            float(rates.first_second) if rates and rates.first_second is not None else None
        ),
    )


def watched_view(snapshot: QueueSnapshot, watched_seconds: float | None) -> QueueSnapshot:
    """The snapshot's rates over the time the queue was watched, when that is shorter than a
    window (a cold start): the counters did not exist before, and their missing seconds read
    as seconds without arrivals. Each window's count is spread over min(window, watched)
    seconds instead, and its dispersion loses what the empty seconds added (variance / mean
    over W of counts that are 0 before the last s seconds: D_s = D_W - m_W (W / s - 1)).
    `watched_seconds` None (unknown) or at least a window leaves that window as it is."""
    if watched_seconds is None or watched_seconds <= 0:
        return snapshot
    long_w, short_w = snapshot.rate_window_seconds, snapshot.short_window_seconds
    if watched_seconds >= long_w:
        return snapshot
    long_s, short_s = watched_seconds, min(short_w, watched_seconds)
    rate, dispersion = _spread(snapshot.arrival_rate, snapshot.arrival_dispersion, long_w, long_s)
    short, short_d = _spread(
        snapshot.arrival_rate_short, snapshot.arrival_dispersion_short, short_w, short_s
    )
    completion = snapshot.completion_rate
    return replace(
        snapshot,
        arrival_rate=rate,
        arrival_dispersion=dispersion,
        arrival_rate_short=short,
        arrival_dispersion_short=short_d,
        completion_rate=None if completion is None else completion * long_w / long_s,
        rate_window_seconds=long_s,
        short_window_seconds=short_s,
    )


def _spread(
    rate: float | None, dispersion: float | None, window: float, watched: float
) -> tuple[float | None, float | None]:
    """(rate, dispersion) of counts over `window` s re-read over their last `watched` s."""
    if rate is None or watched >= window:
        return rate, dispersion
    spread = rate * window / watched
    if dispersion is None:
        return spread, None
    return spread, max(0.0, dispersion - rate * (window / watched - 1.0))


def watched_since(snapshot: QueueSnapshot, state: ControllerState) -> float | None:
    """When the queue's watch began, epoch s: its oldest counter second in the window, or the
    controller's oldest kept tick if that is earlier (a quiet queue's first row comes late).
    Counters that began up to an interval before the first tick make a quiet queue's rate read
    high by at most that interval's share; a busy queue's first row is its start. None before
    any tick or without counter rows: unknown."""
    if not state.samples or snapshot.first_counter_second is None:
        return None
    return min(state.samples[0].at, snapshot.first_counter_second)


def watched_seconds(snapshot: QueueSnapshot, state: ControllerState, now: float) -> float | None:
    """How long the queue has been watched by `now`, seconds (`watched_since`), at least the one
    second a counter row spans (two ticks within a second must not spread a second's count over
    a fraction of it); None: unknown, and the windows are read whole."""
    since = watched_since(snapshot, state)
    return None if since is None else max(1.0, now - since)
