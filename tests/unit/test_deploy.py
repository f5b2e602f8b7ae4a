"""queue-autoscale deploy: the parameters derived from a config, the limits of one stack, the
SAM command lines, and --dry-run (which calls no AWS)."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest
from typer.testing import CliRunner

from queue_autoscale.adapters.sts import Identity
from queue_autoscale.cli import app
from queue_autoscale.config import parse_config
from queue_autoscale.demo.template import load_template
from queue_autoscale.operator import deploy
from queue_autoscale.operator.cost_template import resource_count

TARGET = deploy.Target("prod", "eu-west-1", Identity("123456789012", "aws"))
CN = deploy.Target("prod", "cn-north-1", Identity("123456789012", "aws-cn"))


def _params(
    document: object, target: deploy.Target = TARGET, scope: deploy.Scope = deploy.Scope.LISTED
) -> dict[str, str]:
    return deploy.derive_parameters(parse_config(document), deploy.compact(document), target, scope)


def test_parameters_name_every_queue_dlq_and_service() -> None:
    # GIVEN two SQS queues in one cluster, one with a DLQ, one service given as an ARN
    service_arn = "arn:aws:ecs:eu-west-1:123456789012:service/workers/mail"
    document = {
        "queues": [
            {"queue": "reports", "cluster": "workers", "service": "reports-worker", "dlq": "r-dlq"},
            {"queue": "emails", "cluster": "workers", "service": service_arn},
        ]
    }
    # WHEN the parameters are derived
    params = _params(document)
    # THEN each list names exactly what the config does, with the caller's account and region
    assert params["QueueArns"] == (
        "arn:aws:sqs:eu-west-1:123456789012:reports,"
        "arn:aws:sqs:eu-west-1:123456789012:r-dlq,"
        "arn:aws:sqs:eu-west-1:123456789012:emails"
    )
    assert params["ServiceArns"] == (
        f"arn:aws:ecs:eu-west-1:123456789012:service/workers/reports-worker,{service_arn}"
    )
    assert params["EcsClusterName"] == "workers"
    assert params["SourceSecretArns"] == ""
    assert json.loads(params["QueuesConfig"]) == document


def test_partition_cluster_arn_and_default_service() -> None:
    # GIVEN a China-region account, a cluster given as an ARN and no service (the queue's name)
    cluster = "arn:aws-cn:ecs:cn-north-1:123456789012:cluster/batch"
    params = _params({"queue": "jobs", "cluster": cluster}, CN)
    # THEN the ARNs use the partition, the cluster's name and the queue's name as service
    assert params["QueueArns"] == "arn:aws-cn:sqs:cn-north-1:123456789012:jobs"
    assert params["ServiceArns"] == "arn:aws-cn:ecs:cn-north-1:123456789012:service/batch/jobs"
    assert params["EcsClusterName"] == "batch"


def test_rabbitmq_source_names_its_credentials_and_no_sqs_queue() -> None:
    # GIVEN a RabbitMQ queue whose credentials live in a secret and a parameter
    source = {
        "type": "rabbitmq",
        "management_url": "https://broker.example:15671",
        "prefetch": 10,
        "credentials_secret": "mq/admin",
    }
    params = _params({"queue": "rq", "cluster": "c", "source": source})
    # THEN no SQS ARN is listed and the secret is granted with its random suffix
    assert params["QueueArns"] == ""
    assert params["SourceSecretArns"] == (
        "arn:aws:secretsmanager:eu-west-1:123456789012:secret:mq/admin-??????"
    )


def test_two_clusters_are_refused_naming_both() -> None:
    document = [{"queue": "a", "cluster": "one"}, {"queue": "b", "cluster": "two"}]
    with pytest.raises(deploy.DeployError, match=r"2 clusters \(one, two\)"):
        _params(document)


def _queues(count: int, name_length: int) -> list[dict[str, object]]:
    return [{"queue": f"q{i:0{name_length - 1}d}", "cluster": "c"} for i in range(count)]


def test_a_list_past_4096_bytes_is_refused_naming_the_parameter() -> None:
    # GIVEN 65 queues of 20-character names: ServiceArns = 65 x 67 bytes > 4,096
    with pytest.raises(deploy.DeployError, match=r"ServiceArns would be 4,\d{3} bytes"):
        _params({"queues": _queues(65, 20)})
    # and 55 of them fit
    assert len(_params({"queues": _queues(55, 20)})["ServiceArns"]) <= deploy.PARAMETER_BYTES


def test_the_stack_is_the_same_size_for_1_and_for_1000_queues() -> None:
    # GIVEN the parameters deploy derives (its default scope) for 1 and for 1,000 queues, the
    # large config passed as an s3:// pointer as docs/config.md says
    one = _params({"queue": "jobs", "cluster": "c"}, scope=deploy.Scope.CLUSTER)
    many = deploy.derive_parameters(parse_config(_queues(1000, 20)), "s3://b/config/q.json", TARGET)
    # WHEN the template is translated as sam deploy would
    template = load_template()
    counts = {resource_count(template, p) for p in (one, many)}
    # THEN both hold the same resources, and every parameter stays within 4,096 bytes
    assert len(counts) == 1 and 30 < counts.pop() < 60
    assert max(len(value.encode()) for value in many.values()) <= deploy.PARAMETER_BYTES
    # AND no resource limit caps the queue count
    assert deploy.max_queues_by_resources() is None
    deploy.check_limits({}, 100_000)


def _overrides(value: str) -> dict[str, str]:
    """SAM's shorthand Name="value" items, outer quotes stripped and \\" unescaped."""
    items = re.findall(r'(\w+)="((?:\\.|[^"\\])*)"', value)
    return {name: raw.replace('\\"', '"') for name, raw in items}


