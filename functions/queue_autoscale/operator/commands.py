"""`status` (a deployed stack's live state) and `report` (the SLA report from an archive)."""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console, RenderableType
from rich.live import Live
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from queue_autoscale.adapters.aws import make_client
from queue_autoscale.adapters.counter_migration import migrate_legacy_counters
from queue_autoscale.adapters.errors import AdapterError
from queue_autoscale.adapters.s3 import Archive
from queue_autoscale.config import ConfigError, parse_json, read_text
from queue_autoscale.events import DEFAULT_MAX_SKEW_SECONDS
from queue_autoscale.operator.live import StackClients, StatusError, read_status, stack_settings
from queue_autoscale.operator.views import status_view
from queue_autoscale.settings import RecordSettings

DEFAULT_STACK = "queue-autoscale"
"""The stack name `sam deploy` is guided to and the emulator creates."""

COUNTER_TTL_DAYS = RecordSettings.model_fields["counter_ttl_seconds"].default / 86_400
"""record_events' default counter TTL, in days."""

StackOption = Annotated[
    str,
    typer.Option(
        "--stack",
        help="The deployed stack's name (AWS_ENDPOINT_URL points at an emulator).",
    ),
]


def pause(seconds: float) -> None:
    """Wait between two `status --watch` refreshes (tests replace it)."""
    time.sleep(seconds)


def _fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code=2)


def status(
    stack: StackOption = DEFAULT_STACK,
    queue: Annotated[str | None, typer.Option("--queue", help="Only this queue.")] = None,
    watch: Annotated[bool, typer.Option("--watch", help="Refresh until Ctrl-C.")] = False,
    every: Annotated[
        float, typer.Option("--every", min=2, max=600, help="Seconds between refreshes.")
    ] = 10.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON (a line per refresh).")] = (
        False
    ),
    region: Annotated[
        str | None, typer.Option("--region", help="AWS region (default: the AWS config's).")
    ] = None,
) -> None:
    """Per queue: workers and target, load, oldest job against the SLA, last action, the last
    hour's compliance; and the stack's alarms."""
    clients = StackClients.create(region=region)
    terminal = Console().is_terminal
    console = Console(width=None if terminal else 80)

    def read() -> RenderableType:
        snapshot = read_status(stack, clients, time.time(), queue)
        return json.dumps(snapshot.to_dict()) if as_json else status_view(snapshot)

    def show(view: RenderableType) -> None:
        if as_json:
            print(view, flush=True)
        else:
            console.print(view)

    try:
        first = read()
        if not watch or as_json or not terminal:
            # once, or a log / a script: each refresh printed after the last
            show(first)
            while watch:
                pause(every)
                show(read())
            return
        with Live(first, console=console, auto_refresh=False) as live:
            while True:
                pause(every)
                live.update(read(), refresh=True)
    except StatusError as error:
        raise _fail(str(error)) from None
    except KeyboardInterrupt:
        return


def report(
    archive: Annotated[
        str,
        typer.Option(
            "--archive", help="Archive root: a folder, s3://bucket or s3://bucket/prefix."
        ),
    ],
    out: Annotated[
        str, typer.Option("--out", help="Output folder, s3://bucket or s3://bucket/prefix.")
    ],
    config: Annotated[
        Path | None, typer.Option("--config", help="Queue config JSON (SLA per queue).")
    ] = None,
    interval: Annotated[
        int, typer.Option("--interval", min=1, max=3600, help="Backlog interval, seconds.")
    ] = 60,
) -> None:
    """Build the SLA report from an archive with local Spark (the Glue job's own code).

    An s3:// archive is copied to a temporary folder first (boto3, AWS_ENDPOINT_URL honoured).
    An s3:// output is brought down first (only the files its manifest names) and put back
    after, so the job runs incrementally there as in a local folder; local Spark then needs
    no S3 connector.
    """
    try:
        from glue_jobs.sla_report import STEPS, Settings, run  # noqa: PLC0415 - Spark only here
        from queue_autoscale.operator import report_output  # noqa: PLC0415 - the job's layout
    except ImportError as error:
        raise _fail(f"the Spark job is not importable: {error}") from None
    config_json = None
    config_source = f"--config {config}"
    if config is not None:
        try:  # checked before Spark starts, and named as the user gave it
            config_json = read_text(config, "--config ", ConfigError)
            parse_json(config_json, config_source)
        except ConfigError as error:
            raise _fail(str(error)) from None
    try:  # the job's own rule for the interval, before Spark starts, named by the option
        Settings(interval_seconds=interval)
    except ValueError as error:
        raise _fail(f"--interval {interval}: {error}") from None
    for option, uri in (("--archive", archive), ("--out", out)):
        try:  # before the archive is downloaded: the option named
            if uri.startswith("s3://"):
                split_s3_uri(uri)
        except ValueError as error:
            raise _fail(f"{option}: {error}") from None
    to_s3 = out.startswith("s3://")
    if not to_s3 and Path(out).exists() and not Path(out).is_dir():
        # Spark would fail on it after starting, in a 100-line Java stack trace
        raise _fail(f"--out {out}: a file, not a folder")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    console = Console(stderr=True)
    try:  # an error is printed after the progress bar's last frame, so it is the last line
        with (
            tempfile.TemporaryDirectory(prefix="queue-autoscale-report-") as scratch,
            Progress(
                TextColumn("{task.description:<30}"),
                BarColumn(),
                TextColumn("{task.completed}/{task.total}"),
                TimeElapsedColumn(),
                console=console,
            ) as progress,
        ):
            task = progress.add_task("reading the archive", total=len(STEPS) + 3)

            def step(name: str) -> None:
                progress.update(task, description=name, advance=1)

            source = local_archive(archive, Path(scratch) / "archive")
            target = Path(scratch) / "report" if to_s3 else Path(out).resolve()
            if to_s3:
                store = Archive(make_client("s3"), split_s3_uri(out)[0])
                base = _key_base(out)
                previous = report_output.pull(store, base, target, progress.console.print)
            step("starting local Spark")
            uri = _with_local_spark(
                lambda spark: run(
                    str(source),
                    str(target),
                    config_json,
                    interval,
                    spark,
                    progress=step,
                    config_source=config_source,
                )
            )
            if to_s3:
                step("uploading the report")
                report_output.push(store, base, target, previous, progress.console.print)
                uri = f"s3://{store.bucket}/{base}{Path(uri).relative_to(target).as_posix()}"
            progress.update(task, description="done", completed=len(STEPS) + 3)
    except (AdapterError, ValueError, OSError, SparkFailed) as error:
        raise _fail(f"{type(error).__name__}: {error}") from None
    print(f"report: {uri}")


