"""A cold start: the controller's first ticks on a queue already busy when its counters began.

The counters cover less than the rate windows until they have run a window's length: the rates
are read over the time the queue was watched, and no forecast extrapolates the windows' fill."""

from __future__ import annotations

from dataclasses import replace
from functools import cache

from queue_autoscale.core import DEFAULT_POLICY, Decision
from queue_autoscale.sim.arrivals import scenario
from queue_autoscale.sim.bench import SweepOptions, bench_spec
from queue_autoscale.sim.runner import compare


@cache
def _first_five_minutes() -> tuple[Decision, ...]:
    """The decisions of the first 300 s of a steady 20 jobs/s of 1 s jobs met from the first
    second, 21 workers running, at SLA 10 s p99.9; the counters begin with the jobs."""
    counts = scenario("steady").counts(seed=0, length_seconds=900)
    spec = replace(bench_spec(SweepOptions(), 0), sla_seconds=10.0, percentile=0.999)
    run = compare("steady", counts, [DEFAULT_POLICY], spec, record_decisions=True)
    decisions = run.decisions[DEFAULT_POLICY]
    return tuple(d for d in decisions if d.at - decisions[0].at < 300.0)


def test_a_steady_load_met_at_a_cold_start_orders_no_more_than_it_needs() -> None:
    # GIVEN the steady load and a controller whose counters begin with it
    # WHEN it decides over the first five minutes, while its 300 s rate window fills
    first = _first_five_minutes()
    start = first[0].at
    # THEN it never asks for more than the steady state's few workers above the 21 it runs
    # (extrapolating the fill, a forecast past 30 jobs/s ordered 213). The second tick reads
    # the load over the 10 s watched: 21.8 jobs/s, whose upper 99.9 % bound (z 3.09 of
    # sqrt(21.8 / 10)) is 26.4, served at 10 s by 27 workers of 1 s jobs
    assert len(first) == 30
    assert max(d.target for d in first) <= 28
    # AND those go within the delayed off: a rise fitted through the first tick, which read no
    # counters, kept 27 for 320 s
    assert max(d.target for d in first if d.at - start >= 120.0) <= 25


def test_a_cold_start_reads_the_load_over_the_time_the_queue_was_watched() -> None:
    # GIVEN the same steady load met from the first second
    # WHEN the controller decides while its 300 s window fills
    first = _first_five_minutes()
    # THEN from its second tick it reads the load, not the share of a window that has filled
    # (read whole, the plan's rate was 0.7 jobs/s at 10 s and 10.4 at 30 s)
    rates = [d.arrival_rate for d in first[1:]]
    assert len(rates) == 29
    assert min(rates) > 17.0 and max(rates) < 23.0, rates
