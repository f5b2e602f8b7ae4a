"""The STATE item's samples as one compressed binary attribute: a write unit a tick, not two.

DynamoDB bills a write per KB begun of the item. The samples (`core.state.state_to_dict`'s
[at, arrival_rate, visible, raw_target, dlq_depth, short_rate] rows, about 40 at a 15 s
interval; the short rate only in the last two short windows', None before) are most of the
item as numbers. Packed, each row is its three floats' IEEE 754 bits XOR-ed with the previous
row's (close times and repeated rates leave mostly zero bytes; a None short rate is a NaN, so
a run of them XORs to zeros) and its three integers as zigzag varints, the whole
zlib-compressed behind a format byte: the same values, bit for bit, in about a third of the
bytes (benchmarks/results/state_writes.md). Rows a varint cannot hold (an integer outside 64
bits) stay numbers. Reading takes either form, and format 1's five-column rows.
"""

from __future__ import annotations

import math
import struct
import zlib
from collections.abc import Sequence
from typing import Any

FORMAT = 2
"""The first byte of a packed value: XOR-ed float64 triples (at, rate, short rate) and zigzag
varints, zlib-compressed."""
_FORMAT_PAIRS = 1
"""Format 1, read only: rows of five, XOR-ed float64 pairs (at, rate) and three varints."""
_FLOATS = struct.Struct("<QQQ")
_PAIRS = struct.Struct("<QQ")
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
    """True when every row is two numbers, three integers within 64 bits and a number or None."""
    limit = 1 << (_INT_BITS - 1)

    def number(value: Any) -> bool:
        return isinstance(value, int | float) and not isinstance(value, bool)

    def count(value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and -limit <= value < limit

    return all(
        len(row) == 6
        and all(map(number, row[:2]))
        and all(map(count, row[2:5]))
        and (row[5] is None or (number(row[5]) and not math.isnan(row[5])))
        for row in rows
    )


def pack_samples(rows: Sequence[Sequence[Any]]) -> bytes:
    """The rows (`packable`) as one packed value."""
    out = bytearray()
    previous = (0, 0, 0)
    for at, rate, visible, target, dlq, short in rows:
        bits = (_bits(float(at)), _bits(float(rate)), _bits(math.nan if short is None else short))
        out += _FLOATS.pack(*(bit ^ last for bit, last in zip(bits, previous, strict=True)))
        previous = bits
        for count in (visible, target, dlq):
            _varint(int(count), out)
    return bytes([FORMAT]) + zlib.compress(bytes(out), 9)


def unpack_samples(value: bytes) -> list[list[float | int | None]]:
    """The rows of a packed value (format 1's have five columns); ValueError naming what is
    wrong when it is not one."""
    if not value or value[0] not in (FORMAT, _FORMAT_PAIRS):
        raise ValueError(f"packed samples start with format {value[:1]!r}, not {FORMAT}")
    floats = _FLOATS if value[0] == FORMAT else _PAIRS
    inflate = zlib.decompressobj()
    try:
        raw = inflate.decompress(value[1:], _MAX_BYTES)
    except zlib.error as error:
        raise ValueError(f"packed samples do not inflate: {error}") from None
    if inflate.unconsumed_tail or not inflate.eof:
        raise ValueError(f"packed samples inflate past {_MAX_BYTES} bytes or are cut short")
    rows: list[list[float | int | None]] = []
    previous = (0,) * (floats.size // 8)
    index = 0
    while index < len(raw):
        if index + floats.size > len(raw):
            raise ValueError("packed samples end inside a row")
        xored = floats.unpack_from(raw, index)
        index += floats.size
        previous = tuple(bit ^ last for bit, last in zip(xored, previous, strict=True))
        row: list[float | int | None] = [_float(previous[0]), _float(previous[1])]
        for _ in range(3):
            count, index = _read_varint(raw, index)
            row.append(count)
        if floats is _FLOATS:
            short = _float(previous[2])
            row.append(None if math.isnan(short) else short)
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
