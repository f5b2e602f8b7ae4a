"""Copy infra/dashboard.json into template.yaml's Dashboard body (the `!Sub |` block).

CloudFormation cannot read a local file at deploy time, so the template carries a copy;
`--check` exits 1 when the copy differs (infra/lint.sh and the template tests run it).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "template.yaml"
DASHBOARD = ROOT / "infra" / "dashboard.json"
MARKER = "DashboardBody: !Sub |"


def render(template_text: str, dashboard_text: str) -> str:
    """The template text with the block after MARKER replaced by the dashboard JSON."""
    json.loads(dashboard_text)  # a broken body must fail here, not at deploy time
    lines = template_text.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == MARKER)
    except StopIteration:
        raise SystemExit(f"{TEMPLATE}: no line {MARKER!r}") from None
    indent = len(lines[start]) - len(lines[start].lstrip()) + 2
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) >= indent):
        end += 1
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1  # keep the blank line that separates the next section
    body = [(" " * indent + line).rstrip() for line in dashboard_text.strip().splitlines()]
    return "\n".join([*lines[: start + 1], *body, *lines[end:]]) + "\n"


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def main(argv: list[str] | None = None) -> int:
    """Rewrite template.yaml (or only check it with --check); returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if template.yaml is stale")
    args = parser.parse_args(argv)
    current = TEMPLATE.read_text(encoding="utf-8")
    wanted = render(current, DASHBOARD.read_text(encoding="utf-8"))
    if current == wanted:
        return 0
    if args.check:
        print("template.yaml's dashboard differs from infra/dashboard.json:", file=sys.stderr)
        print("  run .venv/bin/python infra/sync_dashboard.py", file=sys.stderr)
        return 1
    TEMPLATE.write_text(wanted, encoding="utf-8")
    print(f"updated {TEMPLATE.name} from {DASHBOARD.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
