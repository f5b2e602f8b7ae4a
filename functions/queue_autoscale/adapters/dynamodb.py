"""DynamoDB load table: per-second counters, the controller STATE item, the trend MODEL item.

Keys: counters pk `C#<queue>`, sk `S#<epoch second, 13 digits zero-padded>` (so a window's
BETWEEN on strings is exact, and the counters' own pk prefix lets IAM's dynamodb:LeadingKeys
keep record_events to them); STATE and MODEL pk `Q#<queue>`. Counters are written with `ADD`,
once per SQS message (`add_counters_once`), and expire through the table's TTL attribute
`expires_at` (epoch seconds). `adapters.counter_migration` moves the earlier layout's counters
(pk `Q#<queue>`, sk `S#<unpadded second>`) to these keys (docs/events.md). The STATE item
carries `version`; a write succeeds only if the stored version is still the one read, so
two controllers never both act on one queue. Each evaluate shard's lock is the item pk
`SHARD#<index>`, sk `LOCK`: an owner and a lease end (`held_until`, epoch seconds). In tick
mode each shard's last claimed tick is the item pk `SHARD#<index>`, sk `TICK`: `tick_due`, the
due time of the newest tick that shard ran (epoch milliseconds). A queue's jump line (what its
last clock tick sized on, `core.jump`) is the STATE item's map `jump`, written with it: the
record path reads it, counts the jobs queued since from the counters and claims it once
(`jump_fired_at`, which the next STATE write clears).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import BotoCoreError, ClientError

from queue_autoscale.adapters.errors import (
    MalformedResponse,
    ServiceUnavailable,
    StateConflict,
    aws_call,
    translate,
)
from queue_autoscale.adapters.state_codec import pack_samples, packable, unpack_samples
from queue_autoscale.core.counters import CounterRow

COUNTER_FIELDS = ("queued", "started", "completed", "failed", "busy_ms", "pickup_ms", "pickups")
"""Numeric counter attributes; `pickups` counts the started events whose pickup_ms was known."""
STATE_SK = "STATE"
MODEL_SK = "MODEL"
LOCK_SK = "LOCK"
TICK_SK = "TICK"
JUMP_FIELD = "jump"
"""The STATE item's map holding the queue's jump line (`core.jump.line_to_dict`)."""
JUMP_FIRED_FIELD = "jump_fired_at"
"""When the record path claimed the STATE item's jump line (epoch s); absent: not claimed."""
LOCK_TTL_SECONDS = 86_400
"""A lock item expires (table TTL) a day after its lease ends."""
MAX_BATCH_GET = 100
"""BatchGetItem takes at most 100 keys per call."""
_SERIALIZER = TypeSerializer()
_DESERIALIZER = TypeDeserializer()


def queue_pk(queue: str) -> str:
    """Partition key of a queue's items."""
    return f"Q#{queue}"


def shard_pk(index: int) -> str:
    """Partition key of an evaluate shard's lock item."""
    return f"SHARD#{index}"


COUNTER_PK_PREFIX = "C#"
LEGACY_COUNTER_PK_PREFIX = "Q#"
"""Counters shared the STATE/MODEL partition key before they had their own."""
SECOND_DIGITS = 13
"""Width of a counter sort key's second: an event's `at` is at most 2^53 - 1 ms, 13 digits
of seconds, so every second the contract admits has one fixed-width key."""
MAX_COUNTER_SECOND = 10**SECOND_DIGITS - 1


def counter_pk(queue: str) -> str:
    """Partition key of a queue's counter items."""
    return f"{COUNTER_PK_PREFIX}{queue}"


def second_sk(second: int) -> str:
    """Sort key of one second's counters: `S#` and the epoch second, zero-padded to 13 digits
    (string order is time order); a second outside 0..10^13 - 1 raises ValueError."""
    if not 0 <= second <= MAX_COUNTER_SECOND:
        raise ValueError(f"counter second {second} is outside 0..{MAX_COUNTER_SECOND}")
    return f"S#{second:0{SECOND_DIGITS}d}"


def _number(value: float) -> str:
    """A number as DynamoDB's wire format writes it, the way `to_dynamo` does (so a condition on
    a stored number compares equal)."""
    return str(to_dynamo(float(value)))


