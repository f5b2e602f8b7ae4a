"""Suite-wide settings: hypothesis tolerates a loaded 2-core machine (no deadlines, no
too-slow health check); assertions, not timings, decide pass or fail."""

from __future__ import annotations

from hypothesis import HealthCheck, settings

settings.register_profile(
    "project", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.load_profile("project")
