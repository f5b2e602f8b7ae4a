"""`queue-autoscale simulate` and `queue-autoscale bench`."""

from __future__ import annotations

import errno
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from queue_autoscale.core import DEFAULT_EVALUATION_INTERVAL_SECONDS, decision_to_dict
from queue_autoscale.sim.arrivals import ArrivalError
from queue_autoscale.sim.bench import QUICK_VARIANTS, SweepOptions, parse_slas, run_bench
from queue_autoscale.sim.console import run_comparison, score_table
from queue_autoscale.sim.policies import POLICY_HELP, parse_policies
from queue_autoscale.sim.replay_command import ReplayOptions, replay_command
from queue_autoscale.sim.runner import Comparison, RunSpec, load_arrivals
from queue_autoscale.sim.scores import PRICE_NOTE
from queue_autoscale.sim.workload import FleetSpec

DEFAULT_TRACE = Path("../shared/traces/nasa-1995-per-second.tbz2")
"""`bench`'s NASA trace, relative to the repository root (the shared folder beside it)."""


def _console() -> Console:
    """Rich console; a wide one when output is not a terminal, so tables are not truncated."""
    console = Console()
    return console if console.is_terminal else Console(width=160)


def _fail(message: str) -> typer.Exit:
    Console(stderr=True, soft_wrap=True).print(f"error: {message}", markup=False, highlight=False)
    return typer.Exit(code=2)


def check_output(option: str, path: Path | None) -> None:
    """Fail at once, not after a run of hours, when `path` cannot be written: its folders are
    made and it is opened for appending (and removed again if it was not there)."""
    if path is None:
        return
    try:
        if path.is_dir():
            raise IsADirectoryError(errno.EISDIR, "it is a folder")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except FileExistsError:  # a file where a folder of the path should be
            raise NotADirectoryError(errno.ENOTDIR, "a part of its folder is a file") from None
        existed = path.exists()
        with path.open("a", encoding="utf-8"):
            pass
        if not existed:
            path.unlink()
    except OSError as error:
        raise _fail(f"{option} {path}: cannot write: {error.strerror or error}") from None


def write_decisions(comparison: Comparison, path: Path) -> int:
    """One JSON object per core decision (`decision_to_dict` plus the policy and the elapsed
    seconds since the start of the warm-up); returns the number of lines."""
    base = FleetSpec().base_epoch
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with path.open("w", encoding="utf-8") as out:
        for policy, decisions in comparison.decisions.items():
            for decision in decisions:
                record = {"policy": policy, "elapsed_seconds": decision.at - base}
                record.update(decision_to_dict(decision))
                out.write(json.dumps(record) + "\n")
                count += 1
    return count


