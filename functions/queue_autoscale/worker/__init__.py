"""The worker runtime: run a job function against an SQS queue with a visibility heartbeat,
a graceful drain on SIGTERM/SIGINT and ECS task scale-in protection (docs/worker.md).

Entry points: `queue-autoscale worker --job module:function ...` and
`python -m queue_autoscale.worker ...`; in Python, `Worker(settings, job, sqs).run()`.
"""

from queue_autoscale.worker.protection import TaskProtection
from queue_autoscale.worker.runtime import Job, JobFunction, Worker, WorkerStats
from queue_autoscale.worker.settings import WorkerSettings

__all__ = ["Job", "JobFunction", "TaskProtection", "Worker", "WorkerSettings", "WorkerStats"]
