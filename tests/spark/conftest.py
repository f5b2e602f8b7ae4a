"""One local SparkSession for the whole Spark test session (2 cores, UI off, UTC)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator

import pytest

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
# Spark hands naive datetimes to Python in the local zone: make that zone UTC.
os.environ["TZ"] = "UTC"
time.tzset()


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """A local[2] SparkSession shared by every Spark test; stopped at the end of the session."""
    from glue_jobs.session import local_spark

    session = local_spark("queue-autoscale-tests", extra={"spark.default.parallelism": "2"})
    yield session
    session.stop()
