"""The admin client's settings per MSK auth mode, and the IAM token callback."""

from __future__ import annotations

from typing import Any

import pytest
from aws_msk_iam_sasl_signer import MSKAuthTokenProvider

from queue_autoscale.adapters.kafka_admin import client_config


def test_iam_uses_oauthbearer_with_the_signers_token_and_expiry_in_seconds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[str] = []

    def sign(region: str) -> tuple[str, int]:
        asked.append(region)
        return "signed-token", 1_763_000_900_000

    monkeypatch.setattr(MSKAuthTokenProvider, "generate_auth_token", staticmethod(sign))
    config = client_config("b-1:9098,b-2:9098", "iam", region="eu-west-1")
    assert config["bootstrap.servers"] == "b-1:9098,b-2:9098"
    assert (config["security.protocol"], config["sasl.mechanisms"]) == ("SASL_SSL", "OAUTHBEARER")
    assert config["oauth_cb"](None) == ("signed-token", 1_763_000_900.0)
    assert asked == ["eu-west-1"]


@pytest.mark.parametrize(
    ("auth", "expected"),
    [
        pytest.param(
            "scram",
            {
                "security.protocol": "SASL_SSL",
                "sasl.mechanisms": "SCRAM-SHA-512",
                "sasl.username": "monitor",
                "sasl.password": "secret",
            },
            id="scram",
        ),
        pytest.param("tls", {"security.protocol": "SSL"}, id="tls"),
        pytest.param("plaintext", {"security.protocol": "PLAINTEXT"}, id="plaintext"),
    ],
)
def test_other_auth_modes(auth: str, expected: dict[str, Any]) -> None:
    config = client_config("b-1:9096", auth, username="monitor", password="secret")
    assert {key: config[key] for key in expected} == expected
    assert "oauth_cb" not in config
    if auth != "scram":
        assert "sasl.password" not in config
