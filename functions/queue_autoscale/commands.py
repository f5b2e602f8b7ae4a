"""`explain` and `validate-config`: the decision core and the config, from the command line."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from rich.console import Console
from rich.table import Table

from queue_autoscale.adapters.config_store import ConfigDocument
from queue_autoscale.config import (
    ConfigError,
    QueueConfig,
    load_config,
    load_json,
    parse_json,
    read_text,
)
from queue_autoscale.core import (
    DEFAULT_EVALUATION_INTERVAL_SECONDS,
    DEFAULT_POLICY,
    POLICIES,
    AgeSource,
    ControllerState,
    Decision,
    QueueSettings,
    QueueSnapshot,
    TrendModel,
    decision_to_dict,
    model_from_dict,
    state_from_dict,
)
from queue_autoscale.core.records import decision_from_dict

console = Console()
if not console.is_terminal:  # piped or captured: wide enough for the tables, no wrapping
    console = Console(width=140)

PeerExplainer = Callable[[QueueSnapshot, QueueSettings], Decision]


Count = Annotated[int, Field(ge=-(2**63), le=2**63)]
"""A count as AWS could report it (64-bit)."""


class InputError(ValueError):
    """A file the command cannot use; the message names the file and the key."""


class SnapshotFile(BaseModel):
    """The snapshot JSON `explain` reads (every key required; null means 'could not be read').

    Numbers must be finite and counts within +-2^63 (what SQS and ECS can report); negative
    counts pass through, for the core to hold on them as it would in production.
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    queue: str
    now: float
    """Epoch seconds the snapshot was taken (and the decision is made)."""
    visible: Count | None
    in_flight: Count | None
    delayed: Count
    oldest_age_seconds: float | None
    arrival_rate: float | None
    """jobs/s over the long window."""
    mean_job_seconds: float | None
    running: Count | None
    desired: Count | None
    pending: Count
    deployment_in_progress: bool
    dlq_depth: Count
    failure_rate: float
    """Share of finished jobs that failed, 0..1."""
    arrival_rate_short: float | None = None
    completion_rate: float | None = None
    arrival_dispersion: float | None = Field(default=None, ge=0.0)
    """Index of dispersion of the per-second arrivals over the long window (None: Poisson)."""
    arrival_dispersion_short: float | None = Field(default=None, ge=0.0)
    """The same over the short window (None: the long window's)."""
    arrival_dispersion_steps: float | None = Field(default=None, ge=0.0)
    """The short window's, from successive per-second differences (None: unknown)."""

    def to_snapshot(self) -> QueueSnapshot:
        """The core's frozen snapshot."""
        data = self.model_dump()
        data["taken_at"] = data.pop("now")
        unknown = data["oldest_age_seconds"] is None
        data["oldest_age_source"] = AgeSource.UNKNOWN if unknown else AgeSource.GIVEN
        return QueueSnapshot(**data)


def _read_json(path: Path, what: str) -> Any:
    return load_json(read_text(path, f"{what} ", InputError), f"{what} {path}", InputError)


def read_snapshot(path: Path) -> QueueSnapshot:
    """Parse a snapshot file; a missing or wrong key is a one-line error naming it."""
    data = _read_json(path, "snapshot")
    if not isinstance(data, dict):
        raise InputError(f"snapshot {path}: expected a JSON object")
    try:
        return SnapshotFile.model_validate(data).to_snapshot()
    except ValidationError as error:
        first = error.errors()[0]
        key = ".".join(str(part) for part in first["loc"])
        if first["type"] == "missing":
            raise InputError(f"snapshot {path}: missing key {key!r}") from None
        shown = json.dumps(first.get("input"), default=str)
        raise InputError(f"snapshot {path}: key {key!r} = {shown}: {first['msg']}") from None


def _malformed(what: str, path: Path, error: Exception) -> InputError:
    """One line for a `what` file of the wrong shape: a missing key by its name (a bare
    KeyError printed only the name), any other error by its class and message."""
    if isinstance(error, KeyError):
        return InputError(f"{what} {path}: missing key {error.args[0]!r}")
    return InputError(f"{what} {path}: {type(error).__name__}: {error}")


