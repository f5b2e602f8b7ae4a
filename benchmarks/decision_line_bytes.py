"""How many bytes the evaluate function's `decision` log line takes in CloudWatch Logs.

A tick logs one `decision` line per queue whose tick is news (`QueueOutcome.says_something`:
the same ticks that publish ScalingDecisionMade) at INFO, the functions' level; the others only
at DEBUG. The line is the Powertools JSON the function prints with its Lambda context injected
(function name, ARN, memory, request id, cold start), and the decision's `reason` in words,
which is most of it. This renders every decision of the demo's recorded archive
(tests/sim/data/demo-archive, the default policy deciding) through the function's own logger
with the context a deployed stack named `queue-autoscale` gives it, and reports the bytes per
line (its newline included): what `queue-autoscale cost` bills for each such line
(`operator.cost_inputs.Measured.log_line_bytes`).

    .venv/bin/python benchmarks/decision_line_bytes.py

Writes benchmarks/results/decision_line_bytes.md.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "functions"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _report import header, write  # noqa: E402

from queue_autoscale.demo.stack import FakeContext  # noqa: E402
from queue_autoscale.telemetry import logger  # noqa: E402

ARCHIVE = ROOT / "tests" / "sim" / "data" / "demo-archive" / "decisions"


CONTEXT = FakeContext(
    function_name="queue-autoscale-evaluate",
    invoked_function_arn="arn:aws:lambda:us-east-1:123456789012:function:queue-autoscale-evaluate",
    memory_limit_in_mb=256,
    aws_request_id="0f4c8a2e-1d3b-4f5a-9c7e-8b2d6e1f3a4c",
)
"""The Lambda context a stack named queue-autoscale gives its evaluate function (256 MB)."""


def records() -> list[dict[str, Any]]:
    """Every decision record of the demo's archive."""
    rows = []
    for path in sorted(ARCHIVE.rglob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            rows.extend(json.loads(line) for line in handle if line.strip())
    return rows


def line_bytes(record: dict[str, Any]) -> int:
    """Bytes of the `decision` line the tick logs for `record` (controller/tick.py's fields)."""
    stream = io.StringIO()
    handler: Any = logger.registered_handler
    previous = handler.setStream(stream)

    @logger.inject_lambda_context(clear_state=True)
    def tick(_event: object, _context: object) -> None:
        logger.info(
            "decision",
            queue=record["queue"],
            current=record["current"],
            target=record["target"],
            action=record["action"],
            applied=record["applied"],
            reason=record["reason"],
        )

    try:
        tick({}, CONTEXT)
    finally:
        handler.setStream(previous)
    return len(stream.getvalue().encode("utf-8"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="decision_line_bytes.md")
    args = parser.parse_args()
    rows = records()
    sizes = sorted(line_bytes(row) for row in rows)
    reasons = sorted(len(row["reason"].encode("utf-8")) for row in rows)
    queue = rows[0]["queue"]
    out = [
        header("Bytes of the evaluate function's decision log line", ("aws-lambda-powertools",)),
        f"{len(rows)} decisions of the demo's archive (`tests/sim/data/demo-archive`, queue "
        f"`{queue}`, {len(queue)} characters), each rendered as the INFO line the tick logs, "
        "through the function's own Powertools logger with the Lambda context of a stack named "
        "queue-autoscale (256 MB, us-east-1).",
        "",
        "| measure | median | p90 | max |",
        "|---|---:|---:|---:|",
        f"| line bytes (newline included) | {statistics.median(sizes):.0f} "
        f"| {sizes[int(0.9 * (len(sizes) - 1))]} | {sizes[-1]} |",
        f"| of which the reason | {statistics.median(reasons):.0f} "
        f"| {reasons[int(0.9 * (len(reasons) - 1))]} | {reasons[-1]} |",
    ]
    print("\n".join(out[-4:]))
    write(args.out, "\n".join(out))


if __name__ == "__main__":
    main()
