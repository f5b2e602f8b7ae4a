"""The `deploy` command: validate, derive, build, deploy, upload, print what to run next."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any

import typer

from queue_autoscale.adapters.aws import make_client, make_session
from queue_autoscale.adapters.errors import AdapterError
from queue_autoscale.adapters.sqs import SqsQueues
from queue_autoscale.adapters.stack import StackReader, stack_outputs
from queue_autoscale.adapters.sts import Identity, caller_identity
from queue_autoscale.config import ConfigError, load_json, parse_config, read_text
from queue_autoscale.demo.template import ROOT, load_template
from queue_autoscale.operator import deploy as steps
from queue_autoscale.operator.localstack import stand_in

ARCHIVE_LOGICAL_ID = "ArchiveBucket"
DRY_RUN_IDENTITY = Identity(account="<account-id>", partition="aws")
"""--dry-run calls no AWS: ARNs name this placeholder account (as long as a real one)."""


@dataclass(frozen=True)
class Plan:
    """What a deploy will do: the stack, its parameters and the two SAM commands."""

    target: steps.Target
    parameters: dict[str, str]
    tagged: list[str]
    """SQS queues to tag queue-autoscale=<stack> (--scope cluster)."""
    build: list[str]
    deploy: list[str]


def plan(
    config: Path,
    target: steps.Target,
    uv: str,
    *,
    guided: bool,
    scope: steps.Scope,
    dashboard: bool = False,
) -> Plan:
    """Validate the config and derive everything a deploy runs; raises ConfigError or
    DeployError with one line. `dashboard` sets DashboardEnabled=true (the template's
    default is no dashboard)."""
    text = read_text(config, "config ", ConfigError)
    document = load_json(text, str(config), ConfigError)
    queues = parse_config(document)
    parameters = steps.derive_parameters(queues, steps.compact(document), target, scope)
    if dashboard:
        parameters["DashboardEnabled"] = "true"
    tagged = steps.tagged_queues(queues) if scope == steps.Scope.CLUSTER else []
    return Plan(
        target=target,
        parameters=parameters,
        tagged=tagged,
        build=steps.build_command(uv),
        deploy=steps.deploy_command(uv, target, parameters, guided=guided),
    )


def describe(p: Plan) -> list[str]:
    """The plan as lines: the parameters, then the commands."""
    lines = [f"stack {p.target.stack} in {p.target.region}, account {p.target.identity.account}"]
    lines += ["parameters:"]
    lines += [f"  {name} = {value}" for name, value in p.parameters.items()]
    if p.tagged:
        tag = f"{steps.SCOPE_TAG}={p.target.stack}"
        lines += [f"tag {tag} on the SQS queues: {', '.join(p.tagged)}"]
    lines += ["build:", f"  {steps.shell_line(p.build)}"]
    lines += ["deploy:", f"  {steps.shell_line(p.deploy)}"]
    return lines


def next_steps(stack: str, region: str) -> str:
    """The command to run once the stack is up."""
    return f"queue-autoscale status --stack {stack} --region {region}"


def finish(cloudformation: Any, s3: Any, stack: str, zip_path: Path) -> dict[str, str]:
    """After `sam deploy`: upload the Glue artifacts to the stack's archive bucket (the
    resource `ArchiveBucket`, what the Glue jobs' ScriptLocation names); the stack's outputs."""
    outputs = stack_outputs(cloudformation, stack)
    bucket = StackReader(cloudformation, None).physical_id(stack, ARCHIVE_LOGICAL_ID)
    steps.upload_glue(s3, bucket, zip_path)
    return {**outputs, "GlueArtifacts": f"s3://{bucket}/{steps.GLUE_PREFIX}"}


def for_localstack(p: Plan) -> tuple[Plan, dict[str, str]]:
    """After `sam build`: the built template as LocalStack can create it, written beside the
    built one, and the plan deploying it; the resources left out (logical ID -> why)."""
    index = p.deploy.index("--template-file") + 1
    built = Path(p.deploy[index])
    template, left_out = stand_in(load_template(built), p.parameters)
    variant = built.with_name("template.localstack.json")
    variant.write_text(json.dumps(template, indent=1), encoding="utf-8")
    command = [*p.deploy[:index], str(variant), *p.deploy[index + 1 :]]
    return replace(p, deploy=command), left_out


def _stream(command: Sequence[str], env: dict[str, str] | None = None) -> None:
    """Run a step with the user's terminal (SAM prints progress, --guided asks questions)."""
    result = subprocess.run(list(command), env=env, check=False)
    if result.returncode != 0:
        raise steps.DeployError(f"{command[5]} {command[6]} failed (exit {result.returncode})")


