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
from collections.abc import Sequence
from typing import Any

from pyspark.sql import SparkSession

from glue_jobs import sla_report, trend_fit
from glue_jobs.compact import DEFAULT_LATE_DAYS
from glue_jobs.options import resolve_options
from glue_jobs.session import get_spark

REQUIRED = sla_report.REQUIRED
OPTIONAL: dict[str, str | None] = {**sla_report.OPTIONAL, **trend_fit.OPTIONAL}


def run(  # noqa: PLR0913 - both jobs' arguments, one each
    input_uri: str,
    output_uri: str,
    queues_config_json: str | None = None,
    *,
    config_source: str = "--queues_config",
    interval_seconds: int = 60,
    pairing_hours: int = sla_report.DEFAULT_PAIRING_HOURS,
    late_days: int = DEFAULT_LATE_DAYS,
    full_rebuild: bool = False,
    report_days: int = sla_report.DEFAULT_REPORT_DAYS,
    table_name: str | None = None,
    holdout_days: int = 7,
    spark: SparkSession | None = None,
    dynamodb_client: Any = None,
) -> tuple[str, str]:
    """Run the SLA report over the archive at `input_uri`, then fit the trend models on its
    hourly table under `output_uri`, in one session; return (report URI, models' JSON URI)."""
    spark = spark or get_spark("queue-autoscale-daily")
    report = sla_report.run(
        input_uri,
        output_uri,
        queues_config_json,
        interval_seconds,
        spark,
        config_source=config_source,
        pairing_hours=pairing_hours,
        late_days=late_days,
        full_rebuild=full_rebuild,
        report_days=report_days,
    )
    models = trend_fit.run(
        output_uri, output_uri, table_name, holdout_days, spark, dynamodb_client=dynamodb_client
    )
    return report, models


def main(argv: Sequence[str] | None = None) -> tuple[str, str]:
    """Entry point for Glue and spark-submit: parse options, run, print both URIs."""
    options = resolve_options(list(sys.argv if argv is None else argv), REQUIRED, OPTIONAL)
    report, models = run(**sla_report.run_arguments(options), **trend_fit.fit_arguments(options))
    print(f"report: {report}")
    print(f"models: {models}")
    return report, models


if __name__ == "__main__":
    main()
