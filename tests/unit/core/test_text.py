"""Counts of workers in the decision's words (core/text.py)."""

from queue_autoscale.core.text import n_workers


def test_one_worker_is_singular_and_its_verb_agrees() -> None:
    assert n_workers(1) == "1 worker"
    assert n_workers(1, "keep") == "1 worker keeps"
    assert n_workers(0) == "0 workers"
    assert n_workers(21, "keep") == "21 workers keep"
