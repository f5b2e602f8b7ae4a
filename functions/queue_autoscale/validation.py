"""One wording for a pydantic validation error, shared by the event contract, the queue
config and the worker's settings: `field 'x' = <value as JSON, at most 120 characters>:
what is wrong`, `field 'x' is missing`, or a whole-object rule's message alone."""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

SHOWN_CHARACTERS = 120
"""A value is shown in at most this many characters (a 5,000-character name is cut)."""


def shown(value: Any) -> str:
    """`value` as JSON, cut to SHOWN_CHARACTERS with '...'."""
    text = json.dumps(value, default=str)
    return text if len(text) <= SHOWN_CHARACTERS else text[: SHOWN_CHARACTERS - 3] + "..."


def error_parts(error: ValidationError) -> list[str]:
    """One phrase per problem of a pydantic error, naming the field and the value."""
    parts = []
    for item in error.errors():
        loc = ".".join(str(part) for part in item["loc"])
        message = str(item["msg"]).removeprefix("Value error, ")
        if item["type"] == "missing":
            parts.append(f"field {loc!r} is missing")
        elif loc:
            parts.append(f"field {loc!r} = {shown(item.get('input'))}: {message}")
        else:
            parts.append(message)
    return parts


def describe_error(error: ValidationError) -> str:
    """A pydantic error as 'field 'x' = value: message; ...'."""
    return "; ".join(error_parts(error))
