"""WorkerSettings: defaults derived, nonsense refused, the failure back-off."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from queue_autoscale.worker.command import load_job
from queue_autoscale.worker.jobs import JobFailedError, sleep_job
from queue_autoscale.worker.runtime import Job
from queue_autoscale.worker.settings import WorkerSettings

URL = "http://127.0.0.1:5000/123456789012/orders"


def test_the_queue_name_and_heartbeat_default_from_the_url_and_visibility() -> None:
    settings = WorkerSettings(queue_url=URL, visibility_timeout_seconds=60)
    assert settings.queue == "orders"
    assert settings.heartbeat_seconds == 20.0
    assert settings.protection_minutes == 16  # 900 s hard limit + a minute


@pytest.mark.parametrize(
    "bad",
    [
        {"concurrency": 0},
        {"prefetch": 11},
        {"wait_seconds": 21},
        {"drain_seconds": 121},
        {"visibility_timeout_seconds": 10, "heartbeat_seconds": 10},
        {"queue_url": ""},
        {"surprise": 1},
    ],
)
def test_nonsense_is_refused(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        WorkerSettings(**{"queue_url": URL, **bad})


def test_the_failure_back_off_doubles_per_attempt_up_to_the_cap() -> None:
    settings = WorkerSettings(queue_url=URL, retry_base_seconds=2, retry_max_seconds=30)
    assert [settings.retry_backoff_seconds(n) for n in (1, 2, 3, 4, 5, 6)] == [2, 4, 8, 16, 30, 30]


def test_load_job_names_what_is_wrong() -> None:
    assert load_job("queue_autoscale.worker.jobs:sleep_job") is sleep_job
    for spec, words in [
        ("nocolon", "package.module:function"),
        ("no.such.module:f", "not importable"),
        ("queue_autoscale.worker.jobs:MAX_WORK_SECONDS", "is not a function"),
    ]:
        with pytest.raises(ValueError, match=words):
            load_job(spec)


def _job(body: str) -> Job:
    return Job(body=body, message_id="m", attempt=1, attributes={}, message_attributes={})


@pytest.mark.parametrize("body", ["not json", "[1]", '{"work_seconds": -1}', '{"fail": true}'])
def test_the_sleep_job_fails_on_a_bad_or_poison_body(body: str) -> None:
    with pytest.raises(JobFailedError):
        sleep_job(_job(body))


def test_the_sleep_job_sleeps_the_asked_time() -> None:
    sleep_job(_job('{"work_seconds": 0.01}'))
