"""The STATE item's samples as one compressed binary attribute: a write unit a tick, not two.

DynamoDB bills a write per KB begun of the item. The samples (`core.state.state_to_dict`'s
[at, arrival_rate, visible, raw_target, dlq_depth] rows, about 40 at a 15 s interval) are most
of the item: as numbers, about 33 bytes a row (17-digit epoch seconds and rates), 1.4 to 2 KB in
all. Packed, each row is its two floats' IEEE 754 bits XOR-ed with the previous row's (close
times and repeated rates leave mostly zero bytes) and its three integers as zigzag varints, the
whole zlib-compressed behind a format byte: the same values, bit for bit, in about a third of
the bytes (benchmarks/results/state_writes.md). Rows a varint cannot hold (an integer outside
64 bits) stay numbers. Reading takes either form.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence
from typing import Any

FORMAT = 1
"""The first byte of a packed value: XOR-ed float64 pairs and zigzag varints, zlib-compressed."""
_FLOATS = struct.Struct("<QQ")
_BITS = struct.Struct("<d")
_INT_BITS = 64
_MAX_BYTES = 65_536
"""A packed value inflates to at most this many bytes (512 samples of at most 46 bytes fit)."""


def _bits(value: float) -> int:
    return int.from_bytes(_BITS.pack(value), "little")


def _float(bits: int) -> float:
    return float(_BITS.unpack(bits.to_bytes(8, "little"))[0])


def _varint(value: int, out: bytearray) -> None:
    zigzag = (value << 1) ^ (value >> (_INT_BITS - 1))
    while True:
        low, zigzag = zigzag & 0x7F, zigzag >> 7
        out.append(low | (0x80 if zigzag else 0))
        if not zigzag:
            return


def packable(rows: Sequence[Sequence[Any]]) -> bool:
    """True when every row is two numbers and three integers within 64 bits."""
    limit = 1 << (_INT_BITS - 1)

    def number(value: Any) -> bool:
        return isinstance(value, int | float) and not isinstance(value, bool)

    def count(value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and -limit <= value < limit

    return all(
        len(row) == 5 and all(map(number, row[:2])) and all(map(count, row[2:])) for row in rows
    )


def pack_samples(rows: Sequence[Sequence[Any]]) -> bytes:
    """The rows (`packable`) as one packed value."""
    out = bytearray()
    previous = (0, 0)
    for at, rate, *counts in rows:
        bits = (_bits(float(at)), _bits(float(rate)))
        out += _FLOATS.pack(bits[0] ^ previous[0], bits[1] ^ previous[1])
        previous = bits
        for count in counts:
            _varint(int(count), out)
    return bytes([FORMAT]) + zlib.compress(bytes(out), 9)


def unpack_samples(value: bytes) -> list[list[float | int]]:
    """The rows of a packed value; ValueError naming what is wrong when it is not one."""
    if not value or value[0] != FORMAT:
        raise ValueError(f"packed samples start with format {value[:1]!r}, not {FORMAT}")
    inflate = zlib.decompressobj()
    try:
        raw = inflate.decompress(value[1:], _MAX_BYTES)
    except zlib.error as error:
        raise ValueError(f"packed samples do not inflate: {error}") from None
    if inflate.unconsumed_tail or not inflate.eof:
        raise ValueError(f"packed samples inflate past {_MAX_BYTES} bytes or are cut short")
    rows: list[list[float | int]] = []
    previous = (0, 0)
    index = 0
    while index < len(raw):
        if index + _FLOATS.size > len(raw):
            raise ValueError("packed samples end inside a row")
        xored = _FLOATS.unpack_from(raw, index)
        index += _FLOATS.size
        previous = (xored[0] ^ previous[0], xored[1] ^ previous[1])
        row: list[float | int] = [_float(previous[0]), _float(previous[1])]
        for _ in range(3):
            count, index = _read_varint(raw, index)
            row.append(count)
        rows.append(row)
    return rows


def _read_varint(raw: bytes, index: int) -> tuple[int, int]:
    """(the zigzag varint at `index`, the index after it)."""
    zigzag = shift = 0
    while True:
        if index >= len(raw) or shift >= _INT_BITS + 7:
            raise ValueError("packed samples hold a truncated or oversized integer")
        byte = raw[index]
        index += 1
        zigzag |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return (zigzag >> 1) ^ -(zigzag & 1), index
