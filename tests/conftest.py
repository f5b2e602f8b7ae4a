"""Suite-wide settings: hypothesis tolerates a loaded 2-core machine (no deadlines, no
too-slow health check); assertions, not timings, decide pass or fail.

Two profiles, chosen by HYPOTHESIS_PROFILE: `project` (the default: `make test` on a
developer's machine draws new examples each run, and keeps the failing ones in .hypothesis/)
and `ci` (set by .ci/run: the same examples every run, so a landing is never refused by one
rare draw; a developer's run that finds one turns it into a named regression test)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "project", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.register_profile("ci", settings.get_profile("project"), derandomize=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "project"))
