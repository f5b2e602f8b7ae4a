"""The policies the simulator compares, built from one set of queue settings."""

from __future__ import annotations

from dataclasses import dataclass, replace

from queue_autoscale.core import (
    DEFAULT_EVALUATION_INTERVAL_SECONDS,
    POLICIES,
    ControllerState,
    Decision,
    QueueSettings,
    workers_for_sla,
)
from queue_autoscale.core import (
    Policy as CoreFunction,
)
from queue_autoscale.core.jump import TICKED_ON_JUMPS, JumpLine, clock_line, keep_readings, moved
from queue_autoscale.core.predictive import ablated
from queue_autoscale.core.predictive_knobs import MECHANISMS
from queue_autoscale.sim.arrivals import ArrivalError, Counts
from queue_autoscale.sim.bound import NAME as BOUND_NAME
from queue_autoscale.sim.bound import ReactionBoundPolicy
from queue_autoscale.sim.engine import FleetView, Ints, Policy
from queue_autoscale.sim.peers import (
    KedaPolicy,
    StaticPolicy,
    TargetTrackingPolicy,
    keda,
    static,
    target_tracking,
)
from queue_autoscale.sim.peers.keda import NAME_NO_DRAIN as KEDA_NO_DRAIN
from queue_autoscale.sim.peers.knobs import Knob, KnobError

POLICY_NAMES: tuple[str, ...] = (
    "predictive",
    "seed-hybrid",
    "keda",
    "target-tracking",
    "static",
)
"""The policies of `all`: the controller's default (core/predictive.py) first."""
ABLATIONS: dict[str, str] = {f"predictive-no-{m}": m for m in MECHANISMS}
"""Runnable by name, not part of `all`: predictive with one mechanism switched off
(`core.predictive.ablated`), by name -> mechanism, for the ablation on the validation set."""
DIAGNOSTICS: tuple[str, ...] = (BOUND_NAME, KEDA_NO_DRAIN)
"""Runnable by name, not part of `all`: a yardstick nobody would deploy, and KEDA as users suffer
it when pods are stopped at random mid-job (the `interrupted` score)."""


class CorePolicy:
    """A pure core policy (`queue_autoscale.core.POLICIES`), called every evaluation interval
    with the snapshot our evaluate function would build; its state is carried between ticks.
    With `jumps`, the record path may also tick it between clock ticks (`core/jump.py`, where
    the engine's fleet gives the record path's lateness)."""

    def __init__(
        self,
        name: str,
        function: CoreFunction,
        settings: QueueSettings,
        record: bool = False,
        jumps: bool = False,
    ) -> None:
        self.name = name
        self.function = function
        self.settings = settings
        self.interval_seconds = max(1, round(settings.evaluation_interval_seconds))
        self.state = ControllerState(queue=settings.queue)
        self.record = record
        self.decisions: list[Decision] = []
        """Every decision record, when `record` is set (for `simulate --decisions`)."""
        self.jumps = jumps
        self.line: JumpLine | None = None
        """What the last tick sized on, for the record path's jump test (None: no test)."""

    def decide(self, view: FleetView) -> int:
        """One evaluate tick on the clock."""
        snapshot = view.snapshot(self.settings.queue, self.settings.sla_seconds)
        read = self.state
        evaluation = self.function(snapshot, self.settings, read, view.now, None)
        self.state = evaluation.state
        if self.jumps:
            rate = evaluation.decision.arrival_rate
            self.line = clock_line(self.settings, snapshot, read, rate, view.now)
        return self._decided(evaluation.decision)

    def decide_jump(self, view: FleetView) -> int:
        """One tick the record path asked for: it orders as any tick, but the clock tick's
        readings stay (`core.jump.keep_readings`) and the line counts from now."""
        snapshot = view.snapshot(self.settings.queue, self.settings.sla_seconds)
        evaluation = self.function(snapshot, self.settings, self.state, view.now, None)
        self.state = keep_readings(self.state, evaluation.state)
        if self.line is not None:
            self.line = moved(self.line, view.now)
        return self._decided(evaluation.decision)

    def jumped(self, counted: Ints, since: int, until: int) -> bool:
        """Whether the arrivals of seconds [since, until) (`counted` cumulative from time 0)
        jump past the last tick's line; that tick was at second `since`."""
        line = self.line
        if line is None:
            return False
        arrived = float(counted[until] - counted[since])
        return line.passed(arrived, line.since + (until - since))

    def _decided(self, decision: Decision) -> int:
        if self.record:
            self.decisions.append(decision)
        return decision.target