def test_deploy_command_passes_every_parameter_through_sams_syntax() -> None:
    # GIVEN derived parameters, one of them JSON with quotes and commas
    params = _params({"queue": "jobs", "cluster": "c", "sla_seconds": 12})
    # WHEN the deploy command is built
    command = deploy.deploy_command("uv", TARGET, params, guided=True)
    # THEN it runs the pinned SAM CLI on the built template, with the stack, region, both
    # capabilities, and every non-empty parameter recoverable from one overrides string
    assert command[:6] == ["uv", "tool", "run", "--from", "aws-sam-cli==1.170.0", "sam"]
    assert command[6] == "deploy"
    assert command[command.index("--stack-name") + 1] == "prod"
    assert command[command.index("--region") + 1] == "eu-west-1"
    capabilities = command.index("--capabilities")
    assert command[capabilities + 1 : capabilities + 3] == [
        "CAPABILITY_IAM",
        "CAPABILITY_AUTO_EXPAND",
    ]
    overrides = _overrides(command[command.index("--parameter-overrides") + 1])
    assert overrides == {name: value for name, value in params.items() if value}
    assert command[-1] == "--guided"
    # and the line printed for a user parses back into the same arguments
    assert shlex.split(deploy.shell_line(command)) == command


def test_build_command_builds_the_template_whatever_the_queues() -> None:
    command = deploy.build_command("uv")
    assert command[5:7] == ["sam", "build"]
    assert "--parameter-overrides" not in command  # no parameter changes what is built
    assert command[command.index("--template-file") + 1].endswith("template.yaml")


def _runner(answers: dict[str, list[subprocess.CompletedProcess[str]]]) -> deploy.Runner:
    calls: list[Sequence[str]] = []

    def run(command: Sequence[str]) -> subprocess.CompletedProcess[str]:
        calls.append(command)
        return answers[" ".join(command[1:3])].pop(0)

    return run


