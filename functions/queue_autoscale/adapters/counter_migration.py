"""Moving a load table's counters from the earlier layout (pk `Q#<queue>`, sk `S#<unpadded
second>`) to the current keys (`adapters.dynamodb`: pk `C#<queue>`, sk `S#<13 digits>`), and
deleting the rows with no live second that DynamoDB's TTL never removes (docs/events.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from queue_autoscale.adapters.dynamodb import (
    COUNTER_FIELDS,
    LEGACY_COUNTER_PK_PREFIX,
    SECOND_DIGITS,
    counter_pk,
    counter_update,
    second_sk,
)
from queue_autoscale.adapters.errors import AdapterError, aws_call


@dataclass(frozen=True, slots=True)
class Migration:
    """What `migrate_legacy_counters` did: items moved to the new keys, items deleted as no
    live second (the 1970 rows TTL never removes), items another run had moved already."""

    moved: int = 0
    deleted: int = 0
    skipped: int = 0


def legacy_second(item: Mapping[str, Any]) -> int | None:
    """The second of an earlier-layout counter item (pk `Q#...`, sk `S#<digits>`), else None."""
    pk, sk = str(item.get("pk", {}).get("S", "")), str(item.get("sk", {}).get("S", ""))
    digits = sk[2:]
    if not pk.startswith(LEGACY_COUNTER_PK_PREFIX) or not sk.startswith("S#"):
        return None
    if not digits.isascii() or not digits.isdigit() or len(digits) > SECOND_DIGITS:
        return None
    return int(digits)


def migrate_legacy_counters(
    client: Any, table_name: str, *, now: float, keep_seconds: float, skew_seconds: float
) -> Migration:
    """Move the earlier layout's counter items to pk `C#<queue>`, sk padded; delete those whose
    second is older than `now - keep_seconds` or later than `now + skew_seconds` (epoch s).

    Each move is one TransactWriteItems: ADD the counts to the new item and delete the old one
    on the condition that it still exists, so a second run (or two at once) moves nothing
    twice. Items the new layout wrote since the deploy are summed with, never overwritten.
    """
    moved = deleted = skipped = 0
    kwargs: dict[str, Any] = {
        "TableName": table_name,
        "FilterExpression": "begins_with(pk, :q) AND begins_with(sk, :s)",
        "ExpressionAttributeValues": {":q": {"S": LEGACY_COUNTER_PK_PREFIX}, ":s": {"S": "S#"}},
    }
    while True:
        with aws_call("Scan", table_name):
            response = client.scan(**kwargs)
        for item in response.get("Items", []):
            second = legacy_second(item)
            if second is None:
                continue
            old_key = {"pk": item["pk"], "sk": item["sk"]}
            delete = {
                "TableName": table_name,
                "Key": old_key,
                "ConditionExpression": "attribute_exists(pk)",
            }
            if not now - keep_seconds <= second <= now + skew_seconds:
                with aws_call("DeleteItem", f"{item['pk']['S']}/{item['sk']['S']}"):
                    client.delete_item(TableName=table_name, Key=old_key)
                deleted += 1
                continue
            counts = {f: int(Decimal(item[f]["N"])) for f in COUNTER_FIELDS if f in item}
            expires_at = int(Decimal(item.get("expires_at", {}).get("N", str(second))))
            expression, names, values = counter_update(counts, expires_at)
            queue = item["pk"]["S"][len(LEGACY_COUNTER_PK_PREFIX) :]
            update = {
                "TableName": table_name,
                "Key": {"pk": {"S": counter_pk(queue)}, "sk": {"S": second_sk(second)}},
                "UpdateExpression": expression,
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": values,
            }
            try:
                with aws_call("TransactWriteItems", f"{counter_pk(queue)}/{second_sk(second)}"):
                    client.transact_write_items(
                        TransactItems=[{"Update": update}, {"Delete": delete}]
                    )
                moved += 1
            except AdapterError as error:
                if error.code != "TransactionCanceledException":
                    raise
                skipped += 1  # the old item was gone: another run moved it
        last = response.get("LastEvaluatedKey")
        if not last:
            return Migration(moved=moved, deleted=deleted, skipped=skipped)
        kwargs["ExclusiveStartKey"] = last
