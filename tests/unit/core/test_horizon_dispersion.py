"""The arrivals' dispersion at the short window's scale (core/dispersion.py): one tick's
reading of how far the controller's own rate fell short, their weighted mean, and the index the
sizing reads over the time no order corrects."""

from __future__ import annotations

import math

import numpy as np
import pytest

from queue_autoscale.core import ControllerState, Sample
from queue_autoscale.core.dispersion import (
    HorizonReading,
    _clipped_mean,
    horizon_error,
    horizon_reading,
    read_horizon,
)
from queue_autoscale.core.predictive import ablated, decide_predictive
from tests.unit.core.builders import NOW, settings, snapshot

NONE = HorizonReading(0.0, 0.0)


def test_a_shortfall_is_read_over_its_model_variance_and_an_excess_reads_zero() -> None:
    # GIVEN the controller read 10 jobs/s a short window (60 s) ago, W = 300 s
    samples = (Sample(NOW - 70.0, 9.0, 0, 1), Sample(NOW - 60.0, 10.0, 0, 1))
    # WHEN 12 jobs/s came over the 60 s since: 120 more than the 600 expected
    reading = horizon_error(samples, 12.0, NOW, 60.0, 300.0, 5.0)
    # THEN it reads 2 x 120^2 / (600 x (1 + 60 / 300)) = 40
    assert reading == pytest.approx(40.0)
    # AND 8 jobs/s (fewer than read) leave no job late: 0
    assert horizon_error(samples, 8.0, NOW, 60.0, 300.0, 5.0) == 0.0
    # AND with no tick within 5 s of 60 s ago, no rate then, or no short rate: no reading
    assert horizon_error(samples[:1], 12.0, NOW, 60.0, 300.0, 5.0) is None
    assert horizon_error((Sample(NOW - 60.0, 0.0, 0, 1),), 12.0, NOW, 60.0, 300.0, 5.0) is None
    assert horizon_error(samples, None, NOW, 60.0, 300.0, 5.0) is None
    assert horizon_error(samples, math.nan, NOW, 60.0, 300.0, 5.0) is None


def test_the_mean_is_plain_while_readings_are_few_and_a_burst_is_clipped() -> None:
    # GIVEN no reading yet, a per-second D of 1 and p95 (z = 1.645)
    z = 1.6448536269514722
    clipped_mean = 0.8312682811307568  # E[min(chi2_1, z^2)]
    # WHEN one reading of 1.0 comes in
    first = horizon_reading(NONE, 1.0, 10.0, 1_400.0, 1.0, 0.95)
    # THEN the mean is that reading, scaled back by what the clip takes from normal errors
    assert (first.mean, first.weight) == pytest.approx((1.0 / clipped_mean, 1.0))
    # AND a burst's reading of 1,000 counts as a shortfall of z sd of the spread read so far
    burst = horizon_reading(first, 1_000.0, 10.0, 1_400.0, 1.0, 0.95)
    weight = math.exp(-10.0 / 1_400.0) + 1.0
    bound = 2.0 * z * z * first.mean / clipped_mean
    assert burst.weight == pytest.approx(weight)
    assert burst.mean == pytest.approx(first.mean + (bound - first.mean) / weight)
    # AND no reading leaves it as it was; an infinite window keeps the plain mean
    assert horizon_reading(first, None, 10.0, 1_400.0, 1.0, 0.95) == first
    endless = horizon_reading(first, 0.0, 10.0, math.inf, 1.0, 0.95)
    assert (endless.mean, endless.weight) == pytest.approx((first.mean / 2.0, 2.0))


def _ticks(counts: np.ndarray, percentile: float) -> HorizonReading:
    """Every 10 s tick's reading over per-second `counts`, the rate read over the last 300 s
    and the short one over the last 60 s, as the controller keeps them (T = 1,400 s)."""
    horizon, samples = NONE, []
    cumulative = np.concatenate([[0], np.cumsum(counts)])
    for second in range(300, counts.size + 1, 10):
        long = (cumulative[second] - cumulative[second - 300]) / 300.0
        short = (cumulative[second] - cumulative[second - 60]) / 60.0
        error = horizon_error(samples, short, float(second), 60.0, 300.0, 5.0)
        horizon = horizon_reading(horizon, error, 10.0, 1_400.0, 1.0, percentile)
        samples.append(Sample(float(second), long, 0, 1))
        samples = samples[-10:]
    return horizon


