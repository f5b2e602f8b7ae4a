"""Frozen value objects the decision core takes and returns.

Units are in the names or the docstrings: seconds, jobs, jobs/s, epoch seconds.
Nothing here reads a clock or does I/O; `now` is always passed in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import NamedTuple

JOB_TIME_RESOLUTION_SECONDS = 0.001
"""Job durations are measured in whole milliseconds: a mean below this reads as this."""
DEFAULT_MAX_JOB_SECONDS = 43_200.0
"""Plausibility limit of one job's duration (12 h, SQS's longest visibility timeout): longer
durations are rejected at ingest, and the core never uses a longer mean job time."""


class Urgency(StrEnum):
    """SLA urgency tier by oldest job age / SLA (seed 000)."""

    NORMAL = "NORMAL"
    ELEVATED = "ELEVATED"
    WARNING = "WARNING"
    CRITICAL = "CRITICAL"
    BREACH = "BREACH"


DEFAULT_EVALUATION_INTERVAL_SECONDS = 10.0
"""Seconds between evaluations when nothing sets it: the one default of the evaluate function,
the CLI, the simulator and the bench (template.yaml's EvaluationIntervalSeconds default; a test
keeps the two equal). 10 s is the interval the yardstick judges: at 15 s the default controller
passes 81 of the 180 short validation cells instead of 92, every loss at an SLA of 60 s or
less (benchmarks/results/interval.md)."""


class AgeSource(StrEnum):
    """Which estimate gave the oldest waiting job's age."""

    EMPTY = "empty"
    """Nothing visible: the age is 0 by definition."""
    CLOUDWATCH = "cloudwatch"
    """ApproximateAgeOfOldestMessage (plus its publication lag when the job still waits)."""
    COUNTERS = "counters"
    """The per-second counters' FIFO walk back to the visible backlog."""
    GIVEN = "given"
    """Handed in as measured elsewhere (a snapshot file, a test)."""
    UNKNOWN = "unknown"
    """No estimate: the age is None and the core holds."""


class Winner(StrEnum):
    """Which sizing term set the raw target (the decision record's `winner`)."""

    STEADY = "steady"
    """Erlang C at the current arrival rate."""
    TREND = "trend"
    """Erlang C at the forecast rate."""
    DRAIN = "drain"
    """The backlog drain."""
    NONE = "none"
    """Every term is 0, or the inputs were unusable."""
    FIXED = "fixed"
    """A peer policy's fixed fleet (the simulator's static peer)."""
    BACKLOG = "backlog"
    """A peer policy's backlog-per-worker rule (KEDA, target tracking)."""


STEADY, TREND, DRAIN = Winner.STEADY, Winner.TREND, Winner.DRAIN
"""The sizing terms' winners as module constants, for the hot path (words.py, decision.py): an enum
member read through its class costs ~70 ns on Python 3.11 (`EnumType.__getattr__`), an imported
constant ~15 ns."""


class Constraint(StrEnum):
    """Code of a constraint that changed or pinned the target (the record's `constraints`)."""

    POISON_GUARD = "poison_guard"
    MAX_WORKERS = "max_workers"
    CAPACITY_CAP = "capacity_cap"
    PARTITION_CAP = "partition_cap"
    MIN_WORKERS = "min_workers"
    ACTIVATION = "activation"
    IN_FLIGHT = "in_flight"
    FLEET_STUCK = "fleet_stuck"
    UP_COOLDOWN = "up_cooldown"
    DOWN_COOLDOWN = "down_cooldown"
    DEPLOYMENT = "deployment"
    STABILIZATION = "stabilization"
    STEP = "step"
    """Written only by the deleted rule-based policy (hybrid); kept so its decision logs read."""
    ANTICIPATION = "anticipation"
    """Written only by the deleted rule-based policy (hybrid); kept so its decision logs read."""
    BURST_HOLD = "burst_hold"
    """Written only by the deleted rule-based policy (hybrid); kept so its decision logs read."""
    REORDER_CONFIRM = "reorder_confirm"
    """Written only by the deleted rule-based policy (hybrid); kept so its decision logs read."""
    ORDERS_PENDING = "orders_pending"
    """No scale-down while tasks ordered earlier have not started and the visible backlog is
    above the last tick's (core/constraints.py movement)."""
    LOAD_RELEASE = "load_release"
    """Written only by the deleted rule-based policy (hybrid); kept so its decision logs read."""
    POST_BREACH_RECOVERY = "post_breach_recovery"
    """The seed hybrid's floor after a breach."""
    COOLDOWN = "cooldown"
    """The seed hybrid's one cooldown for both directions."""