def read_state(path: Path | None, queue: str) -> ControllerState:
    """The controller state file (state_to_dict's shape), or a fresh state."""
    if path is None:
        return ControllerState(queue)
    data = _read_json(path, "state")
    if not isinstance(data, dict):
        raise InputError(f"state {path}: expected a JSON object")
    try:
        return state_from_dict({"queue": queue, **data})
    except Exception as error:  # any malformed file is one line naming it, never a traceback
        raise _malformed("state", path, error) from None


def read_model(path: Path | None, queue: str) -> TrendModel | None:
    """The trend model file, if given: one model (model_to_dict's shape), or trend_fit's
    trend_model.json ({"models": [...]}), whose entry for `queue` is taken."""
    if path is None:
        return None
    data = _read_json(path, "model")
    if not isinstance(data, dict):
        raise InputError(
            f'model {path}: expected a JSON object: one model, or trend_fit\'s {{"models": [...]}}'
        )
    if isinstance(data.get("models"), list):
        models = [m for m in data["models"] if isinstance(m, dict)]
        entry = next((m for m in models if m.get("queue") == queue), None)
        if entry is None:
            names = ", ".join(repr(m.get("queue")) for m in models) or "none"
            raise InputError(f"model {path}: no model for queue {queue!r} (it has: {names})")
        data = entry
    try:
        return model_from_dict(data)
    except Exception as error:  # any malformed file is one line naming it, never a traceback
        raise _malformed("model", path, error) from None


def pick_queue(configs: list[QueueConfig], queue: str, path: Path) -> QueueConfig:
    """The config of the snapshot's queue (a one-queue config applies to any snapshot)."""
    if len(configs) == 1:
        return configs[0]
    for config in configs:
        if config.queue == queue:
            return config
    raise InputError(f"config {path}: no queue {queue!r} in it")


def peer_explainers() -> dict[str, PeerExplainer]:
    """The simulator's peer policies that can explain one snapshot (KEDA, target tracking...)."""
    try:
        from queue_autoscale.sim.peers import EXPLAINERS  # noqa: PLC0415  (optional area)
    except ImportError:
        return {}
    return dict(EXPLAINERS)


def policy_names() -> list[str]:
    """Every policy `explain --policy` accepts."""
    return [*POLICIES, *peer_explainers()]


def explain_one(
    config_path: Path,
    snapshot_path: Path,
    state_path: Path | None,
    model_path: Path | None,
    policy: str,
    evaluation_interval_seconds: float = DEFAULT_EVALUATION_INTERVAL_SECONDS,
) -> Decision:
    """Decide once for one snapshot file with the named policy at the given interval (s)."""
    snapshot = read_snapshot(snapshot_path)
    config = pick_queue(load_config(config_path), snapshot.queue, config_path)
    settings = config.settings(evaluation_interval_seconds)
    if policy in POLICIES:
        state = read_state(state_path, snapshot.queue)
        model = read_model(model_path, snapshot.queue)
        return POLICIES[policy](snapshot, settings, state, snapshot.taken_at, model).decision
    peers = peer_explainers()
    if policy in peers:
        return peers[policy](snapshot, settings)
    raise InputError(f"--policy {policy!r}: choose one of {', '.join(policy_names())}")


def _fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def decision_table(decision: Decision) -> Table:
    """One decision as a two-column rich table."""
    table = Table(title=f"{decision.queue}: {decision.policy}", show_header=False)
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    rows = [
        ("action", f"{decision.action.value}  {decision.current} -> {decision.target}"),
        (
            "terms",
            f"steady {decision.terms.steady}  trend {decision.terms.trend}  "
            f"drain {decision.terms.drain}  (winner: {decision.winner})",
        ),
        ("urgency", f"{decision.urgency.value}  (SLA usage {decision.sla_usage:.0%})"),
        (
            "load ratio",
            f"{decision.load_ratio:.3f}"
            + ("  OVERLOADED" if decision.overloaded else "")
            + ("  overloading" if decision.overloading else ""),
        ),
        ("backlog / instance", _fmt(decision.backlog_per_instance, 1)),
        ("oldest age", f"{decision.oldest_age_seconds:.1f} s ({decision.oldest_age_source})"),
        ("predicted pickup", _fmt(decision.predicted_pickup_seconds, 1) + " s"),
        ("predicted breach", _fmt(decision.predicted_breach_seconds, 1) + " s"),
        (
            "arrival / forecast",
            f"{decision.arrival_rate:.2f} / {decision.forecast_rate:.2f} jobs/s",
        ),
        ("service rate", f"{decision.service_rate:.3f} jobs/s per worker"),
        ("constraints", ", ".join(decision.constraints) or "-"),
        ("reason", decision.reason),
    ]
    for name, value in rows:
        table.add_row(name, value)
    return table


