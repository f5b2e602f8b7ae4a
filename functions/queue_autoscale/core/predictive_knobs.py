"""The knobs of the predictive policy (core/predictive.py). Pure.

Each is derived from the queue's SLA S, percentile p (miss budget b = 1 - p), provisioning
lead L and evaluation interval I, or is a constant chosen without fitting a workload.
docs/decision.md section 6 lists all ten with their formulas; three live with what they
shape: the rate windows W and w (`models.RATE_WINDOW_SECONDS`, `SHORT_WINDOW_SECONDS`, what
the snapshot measures), the seasonal model's weight (`trend.model_weight`, its back-tested
skill) and the noise level z of p (the percentile's normal quantile, where each test reads
it).
"""

from __future__ import annotations

import math
from typing import NamedTuple

from queue_autoscale.core.models import QueueSettings
from queue_autoscale.core.queueing import walk_quantile

COHORT_POINTS = 12
"""Deadline cohorts the pickup prediction evaluates over the horizon (a resolution, not a
behaviour): with L = 60 s, I = 10 s and S = 30 s one cohort per 8.3 s of deadlines, finer than
an interval. The cost of a plan's evaluation is linear in it."""
FALSE_ALARM_SECONDS = 3600.0
"""How often at most a steady queue's noise may be read as a move, s: once an hour (the
requirement on steady traffic that sim/verdict.py checks, at most one flap an hour). A false
alarm orders a lead of workers that the delayed off then stops: a flap. `move_sigmas` derives
the move tests' line from it."""
ABLATED_DOWN_COOLDOWN_SECONDS = 60.0
"""Read only with "release-now" switched off, for the ablation: the scale-down cooldown a
release then waits, s. Production never reads it."""


MECHANISMS: tuple[str, ...] = (
    "recurrence",
    "backlog-rise",
    "load-steady",
    "load-band",
    "orders",
    "rise-kept",
    "kept-window",
    "walk",
    "mean-landing",
    "release-now",
    "loop",
    "excused",
    "horizon",
    "returns",
    "jumps",
    "up-band",
    "lulls",
    "burst-backlog",
    "load-window",
)
"""Mechanisms `predictive.ablated` can switch off, each for the ablation on the validation set:
"recurrence" is the back-tested forecast of a recurring burst (core/onsets.py); two read
`Knobs.correctable` (S > L + I), each its own behaviour: "backlog-rise" leaves a rise of the short
rate window, and the trend's forecast, to the backlog (off: the steady state reads them as where S
<= L + I), and "load-steady" sizes the steady state and the delayed off's kept need at the load,
which the burst model's onset and end tests then read (off: Erlang C with its noise margin), and
with it "load-band" reads that load at its lower bound, for the plan always and for the kept need
while a re-order still lands before the oldest waiting job is due, its age at most S - (L + I) (off:
the load as measured); "orders" is each pending order's own landing time (core/orders.py; off: every
pending worker lands a lead after the last scale-up); "rise-kept" has the delayed off keep what a
rise asks back before a re-order could land (`trend.rise_slope`; off: the kept need and the
trend at the reach alone); "kept-window" holds the kept need's walk R + W ahead as well as at the
reach, and keeps the fleet a forecast burst starting within R + W asks for (`predictive._kept`,
`predictive._remembered`; off: at the reach alone, and no burst kept); "walk" lets the steady state
run hot where the backlog's random walk over the reach stays within the SLA (`predictive._steady`;
off: Erlang C alone); "mean-landing" counts ordered workers from their mean landing L + I / 2 (off:
from L); "release-now" lets a release follow another without the configured scale-down cooldown
(off: the cooldown holds); "loop" moves the chance level with the realized compliance
(`chance_level`, with its integral term; off: the level is the budget b); "excused" keeps the
reaction bound's late starts out of the level's spending (core/sla_loop.py; off: every late start
counts against the budget there too); "horizon" reads the arrivals' dispersion at the short
window's scale, from what the controller's own rate readings missed over it, where S <= L + I
and it is above the per-second one (core/dispersion.py `read_horizon`; off: the per-second
index alone); "returns" keeps, through a fall of the rate as
deep as the last that came back within the loop window, the workers its return needs until
workers ordered at it land, for as long as the last took to come back (at least R + W), where
S < L + I / 2 and no back-tested recurring burst is forecast (core/falls.py,
`predictive._held`; off: the delayed off keeps what the fallen rate asks); "jumps" has the record
path ask for a tick when the arrivals since the last one jump past its line, where S <= L + I
(core/jump.py; off: the clock ticks alone; the decision itself does not read it); "up-band"
raises the fleet for a steady state above it only where the load's lower bound still asks for
more, while holding keeps the horizon within the level, no burst is forecast, no move was read
in the short window and S <= L + I (`predictive._up_band`; off: the steady state at the measured
and forecast rates as they are); "lulls" has "returns" also hold through a fall below the lowest
short rate read since the watch began, before any such fall came back (core/falls.py; off: only
a fall as deep as one that came back is held); two more read `Knobs.correctable`: "burst-backlog"
leaves a forecast recurring burst to the backlog as well, so the horizon's plan orders nothing
for it before it shows (off: its arrivals are read ahead), and "load-window" has the delayed
off keep the fewest workers under which a backlog growing at the measured load takes longer
than R + W to age to S - R (`predictive._load_window`; off: the load's lower bound alone)."""