def test_poisson_arrivals_read_the_per_second_dispersion_and_minute_swings_more() -> None:
    rng = np.random.default_rng(7)
    # GIVEN four hours of Poisson arrivals at 20 jobs/s
    poisson = rng.poisson(20.0, 14_400)
    # AND four hours whose rate swings between 14 and 26 jobs/s for a random 30 to 120 s
    spells = np.repeat(rng.choice([14.0, 26.0], 400), rng.integers(30, 120, 400))[:14_400]
    swinging = rng.poisson(spells)
    # WHEN the ticks read them at p95
    quiet, moving = _ticks(poisson, 0.95), _ticks(swinging, 0.95)
    # THEN the Poisson stream reads about its per-second D of 1
    assert quiet.mean == pytest.approx(1.0, abs=0.25)
    # AND the swinging one far more, where its per-second counts read about 2
    assert moving.mean > 4.0
    per_second = float(np.var(swinging - spells) / 20.0 + np.var(spells) / 20.0)
    assert per_second < moving.mean / 2.0


def test_the_sizing_reads_the_horizon_over_the_span_no_order_corrects() -> None:
    # GIVEN a per-second D of 12 and a horizon's 36 over 500 readings, one a 10 s interval
    horizon = HorizonReading(36.0, 500.0)
    # WHEN the span no order corrects is the short window's 60 s, 10 s, a second, or longer
    read = [read_horizon(12.0, horizon, 60.0, s, 10.0, 300.0) for s in (60.0, 10.0, 1.0, 600.0)]
    # THEN 60 s reads the horizon's mean, 10 s the power of the scale between, 1 s the
    # per-second D, and nothing past the short window's own scale
    assert read[0] == pytest.approx(36.0)
    assert read[1] == pytest.approx(12.0 * 3.0 ** (math.log(10.0) / math.log(60.0)))
    assert read[2] == 12.0
    assert read[3] == pytest.approx(36.0)
    # AND a wider horizon is read as measured, as the per-second index is above 1, once its
    # readings span the long window W = 300 s: 13 over 30 readings reads 13, over 29 reads D
    assert read_horizon(12.0, HorizonReading(13.0, 30.0), 60.0, 60.0, 10.0, 300.0) == 13.0
    assert read_horizon(12.0, HorizonReading(13.0, 29.0), 60.0, 60.0, 10.0, 300.0) == 12.0
    # AND where the readings' memory T is shorter than W (p50 at S = 10 s: T = 140 s) the
    # weight never spans W; it is read once it spans T: the weight tends to 14.5 readings
    saturated = 1.0 / (1.0 - math.exp(-10.0 / 140.0))
    assert 14.0 < saturated < 15.0
    wide = HorizonReading(13.0, saturated * 0.99)
    assert read_horizon(12.0, wide, 60.0, 60.0, 10.0, 300.0, 140.0) == 13.0
    assert read_horizon(12.0, HorizonReading(13.0, 13.0), 60.0, 60.0, 10.0, 300.0, 140.0) == 12.0
    # AND a horizon no wider than the per-second D, or none, reads D
    assert read_horizon(12.0, HorizonReading(9.0, 2_000.0), 60.0, 60.0, 10.0, 300.0) == 12.0
    assert read_horizon(12.0, NONE, 60.0, 60.0, 10.0, 300.0) == 12.0


def test_a_tight_sla_sizes_on_the_horizon_dispersion_and_says_so() -> None:
    # GIVEN a 10 s SLA at p99 (an order lands at L + I / 2 = 65 s on average: for 55 s no order
    # corrects) and a queue
    # whose horizon reading is 3 x its per-second dispersion of 12 over 2,000 readings
    cfg = settings(sla_seconds=10.0, percentile=0.99, evaluation_interval_seconds=10.0)
    assert cfg.provisioning_lead_seconds == 60.0
    snap = snapshot(arrival_rate=8.0, arrival_dispersion=12.0, running=10, desired=10)
    state = ControllerState("jobs", horizon_dispersion=36.0, horizon_weight=2_000.0)
    # WHEN it decides, and with "horizon" switched off
    on = decide_predictive(snap, cfg, state, NOW)
    off = ablated("horizon")(snap, cfg, state, NOW)
    # THEN it sizes for the wider spread, and its reason gives both readings
    assert on.decision.raw_target > off.decision.raw_target
    assert "over the 55 s no order corrects (12.00 per second)" in on.decision.reason
    assert "dispersion 12.00, " in off.decision.reason
    # AND the reading is kept for the next tick either way
    assert on.state.horizon_weight == off.state.horizon_weight > 0.0


@pytest.mark.parametrize("z", [1.0, 1.6448536269514722, 2.3263478740408408, 3.090232306167813])
def test_the_clip_takes_what_normal_errors_lose_to_it(z: float) -> None:
    # GIVEN a million squared normal errors
    squares = np.random.default_rng(3).standard_normal(1_000_000) ** 2
    # THEN their mean clipped at z^2 is the closed form the reading is scaled back by
    assert _clipped_mean(z) == pytest.approx(float(np.minimum(squares, z * z).mean()), abs=3e-3)
