"""The Spark session: GlueContext's on Glue, a plain SparkSession elsewhere; always UTC."""

from __future__ import annotations

from pyspark import SparkConf
from pyspark.sql import SparkSession

CACHE_COMPRESSED = ("spark.sql.inMemoryColumnarStorage.compressed", "false")
"""Caches are built uncompressed. The SLA report persists its paired attempts once for every
table, and compaction its raw lines for four reads: building a compressed columnar cache cost
more than the pairing itself, and about as much CPU as parsing the JSON (docs/spark.md, "Where
the time goes"). Twice the memory instead; MEMORY_AND_DISK spills what does not fit."""


def local_spark(
    app_name: str,
    *,
    cores: int = 2,
    shuffle_partitions: int = 4,
    driver_memory: str | None = None,
    extra: dict[str, str] | None = None,
) -> SparkSession:
    """An in-process local session: bound to 127.0.0.1, web UI and progress bars off, UTC,
    quiet logs. The demo, the tests and the benchmarks all build theirs here."""
    builder = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.sql.session.timeZone", "UTC")
        .config(*CACHE_COMPRESSED)
    )
    if driver_memory is not None:
        builder = builder.config("spark.driver.memory", driver_memory)
    for key, value in (extra or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def get_spark(app_name: str) -> SparkSession:
    """The job's session; on Glue through GlueContext, so Glue's S3 and catalog setup apply.

    Under spark-submit (or EMR) the master comes from the submit; a plain in-process call
    (the demo) gets a local session bound to 127.0.0.1 with the web UI off.
    """
    try:
        from awsglue.context import GlueContext  # noqa: PLC0415 - only on Glue
        from pyspark.context import SparkContext  # noqa: PLC0415
    except ImportError:
        builder = SparkSession.builder.appName(app_name)
        if not SparkConf().contains("spark.master"):
            builder = (
                builder.master("local[*]")
                .config("spark.ui.enabled", "false")
                .config("spark.driver.host", "127.0.0.1")
                .config("spark.driver.bindAddress", "127.0.0.1")
            )
        spark = builder.getOrCreate()
    else:
        spark = GlueContext(SparkContext.getOrCreate()).spark_session
    # Period buckets are computed in epoch arithmetic; UTC keeps timestamps printed the same.
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    spark.conf.set(*CACHE_COMPRESSED)
    return spark
