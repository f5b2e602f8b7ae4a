"""`queue-autoscale deploy`: the stack from a queue config, in one command.

What a user did by hand, in order: validate the config; derive the template's parameters
from it (`QueuesConfig`, `EcsClusterName`, `SourceSecretArns`, and with `--scope listed`
`QueueArns` and `ServiceArns`; account and partition from STS); `sam build` with the pinned
SAM CLI and a Python 3.13 (found, or installed through uv); `sam deploy`; upload what the Glue
jobs run to `s3://<ArchiveBucketName>/glue/`; print the outputs and the `status` command to run
next.

SAM's packaging uploads a local `Command.ScriptLocation` of an `AWS::Glue::Job`, but not the
`--extra-py-files` zip in its `DefaultArguments`, and the Glue role reads the archive bucket
only; so the script and the zip go to the archive bucket after the stack exists, as before.
"""

from __future__ import annotations

import functools
import json
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from queue_autoscale.adapters.s3 import Archive
from queue_autoscale.adapters.sts import Identity
from queue_autoscale.config import QueueConfig, RabbitSource, SqsSource
from queue_autoscale.demo.template import ROOT, load_template
from queue_autoscale.operator.cost_template import CLOUDFORMATION_MAX_RESOURCES, stack_capacity

SAM_CLI_VERSION = "1.170.0"
"""The pinned SAM CLI (infra/lint.sh reads it from here)."""
PARAMETER_BYTES = 4_096
"""CloudFormation's limit on one parameter value, bytes."""
BUILD_DIR = ".aws-sam/build"
GLUE_FILES = ("glue_jobs/daily.py",)
"""The Glue job's script (the SLA report, then the trend fit: template.yaml's DailySparkJob)."""
GLUE_PREFIX = "glue/"
SCOPE_TAG = "queue-autoscale"
"""With --scope cluster the evaluate role reads the SQS queues tagged SCOPE_TAG=<stack name>."""


class Scope(StrEnum):
    """How the evaluate role is scoped to the fleet."""

    CLUSTER = "cluster"
    """Every service of the one cluster and the queues tagged with the stack's name: the
    parameters do not grow with the queue count (the default)."""
    LISTED = "listed"
    """QueueArns and ServiceArns list every queue and service (grows with the queue count, up
    to CloudFormation's 4,096 bytes a parameter)."""


class DeployError(ValueError):
    """The config cannot be deployed as one stack, or a step failed; one line says why."""


@dataclass(frozen=True)
class Target:
    """Where the stack goes: its name, region and the caller's account."""

    stack: str
    region: str
    identity: Identity


def _arn(target: Target, service: str, resource: str) -> str:
    identity = target.identity
    return f"arn:{identity.partition}:{service}:{target.region}:{identity.account}:{resource}"


def _cluster_name(cluster: str) -> str:
    """A cluster given as name or ARN (arn:...:cluster/NAME) -> its name."""
    return cluster.rsplit("/", 1)[-1] if cluster.startswith("arn:") else cluster


def _service_arn(queue: QueueConfig, target: Target) -> str:
    if queue.service.startswith("arn:"):
        return queue.service
    return _arn(target, "ecs", f"service/{_cluster_name(queue.cluster)}/{queue.service}")


def _secret_arns(queue: QueueConfig, target: Target) -> list[str]:
    source = queue.source
    if not isinstance(source, RabbitSource):
        return []
    arns = []
    if source.credentials_secret:
        secret = source.credentials_secret
        # a secret's ARN ends in a random six-character suffix the name does not carry
        secret_arn = _arn(target, "secretsmanager", f"secret:{secret}-??????")
        arns.append(secret if secret.startswith("arn:") else secret_arn)
    if source.credentials_parameter:
        name = source.credentials_parameter
        parameter_arn = _arn(target, "ssm", f"parameter/{name.lstrip('/')}")
        arns.append(name if name.startswith("arn:") else parameter_arn)
    return arns


def derive_parameters(
    queues: Sequence[QueueConfig], document: str, target: Target, scope: Scope = Scope.CLUSTER
) -> dict[str, str]:
    """The template parameters a config implies; raises DeployError past one stack's limits.
    With `Scope.CLUSTER` the ARN lists stay empty (the template's cluster and tag scope)."""
    clusters = sorted({_cluster_name(q.cluster) for q in queues})
    if len(clusters) != 1:
        raise DeployError(
            f"the services run in {len(clusters)} clusters ({', '.join(clusters)}): one stack "
            "scales one cluster (UpdateService is conditioned on it); deploy one config per cluster"
        )
    queue_arns: list[str] = []
    for queue in queues if scope == Scope.LISTED else ():
        if isinstance(queue.source, SqsSource):
            queue_arns.append(_arn(target, "sqs", queue.queue))
        if queue.dlq:
            queue_arns.append(_arn(target, "sqs", queue.dlq))
    parameters = {
        "QueuesConfig": document,
        "QueueArns": ",".join(queue_arns),
        "ServiceArns": ",".join(
            dict.fromkeys(_service_arn(q, target) for q in queues if scope == Scope.LISTED)
        ),
        "EcsClusterName": clusters[0],
        "SourceSecretArns": ",".join(
            dict.fromkeys(arn for q in queues for arn in _secret_arns(q, target))
        ),
    }
    check_limits(parameters, len(queues))
    return parameters


def tagged_queues(queues: Sequence[QueueConfig]) -> list[str]:
    """The SQS queues (work queues and DLQs) --scope cluster tags for the evaluate role."""
    names = [q.queue for q in queues if isinstance(q.source, SqsSource)]
    return list(dict.fromkeys([*names, *(q.dlq for q in queues if q.dlq)]))


