"""`queue-autoscale demo`: the options and the exit code."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from queue_autoscale.config import Profile


def register(app: typer.Typer) -> None:
    """Add the `demo` command."""

    @app.command()
    def demo(
        duration: Annotated[
            float,
            typer.Option(min=10, max=3600, help="Seconds of traffic (quiet, 5x spike, quiet)."),
        ] = 120.0,
        profile: Annotated[
            Profile, typer.Option(help="The demo queue's profile.")
        ] = Profile.BALANCED,
        dry_run: Annotated[
            bool, typer.Option("--dry-run", help="Decide and publish, never resize the service.")
        ] = False,
        output: Annotated[
            Path, typer.Option(help="Folder for the archive, ticks, logs, summary and report.")
        ] = Path("demo-output"),
        interval: Annotated[
            float, typer.Option(min=1, max=60, help="Seconds between evaluate ticks.")
        ] = 5.0,
        provisioning: Annotated[
            float, typer.Option(min=0, max=120, help="Seconds before a new worker starts.")
        ] = 10.0,
        quiet_rate: Annotated[
            float, typer.Option(min=0.1, max=50, help="Quiet arrival rate, jobs/s.")
        ] = 2.0,
        spike_factor: Annotated[
            float, typer.Option(min=1, max=20, help="Spike rate / quiet rate.")
        ] = 5.0,
        max_workers: Annotated[
            int, typer.Option(min=1, max=60, help="Most worker processes at once.")
        ] = 30,
        report: Annotated[bool, typer.Option(help="Build the Spark SLA report at the end.")] = True,
        endpoint_url: Annotated[
            str | None,
            typer.Option(
                help="Use this AWS endpoint (e.g. LocalStack) instead of the embedded one."
            ),
        ] = None,
    ) -> None:
        """Run the autoscaler end to end on the embedded AWS emulator with real worker
        processes (about two minutes, plus the Spark report)."""
        from queue_autoscale.demo.options import DemoOptions  # noqa: PLC0415 - dev extra
        from queue_autoscale.demo.run import run_demo  # noqa: PLC0415

        options = DemoOptions(
            duration_seconds=duration,
            profile=profile,
            dry_run=dry_run,
            output=output,
            interval_seconds=interval,
            provisioning_seconds=provisioning,
            quiet_rate=quiet_rate,
            spike_factor=spike_factor,
            max_workers=max_workers,
            report=report,
            endpoint_url=endpoint_url,
        )
        try:
            summary = run_demo(options)
        except KeyboardInterrupt:
            # Ctrl-C outside the traffic loop (setup, summary, report): the emulator and the
            # workers are already stopped by the context managers on the way out.
            Console().print("[yellow]interrupted[/]")
            raise typer.Exit(code=130) from None
        if summary.interrupted:
            raise typer.Exit(code=130)
        if not summary.passed:
            raise typer.Exit(code=1)