class Action(StrEnum):
    """What the controller does with the service's desiredCount."""

    UP = "up"
    DOWN = "down"
    HOLD = "hold"


RATE_WINDOW_SECONDS = 300.0
"""W: the long arrival-rate window, seconds (core/snapshot.py measures over it); the trend is
fitted over the ticks of the same span."""
SHORT_WINDOW_SECONDS = 60.0
"""w: the short arrival-rate window, seconds (core/snapshot.py measures over it); a trend's
recent slope is fitted over the ticks of the same span."""


@dataclass(frozen=True, slots=True)
class QueueSettings:
    """One queue's effective settings, as the core sees them (built by `config.py`).

    Times are seconds; counts are workers (ECS tasks) unless named otherwise.
    """

    queue: str
    sla_seconds: float = 30.0
    percentile: float = 0.95
    min_workers: int = 1
    max_workers: int = 10
    worker_concurrency: int = 1
    """Jobs one worker runs at once (k); per-worker service rate mu = k / mean job seconds."""
    provisioning_lead_seconds: float = 60.0
    """Time from UpdateService until a new task takes jobs."""
    evaluation_interval_seconds: float = DEFAULT_EVALUATION_INTERVAL_SECONDS
    scale_up_cooldown_seconds: float = 0.0
    activation_threshold: int = 1
    """Visible jobs needed to scale a fleet up from zero."""
    capacity_cap: int | None = None
    """A hard cap besides max_workers (an account quota)."""
    partition_cap: int | None = None
    """Workers that can hold a partition (Kafka: partitions / consumers per worker, rounded up);
    more would sit idle."""
    overloading_threshold: float = 0.8
    """rho at or above this (and below 1) reads as overloading."""
    expected_job_seconds: float = 1.0
    """Prior mean job duration used until completions have been measured."""
    max_job_seconds: float = DEFAULT_MAX_JOB_SECONDS
    """Plausibility limit of one job's duration, seconds (see DEFAULT_MAX_JOB_SECONDS)."""
    dry_run: bool = False

    @property
    def stale_after(self) -> float:
        """Seconds after which a snapshot is stale and the tick holds: 2 evaluation intervals."""
        return 2.0 * self.evaluation_interval_seconds

    @property
    def stuck_after(self) -> float:
        """Seconds of unmet desired count after which scale-ups stop: 3 provisioning leads + 1
        interval. Tasks short of the desired count this long means the fleet cannot grow (quota,
        capacity, a failing image): stop asking for more."""
        return 3.0 * self.provisioning_lead_seconds + self.evaluation_interval_seconds

    @property
    def forecast_horizon_seconds(self) -> float:
        """h = provisioning lead + evaluation interval, seconds: when a worker ordered now is
        useful, the reaction time of every rule that waits for an order to land."""
        return self.provisioning_lead_seconds + self.evaluation_interval_seconds


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueSnapshot:
    """What was measured about one queue at `taken_at` (built by `core.snapshot`).

    Every measured field must be given: `None` means the input could not be read (a failed
    call), never a zero; the core then holds (or, for the optional inputs, leaves them out).
    """

    queue: str
    taken_at: float
    """Epoch seconds the measurements refer to."""
    visible: int | None
    """Jobs waiting (SQS ApproximateNumberOfMessages)."""
    in_flight: int | None
    """Jobs received by a worker and not yet deleted."""
    delayed: int | None
    oldest_age_seconds: float | None
    """Age of the oldest waiting job."""
    oldest_age_source: AgeSource
    """Which estimate gave it (UNKNOWN exactly when the age is None for a visible backlog)."""
    arrival_rate: float | None
    """lambda over the long window, jobs/s."""
    arrival_rate_short: float | None
    """lambda over the short window, jobs/s."""
    mean_job_seconds: float | None
    """Mean job duration S (None until a job has completed)."""
    completion_rate: float | None
    """Jobs/s completed over the long window (None if unknown)."""
    running: int | None
    desired: int | None
    pending: int | None
    deployment_in_progress: bool | None
    dlq_depth: int | None
    failure_rate: float | None
    """Share of finished jobs that failed in the window, 0..1."""
    rate_window_seconds: float = RATE_WINDOW_SECONDS
    """Length of the long window the rates were measured over (a setting, not a measure)."""
    short_window_seconds: float = SHORT_WINDOW_SECONDS
    """Length of the short window `arrival_rate_short` was measured over (a setting)."""
    pickups: tuple[tuple[int, int, int], ...] = ()
    """(epoch second, jobs started, summed pickup ms) per counter second with starts in the
    long window, in time order: what the SLA loop reads realized compliance from."""
    arrival_dispersion: float | None = None
    """Index of dispersion of the per-second arrivals over the long window (variance / mean:
    1 for Poisson traffic, more for bursty; None if unknown): the hot size's random walk."""
    arrival_dispersion_short: float | None = None
    """The same over the short window alone (None if unknown): the noise of the short window's
    own rate, which a burst earlier in the long window does not inflate."""
    arrival_dispersion_steps: float | None = None
    """The short window's index around the rate's own level, from successive per-second
    differences (`counters.Rates.arrival_dispersion_steps`; None if unknown)."""
    first_counter_second: float | None = None
    """The oldest counter second within the long window, epoch s (None: no rows or unknown)."""


