"""Who the caller is: STS GetCallerIdentity, for the account and partition ARNs are built in."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from queue_autoscale.adapters.errors import MalformedResponse, aws_call

_ARN = re.compile(r"^arn:(aws[a-z-]*):")
_ACCOUNT = re.compile(r"^\d{12}$")


@dataclass(frozen=True)
class Identity:
    """The caller's account (12 digits) and partition (aws, aws-cn, aws-us-gov)."""

    account: str
    partition: str


def parse_identity(answer: Mapping[str, Any]) -> Identity:
    """The account and partition of a GetCallerIdentity answer."""
    account, arn = answer.get("Account"), answer.get("Arn")
    if not isinstance(account, str) or not _ACCOUNT.match(account):
        raise MalformedResponse("GetCallerIdentity", f"account {account!r} is not 12 digits")
    match = _ARN.match(arn) if isinstance(arn, str) else None
    if match is None:
        raise MalformedResponse("GetCallerIdentity", f"caller ARN {arn!r} names no partition")
    return Identity(account=account, partition=match.group(1))


def caller_identity(sts: Any) -> Identity:
    """The account and partition of the credentials `sts` was built with."""
    with aws_call("GetCallerIdentity", "sts"):
        answer = sts.get_caller_identity()
    return parse_identity(answer)
