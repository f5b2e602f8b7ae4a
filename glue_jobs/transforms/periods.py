"""Period keys: hour or day buckets of epoch times, as UTC timestamps."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as sf

PERIOD_SECONDS = {"minute": 60, "hour": 3_600, "day": 86_400}
HOUR_MS = PERIOD_SECONDS["hour"] * 1000
DAY_MS = PERIOD_SECONDS["day"] * 1000


def period_seconds(period: str) -> int:
    """Length of a period in seconds; ValueError naming the value for anything but
    minute/hour/day."""
    try:
        return PERIOD_SECONDS[period]
    except KeyError:
        raise ValueError(f"period must be 'minute', 'hour' or 'day', got {period!r}") from None


def period_start(epoch_seconds: Column, period: str) -> Column:
    """Start of the period holding `epoch_seconds` (a numeric column), as a timestamp."""
    length = period_seconds(period)
    return sf.timestamp_seconds(sf.floor(epoch_seconds / sf.lit(length)) * sf.lit(length))