def deploy(
    config: Annotated[Path, typer.Option("--config", help="The queue config JSON file.")],
    stack: Annotated[str, typer.Option("--stack", help="Stack name.")] = "queue-autoscale",
    region: Annotated[
        str | None, typer.Option("--region", help="AWS region (default: the AWS config's).")
    ] = None,
    guided: Annotated[
        bool, typer.Option("--guided", help="Let sam deploy ask for every other parameter.")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the parameters and commands; call no AWS.")
    ] = False,
    scope: Annotated[
        steps.Scope,
        typer.Option(
            "--scope",
            help="cluster: every service of the cluster and the SQS queues tagged "
            "queue-autoscale=<stack>, which deploy tags (no parameter grows with the queues); "
            "listed: the role names every queue and service (up to ~36-66 queues).",
        ),
    ] = steps.Scope.CLUSTER,
    dashboard: Annotated[
        bool,
        typer.Option("--dashboard", help="Create the CloudWatch dashboard ($3.00 a month)."),
    ] = False,
    localstack: Annotated[
        bool,
        typer.Option(
            "--localstack",
            help="Deploy to LocalStack at AWS_ENDPOINT_URL: put "
            "stand-ins (SSM parameters) in place of the functions, the table and the Glue "
            "resources, which it cannot create offline; each is printed.",
        ),
    ] = False,
) -> None:
    """Deploy the stack for a queue config: validate it, derive the parameters (and tag the
    SQS queues for the role, or list their ARNs with --scope listed), sam build (pinned SAM
    CLI, Python 3.13 found or installed by uv), sam deploy, upload the Glue jobs, print the
    outputs and the status command."""
    try:
        chosen = region or os.environ.get("AWS_REGION") or make_session().region_name
        if not chosen:
            raise steps.DeployError("no region: pass --region or set AWS_DEFAULT_REGION")
        if localstack and not os.environ.get("AWS_ENDPOINT_URL"):
            raise steps.DeployError("--localstack needs AWS_ENDPOINT_URL (LocalStack's URL)")
        identity = (
            DRY_RUN_IDENTITY if dry_run else caller_identity(make_client("sts", region_name=chosen))
        )
        target = steps.Target(stack=stack, region=chosen, identity=identity)
        the_plan = plan(
            config, target, steps.find_uv(), guided=guided, scope=scope, dashboard=dashboard
        )
        typer.echo("\n".join(describe(the_plan)))
        zip_path = ROOT / "build" / "glue" / "glue_jobs.zip"
        if dry_run:
            glue = f"glue_jobs/*.py and {zip_path.name}"
            typer.echo(f"then: upload {glue} to s3://<ArchiveBucketName>/{steps.GLUE_PREFIX}")
            typer.echo(f"next: {next_steps(stack, chosen)}")
            return
        python = steps.python313(the_plan.build[0])
        path = f"{Path(python).parent}{os.pathsep}{os.environ.get('PATH', '')}"
        env = {**os.environ, "PATH": path}
        sqs = SqsQueues(make_client("sqs", region_name=chosen))
        for name in the_plan.tagged:
            sqs.tag(name, {steps.SCOPE_TAG: stack})
        _stream(the_plan.build, env)
        if localstack:
            the_plan, left_out = for_localstack(the_plan)
            for logical_id, why in left_out.items():
                typer.echo(f"left out on LocalStack: {logical_id} ({why})")
        _stream(the_plan.deploy)
        steps.package_glue(zip_path)
        cloudformation = make_client("cloudformation", region_name=chosen)
        outputs = finish(cloudformation, make_client("s3", region_name=chosen), stack, zip_path)
    except (ConfigError, steps.DeployError, AdapterError) as error:
        typer.echo(f"error: deploy: {error}", err=True)
        raise typer.Exit(code=2) from None
    for name, value in sorted(outputs.items()):
        typer.echo(f"{name}: {value}")
    typer.echo(f"next: {next_steps(stack, chosen)}")


def register(app: typer.Typer) -> None:
    """Add `deploy` to the app."""
    app.command("deploy")(deploy)
