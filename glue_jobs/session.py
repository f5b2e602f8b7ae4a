"""The Spark session: GlueContext's on Glue, a plain SparkSession elsewhere; always UTC."""

from __future__ import annotations

from pyspark.sql import SparkSession


def get_spark(app_name: str) -> SparkSession:
    """The job's session; on Glue through GlueContext, so Glue's S3 and catalog setup apply."""
    try:
        from awsglue.context import GlueContext  # noqa: PLC0415 - only on Glue
        from pyspark.context import SparkContext  # noqa: PLC0415
    except ImportError:
        spark = SparkSession.builder.appName(app_name).getOrCreate()
    else:
        spark = GlueContext(SparkContext.getOrCreate()).spark_session
    # Period buckets are computed in epoch arithmetic; UTC keeps timestamps printed the same.
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    return spark