@dataclass(frozen=True, slots=True)
class Sample:
    """One past tick remembered in the controller state."""

    at: float
    """Epoch seconds."""
    arrival_rate: float
    """jobs/s."""
    visible: int
    raw_target: int
    """The target before stabilization, cooldowns and the step limit."""
    dlq_depth: int = 0
    short_rate: float | None = None
    """The short rate window's arrival rate, jobs/s (`QueueSnapshot.arrival_rate_short`; None in
    a state written before it was kept): the trend tells a step from a rise on these alone."""


class Fall(NamedTuple):
    """An open fall of the arrival rate the controller remembers (core/falls.py)."""

    at: float
    """Epoch seconds of the tick that read it."""
    rate: float
    """The long rate window's rate when it opened, jobs/s (> 0): what the queue sustained."""
    depth: float
    """The lowest short-window rate since, as a share of `rate` (0..1)."""
    floor: float | None = None
    """The lowest short-window rate the controller read before it opened, since the watch
    began, jobs/s (`ControllerState.lowest_rate`; None: none read): a fall below it is to a
    rate the queue has not run at, a lull (core/falls.py)."""
    held: int = 0
    """The most workers the delayed off kept for its return since it opened
    (`predictive._held`; 0: none)."""


class Burst(NamedTuple):
    """One burst onset the controller remembers (core/onsets.py)."""

    at: float
    """Epoch seconds its onset was seen."""
    need: int
    """Highest sustained need (workers) from the onset until the next one."""
    rate: float = 0.0
    """Highest arrival rate the plan sized on from the onset until the next one, jobs/s
    (core/onsets.py)."""


class Order(NamedTuple):
    """Workers one scale-up ordered, not yet seen taking jobs (predictive, core/orders.py)."""

    at: float
    """Epoch seconds the order was placed."""
    workers: int
    """Workers of the order still pending (at least 1)."""


@dataclass(frozen=True, slots=True)
class ControllerState:
    """Per-queue memory between ticks (DynamoDB item `Q#<queue>` / `STATE`)."""

    queue: str
    version: int = 0
    """Optimistic-concurrency counter: a write succeeds only if it is still this value."""
    last_scale_up_at: float | None = None
    last_scale_down_at: float | None = None
    last_set_desired: int | None = None
    """The desiredCount this controller last set."""
    unmet_since: float | None = None
    """Since when ECS has run fewer tasks than this controller asked for (None: it caught up)."""
    samples: tuple[Sample, ...] = ()
    """Oldest first, trimmed to the longest window any rule reads."""
    high_usage_ticks: int = 0
    """seed-hybrid: consecutive ticks at >= 80 % SLA usage (seed 000's gradual escalation)."""
    last_breach_at: float | None = None
    """seed-hybrid: the last tick the oldest job was past its SLA (seed 000's recovery)."""
    realized_started: float = 0.0
    """The SLA loop: jobs started, exponentially decayed (core/sla_loop.py)."""
    realized_late: float = 0.0
    """...and of those, picked up after the SLA."""
    realized_excused: float = 0.0
    """...and of those, started within the reaction time of a surge (excused)."""
    realized_through: float | None = None
    """The last counter second (epoch) the loop has counted."""
    chance_gain: float = 1.0
    """The SLA loop's integral term g, (0, 1] (core/predictive_knobs.py `chance_level`)."""
    horizon_dispersion: float = 0.0
    """predictive: the arrivals' index of dispersion at the short window's scale, as the
    controller's own rate readings missed what came (core/dispersion.py `horizon_reading`)."""
    horizon_weight: float = 0.0
    """...and its readings' summed weights (0: none yet)."""
    bursts: tuple[Burst, ...] = ()
    """The last burst onsets, oldest first, at most core.onsets.REMEMBERED."""
    burst_ends: tuple[float, ...] = ()
    """Epoch seconds the last bursts were seen to end, oldest first, at most
    core.onsets.REMEMBERED (an end is seen even when its onset was not)."""
    surge_at: float | None = None
    """The last tick whose plan could not pick up a waiting job within the SLA whatever it
    ordered (epoch s; core/pickup.py `missing_anyway`): misses within the reaction time of it
    are excused (core/sla_loop.py)."""
    orders: tuple[Order, ...] = ()
    """predictive: the scale-ups still pending, oldest first, each with when it was placed
    (core/orders.py); empty in a state written before it was kept."""
    fall: Fall | None = None
    """predictive: the fall of the arrival rate still open (core/falls.py; None: none)."""
    fall_returned: float | None = None
    """predictive: the depth (0..1) of the deepest fall that came back since one last did not
    (None: no evidence; core/falls.py)."""
    fall_returned_after: float | None = None
    """predictive: how long the last fall that came back took to, s (None: no evidence;
    core/falls.py): the hold through the next one as deep lasts at least as long."""
    lowest_rate: float | None = None
    """predictive: the lowest short-window rate read since the watch began, jobs/s (None: none
    yet; core/falls.py): what a fall is new below."""


