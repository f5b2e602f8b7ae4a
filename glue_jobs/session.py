"""The Spark session: GlueContext's on Glue, a plain SparkSession elsewhere; always UTC."""

from __future__ import annotations

from pyspark import SparkConf
from pyspark.sql import SparkSession


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
    return spark
