"""examples/worker: the template wires what the worker reads, the job function works."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any, get_type_hints

import pytest

from queue_autoscale.demo.template import ROOT, load_template
from queue_autoscale.worker import Job
from queue_autoscale.worker.command import worker

EXAMPLE = ROOT / "examples" / "worker"


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return load_template(EXAMPLE / "template.yaml")


def _resources(template: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [r["Properties"] for r in template["Resources"].values() if r["Type"] == kind]


def _envvars() -> set[str]:
    """Every environment variable the worker command reads."""
    names = set()
    for hint in get_type_hints(worker, include_extras=True).values():
        for meta in getattr(hint, "__metadata__", ()):
            envvar = getattr(meta, "envvar", None)
            if envvar:
                names.add(str(envvar))
    return names


def test_the_container_sets_only_variables_the_worker_reads_and_stops_after_its_drain(
    template: dict[str, Any],
) -> None:
    (definition,) = _resources(template, "AWS::ECS::TaskDefinition")
    (container,) = definition["ContainerDefinitions"]
    names = {item["Name"] for item in container["Environment"]}
    assert names <= _envvars(), names - _envvars()
    assert {"WORKER_QUEUE_URL", "WORKER_DRAIN_SECONDS", "WORKER_EVENTS_QUEUE_URL"} <= names
    parameters = template["Parameters"]
    assert container["StopTimeout"] == {"Ref": "StopTimeoutSeconds"}
    assert parameters["DrainSeconds"]["Default"] < parameters["StopTimeoutSeconds"]["Default"]
    assert parameters["StopTimeoutSeconds"]["MaxValue"] == 120  # Fargate's limit


def test_the_queue_dead_letters_and_the_task_role_may_protect_its_own_tasks(
    template: dict[str, Any],
) -> None:
    work = template["Resources"]["WorkQueue"]["Properties"]
    assert work["RedrivePolicy"]["deadLetterTargetArn"] == {
        "Fn::GetAtt": ["DeadLetterQueue", "Arn"]
    }
    role = template["Resources"]["TaskRole"]["Properties"]
    statements = role["Policies"][0]["PolicyDocument"]["Statement"]
    protection = next(s for s in statements if s.get("Sid") == "ScaleInProtection")
    assert "ecs:UpdateTaskProtection" in protection["Action"]
    assert "task/${Cluster}/*" in protection["Resource"]["Fn::Sub"]
    queue = next(s for s in statements if s.get("Sid") == "WorkQueue")
    assert set(queue["Action"]) >= {
        "sqs:ReceiveMessage",
        "sqs:DeleteMessage",
        "sqs:ChangeMessageVisibility",
    }


def test_the_outputs_are_the_autoscaler_stacks_parameters(template: dict[str, Any]) -> None:
    autoscaler = load_template(ROOT / "template.yaml")["Parameters"]
    outputs = template["Outputs"]
    for name in ("QueueArns", "ServiceArns"):
        assert name in outputs and name in autoscaler
    assert "EcsClusterName" in autoscaler and "ClusterName" in outputs
    assert "QueuesConfigEntry" in outputs


def test_the_example_job_processes_an_order_and_refuses_garbage() -> None:
    spec = importlib.util.spec_from_file_location("example_job", EXAMPLE / "job.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def job(body: str) -> Job:
        return Job(body=body, message_id="m-1", attempt=1, attributes={}, message_attributes={})

    module.handle(job(json.dumps({"order_id": "o-1", "items": [1, 2], "work_seconds": 0.01})))
    for bad in ("not json", "{}", json.dumps({"order_id": "o", "work_seconds": 1e6})):
        with pytest.raises(module.BadOrderError):
            module.handle(job(bad))


def test_the_image_runs_the_worker_module_with_the_example_job() -> None:
    dockerfile = (EXAMPLE / "Dockerfile").read_text()
    assert 'ENTRYPOINT ["python", "-m", "queue_autoscale.worker"]' in dockerfile
    assert "WORKER_JOB=job:handle" in dockerfile
    assert Path(EXAMPLE / "job.py").is_file()
