"""An example job function for queue_autoscale.worker: one order per message.

The worker calls `handle(job)` for each message; returning means success (the message is
deleted), raising means failure (the message comes back after a back-off, and the queue's
redrive policy dead-letters it after maxReceiveCount attempts). Keep jobs idempotent: SQS
delivers at least once.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time

from queue_autoscale.worker import Job

LOG = logging.getLogger("example.job")


class BadOrderError(ValueError):
    """The message is not an order this job can process (retrying will not help)."""


def handle(job: Job) -> None:
    """Process one order: {"order_id": "...", "items": [...], "work_seconds": 0.5}."""
    try:
        order = json.loads(job.body)
        order_id = str(order["order_id"])
        items = list(order.get("items", []))
        seconds = float(order.get("work_seconds", 0.5))
    except (ValueError, KeyError, TypeError) as error:
        raise BadOrderError(f"message {job.message_id}: not an order ({error})") from error
    if not 0.0 <= seconds <= 600.0:
        raise BadOrderError(f"order {order_id}: work_seconds {seconds} outside 0..600")
    digest = hashlib.sha256(json.dumps(items, sort_keys=True).encode()).hexdigest()[:12]
    time.sleep(seconds)  # stands in for the real work
    LOG.info("order %s done (attempt %d, %d items, %s)", order_id, job.attempt, len(items), digest)
