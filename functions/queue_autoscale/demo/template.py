"""Load template.yaml and translate it (SAM -> plain CloudFormation) without AWS calls.

Used by the template tests and by the emulator bootstrap, so both read exactly what
`sam deploy` would deploy. Needs the repository checkout (template.yaml at its root) and the
dev extra (aws-sam-translator).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from samtranslator.parser.parser import Parser
from samtranslator.translator.translator import Translator
from samtranslator.yaml_helper import yaml_parse

from queue_autoscale.adapters.aws import make_session

ROOT = Path(__file__).resolve().parents[3]
"""The repository checkout this package runs from (functions/queue_autoscale/demo/ -> root)."""
TEMPLATE_PATH = ROOT / "template.yaml"
DEFAULT_REGION = "us-east-1"
PLACEHOLDER_CODE_URI = "s3://queue-autoscale-code/functions.zip"
"""sam-translator accepts only S3 URIs; `sam build`/`package` replace `functions/` the same way."""


def load_template(path: Path = TEMPLATE_PATH) -> dict[str, Any]:
    """The template as a dict; `!Ref`/`!Sub`/`!GetAtt` tags become their long forms."""
    document = yaml_parse(path.read_text(encoding="utf-8"))
    if not isinstance(document, dict):
        raise ValueError(f"{path}: not a template (top level is {type(document).__name__})")
    return document


def translate(
    template: Mapping[str, Any],
    parameters: Mapping[str, Any] | None = None,
    *,
    code_uri: str = PLACEHOLDER_CODE_URI,
    region: str = DEFAULT_REGION,
    account_id: str = "123456789012",
) -> dict[str, Any]:
    """The CloudFormation template `sam deploy` would submit, with the code at `code_uri`."""
    document = copy.deepcopy(dict(template))
    document.setdefault("Globals", {}).setdefault("Function", {})["CodeUri"] = code_uri
    for resource in document.get("Resources", {}).values():
        if resource.get("Type") == "AWS::Serverless::Function":
            resource.get("Properties", {}).pop("CodeUri", None)
    values: dict[str, Any] = {
        "AWS::Region": region,
        "AWS::Partition": "aws-cn" if region.startswith("cn-") else "aws",
        "AWS::AccountId": account_id,
    }
    values.update(parameters or {})
    # The template names no AWS managed policy, so the translator needs no IAM lookup; the
    # session only supplies the region (no call is made with it).
    session = make_session(region)
    translator = Translator(None, Parser(), boto_session=session)
    translated = translator.translate(document, values, get_managed_policy_map=dict)
    return dict(translated)
