"""Job options: Glue's getResolvedOptions when `awsglue` is importable, argparse otherwise.

Both take the same `--name value` pairs, so one script runs unchanged as a Glue job, on EMR
Serverless and under local spark-submit. This is the only place that touches awsglue.utils.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence


def resolve_options(
    argv: Sequence[str], required: Sequence[str], optional: Mapping[str, str | None]
) -> dict[str, str | None]:
    """Option values by name: `required` must be given; `optional` maps a name to its default.

    `argv` is the full argument vector (program name first), as sys.argv.
    """
    try:
        from awsglue.utils import getResolvedOptions  # noqa: PLC0415 - only on Glue
    except ImportError:
        return _parse_locally(argv, required, optional)
    # Glue rejects an option it was asked for and not given, so ask only for those present.
    present = [name for name in optional if f"--{name}" in argv]
    resolved = getResolvedOptions(list(argv), [*required, *present])
    values: dict[str, str | None] = dict(optional)
    values.update({name: resolved[name] for name in [*required, *present]})
    return values


def _parse_locally(
    argv: Sequence[str], required: Sequence[str], optional: Mapping[str, str | None]
) -> dict[str, str | None]:
    parser = argparse.ArgumentParser(prog=argv[0] if argv else None)
    for name in required:
        parser.add_argument(f"--{name}", required=True)
    for name, default in optional.items():
        parser.add_argument(f"--{name}", default=default)
    return dict(vars(parser.parse_args(list(argv[1:]))))


def as_int(values: Mapping[str, str | None], name: str, default: int) -> int:
    """An integer option; ValueError naming the option and value when it is not one."""
    raw = values.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"option --{name} = {raw!r} is not an integer") from None


def as_bool(values: Mapping[str, str | None], name: str, default: bool = False) -> bool:
    """A true/false option; ValueError naming the option and value otherwise."""
    raw = values.get(name)
    if raw is None or raw == "":
        return default
    if raw.strip().lower() not in ("true", "false"):
        raise ValueError(f"option --{name} = {raw!r} is not true or false")
    return raw.strip().lower() == "true"
