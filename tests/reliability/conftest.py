"""Reliability tests share the integration suite's endpoint fixtures (embedded moto server
on 127.0.0.1 unless AWS_ENDPOINT_URL is set) and make botocore's retry backoff instant, so
a fault retried three times costs milliseconds instead of seconds."""

from __future__ import annotations

import pytest

from tests.integration.conftest import (  # noqa: F401 - fixtures re-exported for this directory
    aws_endpoint,
    clients,
    emf_output,
    endpoint,
    kit,
    lambda_context,
    suffix,
)


@pytest.fixture(autouse=True)
def _instant_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """Standard-mode retries still happen (and are counted); only their sleep is skipped."""
    monkeypatch.setattr(
        "botocore.retries.standard.ExponentialBackoff.delay_amount", lambda self, context: 0.0
    )
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")