def _done(code: int, out: str = "", err: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.CompletedProcess([], code, out, err)


FINDER = str(deploy.ROOT / "infra" / "python313.sh")


def test_python313_is_found_or_installed_through_uv() -> None:
    # GIVEN uv and infra/python313.sh find no 3.13 at first, uv installs it, then finds it
    found = "/home/u/.local/share/uv/python/cpython-3.13.5/bin/python3.13\n"
    run = _runner(
        {
            "python find": [_done(2, err="not found"), _done(0, found)],
            FINDER: [_done(1)],
            "python install": [_done(0)],
        }
    )
    # THEN the installed interpreter is used
    assert deploy.python313("uv", run) == found.strip()
    # GIVEN uv's search fails on a pyenv shim (it stops at the first broken python3.13)
    pyenv = "/root/.pyenv/versions/3.13.0/bin/python3.13\n"
    shimmed = _runner({"python find": [_done(2, err="pyenv: shim")], FINDER: [_done(0, pyenv)]})
    # THEN the project's finder supplies pyenv's interpreter and nothing is installed
    assert deploy.python313("uv", shimmed) == pyenv.strip()
    # and an install that fails says why
    failing = _runner(
        {"python find": [_done(2)], FINDER: [_done(1)], "python install": [_done(1, err="offline")]}
    )
    with pytest.raises(deploy.DeployError, match="offline"):
        deploy.python313("uv", failing)


LISTED = ("--scope", "listed")


def test_dry_run_prints_parameters_and_commands_and_calls_no_aws(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a valid config and no credentials or endpoint that could answer
    config = tmp_path / "queues.json"
    config.write_text(json.dumps({"queue": "jobs", "cluster": "workers"}))
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens there
    # WHEN deploy --dry-run runs
    result = CliRunner().invoke(
        app, ["deploy", "--config", str(config), "--region", "us-west-2", "--dry-run"]
    )
    # THEN it prints the derived parameters (by default the role is scoped by cluster and tag:
    # no ARN is listed, the queue is to be tagged), both SAM commands and the status command
    assert result.exit_code == 0, result.output
    assert "QueueArns = \n" in result.output
    assert "tag queue-autoscale=queue-autoscale on the SQS queues: jobs" in result.output
    assert "sam build" in result.output and "sam deploy" in result.output
    assert "queue-autoscale status --stack queue-autoscale --region us-west-2" in result.output
    assert "DashboardEnabled" not in result.output  # the template's default: no dashboard
    # AND --scope listed lists the ARNs instead
    listed = CliRunner().invoke(
        app,
        ["deploy", "--config", str(config), "--region", "us-west-2", "--dry-run", *LISTED],
    )
    assert "QueueArns = arn:aws:sqs:us-west-2:<account-id>:jobs" in listed.output
    assert "tag queue-autoscale" not in listed.output


def test_dashboard_opts_into_the_stacks_dashboard(tmp_path: Path) -> None:
    config = tmp_path / "queues.json"
    config.write_text(json.dumps({"queue": "jobs", "cluster": "workers"}))
    arguments = ["deploy", "--config", str(config), "--region", "us-west-2", "--dry-run"]
    result = CliRunner().invoke(app, [*arguments, "--dashboard"])
    assert result.exit_code == 0, result.output
    assert "DashboardEnabled = true" in result.output
    assert 'DashboardEnabled="true"' in result.output  # passed to sam deploy


def test_a_bad_config_is_one_line_and_exit_2(tmp_path: Path) -> None:
    config = tmp_path / "queues.json"
    config.write_text(json.dumps({"queue": "jobs", "percentile": 2}))
    result = CliRunner().invoke(
        app, ["deploy", "--config", str(config), "--dry-run", "--region", "x"]
    )
    assert result.exit_code == 2
    assert "percentile" in result.output


def test_cluster_scope_lists_no_arns_and_tags_the_sqs_queues() -> None:
    # GIVEN 70 queues of 20-character names with DLQs: past the listed ARNs' 4,096 bytes
    queues = [{**q, "dlq": f"{q['queue']}-dlq"} for q in _queues(70, 20)]
    with pytest.raises(deploy.DeployError, match="QueueArns"):
        deploy.derive_parameters(parse_config(queues), "s3://b/q.json", TARGET, deploy.Scope.LISTED)
    # WHEN the role is scoped by cluster and tag instead
    params = deploy.derive_parameters(
        parse_config(queues), "s3://b/q.json", TARGET, deploy.Scope.CLUSTER
    )
    # THEN no ARN list is passed (the template scopes by cluster and tag) and every work
    # queue and DLQ is to be tagged
    assert params["QueueArns"] == "" and params["ServiceArns"] == ""
    assert params["EcsClusterName"] == "c"
    tagged = deploy.tagged_queues(parse_config(queues))
    assert len(tagged) == 140 and tagged[:2] == ["q0000000000000000000", "q0000000000000000001"]
    assert "q0000000000000000000-dlq" in tagged
