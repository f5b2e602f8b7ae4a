"""The STATE item's samples packed into one binary value: the same values bit for bit, a third
of the bytes, and a packed value that is not one is refused with the reason."""

from __future__ import annotations

import struct
import zlib
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from queue_autoscale.adapters.dynamodb import item_bytes, parse_document, state_item
from queue_autoscale.adapters.errors import MalformedResponse
from queue_autoscale.adapters.state_codec import FORMAT, pack_samples, unpack_samples
from queue_autoscale.core import ControllerState, Sample, state_from_dict, state_to_dict

LIMIT = 1 << 63
rows_strategy = st.lists(
    st.tuples(
        st.floats(allow_nan=False),
        st.floats(allow_nan=False),
        st.integers(-LIMIT, LIMIT - 1),
        st.integers(-LIMIT, LIMIT - 1),
        st.integers(-LIMIT, LIMIT - 1),
        st.none() | st.floats(allow_nan=False),
    ).map(list),
    max_size=60,
)


def bits(row: list[Any]) -> list[Any]:
    """A row with its floats as their IEEE 754 bytes (-0.0 is not 0.0)."""
    short = row[5:] and [None if row[5] is None else struct.pack("<d", row[5])]
    return [struct.pack("<d", row[0]), struct.pack("<d", row[1]), *row[2:5], *short]


@given(rows_strategy)
def test_any_rows_come_back_bit_for_bit(rows: list[list[Any]]) -> None:
    back = unpack_samples(pack_samples(rows))
    assert [bits(r) for r in back] == [bits(r) for r in rows]


def test_a_format_1_value_still_reads_as_five_columns() -> None:
    # GIVEN a value as format 1 wrote it: XOR-ed (at, rate) pairs and three zigzag varints
    first = struct.unpack("<QQ", struct.pack("<dd", 1796187113.5, 0.25))
    second = struct.unpack("<QQ", struct.pack("<dd", 1796187128.5, 0.5))
    raw = struct.pack("<QQ", *first) + bytes([8, 4, 0])  # 4, 2, 0 zigzagged
    raw += struct.pack("<QQ", first[0] ^ second[0], first[1] ^ second[1]) + bytes([10, 6, 2])
    # WHEN it is read THEN its rows are the five numbers it held
    assert unpack_samples(bytes([1]) + zlib.compress(raw)) == [
        [1796187113.5, 0.25, 4, 2, 0],
        [1796187128.5, 0.5, 5, 3, 1],
    ]


def test_a_state_round_trips_through_the_item_and_shrinks() -> None:
    # GIVEN 41 samples 15 s apart at epoch seconds with microseconds, as a tick stores them
    samples = tuple(
        Sample(
            at=1_796_187_113.224684 + 15 * i,
            arrival_rate=i % 7 / 60,
            visible=i,
            raw_target=3,
            short_rate=None if i == 0 else i % 5 / 60,
        )
        for i in range(41)
    )
    state = ControllerState(queue="orders", version=7, samples=samples)
    document = {**state_to_dict(state), "shard": "0/1", "ticked_at": samples[-1].at}
    # WHEN it is made the item PutItem takes and read back
    item = state_item("orders", document)
    back = parse_document(item)
    # THEN the samples are one binary value and the state is the same, bit for bit
    assert set(item["samples"]) == {"B"}
    assert back is not None
    assert state_from_dict(back) == state
    # AND the item is under a KB (one write unit), where the numbers' form was over it
    plain = state_item("orders", {**document, "samples": []})
    plain["samples"] = {"L": [{"L": [{"N": repr(v)} for v in row]} for row in document["samples"]]}
    assert item_bytes(item) < 1024 < item_bytes(plain)


def test_an_item_written_with_number_rows_still_reads() -> None:
    item = {
        "pk": {"S": "Q#orders"},
        "sk": {"S": "STATE"},
        "queue": {"S": "orders"},
        "samples": {"L": [{"L": [{"N": "1796187113.5"}, {"N": "0.25"}, {"N": "4"}, {"N": "2"}]}]},
    }
    assert parse_document(item) == {"queue": "orders", "samples": [[1796187113.5, 0.25, 4, 2]]}


def test_rows_a_varint_cannot_hold_stay_numbers() -> None:
    item = state_item("orders", {"queue": "orders", "samples": [[1.0, 0.5, 1 << 70, 0, 0, None]]})
    assert "L" in item["samples"]


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        pytest.param(b"", "format", id="empty"),
        pytest.param(bytes([FORMAT + 1]) + zlib.compress(b""), "format", id="unknown-format"),
        pytest.param(bytes([FORMAT]) + b"not zlib", "inflate", id="not-zlib"),
        pytest.param(bytes([FORMAT]) + zlib.compress(b"\x00" * 20)[:-3], "cut short", id="cut"),
        pytest.param(bytes([FORMAT]) + zlib.compress(b"\x00" * 20), "inside a row", id="part-row"),
        pytest.param(
            bytes([FORMAT]) + zlib.compress(b"\x00" * 16 + b"\xff" * 12), "integer", id="varint"
        ),
        pytest.param(bytes([FORMAT]) + zlib.compress(b"\x00" * 200_000), "past", id="bomb"),
    ],
)
def test_a_packed_value_that_is_not_one_is_refused_with_the_reason(
    value: bytes, reason: str
) -> None:
    item = {"pk": {"S": "Q#orders"}, "sk": {"S": "STATE"}, "samples": {"B": value}}
    with pytest.raises(MalformedResponse, match=reason):
        parse_document(item)
