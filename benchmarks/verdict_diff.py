"""Which cells one policy's verdict gained and lost between two `frontier_verdict.py` outputs.

Reads the per-row tables of two results files written by `benchmarks/frontier_verdict.py`
(the same set and rows) and prints, for the named policy's column, the pass count of each,
then every cell that passes in one and not the other, with both cells' words. Used to measure
a change against main, and the verdict's own resolution: a change meant to move no behaviour
(a finer numerical resolution) still flips the cells that sit on a boundary
(benchmarks/results/verdict_resolution.md).

    .venv/bin/python benchmarks/verdict_diff.py BEFORE.md AFTER.md [--policy predictive]
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

Cell = tuple[str, str, str]
"""(row, SLA s, target) as the results file prints them."""

_ROW = re.compile(r"^## (.+)$")
_CELL = re.compile(r"^\| (\d+) \| ([\d.]+%) \|")


def cells(path: Path, policy: str) -> dict[Cell, str]:
    """Each cell's words for `policy` in a results file (its column by the tables' header)."""
    found: dict[Cell, str] = {}
    row: str | None = None
    column: int | None = None
    for line in path.read_text(encoding="utf-8").splitlines():
        heading = _ROW.match(line)
        if heading:
            row, column = heading.group(1), None
            continue
        parts = [part.strip() for part in line.strip().strip("|").split("|")]
        if row is not None and parts[:2] == ["SLA s", "target"]:
            column = parts.index(policy) if policy in parts else None
            continue
        if row is not None and column is not None and _CELL.match(line):
            found[(row, parts[0], parts[1])] = parts[column]
    return found


def passes(words: str) -> bool:
    """Whether a cell's words say it passed."""
    return words.endswith(": pass")


def main() -> None:
    """Print the pass counts and the cells that flipped."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--policy", default="predictive")
    args = parser.parse_args()
    before, after = cells(args.before, args.policy), cells(args.after, args.policy)
    if not before or before.keys() != after.keys():
        raise SystemExit(
            f"the files judge different cells for {args.policy!r}: "
            f"{len(before)} against {len(after)}"
        )
    gained = [cell for cell in before if passes(after[cell]) and not passes(before[cell])]
    lost = [cell for cell in before if passes(before[cell]) and not passes(after[cell])]
    count = sum(map(passes, before.values())), sum(map(passes, after.values()))
    print(
        f"{args.policy}: {len(before)} cells; passes {count[0]} -> {count[1]}; "
        f"gained {len(gained)}, lost {len(lost)}"
    )
    for tag, flipped in (("gained", gained), ("lost", lost)):
        for cell in flipped:
            print(f"{tag}: {cell[0]} / {cell[1]} s / {cell[2]}")
            print(f"  before: {before[cell]}")
            print(f"  after:  {after[cell]}")


if __name__ == "__main__":
    main()