def sim_settings(
    sla_seconds: float = 30.0,
    service_seconds: float = 1.0,
    concurrency: int = 1,
    provision_delay_seconds: float = 60.0,
    interval_seconds: float = DEFAULT_EVALUATION_INTERVAL_SECONDS,
    percentile: float = 0.999,
    min_workers: int = 1,
    max_workers: int = 1000,
) -> QueueSettings:
    """The queue settings every policy in a run shares (peers read SLA, job time, min/max)."""
    return QueueSettings(
        queue="sim",
        sla_seconds=sla_seconds,
        percentile=percentile,
        min_workers=min_workers,
        max_workers=max_workers,
        worker_concurrency=concurrency,
        provisioning_lead_seconds=provision_delay_seconds,
        evaluation_interval_seconds=interval_seconds,
        expected_job_seconds=service_seconds,
    )


POLICY_GRAMMAR = (
    "POLICIES is 'all' or a comma-separated list of POLICY; POLICY is NAME or "
    "NAME(KNOB=VALUE,...), e.g. "
    "'predictive,keda,keda(queue_length=120,min_replicas=0)'. "
    "Knobs: predictive, seed-hybrid and its ablations: interval (s between ticks); "
    "keda and keda-no-drain: queue_length, scale_down_stabilization (s), min_replicas; "
    "target-tracking: target_value, scale_in_cooldown (s), min_capacity; static: size. "
    "A knob left out keeps the documented setting (the floors: --min-workers)."
)
"""The `--policy` grammar, as `simulate --help` states it."""
POLICY_HELP = (
    f"Policies: {', '.join(POLICY_NAMES)} or all; also, by name only, predictive's "
    f"ablations ({', '.join(ABLATIONS)}), {BOUND_NAME} and "
    f"{KEDA_NO_DRAIN} (stopped mid-job on scale-in). " + POLICY_GRAMMAR
)
"""`simulate --policy`'s help, from the same names `parse_policies` accepts."""
MAX_POLICY_TEXT = 2000
"""The longest `--policy` text read, characters."""
MAX_POLICIES = 32
"""The most policies one run compares."""
INTERVAL_KNOB = "interval"
"""A core policy's one knob: the seconds between its ticks (the stack's
EvaluationIntervalSeconds; the run's interval when left out)."""
CORE_KNOBS: dict[str, Knob] = {
    INTERVAL_KNOB: Knob("seconds between the controller's ticks", True, 5, 60),
}
"""What a core policy takes: how often it ticks, to judge a longer interval (say for a cheaper
stack) against the same peers and reaction bound."""
CORE_NAMES: frozenset[str] = frozenset((*POLICIES, *ABLATIONS))
"""Our policies (a core policy, or predictive with a mechanism off), as against the peers and
the diagnostics."""
KNOBS: dict[str, dict[str, Knob]] = {
    **dict.fromkeys(CORE_NAMES, CORE_KNOBS),
    "keda": keda.KNOBS,
    KEDA_NO_DRAIN: keda.KNOBS,
    "target-tracking": target_tracking.KNOBS,
    "static": static.KNOBS,
}
"""Each peer's settings by name; a policy not here takes none."""


@dataclass(frozen=True, slots=True)
class PolicyChoice:
    """One policy of `--policy`: its name and the knobs set (name, value), in KNOBS order."""

    name: str
    knobs: tuple[tuple[str, float], ...] = ()

    @property
    def label(self) -> str:
        """How the run is reported: 'keda' or 'keda(queue_length=120,min_replicas=0)'."""
        if not self.knobs:
            return self.name
        return f"{self.name}({','.join(f'{k}={v:g}' for k, v in self.knobs)})"

    def get(self, knob: str) -> float | None:
        """The knob's value, None when left out."""
        return next((v for k, v in self.knobs if k == knob), None)


def split_policies(text: str) -> list[str]:
    """`text` split at the commas outside parentheses; ArrivalError for unbalanced or nested
    parentheses, or text past `MAX_POLICY_TEXT`."""
    if len(text) > MAX_POLICY_TEXT:
        raise ArrivalError(f"policy: {len(text):,} characters, more than {MAX_POLICY_TEXT:,}")
    parts: list[str] = []
    depth, begin = 0, 0
    for index, char in enumerate(text):
        if char == "(":
            depth += 1
            if depth > 1:
                raise ArrivalError(f"policy {text!r}: nested '(' at character {index + 1}")
        elif char == ")":
            depth -= 1
            if depth < 0:
                raise ArrivalError(f"policy {text!r}: ')' without '(' at character {index + 1}")
        elif char == "," and depth == 0:
            parts.append(text[begin:index])
            begin = index + 1
    if depth:
        raise ArrivalError(f"policy {text!r}: '(' without ')'")
    parts.append(text[begin:])
    return [part.strip() for part in parts]


