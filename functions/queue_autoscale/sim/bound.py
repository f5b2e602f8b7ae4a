"""Diagnostic, not a peer: the compliance an ideal *reacting* controller reaches.

It sees what our controller sees, with no delay (the per-second counters the ingest writes and
live SQS attributes), and pays no attention to cost. At every tick it sizes the fleet with
Erlang C for the higher of the last interval's and the last 5 minutes' arrival rates. The
moment the last interval's arrivals exceed 1.5 times what the fleet was sized for (and their
Poisson noise by 3 standard deviations), or the queue holds half an SLA of the running fleet's
work, it orders `max_workers` and keeps them until the queue is empty. No cooldown, no
stabilization. Where the record path asks for jump ticks (`core/jump.py`, the engine's
`jump_lateness_seconds`), it also reacts the second the arrivals counted since its last tick
are SURGE_FACTOR times the rate it sized for and pass the record path's line at that rate
(`core.jump.JumpLine`, Poisson dispersion), as our controller may. A second's look takes
the line's false-alarm rate, not the clock's 3 standard deviations: at 3 a look a second
would order every worker on the noise of a steady 5 jobs/s several times an hour, and now
and then just before a surge, which no reacting controller can know. What it still cannot
beat is the provisioning delay: the jobs that arrive from the start of a surge until the first
new workers can land.
On a step surge its compliance is the most a controller that only reacts can keep, from a
fleet sized for the rate before the step; `queue-autoscale bench` compares the default policy
with it. It is no bound on traffic
that bursts again right after the queue empties: it scales straight back down, where a
stabilization window keeps the workers for the next burst.
"""

from __future__ import annotations

import math

from queue_autoscale.core import QueueSettings, workers_for_sla
from queue_autoscale.core.jump import LOOK_SECONDS, JumpLine
from queue_autoscale.core.predictive_knobs import move_sigmas
from queue_autoscale.sim.engine import FleetView, Ints

NAME = "reaction-bound"
SURGE_FACTOR = 1.5
"""A last-interval rate this many times what the fleet was sized for is a surge."""
LONG_WINDOW = 300
"""Seconds of counters the baseline size also covers."""
WAIT_SHARE = 0.5
"""A backlog the running fleet needs this share of the SLA to start also calls for everything."""


class ReactionBoundPolicy:
    """All workers at the first sign of a surge, the Erlang-C size otherwise."""

    name = NAME

    def __init__(self, settings: QueueSettings) -> None:
        self.settings = settings
        self.interval_seconds = max(1, round(settings.evaluation_interval_seconds))
        self.sized_for: float | None = None
        self.surging = False
        self.jump_sigmas = move_sigmas(LOOK_SECONDS)
        """The record path's z for a look a second (`core.jump.jump_line`'s)."""

    def decide(self, view: FleetView) -> int:
        """One tick: max_workers through a surge, else the Erlang-C size for the last interval."""
        s = self.settings
        window = self.interval_seconds
        if view.elapsed_seconds < window:  # no interval of counters yet: keep the warm fleet
            return view.desired
        rows = view.counter_rows(LONG_WINDOW)
        since = view.now - window
        recent = sum(row.queued for row in rows if row.second >= since)
        rate = recent / window
        long_rate = sum(row.queued for row in rows) / LONG_WINDOW
        capacity = view.running * s.worker_concurrency / s.expected_job_seconds
        behind = view.visible > 0 and view.visible >= WAIT_SHARE * s.sla_seconds * capacity
        if self._surge(recent, window) or behind:
            self.surging = True
        elif self.surging and view.visible == 0:
            self.surging = False
        if self.surging:
            return s.max_workers
        self.sized_for = max(rate, long_rate)
        job, k = s.expected_job_seconds, s.worker_concurrency
        needed = workers_for_sla(self.sized_for, job, k, s.sla_seconds, s.percentile)
        return min(max(needed, s.min_workers), s.max_workers)

    def _surge(self, arrived: float, seconds: float) -> bool:
        """Whether `arrived` jobs over `seconds` are a surge on the rate the fleet was sized for:
        SURGE_FACTOR times it and 3 Poisson standard deviations past it."""
        if self.sized_for is None:
            return False
        expected = self.sized_for * seconds
        return arrived > SURGE_FACTOR * expected and arrived - expected > 3.0 * math.sqrt(
            max(expected, 1.0)
        )

    def jumped(self, counted: Ints, since: int, until: int) -> bool:
        """Whether the arrivals of seconds [since, until) (`counted` cumulative from time 0) are a
        surge already: SURGE_FACTOR times the rate it sized for, and past the record path's line
        at that rate (the record path asks for a tick then)."""
        if self.surging or self.sized_for is None:
            return False
        arrived = float(counted[until] - counted[since])
        line = JumpLine(float(since), self.sized_for, 1.0, self.jump_sigmas)
        seconds = until - since
        return arrived > SURGE_FACTOR * self.sized_for * seconds and line.passed(
            arrived, float(until)
        )

    def decide_jump(self, view: FleetView) -> int:
        """A tick the record path asked for on a surge: every worker."""
        self.surging = True
        return self.settings.max_workers
