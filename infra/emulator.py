"""The emulator bootstrap lives in queue_autoscale.demo.emulator (the demo must not import
infra/); the names are kept here for the tests and scripts that import them from infra/."""

from queue_autoscale.demo.direct import EmulatorError
from queue_autoscale.demo.emulator import (
    EmulatorStack,
    WorkQueue,
    bootstrap,
    create_work_queue,
    embedded_endpoint,
    session,
)

__all__ = [
    "EmulatorError",
    "EmulatorStack",
    "WorkQueue",
    "bootstrap",
    "create_work_queue",
    "embedded_endpoint",
    "session",
]
