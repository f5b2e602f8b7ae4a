"""Plain-dict forms of the controller state and the trend model (DynamoDB items, S3, JSON)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from queue_autoscale.core.models import Burst, ControllerState, Fall, Sample, TrendModel
from queue_autoscale.core.onsets import REMEMBERED
from queue_autoscale.core.orders import orders_from_rows


def state_to_dict(state: ControllerState) -> dict[str, Any]:
    """JSON-safe dict of the state; samples as compact [at, rate, visible, target, dlq, short
    rate] rows."""
    return {
        "queue": state.queue,
        "version": state.version,
        "last_scale_up_at": state.last_scale_up_at,
        "last_scale_down_at": state.last_scale_down_at,
        "last_set_desired": state.last_set_desired,
        "unmet_since": state.unmet_since,
        "high_usage_ticks": state.high_usage_ticks,
        "last_breach_at": state.last_breach_at,
        "realized_started": state.realized_started,
        "realized_late": state.realized_late,
        "realized_excused": state.realized_excused,
        "realized_through": state.realized_through,
        "chance_gain": state.chance_gain,
        "horizon_dispersion": state.horizon_dispersion,
        "horizon_weight": state.horizon_weight,
        "bursts": [[b.at, b.need, b.rate] for b in state.bursts],
        "burst_ends": list(state.burst_ends),
        "surge_at": state.surge_at,
        "orders": [[o.at, o.workers] for o in state.orders],
        "fall": None if state.fall is None else list(state.fall),
        "fall_returned": state.fall_returned,
        "fall_returned_after": state.fall_returned_after,
        "lowest_rate": state.lowest_rate,
        "samples": [
            [s.at, s.arrival_rate, s.visible, s.raw_target, s.dlq_depth, s.short_rate]
            for s in state.samples
        ],
    }


def _burst(row: Sequence[Any]) -> Burst:
    """One remembered burst: [onset epoch s, need workers, rate jobs/s] (the rate is absent
    from items written before it was kept: 0)."""
    return Burst(float(row[0]), int(row[1]), float(row[2]) if len(row) > 2 else 0.0)


def _opt_float(value: Any) -> float | None:
    return None if value is None else float(value)


def _gain(value: Any) -> float:
    """The SLA loop's integral term as stored: 1 (at rest) when absent or outside (0, 1]."""
    gain = 1.0 if value is None else float(value)
    return gain if 0.0 < gain <= 1.0 else 1.0


def _nonnegative(value: Any) -> float:
    """A stored mean or weight: 0 (none) when absent, negative or not finite."""
    number = 0.0 if value is None else float(value)
    return number if math.isfinite(number) and number > 0.0 else 0.0


def _measured(value: Any) -> float | None:
    """A stored duration (s) or rate (jobs/s): None when absent, negative or not finite."""
    if value is None:
        return None
    seconds = float(value)
    return seconds if math.isfinite(seconds) and seconds >= 0.0 else None


def _share(value: Any) -> float | None:
    """A stored share, 0..1 (None when absent or outside it)."""
    if value is None:
        return None
    share = float(value)
    return share if 0.0 <= share <= 1.0 else None


def _fall(row: Any) -> Fall | None:
    """The open fall as stored: [epoch s, rate jobs/s > 0, depth 0..1, floor jobs/s >= 0 or
    None, workers held >= 0] (None when absent or not of that form; a fall written before its
    floor or its hold was kept has none)."""
    if not isinstance(row, Sequence) or isinstance(row, str) or not 3 <= len(row) <= 5:
        return None
    at, rate, depth = float(row[0]), float(row[1]), _share(row[2])
    if not math.isfinite(at) or not (math.isfinite(rate) and rate > 0.0) or depth is None:
        return None
    floor = _measured(row[3]) if len(row) > 3 else None
    held = _measured(row[4]) if len(row) > 4 else None
    return Fall(at, rate, depth, floor, int(held) if held is not None else 0)


def state_from_dict(data: Mapping[str, Any]) -> ControllerState:
    """Inverse of state_to_dict; accepts Decimal numbers as DynamoDB returns them."""
    samples = tuple(
        Sample(
            at=float(row[0]),
            arrival_rate=float(row[1]),
            visible=int(row[2]),
            raw_target=int(row[3]),
            dlq_depth=int(row[4]) if len(row) > 4 else 0,
            short_rate=_opt_float(row[5]) if len(row) > 5 else None,
        )
        for row in data.get("samples", [])
    )
    last_set = data.get("last_set_desired")
    return ControllerState(
        queue=str(data["queue"]),
        version=int(data.get("version", 0)),
        last_scale_up_at=_opt_float(data.get("last_scale_up_at")),
        last_scale_down_at=_opt_float(data.get("last_scale_down_at")),
        last_set_desired=None if last_set is None else int(last_set),
        unmet_since=_opt_float(data.get("unmet_since")),
        samples=samples,
        high_usage_ticks=int(data.get("high_usage_ticks") or 0),
        last_breach_at=_opt_float(data.get("last_breach_at")),
        realized_started=float(data.get("realized_started") or 0.0),
        realized_late=float(data.get("realized_late") or 0.0),
        realized_excused=float(data.get("realized_excused") or 0.0),
        realized_through=_opt_float(data.get("realized_through")),
        chance_gain=_gain(data.get("chance_gain")),
        horizon_dispersion=_nonnegative(data.get("horizon_dispersion")),
        horizon_weight=_nonnegative(data.get("horizon_weight")),
        bursts=tuple(_burst(row) for row in data.get("bursts") or [])[-REMEMBERED:],
        burst_ends=tuple(float(at) for at in data.get("burst_ends") or [])[-REMEMBERED:],
        surge_at=_opt_float(data.get("surge_at")),
        orders=orders_from_rows(data.get("orders") or []),
        fall=_fall(data.get("fall")),
        fall_returned=_share(data.get("fall_returned")),
        fall_returned_after=_measured(data.get("fall_returned_after")),
        lowest_rate=_measured(data.get("lowest_rate")),
    )


def model_to_dict(model: TrendModel) -> dict[str, Any]:
    """JSON-safe dict of a trend model."""
    return {
        "queue": model.queue,
        "fitted_at": model.fitted_at,
        "level": model.level,
        "slope_per_hour": model.slope_per_hour,
        "seasonal": list(model.seasonal),
        "mase": model.mase,
        "naive_mase": model.naive_mase,
    }


def model_from_dict(data: Mapping[str, Any]) -> TrendModel:
    """Inverse of model_to_dict; rejects a seasonal profile that is not 168 numbers.

    An item without a back-test (or of the older MAPE form) parses with no MASE, which
    `core.trend.model_weight` gives no weight."""
    seasonal = tuple(float(v) for v in data.get("seasonal", [1.0] * 168))
    if len(seasonal) != 168:
        raise ValueError(f"seasonal must have 168 hourly factors, got {len(seasonal)}")
    return TrendModel(
        queue=str(data["queue"]),
        fitted_at=float(data["fitted_at"]),
        level=float(data["level"]),
        slope_per_hour=float(data.get("slope_per_hour", 0.0)),
        seasonal=seasonal,
        mase=_opt_float(data.get("mase")),
        naive_mase=_opt_float(data.get("naive_mase")),
    )
