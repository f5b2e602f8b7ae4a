"""The decision's words: why the winning term won, and what the SLA loop or a finished burst
changed. Pure string assembly from numbers the core already computed."""

from __future__ import annotations
