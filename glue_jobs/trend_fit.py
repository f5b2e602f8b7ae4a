"""Trend fit job: Glue job script, spark-submit script and an in-process `run()`.

Options (Glue DefaultArguments / command line): --input_uri (where `sla_report` writes its
tables: the model is fitted on the hourly arrivals of its `sla_hourly`, never on raw events),
--output_uri, --table_name (optional: the load table to put the MODEL items in),
--holdout_days (back-test holdout, default 7).

Writes <output_uri>/trend_model (Parquet), <output_uri>/trend_model.json (the models as
`queue_autoscale.core.state.model_to_dict` gives them, and the back-test per queue) and, with
a table, one MODEL item per queue that the evaluate controller reads. It prints the
back-test per queue: held-out hours, the model's and the seasonal-naive forecast's MASE, and
whether the controller will let the model raise capacity (`core.trend.model_weight`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import boto3
from pyspark.sql import SparkSession

from glue_jobs.io import join_uri, write_table, write_text
from glue_jobs.model_store import models_from_rows, write_models
from glue_jobs.options import as_int, resolve_options
from glue_jobs.session import get_spark
from glue_jobs.transforms.trend import fit_trend, hourly_arrivals, hourly_rates
from queue_autoscale.core.models import TrendModel
from queue_autoscale.core.state import model_to_dict
from queue_autoscale.core.trend import model_weight

REQUIRED = ("input_uri", "output_uri")
OPTIONAL: dict[str, str | None] = {"table_name": None, "holdout_days": "7"}


def backtest_rows(
    models: Sequence[TrendModel], holdout_hours: dict[str, int]
) -> list[dict[str, Any]]:
    """Per queue: held-out hours, both MASEs, the model's weight in the controller's blend
    (its skill: 0 unless it beat seasonal-naive) and whether it may raise capacity."""
    return [
        {
            "queue": model.queue,
            "holdout_hours": holdout_hours.get(model.queue, 0),
            "mase": model.mase,
            "naive_mase": model.naive_mase,
            "weight": model_weight(model),
            "raises_capacity": model_weight(model) > 0,
        }
        for model in models
    ]


def backtest_lines(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The back-test as a fixed-width text table, one line per queue."""

    def number(value: float | None) -> str:
        return "-" if value is None else f"{value:.3f}"

    lines = [
        "back-test on held-out hours (the model may raise capacity where its MASE is below "
        "seasonal-naive's, with weight 1 - MASE / naive):",
        f"{'queue':<24} {'hours':>6} {'MASE':>7} {'naive':>7} {'weight':>6}  used",
    ]
    for row in rows:
        lines.append(
            f"{row['queue'][:24]:<24} {row['holdout_hours']:>6} {number(row['mase']):>7} "
            f"{number(row['naive_mase']):>7} {row['weight']:>6.2f}  "
            + ("yes" if row["raises_capacity"] else "no")
        )
    return lines


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
    rows = spark.read.parquet(model_uri).collect()
    models = models_from_rows(rows)
    backtest = backtest_rows(models, {str(row["queue"]): int(row["holdout_hours"]) for row in rows})
    print("\n".join(backtest_lines(backtest)))
    document = {
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "archive": input_uri,
        "holdout_days": holdout_days,
        "models": [model_to_dict(model) for model in models],
        "backtest": backtest,
    }
    json_uri = write_text(
        spark, join_uri(output_uri, "trend_model.json"), json.dumps(document, indent=1)
    )
    if table_name:
        client = dynamodb_client or boto3.client("dynamodb")
        write_models(client, table_name, models)
    return json_uri


def fit_arguments(options: Mapping[str, str | None]) -> dict[str, Any]:
    """`run`'s table_name and holdout_days from the job's resolved options."""
    return {
        "table_name": options.get("table_name") or None,
        "holdout_days": as_int(options, "holdout_days", 7),
    }


def main(argv: Sequence[str] | None = None) -> str:
    """Entry point for Glue and spark-submit: parse options, run, print the models' URI."""
    options = resolve_options(list(sys.argv if argv is None else argv), REQUIRED, OPTIONAL)
    uri = run(
        input_uri=str(options["input_uri"]),
        output_uri=str(options["output_uri"]),
        **fit_arguments(options),
    )
    print(f"models: {uri}")
    return uri


if __name__ == "__main__":
    main()
