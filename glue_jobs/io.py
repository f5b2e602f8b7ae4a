"""Reading the S3 archive and writing outputs, for `s3://` URIs on AWS and paths locally."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as sf

from glue_jobs.schemas import CORRUPT_COLUMN, DECISION_SCHEMA, EVENT_SCHEMA, RAW_DAY_COLUMN


class ArchiveError(ValueError):
    """The archive cannot be read; the message names the URI."""


def join_uri(base: str, *parts: str) -> str:
    """`base/part/...` for both URIs and local paths."""
    return "/".join([base.rstrip("/"), *[part.strip("/") for part in parts]])


@dataclass(frozen=True)
class FileInfo:
    """One object of the archive: its URI, size in bytes and modification time (epoch ms)."""

    uri: str
    size: int
    modified_ms: int


def _filesystem(spark: SparkSession, uri: str) -> tuple[Any, Any]:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    path = jvm.org.apache.hadoop.fs.Path(uri)
    return path, path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())


def list_day_folders(spark: SparkSession, uri: str, key: str = "dt") -> list[str]:
    """The `dt=YYYY-MM-DD` folder names directly under `uri` (sorted), [] when it is absent;
    with `key`, the `<key>=...` folders (such as a day's `hour=H`).

    One listing of one level: cheap however old the archive is."""
    path, filesystem = _filesystem(spark, uri)
    if not filesystem.exists(path):
        return []
    names = [status.getPath().getName() for status in filesystem.listStatus(path)]
    return sorted(name for name in names if name.startswith(f"{key}="))


def list_files(spark: SparkSession, uri: str) -> list[FileInfo]:
    """Every file under `uri` (recursively), [] when it is absent."""
    path, filesystem = _filesystem(spark, uri)
    if not filesystem.exists(path):
        return []
    found: list[FileInfo] = []
    iterator = filesystem.listFiles(path, True)
    while iterator.hasNext():
        status = iterator.next()
        found.append(
            FileInfo(str(status.getPath()), int(status.getLen()), int(status.getModificationTime()))
        )
    return found


def relative_files(spark: SparkSession, uri: str) -> list[str]:
    """The '/'-separated paths, relative to `uri`, of every file under it ('' when `uri` is
    itself a file), [] when it is absent."""
    path, filesystem = _filesystem(spark, uri)
    base = str(filesystem.makeQualified(path))
    return [found.uri[len(base) :].lstrip("/") for found in list_files(spark, uri)]


def read_text(spark: SparkSession, uri: str) -> str | None:
    """The UTF-8 text of the file at `uri`, or None when there is none."""
    path, filesystem = _filesystem(spark, uri)
    if not filesystem.exists(path):
        return None
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    # Hadoop's FileSystem, not spark.read: Spark's file sources skip names starting with "_".
    stream = filesystem.open(path)
    try:
        data = jvm.org.apache.commons.io.IOUtils.toByteArray(stream)
    finally:
        stream.close()
    return bytes(data).decode("utf-8")


def _read_json(spark: SparkSession, uris: Sequence[str], schema: Any) -> DataFrame:
    return (
        spark.read.schema(schema)
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", CORRUPT_COLUMN)
        .option("recursiveFileLookup", "true")
        .json(list(uris))
    )


def _with_raw_day(df: DataFrame, names: Sequence[str]) -> DataFrame:
    day = sf.regexp_extract(sf.col("_metadata.file_path"), r"/dt=([0-9]{4}-[0-9]{2}-[0-9]{2})/", 1)
    return df.select(*names, day.alias(RAW_DAY_COLUMN))


def read_events(spark: SparkSession, root_uri: str, days: Sequence[str] | None = None) -> DataFrame:
    """Raw archived events under `root_uri/events/` (dt=/hour= folders of .jsonl.gz): all of
    them, or only those of the `dt=` folders named in `days`, with their folder's day in
    `raw_dt`.

    Lines that are not JSON land in `_corrupt_record`; `split_events` rejects them with a reason.
    """
    uri = join_uri(root_uri, "events")
    uris = [uri] if days is None else [join_uri(uri, f"dt={day}") for day in days]
    try:
        df = _read_json(spark, uris, EVENT_SCHEMA)
    except AnalysisException as error:
        raise ArchiveError(f"cannot read events under {uri}: {error}") from None
    return _with_raw_day(df, EVENT_SCHEMA.fieldNames())


def read_decisions(
    spark: SparkSession, root_uri: str, days: Sequence[str] | None = None
) -> DataFrame | None:
    """The decision log under `root_uri/decisions/` (all, or the `dt=` folders in `days`
    that exist), or None when there is none."""
    uri = join_uri(root_uri, "decisions")
    if days is not None:
        present = set(list_day_folders(spark, uri))
        uris = [join_uri(uri, f"dt={day}") for day in days if f"dt={day}" in present]
        if not uris:
            return None
    else:
        uris = [uri]
    try:
        df = _read_json(spark, uris, DECISION_SCHEMA)
    except AnalysisException:
        return None
    return df.select(*DECISION_SCHEMA.fieldNames())


def write_table(df: DataFrame, uri: str) -> str:
    """Write `df` as Parquet at `uri` (replacing what was there); return the URI."""
    df.write.mode("overwrite").parquet(uri)
    return uri


def read_days(spark: SparkSession, table_uri: str, days: Sequence[str]) -> DataFrame | None:
    """The Parquet table at `table_uri` (partitioned by `dt`), only the `dt=` partitions of
    `days` (each must exist), with `dt` as a 'YYYY-MM-DD' string; None for no days.

    Only those folders are listed, so the cost does not grow with the table's age."""
    return read_partitions(spark, table_uri, [f"dt={day}" for day in days])


def read_partitions(
    spark: SparkSession, table_uri: str, folders: Sequence[str]
) -> DataFrame | None:
    """The Parquet table at `table_uri`, only the partition `folders` (each must exist),
    such as 'dt=2026-11-02' or 'dt=2026-11-02/hour=23', with `dt` as a 'YYYY-MM-DD'
    string; None for none."""
    if not folders:
        return None
    paths = [join_uri(table_uri, folder) for folder in sorted(set(folders))]
    table = spark.read.option("basePath", table_uri).parquet(*paths)
    return table.withColumn("dt", sf.col("dt").cast("string"))


def write_days(df: DataFrame, uri: str, replace_all: bool, by: Sequence[str] = ("dt",)) -> str:
    """Write `df` as Parquet at `uri`, partitioned by `by` (the day first).

    `replace_all` replaces the whole table (a full rebuild); otherwise only the partitions
    `df` holds rows for are replaced (Spark's dynamic partition overwrite), and every other
    day stays as it was. Either way a re-run with the same rows leaves the same table."""
    mode = "static" if replace_all else "dynamic"
    (
        df.write.mode("overwrite")
        .option("partitionOverwriteMode", mode)
        .partitionBy(*by)
        .parquet(uri)
    )
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