class Knobs(NamedTuple):
    """The knobs of one tick, derived once from the queue's settings (seconds)."""

    landing_seconds: float
    """L + I / 2: when workers ordered now start taking jobs, on average ("mean-landing"; L
    with it off). The plan credits an order's workers from here, and the reach below is why:
    the controller reads the queue once an interval, so it cannot tell within one when they
    started; with nothing to place them within the interval after the lead, their mean is its
    middle. Counted from L, an onset's order was sized for workers not all there yet."""
    reach_seconds: float
    """L + I: the earliest deadline the plan sizes for. Workers ordered now land after L, and
    the controller reads the queue once an interval, so it cannot see within one when they
    start: a job due within an interval of the landing is saved only by a landing to the
    second, and is left to the reaction bound (except that a release may not make it late)."""
    horizon_seconds: float
    """L + I + S: the deadlines the plan is judged on: every job waiting now and arriving
    until the reach. Later jobs are the steady state's."""
    delayed_off_seconds: float
    """L + I: how long a worker the plan no longer needs is kept before it is stopped. A task
    stopped and started again within a lead bills the lead without serving (Gandhi and
    Harchol-Balter's delayed off: keeping it idle for the setup time costs at most twice the
    best offline choice); the interval is the time to see that the need came back."""
    budget: float
    """b = 1 - p: the share of jobs the SLA lets be late."""
    sla_seconds: float
    """S: the pickup time the percentile of jobs must meet."""
    move_sigmas: float
    """How many standard deviations of the noise a move is read past (`move_sigmas`): the
    backlog's growth since the last tick as arrivals (`drain.growth_arrival_rate`), and the
    short rate window's rate against the long's (`predictive._sizing_rate`, which reads z of p
    where that is more): a steady queue's jitter is not a surge. At z of p (1.64 at 95 %) each
    fails on about one tick in ten of a steady load, and every false alarm orders a lead of
    workers and then stops them."""
    correctable: bool
    """S > L + I: a plan is corrected within the SLA (a backlog shows within an interval, and
    the workers ordered for it land a lead later, before its jobs are due), so the backlog
    carries the arrivals' noise. The test of two mechanisms (`MECHANISMS`): a rise of the short
    window or of the trend's forecast is left to the backlog, and the steady state and the kept
    need size at the load."""

    @property
    def uncorrected_seconds(self) -> float:
        """How long no order placed now corrects, s: from now until an order lands (on average,
        `landing_seconds`) less the SLA S; the jobs due before then are served by the fleet as
        it stands. Where S > L + I nothing is read over it (`correctable`)."""
        return self.landing_seconds - self.sla_seconds


def move_sigmas(interval_seconds: float) -> float:
    """The standard deviations of the noise a move test reads past (`Knobs.move_sigmas`):
    z of 1 - I / (2 x `FALSE_ALARM_SECONDS`), I the evaluation interval in seconds.

    Each tick reads two tests whose false alarm orders workers: the backlog's growth since the
    last tick as arrivals (`drain.growth_arrival_rate`) and the short rate window's rise over
    the long one's (`predictive._sizing_rate`). A false fall orders nothing (the delayed off
    keeps what the last reach asked for). With each test given half of one false alarm an
    hour, the noise of a steady queue orders workers at most once an hour: 2.99 sd at I = 10 s,
    3.20 at 5 s, 2.39 at 60 s (0 from an interval of two hours, the quantile's floor)."""
    return walk_quantile(1.0 - interval_seconds / (2.0 * FALSE_ALARM_SECONDS))


