"""The `queue-autoscale` command: demo, simulate, bench, explain, validate-config, worker,
status, report, cost."""

from __future__ import annotations

import sys

import typer

from queue_autoscale import commands as core_commands
from queue_autoscale import demo
from queue_autoscale.adapters.errors import UNTRANSLATED, untranslated_line
from queue_autoscale.operator import commands as operator_commands
from queue_autoscale.operator import cost_command, deploy_command
from queue_autoscale.sim import commands as sim_commands
from queue_autoscale.worker import command as worker_command

app = typer.Typer(
    name="queue-autoscale",
    help="SLA-driven autoscaler for SQS + ECS worker fleets.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Each area registers its own commands; this module only wires them up.
core_commands.register(app)
sim_commands.register(app)
demo.register(app)
worker_command.register(app)
operator_commands.register(app)
deploy_command.register(app)
cost_command.register(app)


def main() -> None:
    """Console-script entry point: a bad input the commands did not name themselves is still
    one line and exit 2, never a traceback (ValueError, ArithmeticError, RecursionError, an
    input too large to hold in memory, no AWS region, or an AWS call that failed where no
    command caught it)."""
    command = " ".join(sys.argv[1:2]) or "queue-autoscale"
    try:
        app()
    except (ValueError, ArithmeticError, RecursionError, MemoryError) as error:
        typer.echo(f"error: {command}: {type(error).__name__}: {error}", err=True)
        raise SystemExit(2) from None
    except UNTRANSLATED as error:  # no region, or an AWS call no command translated
        typer.echo(f"error: {command}: {untranslated_line(error)}", err=True)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