def parse_policy(text: str) -> PolicyChoice:
    """One POLICY of the grammar, validated (ArrivalError in one line)."""
    name, opened, rest = text.partition("(")
    name = name.strip()
    if name not in (*POLICY_NAMES, *ABLATIONS, *DIAGNOSTICS):
        raise ArrivalError(
            f"unknown policy {name!r}: choose from {', '.join(POLICY_NAMES)} (or all), "
            f"the ablations {', '.join(ABLATIONS)}, "
            f"or the diagnostics {', '.join(DIAGNOSTICS)}"
        )
    if not opened:
        return PolicyChoice(name)
    if not rest.endswith(")"):
        raise ArrivalError(f"policy {text!r}: text after ')'")
    allowed = KNOBS.get(name, {})
    given: dict[str, float] = {}
    for item in (part.strip() for part in rest[:-1].split(",")):
        knob, equals, value = (piece.strip() for piece in item.partition("="))
        if not equals or not knob or not value:
            raise ArrivalError(f"policy {text!r}: write each knob as KNOB=VALUE")
        if knob not in allowed:
            known = ", ".join(allowed) or "none"
            raise ArrivalError(f"policy {name}: unknown knob {knob!r} (its knobs: {known})")
        if knob in given:
            raise ArrivalError(f"policy {name}: knob {knob} given twice")
        try:
            given[knob] = allowed[knob].parse(knob, value)
        except KnobError as error:
            raise ArrivalError(f"policy {name}: {error}") from None
    return PolicyChoice(name, tuple((k, given[k]) for k in allowed if k in given))


def parse_policies(text: str) -> list[str]:
    """The `--policy` text (`POLICY_GRAMMAR`), validated: each policy's label; 'all' means
    every policy at its documented settings. ArrivalError in one line otherwise."""
    parts = split_policies(text)
    if [p for p in parts if p] == ["all"]:
        return list(POLICY_NAMES)
    if not any(parts):
        raise ArrivalError("policy: name at least one of " + ", ".join(POLICY_NAMES))
    if len(parts) > MAX_POLICIES:
        raise ArrivalError(f"policy: {len(parts)} policies, more than {MAX_POLICIES}")
    labels: list[str] = []
    for part in parts:
        if not part:
            raise ArrivalError(f"policy {text!r}: an empty name between commas")
        label = parse_policy(part).label
        if label in labels:
            raise ArrivalError(f"policy {label} given twice")
        labels.append(label)
    return labels


def _whole(value: float | None) -> int | None:
    return None if value is None else int(value)


def make_policy(
    name: str, settings: QueueSettings, scored_counts: Counts, record: bool = False
) -> Policy:
    """A fresh policy instance (policies keep state, so one per run) for a name or a label of
    `parse_policies`; `record` keeps a core policy's decision records."""
    choice = parse_policy(name)
    label, base = choice.label, choice.name
    interval = choice.get(INTERVAL_KNOB)
    if interval is not None:
        settings = replace(settings, evaluation_interval_seconds=interval)
    if base in POLICIES:
        return CorePolicy(label, POLICIES[base], settings, record, jumps=base in TICKED_ON_JUMPS)
    if base in ABLATIONS:
        mechanism = ABLATIONS[base]  # "jumps" is the simulated record path's, not the core's
        core = ablated(mechanism)
        return CorePolicy(label, core, settings, record, jumps=mechanism != "jumps")
    if base in ("keda", KEDA_NO_DRAIN):
        stabilization = _whole(choice.get("scale_down_stabilization"))
        return KedaPolicy(
            settings,
            drain=base == "keda",
            queue_length_override=_whole(choice.get("queue_length")),
            scale_down_stabilization=(
                keda.SCALE_DOWN_STABILIZATION_SECONDS if stabilization is None else stabilization
            ),
            min_replicas=_whole(choice.get("min_replicas")),
            name=label,
        )
    if base == "target-tracking":
        cooldown = _whole(choice.get("scale_in_cooldown"))
        return TargetTrackingPolicy(
            settings,
            choice.get("target_value"),
            target_tracking.SCALE_IN_COOLDOWN_SECONDS if cooldown is None else cooldown,
            _whole(choice.get("min_capacity")),
            name=label,
        )
    if base == "static":
        return StaticPolicy(settings, scored_counts, _whole(choice.get("size")), name=label)
    return ReactionBoundPolicy(settings)


def initial_workers(policy: Policy, settings: QueueSettings, warm_rate: float) -> int:
    """The fleet every policy starts the warm-up with: sized for the warm-up rate (a static
    fleet starts at its own size)."""
    if isinstance(policy, StaticPolicy):
        return policy.size
    needed = workers_for_sla(
        warm_rate,
        settings.expected_job_seconds,
        settings.worker_concurrency,
        settings.sla_seconds,
        settings.percentile,
    )
    return max(settings.min_workers, min(settings.max_workers, needed))
