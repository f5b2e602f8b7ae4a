"""The backlog-drain term as the hybrid sizes it: the drain rate, the workers already
ordered, and the workers needed when new ones land (seeds 000/001, FIFO-aware). Pure."""

from __future__ import annotations

from typing import NamedTuple

from queue_autoscale.core.drain import (
    backlog_at_landing,
    budget_horizon_seconds,
    carried_wait_seconds,
    growth_arrival_rate,
    landing_clear_seconds,
    landing_clear_workers,
    longest_horizon_seconds,
    workers_at_landing,
)
from queue_autoscale.core.measures import Measures
from queue_autoscale.core.models import ControllerState, QueueSettings


class DrainPlan(NamedTuple):
    """The drain term and what it rests on, for the decision's words (a tuple: built every
    tick, and a frozen dataclass costs several times more to make)."""

    workers: int
    arrival_rate: float
    """lambda the drain used, jobs/s (a surge seen in the backlog's growth, if higher)."""
    at_landing: float
    """Jobs expected to wait when workers ordered now land."""
    ordered: int
    """Workers asked for earlier and not running yet."""
    lands_in: float | None
    """Seconds until those land (None: overdue or unknown, not counted)."""
    kept: bool
    """True when the drain keeps earlier orders that are needed when they land."""
    horizon: float
    """The recovery horizon it sized with, seconds (see `budget_horizon_seconds`)."""
    capped: bool = False
    """True when the budget horizon's fleet was held to emptying, within one evaluation
    interval, the backlog of the latest landing (`landing_clear_workers`)."""
    late: bool = False
    """True when the order was also sized on the latest landing, one interval after the lead
    (the recovery horizon is shorter than that interval, workers landing at the lead would find
    the queue's head within the aim and workers landing then past the SLA); `at_landing` is
    still the queue at the lead."""