def down_cooldown(off: frozenset[str] = frozenset()) -> float:
    """Seconds a release waits after the last one that stopped running workers: none
    ("release-now"). The delayed off already keeps what the last L + I asked for, so a cooldown
    after a release only holds workers the plan no longer needs (after a drain, the in-flight
    floor it left goes a tick later, not a cooldown later). Off, `ABLATED_DOWN_COOLDOWN_SECONDS`."""
    return ABLATED_DOWN_COOLDOWN_SECONDS if "release-now" in off else 0.0


def horizon_seconds(settings: QueueSettings) -> float:
    """H = L + I + S, seconds: the reach (`QueueSettings.forecast_horizon_seconds`) plus the SLA;
    a job waiting now or arriving until the reach is due by then
    (`Knobs.horizon_seconds`). Also how long after a surge the fleet ordered for late starts
    are the reaction bound's (core/sla_loop.py): a job that arrived when the surge showed waits
    for the workers ordered at that tick, which land within the reach L + I, and is late once
    it has waited an SLA."""
    return settings.forecast_horizon_seconds + settings.sla_seconds


def loop_window_seconds(settings: QueueSettings) -> float:
    """The time constant of the realized-compliance average (core/sla_loop.py), seconds:
    (L + S) / b, b = 1 - p.

    One reaction (a lead to act, an SLA to be late in) moves the realized miss share by at most
    b even if every job in it was late, so the level answers the SLA's budget, not one burst:
    30 minutes at L = 60 s, S = 30 s, p = 95 %; 2.5 hours at p = 99 %. Infinite without a
    budget: nothing is forgotten."""
    budget = 1.0 - settings.percentile
    reaction = settings.provisioning_lead_seconds + settings.sla_seconds
    return reaction / budget if budget > 0 else math.inf


def derive(settings: QueueSettings, off: frozenset[str] = frozenset()) -> Knobs:
    """The tick's knobs from the queue's settings (`off`: mechanisms switched off)."""
    lead = settings.provisioning_lead_seconds
    interval = settings.evaluation_interval_seconds
    reach = settings.forecast_horizon_seconds
    budget = max(0.0, 1.0 - settings.percentile)
    return Knobs(
        landing_seconds=lead + interval / 2.0 if "mean-landing" not in off else lead,
        reach_seconds=reach,
        horizon_seconds=horizon_seconds(settings),
        delayed_off_seconds=reach,
        budget=budget,
        sla_seconds=settings.sla_seconds,
        move_sigmas=move_sigmas(interval),
        correctable=settings.sla_seconds > reach,
    )


class ChanceLevel(NamedTuple):
    """The SLA loop's output for one tick."""

    level: float
    """The predicted miss share a plan may have."""
    gain: float
    """The integral term g, (0, 1], kept for the next tick (`ControllerState.chance_gain`)."""


def chance_level(
    budget: float,
    started: float,
    late: float,
    missed: float,
    gain: float,
    seconds: float,
    window: float,
) -> ChanceLevel:
    """The chance constraint's level: the predicted miss share a plan may have, 1 / n..2b.

    The SLA loop's only output. Over the loop's window T (core/sla_loop.py, decayed counts of
    jobs `started`, of those `missed` the SLA and of those `late` not excused) the realized
    miss share of the unexcused is m = late / started and that of all is M = missed / started.
    The level is g (b + (b - m)): what the window saved is spent, what it overspent is paid
    back at once. The integral term g (at most 1, `gain` last tick, `seconds` since) moves by
    exp((b - M) / b x seconds / T): while the realized share of every miss stays above b, the
    level keeps tightening at the loop's own pace, so the realized share settles at b even
    where the plan's predicted share is below what it realizes (bursts the forecast cannot
    see, which a larger standing fleet absorbs); at or below b it returns to 1 and the level
    is b + (b - m) again. With fewer than 1 / b jobs counted (too few to tell a share of b) it
    is b and g is kept. Never below 1 / n, n the jobs counted: the least share the window
    can tell, one of its jobs late."""
    if budget <= 0 or started * budget < 1.0:
        return ChanceLevel(budget, gain)
    every = missed / started
    if seconds > 0 and window > 0:  # b > 0 here: T = (L + S) / b is finite
        gain = min(1.0, gain * math.exp((budget - every) / budget * seconds / window))
    level = gain * (2.0 * budget - late / started)
    floor = 1.0 / started
    return ChanceLevel(level if level > floor else floor, gain)
