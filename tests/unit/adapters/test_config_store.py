"""The config store adapter on moto (in-process): SSM parameter or S3 pointer, Powertools'
TTL cache, If-None-Match refreshes, size limits, and a 10,000-queue document."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities.parameters import base as powertools_base
from moto import mock_aws

from queue_autoscale.adapters.config_store import ConfigStore, ConfigStoreError, parse_pointer
from queue_autoscale.adapters.errors import AdapterError
from queue_autoscale.controller.config_loader import QueueConfigLoader

PARAMETER = "/stack/queues"
BUCKET = "stack-archive"
TTL_SECONDS = 5


class Clock:
    """Stands in for the `datetime` Powertools' cache reads `now()` from."""

    at = datetime(2026, 11, 22, 23, 0, 0)

    @classmethod
    def now(cls) -> datetime:
        return cls.at


class Counting:
    """A boto3 client that counts the calls made through it."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.client, name)
        if name.startswith("_") or not callable(method) or name == "meta":
            return method

        def call(**kwargs: Any) -> Any:
            self.calls.append((name, kwargs))
            return method(**kwargs)

        return call


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Counting, Counting]]:
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.setenv(key, "testing")
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.setattr(powertools_base, "datetime", Clock)
    Clock.at = datetime(2026, 11, 22, 23, 0, 0)
    with mock_aws():
        ssm = boto3.client("ssm", region_name="us-east-1")
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)
        yield Counting(ssm), Counting(s3)


def store_of(aws: tuple[Counting, Counting]) -> ConfigStore:
    return ConfigStore(aws[0], aws[1], PARAMETER, TTL_SECONDS)


def put(aws: tuple[Counting, Counting], value: str) -> None:
    aws[0].client.put_parameter(Name=PARAMETER, Value=value, Type="String", Overwrite=True)


def calls(client: Counting, name: str) -> int:
    return sum(1 for called, _ in client.calls if called == name)


def test_the_parameter_is_cached_for_its_ttl_then_read_again(
    aws: tuple[Counting, Counting],
) -> None:
    # GIVEN the document in the parameter, read once
    put(aws, '{"queue": "orders"}')
    store = store_of(aws)
    assert store.read().text == '{"queue": "orders"}'
    # WHEN it changes, and the store is read within the TTL and just after it
    put(aws, '{"queue": "emails"}')
    Clock.at += timedelta(seconds=TTL_SECONDS)
    within = store.read()
    Clock.at += timedelta(seconds=1)
    after = store.read()
    # THEN the cached value is served within the TTL (one GetParameter), the new one after
    assert (within.text, after.text) == ('{"queue": "orders"}', '{"queue": "emails"}')
    assert calls(aws[0], "get_parameter") == 2
    assert after.source == PARAMETER


def test_an_s3_pointer_is_followed_and_refreshed_with_if_none_match(
    aws: tuple[Counting, Counting],
) -> None:
    # GIVEN a parameter pointing at an object
    aws[1].client.put_object(Bucket=BUCKET, Key="config/queues.json", Body=b'[{"queue": "a"}]')
    put(aws, f"s3://{BUCKET}/config/queues.json")
    store = store_of(aws)
    first = store.read()
    # WHEN the TTL passes with the object unchanged, then the object changes
    Clock.at += timedelta(seconds=TTL_SECONDS + 1)
    unchanged = store.read()
    aws[1].client.put_object(Bucket=BUCKET, Key="config/queues.json", Body=b'[{"queue": "b"}]')
    Clock.at += timedelta(seconds=TTL_SECONDS + 1)
    changed = store.read()
    # THEN the object's text is the document, named by both the object and the parameter
    assert first.text == unchanged.text == '[{"queue": "a"}]'
    assert changed.text == '[{"queue": "b"}]'
    assert first.source == f"s3://{BUCKET}/config/queues.json (named by {PARAMETER})"
    # AND each refresh asked with the ETag it held (an unchanged object answers 304)
    gets = [kwargs for name, kwargs in aws[1].calls if name == "get_object"]
    assert len(gets) == 3
    assert "IfNoneMatch" not in gets[0]
    assert gets[1]["IfNoneMatch"] == gets[2]["IfNoneMatch"]


def test_a_missing_parameter_is_an_adapter_error_naming_it(aws: tuple[Counting, Counting]) -> None:
    with pytest.raises(AdapterError) as caught:
        store_of(aws).read()
    assert str(caught.value).startswith(
        f"ssm:GetParameter on {PARAMETER} failed (ParameterNotFound)"
    )


def test_a_missing_object_is_an_adapter_error_naming_it(aws: tuple[Counting, Counting]) -> None:
    put(aws, f"s3://{BUCKET}/config/none.json")
    with pytest.raises(AdapterError) as caught:
        store_of(aws).read()
    assert f"s3:GetObject on s3://{BUCKET}/config/none.json failed (NoSuchKey)" in str(caught.value)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param(b"x" * 65, "65 bytes, above the 64-byte limit", id="too-large"),
        pytest.param(b"[\xff]", "not UTF-8 text (byte offset 1)", id="not-utf8"),
    ],
)
def test_an_unusable_object_is_refused(
    aws: tuple[Counting, Counting], body: bytes, message: str
) -> None:
    aws[1].client.put_object(Bucket=BUCKET, Key="config/q.json", Body=body)
    put(aws, f"s3://{BUCKET}/config/q.json")
    store = store_of(aws)
    store._s3.max_bytes = 64
    with pytest.raises(ConfigStoreError) as caught:
        store.read()
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("s3://my-bucket/config/q.json", ("my-bucket", "config/q.json"), id="ok"),
        pytest.param("  s3://my-bucket/k \n", ("my-bucket", "k"), id="spaces"),
        pytest.param('{"queue": "s3://x/y"}', None, id="document"),
        pytest.param("s3://my-bucket/", None, id="no-key"),
        pytest.param("s3://UPPER/k", None, id="bad-bucket"),
    ],
)
def test_parse_pointer(value: str, expected: tuple[str, str] | None) -> None:
    assert parse_pointer(value) == expected


def test_ten_thousand_queues_go_through_the_store_and_the_loader(
    aws: tuple[Counting, Counting],
) -> None:
    # GIVEN a 10,000-queue document (far beyond Lambda's 4 KB environment) behind a pointer
    queues = [
        {
            "queue": f"q{index:05d}",
            "cluster": "workers",
            "service": f"q{index:05d}-workers",
            "profile": ("balanced", "bursty")[index % 2],
            "expected_job_seconds": 2.5,
            "dlq": f"q{index:05d}-dlq",
        }
        for index in range(10_000)
    ]
    text = json.dumps({"queues": queues}, separators=(",", ":"))
    assert len(text) > 1_000_000
    aws[1].client.put_object(Bucket=BUCKET, Key="config/queues.json", Body=text.encode())
    put(aws, f"s3://{BUCKET}/config/queues.json")
    # WHEN the loader reads it
    loader = QueueConfigLoader(store_of(aws), publish=lambda _source, _values: None)
    loaded = loader.load(0.0)
    # THEN every queue is there, validated, in order
    assert len(loaded) == 10_000
    assert (loaded[0].queue, loaded[-1].queue, loaded[-1].max_workers) == ("q00000", "q09999", 100)
    assert loader.status.queue_count == 10_000