def _with_local_spark(job: Callable[[Any], str]) -> str:
    """`job(spark)` on a local Spark session, stopped after; a failure inside Spark leaves as
    SparkFailed, one line."""
    from py4j.protocol import Py4JError  # noqa: PLC0415 - Spark only here
    from pyspark.errors import PySparkException  # noqa: PLC0415

    from glue_jobs.session import local_spark  # noqa: PLC0415

    spark = local_spark("queue-autoscale-report")
    try:
        return job(spark)
    except (Py4JError, PySparkException) as error:  # read while the JVM still runs
        raise SparkFailed(spark_line(error)) from None
    finally:
        spark.stop()


class SparkFailed(Exception):  # noqa: N818 - read as what happened: "SparkFailed: ..."
    """The report job failed inside Spark; the message is `spark_line`'s."""


def spark_line(error: Exception) -> str:
    """One line for a failure inside Spark: the innermost Java cause (what went wrong) and the
    one around it (where: a file, a table), not the JVM's stack trace of a hundred lines."""
    java = getattr(error, "java_exception", None)
    if java is None:  # pyspark's own (AnalysisException, ...): its message's first line
        return (str(error).strip() or type(error).__name__).splitlines()[0]
    causes: list[str] = []
    while java is not None and len(causes) < MAX_CAUSES:
        causes.append(str(java.toString()).splitlines()[0].removesuffix(" Details:"))
        java = java.getCause()
    return causes[-1] if len(causes) == 1 else f"{causes[-1]} ({causes[-2]})"


MAX_CAUSES = 20
"""Java causes followed at most (a cycle would otherwise never end)."""


def split_s3_uri(uri: str) -> tuple[str, str]:
    """(bucket, key prefix) of s3://bucket/prefix; ValueError naming the URI otherwise."""
    rest = uri.removeprefix("s3://")
    bucket, _, prefix = rest.partition("/")
    if not uri.startswith("s3://") or not bucket:
        raise ValueError(f"{uri!r} is not an s3://bucket[/prefix] URI")
    return bucket, prefix


def _key_base(uri: str) -> str:
    """The key prefix of s3://bucket[/prefix]: '' at the bucket's root, else 'prefix/'."""
    prefix = split_s3_uri(uri)[1].strip("/")
    return prefix + "/" if prefix else ""


def local_archive(archive: str, scratch: Path) -> Path:
    """The archive as a local folder: itself, or a copy of events/ and decisions/ from S3."""
    if not archive.startswith("s3://"):
        folder = Path(archive).resolve()
        if not (folder / "events").is_dir():
            raise ValueError(f"--archive {archive}: no events/ folder in it")
        return folder
    reader = Archive(make_client("s3"), split_s3_uri(archive)[0])
    base = _key_base(archive)
    copied = sum(reader.download_tree(base + kind + "/", scratch / kind) for kind in KINDS)
    if copied == 0:
        raise ValueError(f"--archive {archive}: no objects under events/ or decisions/")
    return scratch


KINDS = ("events", "decisions")
"""The archive's folders the report reads."""


def migrate_counters(
    stack: StackOption = DEFAULT_STACK,
    keep_days: Annotated[
        float,
        typer.Option(
            "--keep-days",
            min=0.0,
            max=400.0,
            help="Counters older than this are deleted, not moved (the stack's COUNTER_TTL).",
        ),
    ] = COUNTER_TTL_DAYS,
) -> None:
    """Move the load table's counters from the earlier keys (pk Q#<queue>, sk S#<second>) to
    pk C#<queue>, sk S#<13-digit second>; delete those with no live second (docs/events.md)."""
    clients = StackClients.create()
    try:
        table = stack_settings(stack, clients).load_table
        done = migrate_legacy_counters(
            clients.dynamodb,
            table,
            now=time.time(),
            keep_seconds=keep_days * 86_400,
            skew_seconds=DEFAULT_MAX_SKEW_SECONDS,
        )
    except (StatusError, AdapterError) as error:
        raise _fail(str(error)) from None
    typer.echo(
        f"{table}: {done.moved} counter items moved, {done.deleted} deleted (no live second), "
        f"{done.skipped} moved by another run"
    )


def register(app: typer.Typer) -> None:
    """Add `status`, `report` and `migrate-counters` to the app."""
    app.command("status")(status)
    app.command("report")(report)
    app.command("migrate-counters")(migrate_counters)
