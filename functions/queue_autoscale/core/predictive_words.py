"""The predictive policy's reason in words (core/predictive.py): the plan, its predicted miss
share against the level and budget, what bound it, what was forecast, the fleet on its way and
the recurring burst's forecast. Pure; no decision reads these words."""

from __future__ import annotations

import math

from queue_autoscale.core import falls, onsets, pickup
from queue_autoscale.core import predictive_knobs as knobs
from queue_autoscale.core.constraints import max_allowed
from queue_autoscale.core.dispersion import effective_sla
from queue_autoscale.core.measures import Measures
from queue_autoscale.core.models import QueueSettings, Winner
from queue_autoscale.core.queueing import wait_exceeds_probability

TAIL_SIGMAS = 10.0
"""The reason's steady-state tail is evaluated at most this many sqrt(load) servers above the
load (`steady_tail`): a cost bound of the words, no decision reads it."""


def words(  # noqa: PLR0913 - the numbers the reason quotes, each computed once a tick
    plan: int,
    share: float,
    level: float,
    k: knobs.Knobs,
    compliance: float | None,
    m: Measures,
    outlook: pickup.Outlook,
    settings: QueueSettings,
    winner: Winner,
    at_load: bool,
    per_second: float,
) -> str:
    """The reason in words: the plan, its predicted miss share against the level and budget,
    what bound it, and what was forecast; a plan past the fleet's cap (`max_allowed`) is
    quoted at the cap, the most the decision can order. Where the sizing read the arrivals'
    dispersion over the time no order corrects rather than `per_second` (core/dispersion.py
    `read_horizon`), it says so, with both."""
    realized = "none counted yet" if compliance is None else f"realized {compliance:.2%}"
    model = (
        "the load: the backlog carries the noise, SLA > lead + interval" if at_load else "Erlang C"
    )
    binding = {
        "drain": "the jobs due before the horizon (backlog and arrivals until workers land)",
        "trend": f"the steady state at the forecast rate ({model})",
        "steady": f"the steady state at the measured rate ({model})",
    }.get(str(winner), "nothing waiting or arriving")
    cap = max_allowed(settings)
    shown = plan if plan <= cap else cap  # a plan past the cap is judged at the cap
    head = f"plan {plan} (" if plan <= cap else f"plan more than the {cap} allowed (at {cap}: "
    tail = steady_tail(shown, m, outlook.rate, settings, outlook.dispersion)
    return (
        f"{head}predicted miss share {share:.2%} of the jobs due within "
        f"{k.horizon_seconds:g} s, level {level:.2%}: budget {k.budget:.2%}, {realized}); "
        f"bound by {binding}; forecast: arrivals {outlook.rate:.2f} jobs/s, dispersion "
        f"{outlook.dispersion:.2f}{_over(outlook.dispersion, per_second, k)}, "
        f"{m.visible} waiting (oldest {m.oldest_age_seconds:.0f} s), "
        f"{m.service_rate:.3g} jobs/s per worker{m.prior_note}; steady-state P(pickup > "
        f"{settings.sla_seconds:g} s) {tail:.2%} at those arrivals"
    )


def _over(spread: float, per_second: float, k: knobs.Knobs) -> str:
    """', over the N s no order corrects (D per second)' where the sizing read a wider spread."""
    if spread == per_second:
        return ""
    span = k.uncorrected_seconds
    return f" over the {span:g} s no order corrects ({per_second:.2f} per second)"


def fleet_words(fleet: pickup.Fleet) -> str:
    """The fleet the plan starts from, when workers ordered earlier are still on their way:
    each order's workers and the seconds until they take jobs."""
    if not fleet.landing:
        return ""
    landing = ", ".join(f"{workers} in {seconds:.0f} s" for workers, seconds in fleet.landing)
    return f"; fleet: {fleet.running} running, ordered earlier and landing: {landing}"


def steady_tail(
    plan: int, m: Measures, rate: float, settings: QueueSettings, dispersion: float
) -> float:
    """The steady state's P(pickup > SLA) with `plan` workers at `rate` (1 at or past the load).

    Evaluated at no more than A + TAIL_SIGMAS sqrt(A) + TAIL_SIGMAS servers (A the offered
    load): Erlang B's recursion walks every server up to the count asked, and a plan of the
    largest cap (10^7 servers) at a small load took a second per decision; that many standard
    deviations above the load the tail is below any printed digit, and it only falls further
    with more servers (so the value is an upper bound of the plan's)."""
    offered = rate * m.mean_job_seconds
    servers = plan * settings.worker_concurrency
    if math.isfinite(offered) and offered >= 0:
        most = offered + TAIL_SIGMAS * (math.sqrt(offered) + 1.0)
        servers = servers if servers <= most else math.floor(most)
    return wait_exceeds_probability(
        servers,
        rate,
        m.mean_job_seconds,
        effective_sla(settings.sla_seconds, dispersion),
    )


def surge_words(surge: onsets.Surge | None, read: bool = True) -> str:
    """The reason's words for a forecast burst ("" without one); `read`: the horizon's
    arrivals read it (not where the backlog carries it, "burst-backlog")."""
    if surge is None:
        return ""
    said = (
        f"; bursts recur every {surge.period:.0f} s (the model passed its back-test): the next "
        f"expected in {surge.expected_in:.0f} s"
    )
    if not read:
        return (
            said
            + f" at {surge.rate:.2f} jobs/s, left to the backlog, which shows its onset in time"
        )
    return said + f", arrivals forecast at {surge.rate:.2f} jobs/s from {surge.starts_in:.0f} s"


def band_words(current: int) -> str:
    """The words for a steady state the rate's noise held at the fleet (`predictive._up_band`)."""
    return (
        f"; the steady state's rise over the {current} workers is within the rate's noise (a rate "
        f"at its lower bound asks no more): held"
    )


def fall_words(reading: falls.FallReading, held: int) -> str:
    """The fall held through, where the delayed off keeps workers for its return."""
    if reading.held_rate is None or held <= 0:
        return ""
    floor = reading.fall.floor if reading.fall is not None else None
    if reading.lull and floor is not None:
        return (
            f"; the rate fell from {reading.held_rate:.2f} jobs/s to below any read before "
            f"({floor:.2f} jobs/s), a lull that may come back: {held} workers kept for its "
            f"return"
        )
    return (
        f"; the rate fell from {reading.held_rate:.2f} jobs/s and the last fall as deep came "
        f"back: {held} workers kept for its return"
    )
