"""Counts in the decision's words. Pure."""

from __future__ import annotations


def n_workers(count: int, verb: str = "") -> str:
    """'1 worker' / '3 workers', with `verb` (its plural form, e.g. 'keep') agreeing:
    '1 worker keeps' / '3 workers keep'."""
    if count == 1:
        return f"1 worker {verb}s" if verb else "1 worker"
    return f"{count} workers {verb}" if verb else f"{count} workers"
