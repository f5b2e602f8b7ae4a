"""botocore settings and client construction, in one place.

Retry mode is botocore's `standard` (exponential backoff with jitter, retries throttling,
5xx and transient connection errors, a retry quota that stops retry storms). Timeouts
are short because every caller runs inside a Lambda invocation with its own deadline:

- `LAMBDA_CONFIG` (handlers): connect 2 s, read 5 s, 3 attempts. The worst case of one
  call is about 3 * (2 + 5) s plus backoff (< 25 s), well inside a 60 s evaluation minute;
  a slower AWS answer fails the call, the handler holds that queue and tries next tick.
- `PRODUCER_CONFIG` (client.py, in producers' and workers' processes): connect 1 s,
  read 2 s, 2 attempts, so emitting events never stalls a job for long.
- `WORKER_CONFIG` (queue_autoscale.worker's receive/delete/visibility calls): connect 2 s,
  read 25 s (a 20 s long poll plus margin), 3 attempts.

The endpoint comes from `AWS_ENDPOINT_URL` (botocore reads it) or `endpoint_url`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import boto3
from botocore.config import Config

LAMBDA_CONNECT_TIMEOUT_SECONDS = 2
LAMBDA_READ_TIMEOUT_SECONDS = 5
LAMBDA_CONFIG = Config(
    retries={"mode": "standard", "total_max_attempts": 3},
    connect_timeout=LAMBDA_CONNECT_TIMEOUT_SECONDS,
    read_timeout=LAMBDA_READ_TIMEOUT_SECONDS,
    tcp_keepalive=True,
)
PRODUCER_CONFIG = Config(
    retries={"mode": "standard", "total_max_attempts": 2},
    connect_timeout=1,
    read_timeout=2,
    tcp_keepalive=True,
)

WORKER_CONFIG = Config(
    retries={"mode": "standard", "total_max_attempts": 3},
    connect_timeout=2,
    read_timeout=25,
    tcp_keepalive=True,
)


@dataclass(frozen=True)
class AwsClients:
    """The boto3 clients the handlers use (each adapter takes one of these)."""

    sqs: Any
    cloudwatch: Any
    ecs: Any
    dynamodb: Any
    s3: Any
    events: Any
    secretsmanager: Any = None
    """For RabbitMQ/Kafka source credentials (Powertools Parameters)."""
    ssm: Any = None
    lambda_: Any = None
    """The evaluate function invoking its own shards."""
    firehose: Any = None
    """The archive's delivery streams (adapters/firehose.py)."""


def make_session(
    region_name: str | None = None, credentials: dict[str, str] | None = None
) -> boto3.session.Session:
    """A boto3 session: the default credential chain, or the given AWS_* keys (the emulator's
    dummy ones)."""
    keys = credentials or {}
    return boto3.session.Session(
        aws_access_key_id=keys.get("AWS_ACCESS_KEY_ID"),
        aws_secret_access_key=keys.get("AWS_SECRET_ACCESS_KEY"),
        aws_session_token=keys.get("AWS_SESSION_TOKEN"),
        region_name=region_name,
    )


def make_client(
    service: str,
    *,
    session: boto3.session.Session | None = None,
    endpoint_url: str | None = None,
    region_name: str | None = None,
    config: Config = LAMBDA_CONFIG,
) -> Any:
    """One boto3 client built with the project's retry and timeout settings."""
    chosen = session or boto3.session.Session()
    return chosen.client(  # type: ignore[call-overload]
        service, endpoint_url=endpoint_url, region_name=region_name, config=config
    )


def make_clients(
    *,
    session: boto3.session.Session | None = None,
    endpoint_url: str | None = None,
    region_name: str | None = None,
    config: Config = LAMBDA_CONFIG,
) -> AwsClients:
    """Every client the handlers need, sharing one session and config."""
    chosen = session or boto3.session.Session()

    def build(service: str) -> Any:
        return make_client(
            service,
            session=chosen,
            endpoint_url=endpoint_url,
            region_name=region_name,
            config=config,
        )

    return AwsClients(
        sqs=build("sqs"),
        cloudwatch=build("cloudwatch"),
        ecs=build("ecs"),
        dynamodb=build("dynamodb"),
        s3=build("s3"),
        events=build("events"),
        secretsmanager=build("secretsmanager"),
        ssm=build("ssm"),
        lambda_=build("lambda"),
        firehose=build("firehose"),
    )
