"""What one demo run does, and the one queue it drives."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from queue_autoscale.config import Profile, QueueConfig, parse_queue


@dataclass(frozen=True)
class DemoOptions:
    """What one demo run does (times in seconds, rates in jobs/s)."""

    duration_seconds: float = 120.0
    profile: Profile = Profile.BALANCED
    dry_run: bool = False
    output: Path = Path("demo-output")
    interval_seconds: float = 5.0
    """Seconds between evaluate ticks (the deployed default is 15)."""
    provisioning_seconds: float = 10.0
    """A new worker process starts this long after desiredCount rose (ECS takes ~60 s)."""
    quiet_rate: float = 2.0
    spike_factor: float = 5.0
    mean_job_seconds: float = 0.5
    drain_seconds: float = 20.0
    """After the producer stops, wait at most this long for the queue to empty."""
    report: bool = True
    """Build the Spark SLA report from the downloaded archive at the end."""
    endpoint_url: str | None = None
    """Use this endpoint instead of starting the embedded one."""
    seed: int = 7
    max_workers: int = 30
    """Worker processes are capped here (a bursty profile may ask for 100 workers); the cap
    counts as ECS running fewer tasks than desired."""
    worker_drain_seconds: float = 10.0
    """A stopped worker's drain deadline (the example task definition's stopTimeout is 30)."""
    worker_prefetch: int = 1
    """Messages each worker holds beyond the one it runs (returned at once on a drain)."""
    live: bool = True
    """Show the live table on a terminal (one line per tick otherwise; off in tests)."""

    def rate_at(self, elapsed: float) -> float:
        """Producer rate at `elapsed` seconds: quiet, spike (middle third), quiet."""
        return self.quiet_rate * (self.spike_factor if self.phase_at(elapsed) == "spike" else 1.0)

    def phase_at(self, elapsed: float) -> str:
        """'quiet', 'spike' or 'quiet again' by thirds of the duration."""
        third = self.duration_seconds / 3.0
        if elapsed < third:
            return "quiet"
        return "spike" if elapsed < 2 * third else "quiet again"


def demo_queue(options: DemoOptions, suffix: str = "") -> QueueConfig:
    """The one queue the demo drives: the chosen profile with times scaled to the demo."""
    return parse_queue(
        {
            "queue": f"demo-jobs{suffix}",
            "dlq": f"demo-jobs{suffix}-dlq",
            "cluster": f"demo{suffix}",
            "service": f"demo-workers{suffix}",
            "profile": options.profile.value,
            "provisioning_lead_seconds": options.provisioning_seconds,
            "expected_job_seconds": options.mean_job_seconds,
            "dry_run": options.dry_run,
        }
    )