def examples_table(rows: list[tuple[str, Decision]]) -> Table:
    """Many decisions, one row each (reasons are printed below the table)."""
    table = Table(title="Decisions for the example snapshots")
    for column in (
        "#",
        "example",
        "policy",
        "now",
        "target",
        "steady",
        "trend",
        "drain",
        "urgency",
        "rho",
    ):
        table.add_column(column, no_wrap=column in {"example", "policy"})
    for index, (name, d) in enumerate(rows, start=1):
        table.add_row(
            str(index),
            name,
            d.policy,
            str(d.current),
            f"{d.target} {d.action.value}",
            str(d.terms.steady),
            str(d.terms.trend),
            str(d.terms.drain),
            d.urgency.value,
            f"{d.load_ratio:.2f}",
        )
    return table


def print_examples(rows: list[tuple[str, Decision]]) -> None:
    """The examples table, then each decision's reason in words."""
    console.print(examples_table(rows))
    for index, (_, d) in enumerate(rows, start=1):
        console.print(f"[bold]{index}.[/bold] {d.reason}", highlight=False)


def _fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code=2)


def explain(
    config: Annotated[
        Path | None, typer.Option("--config", help="One queue's config JSON (or a list).")
    ] = None,
    snapshot: Annotated[Path | None, typer.Option("--snapshot", help="Snapshot JSON.")] = None,
    state: Annotated[Path | None, typer.Option("--state", help="Controller state JSON.")] = None,
    model: Annotated[Path | None, typer.Option("--model", help="Trend model JSON.")] = None,
    policy: Annotated[
        str,
        typer.Option("--policy", help="A core policy (predictive, seed-hybrid) or a peer."),
    ] = DEFAULT_POLICY,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    examples: Annotated[
        Path | None,
        typer.Option(
            "--examples",
            help="A folder of NAME.snapshot.json (+ NAME.config.json, NAME.state.json): "
            "decide each with every core policy and print one table.",
        ),
    ] = None,
    stack: Annotated[
        str | None,
        typer.Option("--stack", help="Explain the live decision of a deployed stack's --queue."),
    ] = None,
    queue: Annotated[str | None, typer.Option("--queue", help="The queue, with --stack.")] = None,
    evaluation_interval_seconds: Annotated[
        float,
        typer.Option(
            "--interval",
            min=5,
            max=60,
            help="The stack's EvaluationIntervalSeconds (stale limit, forecast horizon), s.",
        ),
    ] = DEFAULT_EVALUATION_INTERVAL_SECONDS,
) -> None:
    """Decide once for a snapshot and say why (or explain a deployed stack's live decision)."""
    try:
        if stack is not None:
            explain_live(stack, queue, as_json)
            return
        if examples is not None:
            rows = run_examples(examples, evaluation_interval_seconds)
            if as_json:
                rows_json = [{"example": n, **decision_to_dict(d)} for n, d in rows]
                print(json.dumps(rows_json, allow_nan=False))
            else:
                print_examples(rows)
            return
        if config is None or snapshot is None:
            raise InputError("--config and --snapshot are required (or --examples DIR)")
        decision = explain_one(config, snapshot, state, model, policy, evaluation_interval_seconds)
    except (InputError, ConfigError) as error:
        raise _fail(str(error)) from None
    if as_json:
        print(json.dumps(decision_to_dict(decision), indent=2, allow_nan=False))
    else:
        console.print(decision_table(decision))


def explain_live(stack: str, queue: str | None, as_json: bool) -> None:
    """Print the latest decision the stack's controller logged for `queue`, with its reasons."""
    from queue_autoscale.operator.live import (  # noqa: PLC0415 - AWS reads only here
        StackClients,
        StatusError,
        read_status,
    )
    from queue_autoscale.operator.views import ago  # noqa: PLC0415

    if queue is None:
        raise InputError("--stack needs --queue")
    now = time.time()
    try:
        (status,) = read_status(stack, StackClients.create(), now, queue).queues
    except StatusError as error:
        raise InputError(str(error)) from None
    if status.decision is None:
        raise InputError(f"stack {stack!r}: no decision for {queue!r} in the recent decision log")
    if as_json:
        print(json.dumps(status.decision, indent=2))
        return
    try:
        decision = decision_from_dict(status.decision)
    except (KeyError, TypeError, ValueError) as error:
        raise InputError(f"stack {stack!r}: the logged decision is malformed: {error!r}") from None
    table = decision_table(decision)
    table.title = (
        f"{queue} on {stack}: SLA {status.sla_seconds:g} s at p{status.percentile * 100:g}, "
        f"decided {ago(status.decided_at, now)}"
    )
    console.print(table)


