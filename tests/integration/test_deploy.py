"""queue-autoscale deploy on the emulator: the ARNs it derives from the config (account from
STS) are those of the queues and services that exist, and after the stack is up it finds the
archive bucket in the outputs and uploads the Glue jobs there."""

from __future__ import annotations

import uuid
import zipfile
from pathlib import Path
from typing import Any

import pytest

from infra.emulator import session
from queue_autoscale.adapters.aws import make_client
from queue_autoscale.adapters.errors import AdapterError
from queue_autoscale.adapters.sqs import SqsQueues
from queue_autoscale.adapters.sts import caller_identity
from queue_autoscale.config import parse_config
from queue_autoscale.operator import deploy
from queue_autoscale.operator.deploy_command import finish
from tests.integration.conftest import bootstrap_stack, reset_moto

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("moto")]


def test_derived_arns_are_the_created_resources_and_glue_lands_in_the_archive(
    aws_endpoint: Any, tmp_path: Path
) -> None:
    if aws_endpoint.moto_url:
        reset_moto(aws_endpoint.moto_url)
    aws_endpoint.require("dynamodb", "ecs")
    suffix = uuid.uuid4().hex[:8]
    document = {
        "queue": f"jobs-{suffix}",
        "dlq": f"jobs-{suffix}-dlq",
        "cluster": f"cluster-{suffix}",
        "service": f"workers-{suffix}",
    }
    queues = parse_config(document)
    # GIVEN the stack for that config on the emulator (its queues and services created)
    stack = bootstrap_stack(aws_endpoint, queues, f"dp-{suffix}")
    client = session(stack.endpoint_url, stack.region)
    # WHEN deploy derives the parameters with the endpoint's STS identity
    identity = caller_identity(client("sts"))
    target = deploy.Target(stack.stack_name, stack.region, identity)
    params = deploy.derive_parameters(queues, deploy.compact(document), target, deploy.Scope.LISTED)
    # THEN the ARNs are exactly those of the resources that exist, as their APIs answer
    sqs = client("sqs")
    (work,) = stack.work_queues
    assert work.dlq_url is not None
    dlq_arn = sqs.get_queue_attributes(QueueUrl=work.dlq_url, AttributeNames=["QueueArn"])
    assert sorted(params["QueueArns"].split(",")) == sorted(
        [work.arn, dlq_arn["Attributes"]["QueueArn"]]
    )
    services = client("ecs").describe_services(cluster=work.cluster, services=[work.service])
    assert params["ServiceArns"] == services["services"][0]["serviceArn"]
    assert params["EcsClusterName"] == document["cluster"]
    # AND the emulated stack was deployed with that one derivation
    for name in ("QueueArns", "ServiceArns", "EcsClusterName"):
        assert params[name] == stack.parameters[name], name
    # WHEN the post-deploy step runs on the stack
    zip_path = tmp_path / "glue_jobs.zip"
    with zipfile.ZipFile(zip_path, "w") as archive:
        archive.writestr("glue_jobs/__init__.py", "")
    outputs = finish(client("cloudformation"), client("s3"), stack.stack_name, zip_path)
    # THEN it found the archive bucket and put the daily job's script and the zip under glue/
    assert outputs["GlueArtifacts"] == f"s3://{stack.archive_bucket}/glue/"
    listed = client("s3").list_objects_v2(Bucket=stack.archive_bucket, Prefix="glue/")
    keys = sorted(item["Key"] for item in listed.get("Contents", []))
    assert keys == ["glue/daily.py", "glue/glue_jobs.zip"]
    script = client("s3").get_object(Bucket=stack.archive_bucket, Key="glue/daily.py")
    assert script["Body"].read() == (deploy.ROOT / "glue_jobs" / "daily.py").read_bytes()


def test_a_missing_stack_is_named(aws_endpoint: Any, tmp_path: Path) -> None:
    cloudformation = make_client("cloudformation", endpoint_url=aws_endpoint.url)
    # CloudFormation answers ValidationError "does not exist"; the line names the stack
    with pytest.raises(AdapterError, match=r"no-such-stack.*does not exist"):
        finish(cloudformation, None, "no-such-stack", tmp_path / "x.zip")


def test_cluster_scope_tags_the_queue_for_the_role(endpoint: Any) -> None:
    # GIVEN a work queue that already carries a tag of its own
    sqs = make_client("sqs", endpoint_url=endpoint.url)
    name = f"jobs-{uuid.uuid4().hex[:8]}"
    url = sqs.create_queue(QueueName=name, tags={"team": "a"})["QueueUrl"]
    # WHEN deploy --scope cluster tags it for the stack
    SqsQueues(sqs).tag(name, {deploy.SCOPE_TAG: "prod-stack"})
    # THEN the role's condition tag is there and the queue's own tag is kept
    tags = sqs.list_queue_tags(QueueUrl=url)["Tags"]
    assert tags == {"team": "a", "queue-autoscale": "prod-stack"}