def drain_plan(
    m: Measures,
    state: ControllerState,
    settings: QueueSettings,
    now: float,
    cap: int,
    started: float = 0.0,
    dispersion: float = 1.0,
) -> DrainPlan:
    """The backlog-drain term, counting workers already ordered (seeds 000/001, FIFO-aware).

    `started`: jobs the SLA loop counted over its window (its decayed sum); with the percentile
    it sets the recovery horizon (`budget_horizon_seconds`) unless the settings give one.
    `dispersion`: the arrivals' measured index of dispersion (see `_drain_rate`).
    A budget horizon shorter than the default adds workers beyond the default's fleet only up to
    the one that empties within one evaluation interval T the backlog of the latest landing
    (`landing_clear_workers`): the controller reads the queue once per interval and cannot see
    within it when its workers land, so they may come up to T after the lead and find
    B_T, the queue expected then. When the default horizon (SLA / 3) is itself shorter than T
    (SLA < 3 intervals: SLA 10 s at a 10 s interval, 30 s at 15 s), an order is held to that
    fleet at every percentile, (lambda + B_T / T) / mu: the jobs with less than T of their SLA
    left when the workers are due land inside a spread the controller cannot see (with T = SLA
    none of the landing backlog can be saved, and this is the fleet that saves every job
    arriving after the landing). Workers already ordered are kept by the same rule, sized on
    the queue expected when they land; at such a short default, by the horizon's fleet (the
    limit on them cost `bursty` at SLA 10 s 2.2 points on seed 1).
    Where the horizon is shorter than T (and the default is not), the plan aims at jobs with
    less than T of their SLA left at the lead; if workers landing on time would find the head of
    the queue within the aim (SLA - H: the plan writes no job off) and workers landing T late
    past the SLA (`_head_age_seconds`), the spread alone loses jobs the plan counts as saved, so
    the new order is also sized on the latest landing (`late`) and the larger fleet is ordered.
    (Where the on-time landing writes jobs off already, the budget is being spent and the order
    stays the lead's: resizing there too cost the NASA day at SLA 30 s p99.9 +37-49k worker-s
    and the flash crowd at 60 s 3-34 % for at most 0.87 points.)
    """
    short = _short_default(settings)
    rate = _drain_rate(m, state, settings, now, dispersion, short)
    ordered, lands_in = _ordered(m, state, settings, now)
    default = horizon = settings.recovery_horizon
    if settings.recovery_horizon_seconds is None:
        horizon = budget_horizon_seconds(
            started=started,
            percentile=settings.percentile,
            arrival_rate=rate,
            default_seconds=default,
            longest_seconds=longest_horizon_seconds(settings),
        )
    if m.visible <= 0:
        return DrainPlan(0, rate, 0.0, ordered, lands_in, False, horizon)
    lead, sla = settings.provisioning_lead_seconds, settings.sla_seconds
    tick = _Tick(
        m,
        rate,
        horizon,
        default,
        settings,
        cap,
        landing_clear_seconds(settings),
        short,
        carried_wait_seconds(settings) > 0,
    )

    def queue_after(seconds: float, counting_orders: bool = True) -> float:
        """Jobs waiting `seconds` from now (the orders already placed join when they land)."""
        return backlog_at_landing(
            backlog=m.visible,
            arrival_rate=rate,
            service_rate=m.service_rate,
            lead_seconds=seconds,
            running=m.running,
            ordered=ordered if counting_orders else 0,
            ordered_lands_in=lands_in if counting_orders else None,
        )

    at_landing, latest = queue_after(lead), queue_after(lead + tick.clear)
    workers, capped = _sized(tick, at_landing, latest, lead)
    # the plan aims at jobs with less than the landing's spread T of their SLA left; when the
    # on-time landing writes none off and one T late finds the head past the SLA, size for both
    late = (
        horizon < tick.clear
        and not tick.short_default
        and _head_age_seconds(at_landing, rate, m.oldest_age_seconds, lead) <= sla - horizon
        and _head_age_seconds(latest, rate, m.oldest_age_seconds, lead + tick.clear) > sla
    )
    if late:
        workers, capped = max((workers, capped), _sized(tick, latest, latest, lead + tick.clear))
    kept = False
    if lands_in is not None:
        # the workers already ordered land first: keep as many as are needed when they do
        then = queue_after(lands_in, counting_orders=False)
        latest_then = queue_after(lands_in + tick.clear, counting_orders=False)
        needed_then = min(_sized(tick, then, latest_then, lands_in, kept=True)[0], m.current)
        kept = needed_then > workers
        workers = max(workers, needed_then)
    return DrainPlan(workers, rate, at_landing, ordered, lands_in, kept, horizon, capped, late)


class _Tick(NamedTuple):
    """What every landing the drain sizes for this tick shares."""

    m: Measures
    rate: float
    """The drain's arrival rate, jobs/s (`_drain_rate`)."""
    horizon: float
    """The recovery horizon sized with, seconds."""
    default: float
    """The configured or default recovery horizon, seconds (`QueueSettings.recovery_horizon`):
    the most the landing-clear limit lets a shorter budget horizon's fleet fall back to."""
    settings: QueueSettings
    cap: int
    clear: float
    """The landing's spread T, seconds (`landing_clear_seconds`)."""
    short_default: bool
    """True when the default horizon is shorter than T (`_short_default`)."""
    carries_load: bool
    """True on a loose SLA (`carried_wait_seconds` > 0: `workers_at_landing`'s `carries_load`)."""


def _sized(
    tick: _Tick, backlog: float, latest: float, lead_seconds: float, kept: bool = False
) -> tuple[int, bool]:
    """Workers needed when those ordered now land after `lead_seconds`, finding `backlog`
    waiting (`latest` if they land one interval late), and whether the landing-clear limit
    held the horizon's fleet back. `kept`: sizing the orders already placed, which keep the
    horizon's fleet at a short default."""
    ceiling = tick.default
    workers = _at_landing(tick, backlog, lead_seconds, tick.horizon)
    short = tick.short_default and not kept  # orders already placed: the horizon's fleet
    if tick.horizon >= ceiling and not short:  # sized as the horizon asks
        return workers, False
    limit = landing_clear_workers(
        at_landing=latest,
        arrival_rate=tick.rate,
        service_rate=tick.m.service_rate,
        clear_seconds=tick.clear,
        max_workers=tick.cap,
    )
    if workers <= limit:
        return workers, False
    if short:
        return limit, True
    return max(limit, _at_landing(tick, backlog, lead_seconds, ceiling)), True


