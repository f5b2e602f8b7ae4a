"""Explicit schemas of the S3 archive (DESIGN.md section 3): events and decisions."""

from __future__ import annotations

from pyspark.sql import types as st

CORRUPT_COLUMN = "_corrupt_record"
"""Spark puts a line it cannot parse as JSON here (PERMISSIVE mode)."""

RAW_DAY_COLUMN = "raw_dt"
"""The `dt=` folder (UTC day the archive wrote the object) a raw line came from."""

EVENT_TYPES = ("queued", "started", "completed", "failed")

EVENT_FIELDS = st.StructType(
    [
        st.StructField("type", st.StringType()),
        st.StructField("queue", st.StringType()),
        st.StructField("job_id", st.StringType()),
        st.StructField("at", st.LongType()),  # epoch milliseconds
        st.StructField("duration_ms", st.LongType()),
        st.StructField("pickup_ms", st.LongType()),  # started only: started-at - enqueued-at
        st.StructField("attempt", st.LongType()),
        st.StructField("event_id", st.StringType()),
    ]
)
"""The fields of `queue_autoscale.events.Event`, in its order (a unit test guards equality)."""

EVENT_SCHEMA = st.StructType(
    [*EVENT_FIELDS.fields, st.StructField(CORRUPT_COLUMN, st.StringType())]
)
"""What the archive reader parses: the event fields plus Spark's corrupt-record column."""

DECISION_SCHEMA = st.StructType(
    [
        st.StructField("queue", st.StringType()),
        st.StructField("at", st.DoubleType()),  # epoch seconds
        st.StructField("current", st.LongType()),
        st.StructField("target", st.LongType()),
        st.StructField("action", st.StringType()),
        st.StructField("running", st.LongType()),
        st.StructField("arrival_rate", st.DoubleType()),
        st.StructField("load_ratio", st.DoubleType()),
        st.StructField(CORRUPT_COLUMN, st.StringType()),
    ]
)
