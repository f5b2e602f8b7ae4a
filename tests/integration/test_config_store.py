"""The queue config store on the emulator: template.yaml's stack, the evaluate function's own
environment from the stack (QUEUES_CONFIG_PARAMETER), ticks on the real clock.

GIVEN the stack (its config store holds the QueuesConfig it was created with),
WHEN an operator changes the document in the store (no deploy),
THEN the next tick decides with it; a broken document never reaches the controller, which
keeps the last good config and reports the error (ConfigErrors metric, an error log line).
"""

from __future__ import annotations

import gzip
import io
import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from infra.emulator import EmulatorStack, session
from queue_autoscale.adapters.aws import make_clients
from queue_autoscale.config import parse_config
from queue_autoscale.handlers import evaluate
from queue_autoscale.settings import EvaluateSettings
from queue_autoscale.telemetry import logger
from tests.integration.conftest import REGION, bootstrap_stack, emf_documents, reset_moto

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("moto")]

MAX_AGE_SECONDS = 1
"""The functions' config cache TTL in this test (the stack's default is 5 s): a tick more than
this after a change must see it."""


@pytest.fixture
def stack(aws_endpoint: Any) -> Iterator[EmulatorStack]:
    if aws_endpoint.moto_url:
        reset_moto(aws_endpoint.moto_url)
    suffix = uuid.uuid4().hex[:8]
    queues = parse_config({"queue": f"jobs-{suffix}", "sla_seconds": 30, "min_workers": 1})
    try:
        yield bootstrap_stack(aws_endpoint, queues, f"cs-{suffix}")
    finally:
        evaluate.set_runtime(None)


def function_environment(stack: EmulatorStack) -> dict[str, str]:
    """The evaluate function's environment as the stack created it."""
    lambda_ = session(stack.endpoint_url, stack.region)("lambda")
    configuration = lambda_.get_function(FunctionName=stack.evaluate_function)["Configuration"]
    return {k: str(v) for k, v in configuration["Environment"]["Variables"].items()}


def install_evaluate(stack: EmulatorStack) -> Any:
    environment = {**function_environment(stack), "CONFIG_MAX_AGE_SECONDS": str(MAX_AGE_SECONDS)}
    assert "QUEUES_CONFIG" not in environment
    clients = make_clients(endpoint_url=stack.endpoint_url, region_name=REGION)
    runtime = evaluate.build_runtime(EvaluateSettings.from_environ(environment), clients)
    evaluate.set_runtime(runtime)
    return runtime


def publish(stack: EmulatorStack, document: Any) -> None:
    """What an operator does: overwrite the store's document (no deploy)."""
    text = document if isinstance(document, str) else json.dumps(document)
    ssm = session(stack.endpoint_url, stack.region)("ssm")
    ssm.put_parameter(Name=stack.config_parameter, Value=text, Type="String", Overwrite=True)


def tick(lambda_context: Any) -> list[dict[str, Any]]:
    """One evaluate invocation of one tick, after the config cache's TTL has passed."""
    time.sleep(MAX_AGE_SECONDS + 0.2)
    return list(evaluate.handler({"once": True}, lambda_context)["decisions"])


def decision_log(stack: EmulatorStack) -> list[dict[str, Any]]:
    """Every archived decision record, oldest tick first."""
    s3 = session(stack.endpoint_url, stack.region)("s3")
    listed = s3.list_objects_v2(Bucket=stack.archive_bucket, Prefix="decisions/")
    records = []
    for item in listed.get("Contents", []):
        body = s3.get_object(Bucket=stack.archive_bucket, Key=item["Key"])["Body"].read()
        records.extend(json.loads(line) for line in gzip.decompress(body).splitlines())
    return sorted(records, key=lambda record: record["at"])


def test_a_changed_sla_in_the_store_is_used_by_the_next_tick(
    stack: EmulatorStack, lambda_context: Any
) -> None:
    queue = stack.work_queues[0].name
    install_evaluate(stack)
    # GIVEN a tick on the config the stack was created with (SLA 30 s)
    (first,) = tick(lambda_context)
    # WHEN the SLA is changed in the store, and a queue added, with no deploy
    publish(stack, [{"queue": queue, "sla_seconds": 12, "min_workers": 1}])
    (second,) = tick(lambda_context)
    # THEN the next tick decides with the new SLA
    log = decision_log(stack)
    assert [(r["queue"], r["sla_seconds"]) for r in log] == [(queue, 30.0), (queue, 12.0)]
    assert first["errors"] == second["errors"] == []


def test_a_broken_document_keeps_the_last_good_config_and_is_reported(
    stack: EmulatorStack, lambda_context: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    queue = stack.work_queues[0].name
    runtime = install_evaluate(stack)
    tick(lambda_context)
    good = runtime.config.status.digest
    capsys.readouterr()
    log_lines = io.StringIO()
    handler: Any = logger.registered_handler
    previous = handler.setStream(log_lines)
    try:
        # WHEN a document with bad JSON is published, then one where one queue of two is bad
        publish(stack, '[{"queue": "' + queue + '", "sla_seconds": 12')
        (broken,) = tick(lambda_context)
        publish(stack, [{"queue": queue, "sla_seconds": 12}, {"queue": "other", "max_workers": -1}])
        (half,) = tick(lambda_context)
    finally:
        handler.setStream(previous)
    # THEN the controller still ticks the queue on the last good config: SLA 30 s, and never
    # the valid half of the second document (neither its SLA nor a second queue)
    assert (broken["queue"], half["queue"]) == (queue, queue)
    log = decision_log(stack)
    assert [r["sla_seconds"] for r in log] == [30.0, 30.0, 30.0]
    assert runtime.config.status.digest == good
    # AND each rejected document is counted, and published as ConfigErrors under the store's
    # name (what the stack's config-errors alarm reads)
    output = capsys.readouterr().out
    errors = [
        (doc[metric["Name"]], doc.get("ConfigParameter"))
        for doc in emf_documents(output)
        for declared in doc["_aws"]["CloudWatchMetrics"]
        for metric in declared["Metrics"]
        if metric["Name"] == "ConfigErrors"
    ]
    assert errors == [([1.0], stack.config_parameter)] * 2
    status = runtime.config.status
    assert (status.errors, status.consecutive_errors) == (2, 2)
    assert "queue 'other': field 'max_workers' = -1" in str(status.last_error)
    # AND the log says what was rejected and why, naming the store
    rejected = [
        json.loads(line)
        for line in log_lines.getvalue().splitlines()
        if line.startswith("{") and "queue config rejected" in line
    ]
    assert [entry["config_source"] for entry in rejected] == [stack.config_parameter] * 2
    assert "invalid JSON" in rejected[0]["reason"]
    # WHEN a good document follows THEN it is used at once and the streak ends
    publish(stack, [{"queue": queue, "sla_seconds": 12}])
    tick(lambda_context)
    assert decision_log(stack)[-1]["sla_seconds"] == 12.0
    assert runtime.config.status.consecutive_errors == 0