@functools.cache
def _capacity() -> tuple[int, int, int | None]:
    """template.yaml's stack_capacity, translated once per process."""
    return stack_capacity(load_template())


def max_queues_by_resources() -> int | None:
    """Queues one stack holds before CloudFormation's resource limit (None: no resource grows
    with the queue count)."""
    return _capacity()[2]


def check_limits(parameters: dict[str, str], queue_count: int) -> None:
    """Fail naming the limit when the config does not fit one stack."""
    one, per_queue, most = _capacity()
    if most is not None and queue_count > most:
        raise DeployError(
            f"{queue_count} queues need {one + per_queue * (queue_count - 1)} resources; "
            f"a stack holds {CLOUDFORMATION_MAX_RESOURCES} ({most} queues): "
            "split the config over several stacks"
        )
    for name, value in parameters.items():
        size = len(value.encode("utf-8"))
        if size > PARAMETER_BYTES:
            hint = (
                "put the document in S3 and pass its s3:// pointer (docs/config.md)"
                if name == "QueuesConfig"
                else "split the config over several stacks"
            )
            raise DeployError(
                f"{name} would be {size:,} bytes; CloudFormation takes {PARAMETER_BYTES:,}: {hint}"
            )
        if "\\" in value:
            raise DeployError(f"{name} holds a backslash, which sam's parameter syntax cannot pass")


def _override(name: str, value: str) -> str:
    """One `sam --parameter-overrides` item: double-quoted, inner quotes escaped (SAM strips
    the outer quotes and unescapes the inner ones)."""
    escaped = value.replace('"', '\\"')
    return f'{name}="{escaped}"'


def sam_prefix(uv: str) -> list[str]:
    """The pinned SAM CLI, run by uv without installing it into the project."""
    return [uv, "tool", "run", "--from", f"aws-sam-cli=={SAM_CLI_VERSION}", "sam"]


def build_command(uv: str) -> list[str]:
    """`sam build` of template.yaml (no parameter changes what it builds)."""
    return [
        *sam_prefix(uv),
        "build",
        "--template-file", str(ROOT / "template.yaml"),
        "--build-dir", str(ROOT / BUILD_DIR),
    ]  # fmt: skip


def deploy_command(
    uv: str, target: Target, parameters: dict[str, str], *, guided: bool
) -> list[str]:
    """`sam deploy` of the built template with every derived parameter."""
    command = [
        *sam_prefix(uv),
        "deploy",
        "--template-file", str(ROOT / BUILD_DIR / "template.yaml"),
        "--stack-name", target.stack,
        "--region", target.region,
        "--capabilities", "CAPABILITY_IAM", "CAPABILITY_AUTO_EXPAND",
        "--resolve-s3",
        "--no-fail-on-empty-changeset",
        "--parameter-overrides",
        " ".join(_override(name, value) for name, value in parameters.items() if value),
    ]  # fmt: skip
    return [*command, "--guided"] if guided else command


def find_uv() -> str:
    """The project's pinned uv (.tools/bin/uv), else one on the PATH."""
    pinned = ROOT / ".tools" / "bin" / "uv"
    found = str(pinned) if pinned.is_file() else shutil.which("uv")
    if not found:
        raise DeployError("no uv: run `make setup` (it installs the pinned uv in .tools/)")
    return found


Runner = Callable[[Sequence[str]], subprocess.CompletedProcess[str]]


def _run(command: Sequence[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(command), capture_output=True, text=True, check=False)


def python313(uv: str, run: Runner = _run) -> str:
    """A Python 3.13 interpreter for `sam build` (the functions' runtime): uv finds one,
    else infra/python313.sh (pyenv's, which uv misses behind pyenv's shims), else uv
    installs one, so none need be on the PATH."""
    found = run([uv, "python", "find", "3.13"])
    if found.returncode != 0:
        found = run(["bash", str(ROOT / "infra" / "python313.sh")])
    if found.returncode != 0:
        installed = run([uv, "python", "install", "3.13"])
        if installed.returncode != 0:
            raise DeployError(f"uv python install 3.13 failed: {installed.stderr.strip()[-300:]}")
        found = run([uv, "python", "find", "3.13"])
    path = found.stdout.strip()
    if found.returncode != 0 or not path:
        raise DeployError("no Python 3.13 found or installed by uv")
    return path


def package_glue(out: Path, run: Runner = _run) -> Path:
    """The zip Glue's --extra-py-files names, built by infra/package_glue.py."""
    result = run([sys.executable, str(ROOT / "infra" / "package_glue.py"), "--out", str(out)])
    if result.returncode != 0:
        raise DeployError(f"packaging the Glue jobs failed: {result.stderr.strip()[-300:]}")
    return out


def upload_glue(s3: Any, bucket: str, zip_path: Path) -> list[str]:
    """Put the Glue scripts and the zip under glue/ in the archive bucket; the keys."""
    archive = Archive(s3, bucket)
    keys = []
    for relative in GLUE_FILES:
        key = GLUE_PREFIX + Path(relative).name
        archive.upload(ROOT / relative, key)
        keys.append(key)
    archive.upload(zip_path, GLUE_PREFIX + zip_path.name)
    keys.append(GLUE_PREFIX + zip_path.name)
    return keys


def shell_line(command: Sequence[str]) -> str:
    """A command as one line a user can paste."""
    return shlex.join(command)


def compact(document: Any) -> str:
    """The config document as the shortest JSON text (what QueuesConfig receives)."""
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False)
