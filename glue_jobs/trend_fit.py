"""Trend fit job: Glue job script, spark-submit script and an in-process `run()`.

Options (Glue DefaultArguments / command line): --input_uri (where `sla_report` writes its
tables: the model is fitted on the hourly arrivals of its `sla_hourly`, never on raw events),
--output_uri, --table_name (optional: the load table to put the MODEL items in),
--holdout_days (back-test holdout, default 7).

Writes <output_uri>/trend_model (Parquet), <output_uri>/trend_model.json (the models as
`queue_autoscale.core.state.model_to_dict` gives them) and, with a table, one MODEL item per
queue that the evaluate controller reads.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import boto3
from pyspark.sql import SparkSession

from glue_jobs.io import join_uri, write_table, write_text
from glue_jobs.model_store import models_from_rows, write_models
from glue_jobs.options import as_int, resolve_options
from glue_jobs.session import get_spark
from glue_jobs.transforms.trend import fit_trend, hourly_arrivals, hourly_rates
from queue_autoscale.core.state import model_to_dict

REQUIRED = ("input_uri", "output_uri")
OPTIONAL: dict[str, str | None] = {"table_name": None, "holdout_days": "7"}


def run(
    input_uri: str,
    output_uri: str,
    table_name: str | None = None,
    holdout_days: int = 7,
    spark: SparkSession | None = None,
    dynamodb_client: Any = None,
) -> str:
    """Fit every queue's model from the hourly arrivals in `<input_uri>/sla_hourly` (the SLA
    report's output); return the URI of the JSON models file.

    With `table_name`, also put the MODEL items (through `dynamodb_client`, by default
    boto3.client("dynamodb"), which honours AWS_ENDPOINT_URL).
    """
    if holdout_days < 1:
        raise ValueError(f"holdout_days must be >= 1, got {holdout_days!r}")
    spark = spark or get_spark("queue-autoscale-trend-fit")
    hourly = spark.read.parquet(join_uri(input_uri, "sla_hourly"))
    model_uri = join_uri(output_uri, "trend_model")
    write_table(fit_trend(hourly_rates(hourly_arrivals(hourly)), holdout_days), model_uri)
    models = models_from_rows(spark.read.parquet(model_uri).collect())
    document = {
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "archive": input_uri,
        "holdout_days": holdout_days,
        "models": [model_to_dict(model) for model in models],
    }
    json_uri = write_text(
        spark, join_uri(output_uri, "trend_model.json"), json.dumps(document, indent=1)
    )
    if table_name:
        client = dynamodb_client or boto3.client("dynamodb")
        write_models(client, table_name, models)
    return json_uri


def main(argv: Sequence[str] | None = None) -> str:
    """Entry point for Glue and spark-submit: parse options, run, print the models' URI."""
    options = resolve_options(list(sys.argv if argv is None else argv), REQUIRED, OPTIONAL)
    uri = run(
        input_uri=str(options["input_uri"]),
        output_uri=str(options["output_uri"]),
        table_name=options.get("table_name") or None,
        holdout_days=as_int(options, "holdout_days", 7),
    )
    print(f"models: {uri}")
    return uri


if __name__ == "__main__":
    main()
