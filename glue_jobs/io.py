"""Reading the S3 archive and writing outputs, for `s3://` URIs on AWS and paths locally."""

from __future__ import annotations

from typing import Any

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession

from glue_jobs.schemas import CORRUPT_COLUMN, DECISION_SCHEMA, EVENT_SCHEMA


class ArchiveError(ValueError):
    """The archive cannot be read; the message names the URI."""


def join_uri(base: str, *parts: str) -> str:
    """`base/part/...` for both URIs and local paths."""
    return "/".join([base.rstrip("/"), *[part.strip("/") for part in parts]])


def _read_json(spark: SparkSession, uri: str, schema: Any) -> DataFrame:
    return (
        spark.read.schema(schema)
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", CORRUPT_COLUMN)
        .option("basePath", uri)
        .json(uri)
    )


def read_events(spark: SparkSession, root_uri: str) -> DataFrame:
    """Raw archived events under `root_uri/events/` (dt=/hour= folders of .jsonl.gz).

    Lines that are not JSON land in `_corrupt_record`; `split_events` rejects them with a reason.
    """
    uri = join_uri(root_uri, "events")
    try:
        df = _read_json(spark, uri, EVENT_SCHEMA)
    except AnalysisException as error:
        raise ArchiveError(f"cannot read events under {uri}: {error}") from None
    return df.select(*EVENT_SCHEMA.fieldNames())


def read_decisions(spark: SparkSession, root_uri: str) -> DataFrame | None:
    """The decision log under `root_uri/decisions/`, or None when there is none."""
    uri = join_uri(root_uri, "decisions")
    try:
        df = _read_json(spark, uri, DECISION_SCHEMA)
    except AnalysisException:
        return None
    return df.select(*DECISION_SCHEMA.fieldNames())


def write_table(df: DataFrame, uri: str) -> str:
    """Write `df` as Parquet at `uri` (replacing what was there); return the URI."""
    df.write.mode("overwrite").parquet(uri)
    return uri


def write_text(spark: SparkSession, uri: str, text: str) -> str:
    """Write one UTF-8 text file at `uri` through Hadoop's FileSystem (so `s3://` works
    wherever Spark itself can read the archive, with the job's own credentials); return it."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    path = jvm.org.apache.hadoop.fs.Path(uri)
    filesystem = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    stream = filesystem.create(path, True)
    try:
        stream.write(bytearray(text.encode("utf-8")))
    finally:
        stream.close()
    return uri
