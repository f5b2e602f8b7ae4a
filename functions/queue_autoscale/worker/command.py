"""`queue-autoscale worker` / `python -m queue_autoscale.worker`: run a job function on a queue.

Every option has a `WORKER_*` environment variable (`ECS_AGENT_URI` for the protection
endpoint, set by ECS), so a task definition configures the worker with environment only.
On exit the process prints one JSON line, {"worker": <stats>}, and returns 0 after a clean
drain, 2 after a hung job (so ECS replaces the task).
"""

from __future__ import annotations

import importlib
import json
import logging
import signal
import sys
from typing import Annotated

import typer
from pydantic import ValidationError

from queue_autoscale.validation import describe_error
from queue_autoscale.worker.children import end_group, lead_group
from queue_autoscale.worker.runtime import JobFunction, Worker
from queue_autoscale.worker.settings import WorkerSettings


def load_job(spec: str) -> JobFunction:
    """'package.module:function' -> the function (a bad spec raises ValueError with why)."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"job {spec!r}: write it as package.module:function")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ValueError(f"job {spec!r}: module not importable: {error}") from error
    function = getattr(module, attribute, None)
    if not callable(function):
        raise ValueError(f"job {spec!r}: {attribute} is not a function of {module_name}")
    return function  # type: ignore[no-any-return]


def run_worker(settings: WorkerSettings, job: JobFunction) -> int:
    """Build the clients, install the signal handlers, work, drain; returns the exit code."""
    # boto3 only when a worker really runs (the CLI's other commands do not pay for it)
    from queue_autoscale.adapters import aws  # noqa: PLC0415
    from queue_autoscale.client import EventRecorder  # noqa: PLC0415

    log = logging.getLogger("queue_autoscale.worker")
    recorder = None
    if settings.events_queue_url:
        recorder = EventRecorder(
            aws.make_client("sqs", config=aws.PRODUCER_CONFIG), settings.events_queue_url
        )
    else:
        log.info("no events queue configured: job events are not recorded")
    sqs = aws.make_client("sqs", config=aws.WORKER_CONFIG)
    worker = Worker(settings, job, sqs, recorder=recorder)
    signal.signal(signal.SIGTERM, worker.request_stop)
    signal.signal(signal.SIGINT, worker.request_stop)
    group = lead_group()
    try:
        code = worker.run()
    finally:
        end_group(group)
    print(json.dumps({"worker": worker.stats.to_dict()}), flush=True)
    return code


def worker(
    queue_url: Annotated[str, typer.Option(envvar="WORKER_QUEUE_URL", help="Work queue URL.")],
    job: Annotated[
        str,
        typer.Option(envvar="WORKER_JOB", help="The job function, package.module:function."),
    ],
    queue: Annotated[
        str, typer.Option(envvar="WORKER_QUEUE", help="Queue name in events (default: URL's).")
    ] = "",
    events_queue_url: Annotated[
        str | None,
        typer.Option(envvar="WORKER_EVENTS_QUEUE_URL", help="Events queue URL (none: no events)."),
    ] = None,
    concurrency: Annotated[
        int, typer.Option(envvar="WORKER_CONCURRENCY", help="Jobs run at once.")
    ] = 1,
    prefetch: Annotated[
        int, typer.Option(envvar="WORKER_PREFETCH", help="Messages held beyond concurrency.")
    ] = 0,
    wait_seconds: Annotated[
        int, typer.Option(envvar="WORKER_WAIT_SECONDS", help="Long-poll wait per receive, s.")
    ] = 10,
    visibility_timeout: Annotated[
        int,
        typer.Option(envvar="WORKER_VISIBILITY_TIMEOUT", help="Visibility kept by heartbeat, s"),
    ] = 30,
    job_timeout: Annotated[
        float, typer.Option(envvar="WORKER_JOB_TIMEOUT", help="Hard limit of one job, s.")
    ] = 900.0,
    drain_seconds: Annotated[
        float,
        typer.Option(envvar="WORKER_DRAIN_SECONDS", help="Drain deadline after SIGTERM, s."),
    ] = 25.0,
    retry_base: Annotated[
        float, typer.Option(envvar="WORKER_RETRY_BASE", help="Failure back-off base, s.")
    ] = 2.0,
    retry_max: Annotated[
        float, typer.Option(envvar="WORKER_RETRY_MAX", help="Failure back-off cap, s.")
    ] = 300.0,
    ecs_agent_uri: Annotated[
        str | None,
        typer.Option(envvar="ECS_AGENT_URI", help="ECS agent endpoint (set by ECS)."),
    ] = None,
    log_level: Annotated[str, typer.Option(envvar="WORKER_LOG_LEVEL")] = "INFO",
) -> None:
    """Run a job function on an SQS queue: heartbeat, retries, SIGTERM drain, ECS protection."""
    logging.basicConfig(
        level=log_level.upper(),
        stream=sys.stderr,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    try:
        settings = WorkerSettings(
            queue_url=queue_url,
            queue=queue,
            events_queue_url=events_queue_url or None,
            concurrency=concurrency,
            prefetch=prefetch,
            wait_seconds=wait_seconds,
            visibility_timeout_seconds=visibility_timeout,
            job_timeout_seconds=job_timeout,
            drain_seconds=drain_seconds,
            retry_base_seconds=retry_base,
            retry_max_seconds=retry_max,
            ecs_agent_uri=ecs_agent_uri or None,
        )
        function = load_job(job)
    except ValidationError as error:
        typer.echo(f"worker: {describe_error(error)}", err=True)
        raise typer.Exit(code=64) from None
    except ValueError as error:
        typer.echo(f"worker: {error}", err=True)
        raise typer.Exit(code=64) from None
    raise typer.Exit(code=run_worker(settings, function))


def register(app: typer.Typer) -> None:
    """Add the `worker` command."""
    app.command()(worker)


def standalone() -> None:
    """`python -m queue_autoscale.worker` (the image's entry point). Plain tracebacks, as the
    CLI's: typer.run's default renders every frame's local variables (41,556 lines over 14 s
    for a missing region, botocore's objects), and any secret a local holds, into the log."""
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    app.command()(worker)
    app()