@dataclass(frozen=True, slots=True)
class TrendModel:
    """Arrival-rate model fitted by the `trend_fit` Spark job (DynamoDB `MODEL` item).

    rate(t) = max(0, (level + slope_per_hour * hours since fitted_at) * seasonal[how(t)])
    where how(t) is the hour of week in UTC, 0 = Monday 00:00.
    """

    queue: str
    fitted_at: float
    """Epoch seconds."""
    level: float
    """jobs/s at fitted_at, deseasonalised."""
    slope_per_hour: float
    """Change of the level, jobs/s per hour."""
    seasonal: tuple[float, ...] = field(default=(1.0,) * 168)
    """168 multiplicative factors, one per hour of the week (mean 1)."""
    mase: float | None = None
    """Back-tested mean absolute scaled error of this model on held-out weeks (0..inf)."""
    naive_mase: float | None = None
    """The same error of the seasonal-naive forecast (the last week repeated)."""


@dataclass(frozen=True, slots=True)
class Terms:
    """The three sizing terms in workers, before constraints."""

    steady: int
    trend: int
    drain: int


@dataclass(frozen=True, slots=True)
class Decision:
    """The decision record for one queue at one tick."""

    queue: str
    at: float
    """Epoch seconds of the decision (`now`)."""
    policy: str
    current: int
    """The fleet size the decision starts from (desired, else running)."""
    target: int
    action: Action
    terms: Terms
    raw_target: int
    """max(terms) before constraints."""
    winner: Winner
    """Which term set the raw target."""
    reason: str
    """In words: which term won and why, and every constraint that bit."""
    constraints: tuple[Constraint, ...]
    """The constraints that changed the target, in order, each once."""
    urgency: Urgency
    sla_usage: float
    """oldest age / SLA."""
    load_ratio: float
    overloading: bool
    overloaded: bool
    backlog_per_instance: float
    """Visible jobs per running worker (visible itself when none run)."""
    predicted_pickup_seconds: float | None
    """Expected wait of a job enqueued now with the running fleet (None: never picked up)."""
    predicted_breach_seconds: float | None
    """Seconds until the SLA is breached at the current fleet, None if no breach is predicted."""
    arrival_rate: float
    """lambda used, jobs/s."""
    forecast_rate: float
    """lambda forecast at now + horizon, jobs/s."""
    service_rate: float
    """mu, jobs/s one worker serves."""
    oldest_age_seconds: float
    oldest_age_source: AgeSource
    inputs_ok: bool
    """False when missing or stale inputs forced a hold."""
    fleet_usage: float | None = None
    """`current` / max_workers (seed 003's 80%-of-max alert, per queue); None when max is 0."""
    sla_seconds: float | None = None
    """The queue's pickup-time SLA the decision aimed at (seed 001's decision record)."""
    percentile: float | None = None
    """The share of jobs the SLA promises (0..1)."""
    realized_compliance: float | None = None
    """Share of jobs picked up within the SLA over the SLA loop's window (None: none counted)."""
    headroom: float = 0.0
    """Always 0: the extra capacity share of the deleted rule-based policy (hybrid), kept in the
    record so the decision logs it wrote read back."""


@dataclass(frozen=True, slots=True)
class Evaluation:
    """A decision and the controller state to store after it."""

    decision: Decision
    state: ControllerState
