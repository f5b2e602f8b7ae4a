"""Real boto3 clients for adapter tests: no endpoint is reached (Stubber answers, or the call
fails as configured)."""

from __future__ import annotations

from typing import Any

import boto3

from queue_autoscale.adapters.aws import LAMBDA_CONFIG


def client(service: str) -> Any:
    """A us-east-1 client of `service` with the handlers' botocore settings."""
    return boto3.client(
        service,  # type: ignore[call-overload]
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=LAMBDA_CONFIG,
    )
