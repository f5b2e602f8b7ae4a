"""The `queue-autoscale` command: demo, simulate, bench, explain, validate-config."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="queue-autoscale",
    help="SLA-driven autoscaler for SQS + ECS worker fleets.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _register_commands() -> None:
    # Each area registers its own commands; the CLI module only wires them up.
    from queue_autoscale import commands as core_commands
    from queue_autoscale import demo
    from queue_autoscale.sim import commands as sim_commands

    core_commands.register(app)
    sim_commands.register(app)
    demo.register(app)


_register_commands()


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
