"""The evaluate handler's request and answer: what a scheduler event may ask, what a run returns.

The handler (`handlers.evaluate`) only parses with `parse_request`, runs, and answers with
`summary`; both live here so the entry point reads in one screen.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from queue_autoscale.controller.shards import ShardRun
from queue_autoscale.controller.tick import QueueOutcome
from queue_autoscale.core.jump import JumpLine, line_from_dict
from queue_autoscale.core.shard import MAX_SHARDS

__all__ = ["EvaluateRequest", "parse_request", "summary"]


class EvaluateRequest(BaseModel):
    """Options a scheduled event may carry (at top level or under `detail`)."""

    model_config = ConfigDict(extra="ignore")

    max_ticks: int | None = Field(default=None, ge=1, le=60)
    once: bool = False
    shard: int | None = Field(default=None, ge=0, lt=MAX_SHARDS)
    """Set by the dispatcher: run this shard only (with `shards`)."""
    shards: int | None = Field(default=None, ge=1, le=MAX_SHARDS)
    due: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """Tick mode: when this tick is due (epoch s); set on queued ticks and the shards they start."""
    scheduled_time: datetime | None = None
    """The scheduler's `<aws.scheduler.scheduled-time>`: the minute a scheduled invocation
    stands for (a retried or duplicated invocation carries the same one)."""
    jump: str | None = Field(default=None, min_length=1, max_length=80)
    """A jump tick (`ingest.jumps`): tick this queue alone, now, against `line`."""
    line: dict[str, float] | None = None
    """The jump line that asked for it (`core.jump.line_to_dict`), with `jump`."""
    arrived: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    """A jump tick: the arrivals counted since the line's second (jobs), for its reason."""

    @model_validator(mode="after")
    def _one_shard(self) -> EvaluateRequest:
        if (self.shard is None) != (self.shards is None):
            raise ValueError("shard and shards come together")
        if self.shard is not None and self.shards is not None and self.shard >= self.shards:
            raise ValueError(f"shard {self.shard} is not below shards {self.shards}")
        if (self.jump is None) != (self.line is None):
            raise ValueError("jump and line come together")
        if self.line is not None:
            line_from_dict(self.line)
        return self

    def jump_line(self) -> JumpLine | None:
        """The jump tick's line (None for any other request)."""
        return None if self.line is None else line_from_dict(self.line)

    def options(self) -> dict[str, Any]:
        """What the dispatcher forwards to the shards it starts."""
        return self.model_dump(include={"max_ticks", "once"}, exclude_none=True)


def parse_request(event: Mapping[str, Any] | None) -> EvaluateRequest:
    """The options of a scheduler event or of a queued tick (an SQS event of one record);
    anything else in the event is ignored."""
    if not isinstance(event, Mapping):
        return EvaluateRequest()
    if "Records" in event:
        return _queued_tick(event["Records"])
    detail = event.get("detail")
    source = detail if isinstance(detail, Mapping) and detail else event
    return EvaluateRequest.model_validate(dict(source))


def _queued_tick(records: Any) -> EvaluateRequest:
    """The one tick an SQS event of the tick queue carries (its event source sends batches of
    one); ValueError for anything else, so the message goes to the dead-letter queue."""
    if not isinstance(records, list) or len(records) != 1 or not isinstance(records[0], Mapping):
        count = len(records) if isinstance(records, list) else type(records).__name__
        raise ValueError(f"a tick event carries exactly one record, got {count}")
    body = records[0].get("body")
    try:
        document = json.loads(body) if isinstance(body, str) else None
    except ValueError:
        document = None
    if not isinstance(document, Mapping):
        raise ValueError(f"a tick message body is a JSON object, got {str(body)[:80]!r}")
    request = EvaluateRequest.model_validate(dict(document))
    if request.due is None and request.jump is None:
        raise ValueError(
            "a tick message names its due time (`due`, epoch seconds) or a jump (`jump`, a queue)"
        )
    return request


def summary(result: ShardRun) -> dict[str, Any]:
    """The handler's JSON answer: the shard, the shards it started, every tick's decisions."""
    ticks: Sequence[Sequence[QueueOutcome]] = result.ticks
    return {
        "shard": result.shard.label,
        "started_shards": result.started,
        "shard_errors": result.errors,
        "due": result.due,
        "scheduled_ticks": result.scheduled,
        "skipped": result.skipped,
        "ticks": len(ticks),
        "decisions": [
            {
                "queue": outcome.queue,
                "at": outcome.decision.at if outcome.decision else None,
                "current": outcome.decision.current if outcome.decision else None,
                "target": outcome.decision.target if outcome.decision else None,
                "action": outcome.decision.action.value if outcome.decision else None,
                "reason": outcome.decision.reason if outcome.decision else None,
                "running": outcome.running,
                "applied": outcome.applied,
                "dry_run": outcome.dry_run,
                "conflict": outcome.conflict,
                "errors": outcome.errors,
            }
            for tick in ticks
            for outcome in tick
        ],
    }