def run_examples(
    folder: Path, evaluation_interval_seconds: float = DEFAULT_EVALUATION_INTERVAL_SECONDS
) -> list[tuple[str, Decision]]:
    """Decide every example snapshot in a folder with every core policy."""
    snapshots = sorted(folder.glob("*.snapshot.json"))
    if not snapshots:
        raise InputError(f"--examples {folder}: no *.snapshot.json files")
    rows: list[tuple[str, Decision]] = []
    for snapshot_path in snapshots:
        name = snapshot_path.name.removesuffix(".snapshot.json")
        config_path = folder / f"{name}.config.json"
        if not config_path.exists():
            raise InputError(f"example {name}: missing {config_path.name}")
        state_path = folder / f"{name}.state.json"
        for policy in POLICIES:
            decision = explain_one(
                config_path,
                snapshot_path,
                state_path if state_path.exists() else None,
                None,
                policy,
                evaluation_interval_seconds,
            )
            rows.append((name, decision))
    return rows


def validate_config(
    file: Annotated[
        Path | None,
        typer.Argument(help="Config JSON: one queue, a list, or {queues: []}."),
    ] = None,
    parameter: Annotated[
        str | None,
        typer.Option(
            "--parameter",
            help="Check the document in a stack's config store instead: its SSM parameter "
            "name (output QueueConfigParameterName; an s3:// pointer in it is followed). "
            "AWS_ENDPOINT_URL and AWS_DEFAULT_REGION apply.",
        ),
    ] = None,
    evaluation_interval_seconds: Annotated[
        float, typer.Option("--interval", min=5, max=60, help="Evaluation interval, s.")
    ] = DEFAULT_EVALUATION_INTERVAL_SECONDS,
) -> None:
    """Check a config FILE (JSON: one queue, a list, or {"queues": [...]}) or the document in
    a config store: print what is wrong, or the effective settings of every queue and a
    warning for each SLA the poll interval and start-up lead make unreachable (exit 0)."""
    if (file is None) == (parameter is None):
        raise _fail("give a config FILE or --parameter NAME (one of them)")
    try:
        if parameter is not None:
            document = store_document(parameter)
            configs = parse_json(document.text, document.source)
        else:
            configs = load_config(file)
    except ConfigError as error:
        raise _fail(str(error)) from None
    source = file if file is not None else parameter
    table = Table(title=f"Effective settings: {source}")
    table.add_column("setting", style="bold")
    for config in configs:
        table.add_column(config.queue)
    settings = [c.settings(evaluation_interval_seconds) for c in configs]
    table.add_row("profile", *(c.profile.value for c in configs))
    table.add_row("cluster / service", *(f"{c.cluster} / {c.service}" for c in configs))
    table.add_row("source", *(c.source_summary() for c in configs))
    for field in QueueSettings.__dataclass_fields__:
        if field == "queue":
            continue
        table.add_row(field, *(str(getattr(s, field)) for s in settings))
    console.print(table)
    for config in configs:
        for warning in [*config.warnings(evaluation_interval_seconds), *config.source_warnings()]:
            typer.echo(f"warning: {warning}", err=True)


def store_document(parameter: str) -> ConfigDocument:
    """The document in the config store `parameter`, read as the functions read it."""
    from queue_autoscale.adapters.aws import make_client  # noqa: PLC0415 - boto3 on demand
    from queue_autoscale.adapters.config_store import ConfigStore  # noqa: PLC0415
    from queue_autoscale.adapters.errors import AdapterError  # noqa: PLC0415

    store = ConfigStore(make_client("ssm"), make_client("s3"), parameter, max_age_seconds=1)
    try:
        return store.read()
    except AdapterError as error:
        raise ConfigError(f"config store {parameter}: {error}") from None


def register(app: typer.Typer) -> None:
    """Add `explain` and `validate-config` to the app."""
    app.command("explain")(explain)
    app.command("validate-config")(validate_config)
