"""SQS records in, (message id, body) pairs out; and the partial-failure answer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.parser import parse
from aws_lambda_powertools.utilities.parser.models import SqsModel


@dataclass(frozen=True, slots=True)
class Message:
    """One SQS record as the ingest logic needs it."""

    message_id: str
    body: str


def messages_of(event: Mapping[str, Any]) -> list[Message]:
    """The (message id, body) pairs of an SQS Lambda event, validated with Powertools Parser."""
    parsed = parse(event=dict(event), model=SqsModel)
    return [Message(record.messageId, str(record.body)) for record in parsed.Records]


def failures_response(
    messages: Sequence[Message], failed: Mapping[str, str]
) -> PartialItemFailureResponse:
    """The ReportBatchItemFailures answer, in record order: the records whose writes did not
    finish (SQS redelivers exactly those; when that is every record, the whole batch)."""
    ids = [m.message_id for m in messages if m.message_id in failed]
    return {"batchItemFailures": [{"itemIdentifier": message_id} for message_id in ids]}
