"""Job options: Glue's getResolvedOptions when `awsglue` is importable, argparse otherwise.

Both take the same `--name value` pairs, so one script runs unchanged as a Glue job, on EMR
Serverless and under local spark-submit. This is the only place that touches awsglue.utils.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


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


CONFIG_OPTIONS = ("config_parameter", "config", "queues_config")
"""Where a job's queue config comes from: the stack's config store (an SSM parameter name,
what template.yaml passes), a local file (spark-submit), or the JSON text itself."""


def queue_config_document(
    values: Mapping[str, str | None], ssm_client: Any = None, s3_client: Any = None
) -> tuple[str, str] | None:
    """(document text, where it was read) from whichever of CONFIG_OPTIONS is given, None
    when none is; ValueError naming the options when more than one is, or the store or file
    cannot be read. The store is read like the functions read it (an SSM parameter holding
    the document or an s3:// pointer to it); clients default to boto3's."""
    given = [name for name in CONFIG_OPTIONS if values.get(name)]
    if len(given) > 1:
        raise ValueError(f"give one of --{', --'.join(CONFIG_OPTIONS)}, not {given}")
    if not given:
        return None
    (name,) = given
    raw = str(values[name])
    if name == "queues_config":
        return raw, "--queues_config"
    # queue_autoscale (pydantic, boto3, Powertools) only when a config is read
    from queue_autoscale.config import read_text  # noqa: PLC0415

    if name == "config":
        return read_text(Path(raw), "--config ", ValueError), raw
    from queue_autoscale.adapters.aws import make_client  # noqa: PLC0415
    from queue_autoscale.adapters.config_store import ConfigStore  # noqa: PLC0415
    from queue_autoscale.adapters.errors import AdapterError  # noqa: PLC0415

    store = ConfigStore(
        ssm_client or make_client("ssm"), s3_client or make_client("s3"), raw, max_age_seconds=1
    )
    try:
        document = store.read()
    except AdapterError as error:
        raise ValueError(f"--config_parameter {raw}: {error}") from None
    return document.text, document.source
