"""`simulate --jobs FILE` and `simulate --archive DIR|s3://... --queue Q`: the replay's console
side (the same table, `--json`, `--decisions` and `--plot` as every `simulate`)."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from queue_autoscale.config import QueueConfig, parse_json
from queue_autoscale.sim.arrivals import ArrivalError
from queue_autoscale.sim.console import LONG_RUN_SECONDS, progress_bar, score_table
from queue_autoscale.sim.jobs import parse_time, read_jobs, window
from queue_autoscale.sim.replay import (
    Replay,
    ReplayInput,
    archive_input,
    pick_queue,
    queue_config,
    replay_spec,
    run_replay,
)
from queue_autoscale.sim.runner import RunSpec
from queue_autoscale.sim.scores import PRICE_NOTE


@dataclass(frozen=True, slots=True)
class ReplayOptions:
    """simulate's replay options as given."""

    jobs: Path | None = None
    arrival_column: str = "arrival"
    duration_column: str = "duration"
    archive: str | None = None
    queue: str | None = None
    from_time: str | None = None
    to_time: str | None = None
    config: Path | None = None
    parameter: str | None = None
    """The config store's SSM parameter (instead of `config`)."""

    @property
    def given(self) -> bool:
        """A replay was asked for."""
        return self.jobs is not None or self.archive is not None

    def queue_config(self) -> QueueConfig | None:
        """The replayed queue's config from --config or --parameter (None: neither given)."""
        if self.config is None and self.parameter is None:
            return None
        if self.config is not None and self.parameter is not None:
            raise ArrivalError("give --config FILE or --parameter NAME, not both")
        if self.queue is None:
            raise ArrivalError("--config/--parameter need --queue: the queue whose settings to use")
        if self.config is not None:
            return queue_config(self.config, self.queue)
        from queue_autoscale.commands import store_document  # noqa: PLC0415 - boto3 on demand

        assert self.parameter is not None
        document = store_document(self.parameter)
        return pick_queue(parse_json(document.text, document.source), self.queue, document.source)

    def window(self) -> tuple[float | None, float | None]:
        """(--from, --to) as epoch seconds."""
        start = None if self.from_time is None else parse_time(self.from_time, "--from")
        end = None if self.to_time is None else parse_time(self.to_time, "--to")
        if start is not None and end is not None and end <= start:
            raise ArrivalError(f"--to {self.to_time}: not after --from {self.from_time}")
        return start, end


def _input(options: ReplayOptions, spec: RunSpec, scratch: Path) -> ReplayInput:
    """What to replay; ArrivalError when the source or the window holds no job."""
    replay = _read_input(options, spec, scratch)
    if replay.trace.arrivals.size == 0:
        source = (
            f"--jobs {options.jobs}"
            if options.jobs is not None
            else (f"--archive {options.archive}: queue {options.queue!r}")
        )
        bounds = [f"{flag} {value}" for flag, value in
                  (("--from", options.from_time), ("--to", options.to_time)) if value]  # fmt: skip
        window = f" in the window {' '.join(bounds)}" if bounds else ""
        skipped = replay.recorded.skipped if replay.recorded is not None else {}
        why = "; ".join(f"{count:,} skipped: {reason}" for reason, count in sorted(skipped.items()))
        raise ArrivalError(f"{source}: no job queued{window}" + (f" ({why})" if why else ""))
    return replay


def _read_input(options: ReplayOptions, spec: RunSpec, scratch: Path) -> ReplayInput:
    if (options.jobs is None) == (options.archive is None):
        raise ArrivalError("give one of --jobs FILE or --archive DIR, not both")
    bounds = options.window()
    if options.jobs is not None:
        trace = window(
            read_jobs(options.jobs, options.arrival_column, options.duration_column), *bounds
        )
        spec, settings = replay_spec(spec, trace, options.queue_config(), None)
        return ReplayInput(trace, spec, settings)
    if options.queue is None:
        raise ArrivalError("--archive needs --queue: the queue to replay")
    assert options.archive is not None
    folder = _local(options.archive, scratch)
    return archive_input(folder, options.queue, bounds, spec, options.queue_config())


def _local(archive: str, scratch: Path) -> Path:
    """The archive as a folder: itself, or its events/ and decisions/ copied from S3."""
    if not archive.startswith("s3://"):
        folder = Path(archive)
        if not folder.is_dir():
            raise ArrivalError(f"--archive {archive}: no such folder")
        return folder
    from queue_autoscale.operator.commands import local_archive  # noqa: PLC0415 - boto3 is slow

    return local_archive(archive, scratch)


def replay_command(
    options: ReplayOptions,
    policies: list[str],
    spec: RunSpec,
    other_sources: tuple[object, object],
    console: Console,
    outputs: Sequence[tuple[str, Path | None]],
) -> Replay:
    """Run the replay `options` ask for and print it (the table, skips, drawn durations and the
    fidelity); write the outputs given (`--json`, `--decisions`, `--plot`)."""
    if any(source is not None for source in other_sources):
        raise ArrivalError("--jobs/--archive replay recorded jobs: drop --scenario and --trace")
    with tempfile.TemporaryDirectory(prefix="replay-") as scratch:
        replay_input = _input(options, spec, Path(scratch))
    recorded = replay_input.recorded
    if recorded is not None:
        console.print(
            f"{replay_input.trace.arrivals.size:,} attempts from {recorded.events:,} events; "
            f"{recorded.drawn:,} without a recorded duration (drawn from the recorded ones); "
            f"{len(recorded.ticks):,} decisions",
            highlight=False,
        )
        for reason, count in sorted(recorded.skipped.items()):
            console.print(f"skipped {count:,}: {reason}", highlight=False)
    arrivals = replay_input.trace.arrivals
    horizon = float(arrivals.max() - arrivals.min()) if arrivals.size else 0.0
    record = dict(outputs).get("--decisions") is not None
    with progress_bar(horizon >= LONG_RUN_SECONDS, console) as update:
        replay = run_replay(replay_input, policies, update, record)
    title = f"{replay_input.trace.name}: SLA {replay_input.spec.sla_seconds:g} s"
    console.print(score_table(replay.scores, title))
    console.print(f"cost: {PRICE_NOTE}", highlight=False)
    if replay.fidelity is not None:
        console.print(replay.fidelity.text(), highlight=False)
    _write(replay, dict(outputs), replay_input.spec.sla_seconds, console)
    return replay


def _write(
    replay: Replay, outputs: dict[str, Path | None], sla_seconds: float, console: Console
) -> None:
    json_out, decisions_out, plot_out = (
        outputs.get(k) for k in ("--json", "--decisions", "--plot")
    )
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        rows = [s.to_dict() for s in replay.scores]
        json_out.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
        console.print(f"scores written to {json_out}")
    if decisions_out is not None:
        from queue_autoscale.sim.commands import write_decisions  # noqa: PLC0415 - a cycle

        lines = write_decisions(replay.comparison, decisions_out)
        console.print(f"{lines:,} decision records written to {decisions_out}")
    if plot_out is not None:
        from queue_autoscale.sim.replay_plot import plot_replay  # noqa: PLC0415 - matplotlib

        console.print(f"plot written to {plot_replay(replay, plot_out, sla_seconds)}")
