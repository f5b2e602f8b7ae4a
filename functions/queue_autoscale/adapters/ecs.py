"""ECS: DescribeServices (10 services a call) and UpdateService desiredCount."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from queue_autoscale.adapters.errors import AdapterError, MalformedResponse, NotFound, aws_call

MAX_SERVICES = 10
"""DescribeServices takes at most 10 services per call, all in one cluster."""


@dataclass(frozen=True, slots=True)
class ServiceRef:
    """An ECS service: cluster and service, each a name or an ARN."""

    cluster: str
    service: str

    @property
    def service_name(self) -> str:
        """The bare service name (the last part of an ARN)."""
        return self.service.rsplit("/", 1)[-1]


@dataclass(frozen=True, slots=True)
class ServiceStatus:
    """Task counts of one service (tasks = workers)."""

    running: int
    desired: int
    pending: int
    deployment_in_progress: bool
    """True while a rollout replaces tasks (never scale then)."""
    status: str
    """ACTIVE, DRAINING or INACTIVE."""


def _int(service: Mapping[str, Any], key: str, name: str) -> int:
    raw = service.get(key)
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise MalformedResponse(
            "DescribeServices", f"field {key!r} = {raw!r} is not an integer", resource=name
        )
    return raw


def deployment_rolling(deployments: Sequence[Mapping[str, Any]]) -> bool:
    """A rollout is in progress: more than one deployment, or the primary still rolling."""
    if len(deployments) > 1:
        return True
    return any(
        item.get("status") == "PRIMARY" and item.get("rolloutState") == "IN_PROGRESS"
        for item in deployments
    )


def parse_describe_services(
    response: Mapping[str, Any],
) -> tuple[dict[str, ServiceStatus], dict[str, str]]:
    """(status by service name, failure reason by ARN) from a DescribeServices response."""
    found: dict[str, ServiceStatus] = {}
    for service in response.get("services", []) or []:
        name = str(
            service.get("serviceName") or str(service.get("serviceArn", "")).rsplit("/", 1)[-1]
        )
        if not name:
            raise MalformedResponse("DescribeServices", "a service without a name or ARN")
        found[name] = ServiceStatus(
            running=_int(service, "runningCount", name),
            desired=_int(service, "desiredCount", name),
            pending=_int(service, "pendingCount", name),
            deployment_in_progress=deployment_rolling(service.get("deployments", []) or []),
            status=str(service.get("status", "ACTIVE")),
        )
    failures = {
        str(item.get("arn", "")): str(item.get("reason", "unknown"))
        for item in response.get("failures", []) or []
    }
    return found, failures


class EcsServices:
    """Reads and sets the task counts of worker services through one ECS client."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def describe(
        self, refs: Sequence[ServiceRef]
    ) -> dict[ServiceRef, ServiceStatus | AdapterError]:
        """Status of each service, or the error that kept it from being read.

        Services are grouped by cluster, 10 per DescribeServices call; a failed call marks
        only its own services.
        """
        by_cluster: dict[str, list[ServiceRef]] = defaultdict(list)
        for ref in dict.fromkeys(refs):
            by_cluster[ref.cluster].append(ref)
        answer: dict[ServiceRef, ServiceStatus | AdapterError] = {}
        for cluster, members in by_cluster.items():
            for first in range(0, len(members), MAX_SERVICES):
                chunk = members[first : first + MAX_SERVICES]
                try:
                    with aws_call("DescribeServices", cluster):
                        response = self._client.describe_services(
                            cluster=cluster, services=[ref.service for ref in chunk]
                        )
                    found, failures = parse_describe_services(response)
                except AdapterError as error:
                    for ref in chunk:
                        answer[ref] = error
                    continue
                for ref in chunk:
                    status = found.get(ref.service_name)
                    if status is None:
                        reason = _failure_reason(failures, ref)
                        answer[ref] = NotFound(
                            "DescribeServices", reason, code="MISSING", resource=ref.service
                        )
                    else:
                        answer[ref] = status
        return answer

    def set_desired(self, ref: ServiceRef, desired: int) -> int:
        """UpdateService desiredCount; return the desiredCount ECS reports back."""
        if desired < 0:
            raise ValueError(f"desired = {desired} must be >= 0")
        with aws_call("UpdateService", ref.service):
            response = self._client.update_service(
                cluster=ref.cluster, service=ref.service, desiredCount=desired
            )
        reported = response.get("service", {}).get("desiredCount", desired)
        return int(reported)


def _failure_reason(failures: Mapping[str, str], ref: ServiceRef) -> str:
    for arn, why in failures.items():
        if arn == ref.service or arn.endswith("/" + ref.service_name):
            return f"service {ref.service!r} in cluster {ref.cluster!r}: {why}"
    return f"service {ref.service!r} in cluster {ref.cluster!r} not in the answer"