def _at_landing(tick: _Tick, backlog: float, lead_seconds: float, horizon: float) -> int:
    """`workers_at_landing` for this tick's queue with `horizon` seconds of recovery."""
    return workers_at_landing(
        at_landing=backlog,
        oldest_age_seconds=tick.m.oldest_age_seconds,
        arrival_rate=tick.rate,
        service_rate=tick.m.service_rate,
        sla_seconds=tick.settings.sla_seconds,
        recovery_horizon_seconds=horizon,
        lead_seconds=lead_seconds,
        max_workers=tick.cap,
        carries_load=tick.carries_load,
    )


def _head_age_seconds(
    backlog: float, arrival_rate: float, oldest_age_seconds: float, after_seconds: float
) -> float:
    """Age of the oldest job still waiting `after_seconds` from now, when `backlog` jobs wait
    then (FIFO): the youngest `backlog` of those arrived by then at `arrival_rate` (jobs/s), or,
    when more wait than arrived in the meantime, the oldest job now (`oldest_age_seconds`),
    aged `after_seconds`. Seconds."""
    arrived = arrival_rate * after_seconds
    if backlog > arrived or arrival_rate <= 0:
        return oldest_age_seconds + after_seconds if backlog > 0 else 0.0
    return backlog / arrival_rate


def _short_default(settings: QueueSettings) -> bool:
    """True when the default recovery horizon is itself shorter than the landing's spread
    (SLA / 3 < T, `landing_clear_seconds`: SLA 10 s at a 10 s interval, 30 s at 15 s): it aims
    at jobs the controller cannot see saved, so a new order is held to the landing-clear fleet,
    and a burst's growth is read against the batches' noise (`_drain_rate`)."""
    return (
        settings.recovery_horizon_seconds is None
        and settings.recovery_horizon < landing_clear_seconds(settings)
    )


def _drain_rate(
    m: Measures,
    state: ControllerState,
    settings: QueueSettings,
    now: float,
    dispersion: float,
    short_default: bool,
) -> float:
    """lambda for the drain: the windowed rate, or a surge seen in the backlog's growth since
    the last tick (within two intervals) when that is higher.

    When the default horizon is shorter than the landing's spread (`short_default`, from
    `_short_default`), the growth must also exceed batchy arrivals' noise (`dispersion` D):
    there a burst's own jobs are late long before workers ordered now land, and a growth read
    as a surge orders a lead of workers for a rate extrapolated from one interval. On the NASA
    day x10 at SLA 10 s (D 27-36) that was 18 orders of 90-226 workers for bursts of a few
    seconds: 120,396 of hybrid p95's 862,620 worker-s were billed pending (46,468 now). A
    persisting surge still shows in the windowed rate an interval or two later. Elsewhere the
    first sign (Poisson noise) still counts: at SLA 30 s (the bench's 10 s interval) the
    batches' noise cost NASA p99 0.17 points (99.66 -> 99.49 %) for 930 more worker-s.
    """
    last = state.samples[-1] if state.samples else None
    if last is None or now - last.at > 2 * settings.evaluation_interval_seconds:
        return m.arrival_rate
    grown = growth_arrival_rate(
        visible=m.visible,
        previous_visible=last.visible,
        seconds=now - last.at,
        running=m.running,
        service_rate=m.service_rate,
        dispersion=dispersion if short_default else 1.0,
    )
    return m.arrival_rate if grown is None else max(m.arrival_rate, grown)


def _ordered(
    m: Measures, state: ControllerState, settings: QueueSettings, now: float
) -> tuple[int, float | None]:
    """Workers asked for but not running yet, and seconds until they should take jobs.

    They were ordered by the last scale-up at the latest, so they land one lead after it; once
    that moment has passed without them they are not counted (None) until they run.
    """
    ordered = max(0, m.current - m.running)
    last_up = state.last_scale_up_at
    if ordered == 0 or last_up is None:
        return ordered, None
    lands_in = last_up + settings.provisioning_lead_seconds - now
    return ordered, lands_in if lands_in >= 0 else None
