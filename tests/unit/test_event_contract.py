"""The event contract has one definition: the pydantic Event. The Spark schema must match it."""

from __future__ import annotations

from typing import Any

from pyspark.sql import types as st

from glue_jobs.schemas import CORRUPT_COLUMN, EVENT_FIELDS, EVENT_SCHEMA
from queue_autoscale.events import Event

SPARK_TYPES: dict[str, st.DataType] = {"string": st.StringType(), "integer": st.LongType()}


def _json_type(spec: dict[str, Any]) -> str:
    """The JSON type of a model property (an optional one is anyOf [T, null])."""
    if "type" in spec:
        return str(spec["type"])
    kinds = {option.get("type") for option in spec.get("anyOf", [])} - {"null"}
    assert len(kinds) == 1, spec
    return str(kinds.pop())


def test_the_spark_event_schema_has_the_models_fields_in_its_order() -> None:
    properties = Event.model_json_schema()["properties"]
    expected = [
        st.StructField(name, SPARK_TYPES[_json_type(spec)]) for name, spec in properties.items()
    ]
    assert EVENT_FIELDS.fields == expected


def test_the_archive_reader_adds_only_the_corrupt_record_column() -> None:
    assert EVENT_SCHEMA.fieldNames() == [*EVENT_FIELDS.fieldNames(), CORRUPT_COLUMN]
