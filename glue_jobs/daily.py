"""The daily Spark job: the SLA report, then the trend fit on the `sla_hourly` it just wrote, in
one Spark session (one Glue run: one start-up, one minimum-billed minute, and no fit reading the
hourly table while a report rewrites it). Glue job script, spark-submit script and `run()`.

Options: `sla_report`'s (--input_uri: the archive root, --output_uri: where the report's tables
go and the model is written, the queue config, --interval_seconds, ...) and `trend_fit`'s
--table_name and --holdout_days. The fit reads <output_uri>/sla_hourly. A failed report fits
nothing (the last models stay in the table).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import SparkSession

from glue_jobs import sla_report, trend_fit
from glue_jobs.options import resolve_options
from glue_jobs.session import get_spark

REQUIRED = sla_report.REQUIRED
OPTIONAL: dict[str, str | None] = {**sla_report.OPTIONAL, **trend_fit.OPTIONAL}


def run(
    report_arguments: Mapping[str, Any],
    fit_arguments: Mapping[str, Any],
    spark: SparkSession | None = None,
    dynamodb_client: Any = None,
) -> tuple[str, str]:
    """Run the SLA report with `report_arguments` (`sla_report.run`'s, as `run_arguments`
    gives them), then fit the trend models with `fit_arguments` (`trend_fit.fit_arguments`) on
    the report's hourly table under its output URI, in one session; return (report URI,
    models' JSON URI). Each job keeps its own defaults: none is restated here."""
    spark = spark or get_spark("queue-autoscale-daily")
    report = sla_report.run(**report_arguments, spark=spark)
    output_uri = str(report_arguments["output_uri"])
    models = trend_fit.run(
        output_uri, output_uri, spark=spark, dynamodb_client=dynamodb_client, **fit_arguments
    )
    return report, models


def main(argv: Sequence[str] | None = None) -> tuple[str, str]:
    """Entry point for Glue and spark-submit: parse options, run, print both URIs."""
    options = resolve_options(list(sys.argv if argv is None else argv), REQUIRED, OPTIONAL)
    report, models = run(sla_report.run_arguments(options), trend_fit.fit_arguments(options))
    print(f"report: {report}")
    print(f"models: {models}")
    return report, models


if __name__ == "__main__":
    main()