def register(app: typer.Typer) -> None:
    """Add `simulate` and `bench` to the app."""

    @app.command()
    def simulate(
        policy: Annotated[
            str,
            typer.Option(help=POLICY_HELP),
        ] = "all",
        scenario: Annotated[str | None, typer.Option(help="A named synthetic workload.")] = None,
        trace: Annotated[
            Path | None, typer.Option(help="Per-second counts: text, .gz, .bz2, .tbz2 or .tar.gz.")
        ] = None,
        scale: Annotated[int, typer.Option(help="Multiply every second's count by K.")] = 1,
        start: Annotated[int, typer.Option(help="Trace window start, seconds.")] = 0,
        length: Annotated[int | None, typer.Option(help="Window length, seconds.")] = None,
        sla: Annotated[float, typer.Option(help="Pickup SLA, seconds.")] = 30.0,
        service_time: Annotated[float, typer.Option(help="Mean job duration, seconds.")] = 1.0,
        service_cv: Annotated[
            float, typer.Option(help="Job duration coefficient of variation.")
        ] = 1.0,
        concurrency: Annotated[int, typer.Option(help="Jobs one worker runs at once.")] = 1,
        provision_delay: Annotated[
            int, typer.Option(help="Seconds until a new worker takes jobs.")
        ] = 60,
        interval: Annotated[
            int, typer.Option(help="Our controller's evaluation interval, s.")
        ] = int(DEFAULT_EVALUATION_INTERVAL_SECONDS),
        percentile: Annotated[
            float, typer.Option(help="SLA percentile our sizing aims at.")
        ] = 0.999,
        min_workers: Annotated[int, typer.Option(help="Fleet floor for every policy.")] = 1,
        max_workers: Annotated[int, typer.Option(help="Fleet ceiling for every policy.")] = 1000,
        seed: Annotated[int, typer.Option(help="Random seed (arrivals and job durations).")] = 0,
        short_window: Annotated[
            int, typer.Option(help="Short arrival-rate window of our snapshot, s (long: 300).")
        ] = 60,
        partitions: Annotated[
            int | None,
            typer.Option(help="Kafka: partitions (one consumer a worker); workers beyond idle."),
        ] = None,
        prefetch: Annotated[
            int | None,
            typer.Option(help="RabbitMQ: each worker's prefetch count (jobs it holds unacked)."),
        ] = None,
        jump_ticks: Annotated[
            bool,
            typer.Option(
                help="Our controller also ticks when the arrivals jump between clock ticks, as "
                "the stack's JumpTicks (none at an --interval of 60 s: no tick queue)."
            ),
        ] = True,
        json_out: Annotated[
            Path | None, typer.Option("--json", help="Write the scores here.")
        ] = None,
        decisions_out: Annotated[
            Path | None,
            typer.Option(
                "--decisions",
                help="Write the core policies' decision records here (JSON lines): "
                "predictive, seed-hybrid and their ablations; the peers keep none.",
            ),
        ] = None,
        plot_out: Annotated[
            Path | None, typer.Option("--plot", help="Write a PNG plot here.")
        ] = None,
        jobs: Annotated[
            Path | None,
            typer.Option(help="A job trace, CSV or Parquet: an arrival time and a duration a row."),
        ] = None,
        arrival_column: Annotated[
            str, typer.Option(help="--jobs: the arrival column (epoch s or ISO 8601).")
        ] = "arrival",
        duration_column: Annotated[
            str, typer.Option(help="--jobs: the duration column, seconds.")
        ] = "duration",
        archive: Annotated[
            str | None,
            typer.Option(help="Replay the stack's archive: a folder or s3://BUCKET/PREFIX."),
        ] = None,
        queue: Annotated[str | None, typer.Option(help="--archive: the queue to replay.")] = None,
        from_time: Annotated[
            str | None,
            typer.Option("--from", help="--archive/--jobs: window start, ISO 8601 or epoch s."),
        ] = None,
        to_time: Annotated[
            str | None,
            typer.Option("--to", help="--archive/--jobs: window end, ISO 8601 or epoch s."),
        ] = None,
        config: Annotated[
            Path | None,
            typer.Option(help="--archive/--jobs: the queues config file (SLA, bounds, lead)."),
        ] = None,
        parameter: Annotated[
            str | None,
            typer.Option(
                "--parameter",
                help="--archive/--jobs: the queue's config from a stack's config store instead "
                "(its SSM parameter name, as validate-config --parameter).",
            ),
        ] = None,
    ) -> None:
        """Replay a scenario, a recorded trace, a job trace or the archive under several scaling
        policies and score them."""
        console = _console()
        replay_options = ReplayOptions(
            jobs=jobs,
            arrival_column=arrival_column,
            duration_column=duration_column,
            archive=archive,
            queue=queue,
            from_time=from_time,
            to_time=to_time,
            config=config,
            parameter=parameter,
        )
        try:
            names = parse_policies(policy)
            spec = RunSpec(
                sla_seconds=sla,
                service_seconds=service_time,
                service_cv=service_cv,
                concurrency=concurrency,
                provision_delay_seconds=provision_delay,
                interval_seconds=interval,
                percentile=percentile,
                min_workers=min_workers,
                max_workers=max_workers,
                seed=seed,
                short_window_seconds=short_window,
                partitions=partitions,
                prefetch=prefetch,
            )
            if not jump_ticks:
                spec = replace(spec, jump_lateness_seconds=None)
            outputs = (("--json", json_out), ("--decisions", decisions_out), ("--plot", plot_out))
            if replay_options.given:
                for option, path in outputs:
                    check_output(option, path)
                replay_command(replay_options, names, spec, (scenario, trace), console, outputs)
                return
            label, counts = load_arrivals(scenario, trace, scale, start, length, seed)
        except (ArrivalError, ValueError) as error:
            raise _fail(str(error)) from None
        for option, path in outputs:
            check_output(option, path)
        if trace is not None and length is not None and counts.size < length:
            console.print(
                f"note: --length {length:,} s cut to the {counts.size:,} s the trace holds "
                f"from second {start:,}",
                highlight=False,
            )
        comparison = run_comparison(
            label, counts, names, spec, console, record_decisions=decisions_out is not None
        )
        console.print(score_table(comparison.scores, f"{label}: SLA {sla:g} s"))
        console.print(f"cost: {PRICE_NOTE}", highlight=False)
        if json_out is not None:
            json_out.parent.mkdir(parents=True, exist_ok=True)
            json_out.write_text(
                json.dumps([s.to_dict() for s in comparison.scores], indent=2) + "\n",
                encoding="utf-8",
            )
            console.print(f"scores written to {json_out}")
        if decisions_out is not None:
            lines = write_decisions(comparison, decisions_out)
            console.print(f"{lines:,} decision records written to {decisions_out}")
        if plot_out is not None:
            from queue_autoscale.sim.plot import plot  # noqa: PLC0415 - matplotlib loads slowly

            console.print(f"plot written to {plot(comparison, plot_out, sla)}")

    @app.command()
    def bench(
        out: Annotated[Path, typer.Option(help="Markdown results file.")] = Path(
            "benchmarks/results/policy_quality.md"
        ),
        trace: Annotated[
            Path | None,
            typer.Option(
                help=f"The NASA per-second trace. [default: {DEFAULT_TRACE}; the NASA rows are "
                "skipped when it is absent]",
                show_default=False,
            ),
        ] = None,
        trace_scale: Annotated[int, typer.Option(help="Scale factor for the trace.")] = 10,
        trace_start: Annotated[
            int, typer.Option(help="Trace window start, s (day 13).")
        ] = 1_036_800,
        trace_length: Annotated[int, typer.Option(help="Trace window, s.")] = 86_400,
        speed: Annotated[bool, typer.Option(help="Also time a 60 jobs/s day (~5.2M jobs).")] = True,
        plots: Annotated[Path | None, typer.Option(help="Write a plot per workload here.")] = None,
        seed: Annotated[int, typer.Option(help="Random seed.")] = 0,
        quick: Annotated[
            bool,
            typer.Option(
                help="Scenarios' first hour, 1-hour sweep windows, 3-point grids, 10 NASA "
                "variants, no speed run."
            ),
        ] = False,
        slas: Annotated[
            str, typer.Option(help="Comma-separated SLAs the frontier sweeps, seconds.")
        ] = "10,30,60,300",
        provision_jitter: Annotated[
            float, typer.Option(help="New workers land 60 s + uniform 0..this many seconds.")
        ] = 10.0,
        variants: Annotated[
            int, typer.Option(help="Seeded NASA windows for worst-decile hourly compliance.")
        ] = 50,
        frontier_out: Annotated[
            Path, typer.Option(help="The frontier results file (plots go beside it).")
        ] = Path("benchmarks/results/policy_sweep.md"),
    ) -> None:
        """Every scenario plus the NASA trace under every policy -> a markdown report; every
        policy over its main knob at every profile's SLA -> the frontier file."""
        console = _console()
        command = " ".join(["queue-autoscale", "bench", *sys.argv[2:]])
        if trace is not None and not trace.is_file():  # only the default may be absent
            raise _fail(f"trace file not found: {trace}")
        try:
            sweep = SweepOptions(
                quick=quick,
                slas=parse_slas(slas),
                jitter_seconds=provision_jitter,
                variants=min(variants, QUICK_VARIANTS) if quick else variants,
                frontier_out=frontier_out,
            )
            path = run_bench(
                out=out,
                trace=trace or DEFAULT_TRACE,
                trace_scale=trace_scale,
                trace_start=trace_start,
                trace_length=trace_length,
                speed=speed and not quick,
                plots=plots,
                seed=seed,
                console=console,
                command=command.strip(),
                sweep=sweep,
            )
        except ArrivalError as error:
            raise _fail(str(error)) from None
        console.print(f"results written to {path}")
