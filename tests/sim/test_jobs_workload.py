"""Per-job arrivals and durations (`jobs_workload`) run through the same engine loop as
per-second counts: the same jobs give the same run, each job keeps its own duration, and a
retried attempt re-enters the queue at its own queued time."""

from __future__ import annotations

import numpy as np
import pytest

from queue_autoscale.sim.arrivals import ArrivalError, scenario
from queue_autoscale.sim.engine import run_policy
from queue_autoscale.sim.runner import RunSpec, compare, compare_workload
from queue_autoscale.sim.workload import FleetSpec, build_workload, jobs_workload
from tests.sim.conftest import FixedFleet


def test_the_jobs_of_a_counts_workload_replay_to_the_same_runs() -> None:
    # GIVEN a drawn workload, and the same jobs handed over job by job
    counts = scenario("flash-crowd").counts(seed=2, length_seconds=1200)
    spec = RunSpec(sla_seconds=30, service_seconds=0.5, seed=2)
    drawn = build_workload("spike", counts, spec.fleet(), seed=2, warmup_seconds=600)
    given = jobs_workload("spike", drawn.arrivals, drawn.service, warmup_seconds=600)
    # THEN the per-second counts agree and every policy's scores are those of the drawn run
    assert np.array_equal(given.counts, drawn.counts)
    before = compare("spike", counts, ["predictive", "keda", "static"], spec).scores
    after = compare_workload(given, ["predictive", "keda", "static"], spec).scores
    for old, new in zip(before, after, strict=True):
        assert {**old.to_dict(), "wall_seconds": 0} == {**new.to_dict(), "wall_seconds": 0}


def test_each_job_keeps_its_own_duration() -> None:
    # GIVEN one worker and three jobs: 5 s, 500 s (a heavy tail), 2 s
    workload = jobs_workload("tail", [0.5, 1.0, 1.5], [5.0, 500.0, 2.0])
    result = run_policy(workload, FixedFleet(1), FleetSpec(), initial_workers=1)
    # THEN each starts when the one before it ends, after exactly its predecessor's duration
    assert result.starts.tolist() == [0.5, 5.5, 505.5]
    assert workload.service.tolist() == [5.0, 500.0, 2.0]


def test_a_retry_reenters_the_queue_at_its_own_queued_time() -> None:
    # GIVEN job a's two attempts (the retry queued at 30 s) listed before job b (queued at 10 s)
    workload = jobs_workload("retry", [0.0, 30.0, 10.0], [20.0, 4.0, 3.0])
    result = run_policy(workload, FixedFleet(1), FleetSpec(), initial_workers=1)
    # THEN b runs after a's first attempt, and the retry after b, at its own arrival
    assert workload.arrivals.tolist() == [0.0, 10.0, 30.0]
    assert workload.service.tolist() == [20.0, 3.0, 4.0]
    assert result.starts.tolist() == [0.0, 20.0, 30.0]
    assert workload.counts[[0, 10, 30]].tolist() == [1, 1, 1] and workload.counts.sum() == 3


def test_jobs_at_the_same_instant_keep_their_given_order() -> None:
    workload = jobs_workload("ties", [2.0, 2.0, 2.0], [1.0, 2.0, 3.0])
    assert workload.service.tolist() == [1.0, 2.0, 3.0]


def test_the_warmup_is_replayed_but_not_counted_as_scored() -> None:
    workload = jobs_workload("warm", [1.0, 5.0, 250.0], [1.0, 1.0, 1.0], warmup_seconds=100)
    assert workload.scored_jobs == 1 and workload.horizon_seconds == 251


@pytest.mark.parametrize(
    ("arrivals", "durations", "reason"),
    [
        pytest.param([0.0, -1.0], [1.0, 1.0], "job 1: arrival = -1.0 s", id="negative-arrival"),
        pytest.param([0.0, 1.0], [1.0, float("nan")], "job 1: duration = nan s", id="nan-duration"),
        pytest.param([float("inf")], [1.0], "job 0: arrival = inf s", id="infinite-arrival"),
        pytest.param([0.0, 1.0], [1.0], "2 arrival times but 1 durations", id="lengths-differ"),
    ],
)
def test_a_bad_job_is_refused_naming_its_row(
    arrivals: list[float], durations: list[float], reason: str
) -> None:
    with pytest.raises(ArrivalError, match=reason.replace("(", r"\(")):
        jobs_workload("bad", arrivals, durations)


def test_no_jobs_is_an_empty_run() -> None:
    workload = jobs_workload("none", [], [])
    result = run_policy(workload, FixedFleet(1), FleetSpec(), initial_workers=1)
    assert workload.horizon_seconds == 0 and result.starts.size == 0
