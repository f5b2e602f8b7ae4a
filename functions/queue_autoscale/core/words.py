"""The decision's words: why the winning term won, and what the SLA loop or a finished burst
changed. Pure string assembly from numbers the core already computed."""

from __future__ import annotations

from queue_autoscale.core import recurrence
from queue_autoscale.core.drain import (
    WARNING_USAGE,
    carried_wait_seconds,
    landing_clear_seconds,
    safety_margin,
)
from queue_autoscale.core.drain_plan import DrainPlan
from queue_autoscale.core.measures import Measures
from queue_autoscale.core.models import DRAIN, STEADY, TREND, QueueSettings, Terms, Winner
from queue_autoscale.core.text import n_workers


def term_words(
    winner: Winner,
    terms: Terms,
    m: Measures,
    forecast: float,
    settings: QueueSettings,
    plan: DrainPlan,
) -> str:
    if winner is STEADY:
        carried = carried_wait_seconds(settings)
        if carried > 0:
            return (
                f"steady won: {n_workers(terms.steady, 'let')} the {m.visible} waiting carry "
                f"{m.arrival_rate:.2f} jobs/s (loose SLA): a job joining in "
                f"{settings.forecast_horizon_seconds:g} s waits at most {carried:g} s "
                f"({m.service_rate:.3g} jobs/s per worker){m.prior_note}"
            )
        return (
            f"steady won: {n_workers(terms.steady, 'keep')} P(pickup > "
            f"{settings.sla_seconds:g} s) <= {1 - settings.percentile:.0%} at "
            f"{m.arrival_rate:.2f} jobs/s (Erlang C, {m.service_rate:.3g} jobs/s per worker)"
            f"{m.prior_note}"
        )
    if winner is TREND:
        return (
            f"trend won: {forecast:.2f} jobs/s forecast in "
            f"{settings.forecast_horizon_seconds:g} s (now {m.arrival_rate:.2f}) needs "
            f"{n_workers(terms.trend)}{m.prior_note}"
        )
    if winner is DRAIN:
        return _drain_words(terms, m, settings, plan)
    return "no work: nothing waiting or arriving"


def _drain_words(terms: Terms, m: Measures, settings: QueueSettings, plan: DrainPlan) -> str:
    sla = settings.sla_seconds
    lead = settings.provisioning_lead_seconds
    horizon = round(plan.horizon, 1)
    aim = round(max(0.0, sla - plan.horizon), 1)
    if m.oldest_age_seconds > sla:
        state = f"SLA breached (oldest {m.oldest_age_seconds:.1f} s > {sla:g} s)"
    else:
        state = f"oldest {m.oldest_age_seconds:.1f} s of {sla:g} s"
    landing = f"new workers land in {lead:g} s" if lead > 0 else "new workers start at once"
    earlier = ""
    if plan.ordered > 0 and plan.lands_in is not None:
        earlier = f", after the {plan.ordered} ordered earlier (in {plan.lands_in:.0f} s)"
    rate = ""
    if plan.arrival_rate > m.arrival_rate:
        rate = f"; backlog growth shows {plan.arrival_rate:.2f} jobs/s arriving"
    kept = ""
    if plan.kept:
        kept = "; keeping the workers already ordered: they are needed when they land"
    capped = ""
    if plan.capped:
        capped = (
            f"; held to emptying them within {landing_clear_seconds(settings):g} s "
            "(one evaluation interval: a faster drain is sized on a landing the controller "
            "cannot see)"
        )
    late = ""
    if plan.late:
        late = (
            f"; also sized for a landing {landing_clear_seconds(settings):g} s later, which "
            "would find the oldest job past its SLA"
        )
    margin = ""
    if m.sla_usage >= WARNING_USAGE:
        margin = f", safety margin x{safety_margin(m.sla_usage):.2f}"
    return (
        f"drain won: {n_workers(terms.drain)}; {state}, {m.visible} waiting; {landing}{earlier} "
        f"and find about {plan.at_landing:.0f} waiting; every job up to {aim:g} s old then "
        f"(at least the {horizon:g} s recovery horizon left) is picked up in time{late}{capped}"
        f"{rate}"
        f"{kept}"
        f"{margin}{m.prior_note}"
    )


def loop_words(
    headroom: float,
    compliance: float | None,
    rec: recurrence.Recurrence,
    settings: QueueSettings,
) -> str:
    """What the SLA loop (headroom > 0, at `compliance`) or a finished burst did to this tick;
    `settings` are the held ones, whose stabilization window is the capacity's hold (s)."""
    window = settings.stabilization_window_seconds
    if headroom > 0:
        return (
            f"; SLA loop: realized compliance {compliance:.3%} under "
            f"{settings.percentile:.1%}, sizing for {1 + headroom:.2f} x the rate and "
            f"holding capacity {window:g} s"
            if compliance is not None
            else ""
        )
    if rec.over:
        next_one = (
            "a loose SLA: the backlog carries the next one's onset"
            if carried_wait_seconds(settings) > 0
            else f"bursts recur every {rec.period:.0f} s, the next is anticipated"
            if rec.period is not None
            else "no recurrence seen: a one-off surge decays"
        )
        return (
            f"; the last burst is over: its capacity kept {window:g} s, "
            f"not stepped down ({next_one})"
        )
    return ""
