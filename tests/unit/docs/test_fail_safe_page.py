"""docs/fail-safe.md's table of client configs names every botocore Config the code builds,
with the same attempts and timeouts."""

from __future__ import annotations

import re
from pathlib import Path

from botocore.config import Config

from queue_autoscale.adapters import aws

PAGE = Path(__file__).parents[3] / "docs" / "fail-safe.md"
ROW = re.compile(r"^\| `(\w+_CONFIG)` \| [^|]+ \| (\d+) \| (\d+) s \| (\d+) s \|$", re.MULTILINE)


def _documented() -> dict[str, tuple[int, int, int]]:
    return {m[1]: (int(m[2]), int(m[3]), int(m[4])) for m in ROW.finditer(PAGE.read_text())}


def _in_code() -> dict[str, tuple[int, int, int]]:
    configs = {n: v for n, v in vars(aws).items() if isinstance(v, Config)}
    return {
        name: (c.retries["total_max_attempts"], c.connect_timeout, c.read_timeout)
        for name, c in configs.items()
    }


def test_every_client_config_is_documented_with_its_values() -> None:
    # GIVEN the Config objects adapters/aws.py builds WHEN the page's table is read
    code = _in_code()
    # THEN the table has one row per Config, with the same attempts, connect and read timeouts
    assert len(code) >= 3
    assert _documented() == code
