"""Trend models as the controller reads them: TrendModel values, JSON, DynamoDB MODEL items."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pyspark.sql import Row

from queue_autoscale.adapters.dynamodb import LoadTable
from queue_autoscale.core.models import TrendModel
from queue_autoscale.core.state import model_to_dict


def _optional(value: Any) -> float | None:
    return None if value is None else float(value)


def models_from_rows(rows: Iterable[Row]) -> list[TrendModel]:
    """`fit_trend` rows -> TrendModel values, sorted by queue."""
    models = [
        TrendModel(
            queue=str(row["queue"]),
            fitted_at=float(row["fitted_at"]),
            level=float(row["level"]),
            slope_per_hour=float(row["slope_per_hour"]),
            seasonal=tuple(float(value) for value in row["seasonal"]),
            mase=_optional(row["mase"]),
            naive_mase=_optional(row["naive_mase"]),
        )
        for row in rows
    ]
    return sorted(models, key=lambda model: model.queue)


def write_models(client: Any, table_name: str, models: Iterable[TrendModel]) -> int:
    """Put each model as the `Q#<queue>` / `MODEL` item of the load table; return the count.

    `client` is a boto3 DynamoDB client (build it with boto3.client("dynamodb"), which honours
    AWS_ENDPOINT_URL); errors surface as the adapter's project errors, naming the item.
    """
    table = LoadTable(client, table_name)
    written = 0
    for model in models:
        table.put_model(model.queue, model_to_dict(model))
        written += 1
    return written
