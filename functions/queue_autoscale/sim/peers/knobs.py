"""A peer's settings as `simulate --policy 'keda(queue_length=120)'` takes them: each knob's
kind, bounds and meaning, defined once beside the peer that reads it."""

from __future__ import annotations

import math
from dataclasses import dataclass

MAX_COUNT = 1_000_000
"""The largest count a knob takes (workers or messages): far past any fleet, so bounded."""
MAX_SECONDS = 86_400
"""The longest window or cooldown a knob takes, s."""


class KnobError(ValueError):
    """A knob's value is not one the peer takes (the message names the knob and the bound)."""


@dataclass(frozen=True, slots=True)
class Knob:
    """One setting: whole or real, its inclusive bounds, and what it is (for --help)."""

    words: str
    integer: bool
    low: float
    high: float
    low_open: bool = False
    """The low bound itself is excluded (a value must be > low)."""

    def parse(self, name: str, text: str) -> float:
        """The value `text` gives, or KnobError naming the knob and its bounds."""
        try:
            value = float(text)
        except ValueError:
            raise KnobError(f"{name}={text!r}: not a number ({self.words})") from None
        if not math.isfinite(value) or (self.integer and value != math.floor(value)):
            raise KnobError(f"{name}={text!r}: not {self.kind} ({self.words})")
        below = value <= self.low if self.low_open else value < self.low
        if below or value > self.high:
            sign = ">" if self.low_open else ">="
            raise KnobError(f"{name}={text}: out of range ({sign} {self.low:g}, <= {self.high:g})")
        return value

    @property
    def kind(self) -> str:
        """'a whole number' or 'a finite number'."""
        return "a whole number" if self.integer else "a finite number"


def count(words: str, low: int = 0) -> Knob:
    """A whole-number knob from `low` up to `MAX_COUNT`."""
    return Knob(words, True, low, MAX_COUNT)


def seconds(words: str) -> Knob:
    """A whole number of seconds from 0 up to `MAX_SECONDS`."""
    return Knob(words, True, 0, MAX_SECONDS)