def to_dynamo(value: Any) -> Any:
    """Plain JSON-safe data -> DynamoDB-safe data (floats become Decimal)."""
    return json.loads(json.dumps(value), parse_float=Decimal)


def from_dynamo(value: Any) -> Any:
    """Deserialized DynamoDB data -> plain data (Decimal -> int when integral, else float)."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, Mapping):
        return {key: from_dynamo(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [from_dynamo(item) for item in value]
    if isinstance(value, set):
        return sorted(from_dynamo(item) for item in value)
    return value


def item_bytes(item: Mapping[str, Any]) -> int:
    """An attribute-value item's size as DynamoDB bills it, bytes (a write unit per KB begun).

    AWS's rules (Developer Guide, "DynamoDB item sizes and formats"): each attribute name's
    UTF-8 bytes, plus a string's UTF-8 bytes, a binary's raw bytes, a number's one byte per two
    significant digits and one more, 1 for a null or Boolean, and a list or map 3 bytes plus
    one a element (a map's keys counted as names); a set is its elements."""
    return sum(len(name.encode()) + _value_bytes(value) for name, value in item.items())


def _value_bytes(value: Mapping[str, Any]) -> int:
    """One typed attribute value's bytes (`item_bytes`' rules)."""
    ((kind, data),) = value.items()
    if kind == "L":
        return 3 + sum(_value_bytes(element) + 1 for element in data)
    if kind == "M":
        return 3 + sum(len(k.encode()) + _value_bytes(v) + 1 for k, v in data.items())
    if kind in ("SS", "NS", "BS"):
        return sum(_scalar_bytes(kind[0], element) for element in data)
    return _scalar_bytes(kind, data)


def _scalar_bytes(kind: str, data: Any) -> int:
    """A string's, number's, binary's, null's or Boolean's bytes."""
    sizes: dict[str, Callable[[Any], int]] = {
        "S": lambda text: len(str(text).encode()),
        "N": lambda text: _number_bytes(str(text)),
        "B": len,
        "NULL": lambda _: 1,
        "BOOL": lambda _: 1,
    }
    if kind not in sizes:
        raise ValueError(f"unknown DynamoDB attribute type {kind!r}")
    return sizes[kind](data)


def _number_bytes(text: str) -> int:
    """A number's bytes: one per two significant digits (leading and trailing zeros trimmed),
    plus one."""
    mantissa = text.upper().split("E", 1)[0].lstrip("+-").replace(".", "")
    digits = len(mantissa.lstrip("0").rstrip("0")) or 1
    return (digits + 1) // 2 + 1


def serialize_item(item: Mapping[str, Any]) -> dict[str, Any]:
    """A plain dict -> DynamoDB attribute-value map."""
    return {key: _SERIALIZER.serialize(to_dynamo(value)) for key, value in item.items()}


def deserialize_item(item: Mapping[str, Any]) -> dict[str, Any]:
    """A DynamoDB attribute-value map -> a plain dict."""
    return {key: from_dynamo(_DESERIALIZER.deserialize(value)) for key, value in item.items()}


def counter_update(
    counts: Mapping[str, int], expires_at: int
) -> tuple[str, dict[str, str], dict[str, Any]]:
    """(UpdateExpression, names, values) adding `counts` and setting the TTL."""
    names: dict[str, str] = {"#exp": "expires_at"}
    values: dict[str, Any] = {":exp": {"N": str(int(expires_at))}}
    adds = []
    for index, (field, amount) in enumerate(sorted(counts.items())):
        if field not in COUNTER_FIELDS:
            raise ValueError(f"counter field {field!r} is not one of {COUNTER_FIELDS}")
        names[f"#c{index}"] = field
        values[f":c{index}"] = {"N": str(int(amount))}
        adds.append(f"#c{index} :c{index}")
    expression = "SET #exp = :exp"
    if adds:
        expression += " ADD " + ", ".join(adds)
    return expression, names, values


MARKER_FIELD = "m"
"""A counter item's set of the tokens of the messages already counted in it."""
MAX_TOKENS_PER_UPDATE = 40
"""Messages per conditional update: 40 `NOT contains(...)` terms keep the condition far below
DynamoDB's 4 KB expression limit."""


def message_token(message_id: str) -> str:
    """A message's marker in a counter item: 16 hex chars of SHA-256 of its id (64 bits: two
    messages of one queue-second collide with chance ~n^2 / 2^65)."""
    return hashlib.sha256(message_id.encode("utf-8")).hexdigest()[:16]


def counted_update(
    counts: Mapping[str, int], expires_at: int, tokens: Sequence[str]
) -> tuple[str, str, dict[str, str], dict[str, Any]]:
    """(UpdateExpression, ConditionExpression, names, values): ADD `counts` and the messages'
    tokens, only if none of the tokens is in the item yet."""
    expression, names, values = counter_update(counts, expires_at)
    names["#m"] = MARKER_FIELD
    values[":m"] = {"SS": sorted(set(tokens))}
    expression += (", " if " ADD " in expression else " ADD ") + "#m :m"
    terms = []
    for index, token in enumerate(tokens):
        values[f":t{index}"] = {"S": token}
        terms.append(f"NOT contains(#m, :t{index})")
    return expression, " AND ".join(terms), names, values


_ROW_FIELDS = ("queued", "started", "completed", "failed", "busy_ms", "pickup_ms")


def parse_counter_item(item: Mapping[str, Any]) -> CounterRow:
    """One counter item (DynamoDB wire format) -> CounterRow; absent counters are 0.

    Reads the wire format directly (no TypeDeserializer): a window query returns hundreds
    of items per queue per tick.
    """
    sort_key = str(item.get("sk", {}).get("S", ""))
    if not sort_key.startswith("S#"):
        raise MalformedResponse("Query", f"sort key {sort_key!r} is not a counter key")
    digits = sort_key[2:]
    if len(digits) != SECOND_DIGITS or not digits.isascii() or not digits.isdigit():
        raise MalformedResponse(
            "Query", f"sort key {sort_key!r} has no {SECOND_DIGITS}-digit epoch second"
        )
    second = int(digits)
    values: dict[str, int] = {}
    for field in _ROW_FIELDS:
        attribute = item.get(field)
        if attribute is None:
            values[field] = 0
            continue
        raw = attribute.get("N") if isinstance(attribute, Mapping) else None
        try:
            if raw is None:
                raise ValueError(field)
            values[field] = int(Decimal(raw))
        except (ValueError, ArithmeticError):
            raise MalformedResponse(
                "Query", f"{sort_key}: field {field!r} = {attribute!r} is not a number"
            ) from None
    return CounterRow(second=second, **values)


def state_item(queue: str, document: Mapping[str, Any]) -> dict[str, Any]:
    """The STATE item of `queue` as PutItem takes it: the document's attributes, its samples
    packed into one binary value when they can be (`adapters.state_codec`)."""
    item = serialize_item(document)
    rows = document.get("samples")
    if isinstance(rows, list | tuple) and rows and packable(rows):
        item["samples"] = {"B": pack_samples(rows)}
    item["pk"] = {"S": queue_pk(queue)}
    item["sk"] = {"S": STATE_SK}
    return item


def parse_document(item: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A STATE or MODEL item -> its plain dict without keys (a JSON `body` is decoded, packed
    samples unpacked)."""
    if item is None:
        return None
    plain = deserialize_item(item)
    typed = item.get("samples")
    packed = typed.get("B") if isinstance(typed, Mapping) else None
    if isinstance(packed, bytes | bytearray):
        try:
            plain["samples"] = unpack_samples(bytes(packed))
        except ValueError as error:
            raise MalformedResponse("GetItem", f"STATE item samples: {error}") from None
    if isinstance(plain.get("body"), str):
        try:
            decoded = json.loads(plain["body"])
        except json.JSONDecodeError as error:
            raise MalformedResponse("GetItem", f"item body is not JSON: {error}") from None
        if isinstance(decoded, dict):
            if "version" in plain and "version" not in decoded:
                decoded["version"] = plain["version"]
            return decoded
    for key in ("pk", "sk", "expires_at"):
        plain.pop(key, None)
    return plain


LOAD_TABLE_SCHEMA: dict[str, Any] = {
    "AttributeDefinitions": [
        {"AttributeName": "pk", "AttributeType": "S"},
        {"AttributeName": "sk", "AttributeType": "S"},
    ],
    "KeySchema": [
        {"AttributeName": "pk", "KeyType": "HASH"},
        {"AttributeName": "sk", "KeyType": "RANGE"},
    ],
    "BillingMode": "PAY_PER_REQUEST",
}
"""The load table's keys as template.yaml declares them, for emulators, tests and benchmarks."""


def create_load_table(client: Any, name: str) -> None:
    """Create the load table (pk/sk strings, on demand) and wait for it; not used on AWS,
    where the stack creates it."""
    client.create_table(TableName=name, **LOAD_TABLE_SCHEMA)
    client.get_waiter("table_exists").wait(TableName=name)


class LoadTable:
    """The load table through one DynamoDB client (low-level API, wire-format items)."""

    def __init__(
        self,
        client: Any,
        table_name: str,
        *,
        sleep: Callable[[float], None] = time.sleep,
        max_unprocessed_rounds: int = 5,
    ) -> None:
        self._client = client
        self.table_name = table_name
        self._sleep = sleep
        self._max_rounds = max_unprocessed_rounds

    def add_counters_once(
        self,
        queue: str,
        second: int,
        contributions: Mapping[str, Mapping[str, int]],
        *,
        expires_at: int,
    ) -> None:
        """ADD each message's counts (message id -> counts) to one queue-second, once per message:
        the item keeps the messages' tokens, and an update whose message is already there is
        not applied. One update for up to MAX_TOKENS_PER_UPDATE messages; when one of them was
        counted before (a redelivery), each is then added on its own. `expires_at` epoch s."""
        items = sorted(contributions.items())
        for first in range(0, len(items), MAX_TOKENS_PER_UPDATE):
            chunk = items[first : first + MAX_TOKENS_PER_UPDATE]
            total: dict[str, int] = {}
            for _, counts in chunk:
                for name, amount in counts.items():
                    total[name] = total.get(name, 0) + amount
            tokens = [message_token(message_id) for message_id, _ in chunk]
            if self._add_once(queue, second, total, expires_at, tokens) or len(chunk) == 1:
                continue
            for message_id, counts in chunk:
                self._add_once(queue, second, counts, expires_at, [message_token(message_id)])

    def _add_once(
        self,
        queue: str,
        second: int,
        counts: Mapping[str, int],
        expires_at: int,
        tokens: Sequence[str],
    ) -> bool:
        """One conditional ADD; False when a token was already in the item (nothing added)."""
        expression, condition, names, values = counted_update(counts, expires_at, tokens)
        return self._conditional_update(
            {"pk": {"S": counter_pk(queue)}, "sk": {"S": second_sk(second)}},
            UpdateExpression=expression,
            ConditionExpression=condition,
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
        )

    def _conditional_update(self, key: dict[str, Any], **request: Any) -> bool:
        """One UpdateItem of the item at `key` under its ConditionExpression; False when the
        condition failed (nothing written), the project's error for any other failure."""
        resource = f"{key['pk']['S']}/{key['sk']['S']}"
        try:
            self._client.update_item(TableName=self.table_name, Key=key, **request)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return False
            raise translate(error, "UpdateItem", resource) from error
        except BotoCoreError as error:
            raise translate(error, "UpdateItem", resource) from error
        return True

    def counter_rows(self, queue: str, from_second: int, to_second: int) -> list[CounterRow]:
        """Counter rows of a queue with from_second <= second <= to_second, oldest first."""
        rows = [
            parse_counter_item(item) for item in self._counter_items(queue, from_second, to_second)
        ]
        rows.sort(key=lambda row: row.second)
        return rows

    def _counter_items(
        self, queue: str, from_second: int, to_second: int, **options: Any
    ) -> Iterator[dict[str, Any]]:
        """The counter items of a queue with from_second <= second <= to_second, one Query page
        after another; `options` are the Query's own (a projection, ConsistentRead)."""
        low, high = max(0, from_second), min(MAX_COUNTER_SECOND, to_second)
        if low > high:
            return
        kwargs: dict[str, Any] = {
            "TableName": self.table_name,
            "KeyConditionExpression": "pk = :pk AND sk BETWEEN :lo AND :hi",
            "ExpressionAttributeValues": {
                ":pk": {"S": counter_pk(queue)},
                ":lo": {"S": second_sk(low)},
                ":hi": {"S": second_sk(high)},
            },
            **options,
        }
        while True:
            with aws_call("Query", counter_pk(queue)):
                response = self._client.query(**kwargs)
            yield from response.get("Items", [])
            last = response.get("LastEvaluatedKey")
            if not last:
                return
            kwargs["ExclusiveStartKey"] = last

    def read_documents(
        self, queues: Sequence[str]
    ) -> dict[str, tuple[dict[str, Any] | None, dict[str, Any] | None]]:
        """(STATE, MODEL) plain dicts per queue, None where absent (BatchGetItem, 100 keys a call).

        Unprocessed keys are asked again with backoff; keys still unprocessed after
        `max_unprocessed_rounds` raise ServiceUnavailable.
        """
        keys = [
            {"pk": {"S": queue_pk(queue)}, "sk": {"S": sk}}
            for queue in dict.fromkeys(queues)
            for sk in (STATE_SK, MODEL_SK)
        ]
        found: dict[tuple[str, str], dict[str, Any]] = {}
        for first in range(0, len(keys), MAX_BATCH_GET):
            pending: list[dict[str, Any]] = keys[first : first + MAX_BATCH_GET]
            rounds = 0
            while pending:
                with aws_call("BatchGetItem", self.table_name):
                    response = self._client.batch_get_item(
                        RequestItems={self.table_name: {"Keys": pending, "ConsistentRead": True}}
                    )
                for item in response.get("Responses", {}).get(self.table_name, []):
                    found[(item["pk"]["S"], item["sk"]["S"])] = item
                pending = (
                    response.get("UnprocessedKeys", {}).get(self.table_name, {}).get("Keys", [])
                )
                if pending:
                    rounds += 1
                    if rounds > self._max_rounds:
                        raise ServiceUnavailable(
                            "BatchGetItem",
                            f"{len(pending)} keys still unprocessed after {rounds} rounds",
                            code="UnprocessedKeys",
                            resource=self.table_name,
                        )
                    self._sleep(min(1.0, 0.05 * 2**rounds))
        return {
            queue: (
                parse_document(found.get((queue_pk(queue), STATE_SK))),
                parse_document(found.get((queue_pk(queue), MODEL_SK))),
            )
            for queue in dict.fromkeys(queues)
        }

    def _conditional_put(
        self,
        item: dict[str, Any],
        condition: str,
        values: dict[str, Any],
        conflict: str,
        names: dict[str, str] | None = None,
    ) -> None:
        """PutItem under `condition`; a failed condition raises StateConflict(`conflict`)."""
        resource = f"{item['pk']['S']}/{item['sk']['S']}"
        extra: dict[str, Any] = {"ExpressionAttributeNames": names} if names else {}
        try:
            self._client.put_item(
                TableName=self.table_name,
                Item=item,
                ConditionExpression=condition,
                ExpressionAttributeValues=values,
                **extra,
            )
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                raise StateConflict(
                    "PutItem", conflict, code="ConditionalCheckFailedException", resource=resource
                ) from error
            raise translate(error, "PutItem", resource) from error
        except BotoCoreError as error:
            raise translate(error, "PutItem", resource) from error

    def write_state(self, queue: str, state: Mapping[str, Any], expected_version: int) -> int:
        """Store the STATE item if its version is still `expected_version`; return the new version.

        The stored `version` is expected_version + 1. A lost race raises StateConflict.
        """
        new_version = expected_version + 1
        item = state_item(queue, {**state, "version": new_version})
        self._conditional_put(
            item,
            "attribute_not_exists(pk) OR version = :expected",
            {":expected": {"N": str(expected_version)}},
            f"state version is no longer {expected_version}: another controller wrote it",
        )
        return new_version

    def acquire_lock(self, shard: str, index: int, owner: str, now: float, until: float) -> None:
        """Hold shard `index`'s lock for `owner` until `until` (epoch seconds) if it is free,
        expired, or already `owner`'s; otherwise raise StateConflict. `shard` is the label
        (`index/count`) stored for operators."""
        item = {
            "pk": {"S": shard_pk(index)},
            "sk": {"S": LOCK_SK},
            "owner": {"S": owner},
            "shard": {"S": shard},
            "held_until": {"N": f"{until:.3f}"},
            "expires_at": {"N": str(int(until) + LOCK_TTL_SECONDS)},
        }
        self._conditional_put(
            item,
            "attribute_not_exists(pk) OR held_until < :now OR #owner = :owner",
            {":now": {"N": f"{now:.3f}"}, ":owner": {"S": owner}},
            f"shard {index}'s lock is held by another evaluate invocation",
            names={"#owner": "owner"},
        )

    def claim_tick(self, shard: str, index: int, due_ms: int, now: float) -> None:
        """Claim shard `index`'s tick due at `due_ms` (epoch milliseconds) if no tick due at or
        after it was claimed; otherwise raise StateConflict (a duplicate or a late tick)."""
        item = {
            "pk": {"S": shard_pk(index)},
            "sk": {"S": TICK_SK},
            "shard": {"S": shard},
            "tick_due": {"N": str(due_ms)},
            "expires_at": {"N": str(int(now) + LOCK_TTL_SECONDS)},
        }
        self._conditional_put(
            item,
            "attribute_not_exists(pk) OR tick_due < :due",
            {":due": {"N": str(due_ms)}},
            f"shard {index}'s tick due at {due_ms} ms was already claimed",
        )

    def release_lock(self, shard: str, index: int, owner: str, now: float) -> None:
        """End `owner`'s lease on shard `index` at `now`; a lock someone else holds is left."""
        item = {
            "pk": {"S": shard_pk(index)},
            "sk": {"S": LOCK_SK},
            "owner": {"S": owner},
            "shard": {"S": shard},
            "held_until": {"N": f"{now:.3f}"},
            "expires_at": {"N": str(int(now) + LOCK_TTL_SECONDS)},
        }
        self._conditional_put(
            item,
            "#owner = :owner",
            {":owner": {"S": owner}},
            f"shard {index}'s lock is no longer held by {owner}",
            names={"#owner": "owner"},
        )

    # -- the jump line (core.jump): evaluate writes it in STATE, record_events reads it ------

    def jump_line(self, queue: str) -> dict[str, Any] | None:
        """`queue`'s jump line as its STATE item holds it (plain numbers), with `fired_at` when
        claimed; None when the item has none. Reads only those two attributes."""
        resource = f"{queue_pk(queue)}/{STATE_SK}"
        with aws_call("GetItem", resource):
            response = self._client.get_item(
                TableName=self.table_name,
                Key={"pk": {"S": queue_pk(queue)}, "sk": {"S": STATE_SK}},
                ProjectionExpression="#jump, #fired",
                ExpressionAttributeNames={"#jump": JUMP_FIELD, "#fired": JUMP_FIRED_FIELD},
            )
        plain = from_dynamo(deserialize_item(response.get("Item") or {}))
        line = plain.get(JUMP_FIELD)
        if not isinstance(line, Mapping):
            return None
        fired = plain.get(JUMP_FIRED_FIELD)
        return {**line, **({} if fired is None else {"fired_at": fired})}

    def queued(self, queue: str, first_second: int, last_second: int) -> int:
        """Jobs queued in seconds first..last (epoch s) as the counters hold them now: one
        strongly consistent Query (a batch's own counter writes count), projected to `queued`."""
        total = 0
        items = self._counter_items(
            queue, first_second, last_second, ProjectionExpression="queued", ConsistentRead=True
        )
        for item in items:
            try:
                total += int(item.get("queued", {}).get("N", "0"))
            except ValueError:
                raise MalformedResponse("Query", f"counter queued {item!r}"[:200]) from None
        return total

    def claim_jump(self, queue: str, since: float, now: float) -> bool:
        """Mark the STATE item's jump line counted from `since` claimed at `now` (epoch s);
        False when it was claimed already (another batch asked for the tick) or replaced."""
        return self._conditional_update(
            {"pk": {"S": queue_pk(queue)}, "sk": {"S": STATE_SK}},
            UpdateExpression="SET #fired = :now",
            # `since` is no reserved word: named as is, the names are the top-level attributes
            ConditionExpression="#jump.since = :since AND attribute_not_exists(#fired)",
            ExpressionAttributeNames={"#jump": JUMP_FIELD, "#fired": JUMP_FIRED_FIELD},
            ExpressionAttributeValues={
                ":since": {"N": _number(since)},
                ":now": {"N": _number(now)},
            },
        )

    def put_model(self, queue: str, model: Mapping[str, Any]) -> None:
        """Store the MODEL item (what `trend_fit` writes)."""
        item = serialize_item(dict(model))
        item["pk"] = {"S": queue_pk(queue)}
        item["sk"] = {"S": MODEL_SK}
        with aws_call("PutItem", f"{queue_pk(queue)}/{MODEL_SK}"):
            self._client.put_item(TableName=self.table_name, Item=item)
