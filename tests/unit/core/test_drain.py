"""The arrivals the backlog's growth shows between two ticks (core/drain.py
`growth_arrival_rate`), read past the noise of the arrivals' dispersion."""

from __future__ import annotations

import pytest

from queue_autoscale.core.drain import growth_arrival_rate

SIGMAS = 3.0
"""The line the tables' arithmetic draws, standard deviations (the controller's is
`Knobs.move_sigmas`, 2.99 at a 10 s interval)."""


def _growth(visible: int, previous: int, seconds: float, running: int, mu: float) -> float | None:
    """growth_arrival_rate with the tables' short positional names."""
    return growth_arrival_rate(
        visible=visible,
        previous_visible=previous,
        seconds=seconds,
        running=running,
        service_rate=mu,
        sigmas=SIGMAS,
    )


def test_growth_shows_a_surge_within_one_interval() -> None:
    # 0 -> 1,000 waiting in 10 s with 6 workers at 1 job/s: 100 + 6 = 106 jobs/s arrive
    assert _growth(1000, 0, 10.0, 6, 1.0) == pytest.approx(106.0)
    # a steady queue's jitter (20 -> 65 in 10 s at 21 workers) is no surge
    assert _growth(65, 20, 10.0, 21, 1.0) is None
    # shrinking, unchanged, or no time elapsed: nothing to say
    assert _growth(50, 80, 10.0, 5, 1.0) is None
    assert _growth(80, 80, 10.0, 5, 1.0) is None
    assert _growth(500, 0, 0.0, 5, 1.0) is None


@pytest.mark.parametrize(
    ("visible", "previous", "running", "dispersion", "expected"),
    [
        # the NASA day x10 at SLA 10 s, t = 830 s: 46 -> 240 waiting in 10 s at 36 workers.
        # Poisson noise 3 sqrt((55.4 + 36) x 10) = 90.7 < 194 grown: 19.4 + 36 = 55.4 jobs/s
        pytest.param(240, 46, 36, 1.0, 55.4, id="nasa-burst-read-as-poisson"),
        # with its arrivals' measured D = 32: 3 sqrt((32 x 55.4 + 36) x 10) = 403.5 > 194
        pytest.param(240, 46, 36, 32.0, None, id="nasa-burst-within-batch-noise"),
        # a flash crowd still reads at D = 32: 3 sqrt((32 x 106 + 6) x 10) = 553 < 1,000
        pytest.param(1000, 0, 6, 32.0, 106.0, id="flash-crowd-beyond-batch-noise"),
        # a stream read as smoother than Poisson, D = 0.5, lowers the bar to
        # 3 sqrt((0.5 x 27 + 21) x 10) = 55.7 < 60 grown: 6 + 21 = 27 jobs/s (at D = 1, 65.7)
        pytest.param(80, 20, 21, 0.5, 27.0, id="under-dispersed-reads-as-measured"),
        pytest.param(80, 20, 21, 1.0, None, id="the-same-growth-within-poisson-noise"),
    ],
)
def test_growth_noise_scales_with_the_arrivals_dispersion(
    visible: int, previous: int, running: int, dispersion: float, expected: float | None
) -> None:
    grown = growth_arrival_rate(
        visible=visible,
        previous_visible=previous,
        seconds=10.0,
        running=running,
        service_rate=1.0,
        sigmas=SIGMAS,
        dispersion=dispersion,
    )
    assert grown == (None if expected is None else pytest.approx(expected))
