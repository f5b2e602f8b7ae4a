"""The docs site builds with `mkdocs build --strict`: a broken link, a missing anchor or a page
left out of the nav fails it, and the hooks publish the results files the pages link to."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[3]


def _build(site: Path, config: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config)]
    command += ["-d", str(site)]
    return subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def test_site_builds_strictly(tmp_path: Path) -> None:
    # GIVEN the committed docs WHEN the site is built strictly
    result = _build(tmp_path / "site", ROOT / "mkdocs.yml")
    # THEN it builds, and a results file a page links to is in it
    assert result.returncode == 0, result.stderr[-3000:]
    results = tmp_path / "site" / "benchmarks" / "results"
    assert (results / "policy_frontier" / "index.html").is_file()
    simulator = (tmp_path / "site" / "simulator" / "index.html").read_text(encoding="utf-8")
    assert 'href="../benchmarks/results/policy_quality/"' in simulator


def test_a_page_left_out_of_the_nav_fails_the_build(tmp_path: Path) -> None:
    # GIVEN the same config without one of its pages in the nav
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    text = text.replace("docs_dir: docs", f"docs_dir: {ROOT / 'docs'}")
    text = text.replace("infra/mkdocs_hooks.py", str(ROOT / "infra" / "mkdocs_hooks.py"))
    config = tmp_path / "mkdocs.yml"
    config.write_text(text.replace("  - Sources: sources.md\n", ""), encoding="utf-8")
    # WHEN it is built strictly THEN the build fails naming the page
    result = _build(tmp_path / "site", config)
    assert result.returncode != 0
    assert "sources.md" in result.stderr
