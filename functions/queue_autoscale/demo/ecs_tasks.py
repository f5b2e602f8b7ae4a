"""What ECS's DescribeServices reports for the demo's fleet, written into the embedded emulator.

On AWS a service's task moves PROVISIONING -> PENDING -> ACTIVATING -> RUNNING, and once told
to stop (a scale-in) DEACTIVATING -> STOPPING (SIGTERM, the drain) -> DEPROVISIONING ->
STOPPED. DescribeServices counts `pendingCount` = tasks in PENDING and `runningCount` = tasks
in RUNNING (the ECS API reference's definitions). The demo models:

- `pendingCount`: tasks ordered and whose worker process has not started yet (PROVISIONING,
  PENDING and ACTIVATING are not told apart: one delay, the demo's provisioning seconds);
- `runningCount`: tasks whose worker process has started and that were not told to stop;
- a task told to stop (draining after SIGTERM) is in neither count, as a STOPPING task is not
  in RUNNING; it still bills until its process exits.

moto's ECS sets runningCount = desiredCount the moment UpdateService returns and never starts
anything. The embedded server runs in this process, so the demo writes the fleet's counts into
moto's own service (`moto.ecs.models.ecs_backends`, an internal: moto is pinned exactly in
pyproject.toml). The controller still reads them through adapters/ecs.py and DescribeServices,
over HTTP, as on AWS. An external endpoint (`--endpoint-url`) runs in another process: there
the counts are that endpoint's own (see docs/emulator.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MOTO_ACCOUNT = "123456789012"
"""moto's default account: the dummy credentials map to it."""


@dataclass(frozen=True, slots=True)
class TaskCounts:
    """A service's tasks by where they are in the lifecycle."""

    running: int
    """Worker process started, not told to stop (RUNNING)."""
    pending: int
    """Ordered, worker process not started yet (PROVISIONING / PENDING / ACTIVATING)."""
    stopping: int
    """Told to stop and draining (DEACTIVATING / STOPPING): in neither count."""


class EmulatedService:
    """One ECS service of the embedded moto server whose task counts the demo's fleet sets."""

    def __init__(self, cluster: str, service: str, region: str) -> None:
        self.cluster = cluster
        self.service = service
        self.region = region

    def _moto_service(self) -> Any | None:
        """moto's Service object in this process, or None (moto not loaded, another
        process's endpoint, or the service is gone after a reset)."""
        try:
            from moto.ecs.models import ecs_backends  # noqa: PLC0415 (dev-only dependency)
        except ImportError:
            return None
        try:
            backend = ecs_backends[MOTO_ACCOUNT][self.region]
        except KeyError:
            return None
        return backend.services.get(f"{self.cluster}:{self.service}")

    @property
    def embedded(self) -> bool:
        """True when this process serves the service (the counts can be set)."""
        return self._moto_service() is not None

    def publish(self, counts: TaskCounts) -> bool:
        """Set runningCount and pendingCount (service and primary deployment) to `counts`;
        False when the service is not served by this process."""
        service = self._moto_service()
        if service is None:
            return False
        service.running_count = counts.running
        service.pending_count = counts.pending
        for deployment in getattr(service, "deployments", []) or []:
            if deployment.get("status") == "PRIMARY":
                deployment["runningCount"] = counts.running
                deployment["pendingCount"] = counts.pending
        return True
