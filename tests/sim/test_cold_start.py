"""A cold start: the controller's first ticks on a queue already busy when its counters began.

The rate windows fill from 0 over their length, so a steady load reads as a ramp until the long
window is full; no forecast may extrapolate that fill into an order."""

from __future__ import annotations

from dataclasses import replace

from queue_autoscale.core import DEFAULT_POLICY
from queue_autoscale.sim.arrivals import scenario
from queue_autoscale.sim.bench import SweepOptions, bench_spec
from queue_autoscale.sim.runner import compare


def test_a_steady_load_met_at_a_cold_start_orders_no_more_than_it_needs() -> None:
    # GIVEN a steady 20 jobs/s of 1 s jobs from the first second, 21 workers running, and a
    # controller whose counters begin with the jobs (the run's first ticks, in its warm-up)
    counts = scenario("steady").counts(seed=0, length_seconds=900)
    spec = replace(bench_spec(SweepOptions(), 0), sla_seconds=10.0, percentile=0.999)
    # WHEN it decides over the first five minutes, while its 300 s rate window fills
    run = compare("steady", counts, [DEFAULT_POLICY], spec, record_decisions=True)
    decisions = run.decisions[DEFAULT_POLICY]
    start = decisions[0].at
    first = [d for d in decisions if d.at - start < 300.0]
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
    # GIVEN the same steady 20 jobs/s met from the first second
    counts = scenario("steady").counts(seed=0, length_seconds=900)
    spec = replace(bench_spec(SweepOptions(), 0), sla_seconds=10.0, percentile=0.999)
    # WHEN the controller decides while its 300 s window fills
    run = compare("steady", counts, [DEFAULT_POLICY], spec, record_decisions=True)
    decisions = run.decisions[DEFAULT_POLICY]
    start = decisions[0].at
    # THEN from its second tick it reads the load, not the share of the window that has filled
    # (the window alone read 2 jobs/s at 30 s in, 10 at 150 s)
    rates = [d.arrival_rate for d in decisions[1:] if d.at - start < 300.0]
    assert len(rates) == 29
    assert min(rates) > 17.0 and max(rates) < 23.0, rates
