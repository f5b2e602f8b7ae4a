"""The stack lets evaluate read source credentials only when some are named, and only those."""

from __future__ import annotations

from infra.template import load_template


def test_source_credentials_are_readable_only_by_name_and_only_when_configured() -> None:
    template = load_template()
    policy = template["Resources"]["EvaluateSourceCredentialsPolicy"]
    assert policy["Type"] == "AWS::IAM::RolePolicy"
    assert policy["Condition"] == "HasSourceSecrets"
    assert policy["Properties"]["RoleName"] == {"Ref": "EvaluateRole"}
    (statement,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Action"] == ["secretsmanager:GetSecretValue", "ssm:GetParameter"]
    assert statement["Resource"] == {"Ref": "SourceSecretArns"}
    assert template["Parameters"]["SourceSecretArns"]["Default"] == ""
