"""One wording for a pydantic validation error, shared by the event contract, the queue
config and the worker's settings: `field 'x' = <value as JSON, at most 120 characters>:
what is wrong`, `field 'x' is missing`, or a whole-object rule's message alone."""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

SHOWN_CHARACTERS = 120
"""A value is shown in at most this many characters (a 5,000-character name is cut)."""
MAX_PROBLEMS = 10
"""A description names at most this many problems, then says how many more there were."""
MAX_REASON_CHARACTERS = 4_000
"""No description is longer than this (MAX_PROBLEMS problems of a cut field and value fit)."""


def shown(value: Any) -> str:
    """`value` as JSON, cut to SHOWN_CHARACTERS with '...'."""
    text = json.dumps(value, default=str)
    return text if len(text) <= SHOWN_CHARACTERS else text[: SHOWN_CHARACTERS - 3] + "..."


def error_parts(error: ValidationError) -> list[str]:
    """One phrase per problem of a pydantic error, naming the field and the value."""
    parts = []
    for item in error.errors():
        loc = cut(".".join(str(part) for part in item["loc"]))
        message = str(item["msg"]).removeprefix("Value error, ")
        if item["type"] == "missing":
            parts.append(f"field {loc!r} is missing")
        elif loc:
            parts.append(f"field {loc!r} = {shown(item.get('input'))}: {message}")
        else:
            parts.append(message)
    return parts


def cut(text: str, limit: int = SHOWN_CHARACTERS) -> str:
    """`text` cut to `limit` characters with '...'."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def join_problems(parts: list[str]) -> str:
    """'a; b; ...': the first MAX_PROBLEMS, then '; and K more', at most MAX_REASON_CHARACTERS."""
    shown_parts = parts[:MAX_PROBLEMS]
    if len(parts) > MAX_PROBLEMS:
        shown_parts.append(f"and {len(parts) - MAX_PROBLEMS} more")
    return cut("; ".join(shown_parts), MAX_REASON_CHARACTERS)


def describe_error(error: ValidationError) -> str:
    """A pydantic error as 'field 'x' = value: message; ...' (bounded: see join_problems)."""
    return join_problems(error_parts(error))
