"""The reference pages in docs/reference/ are what infra/docs_reference.py generates from the
code now: a CLI option, config field, metric, alarm or event field added without regenerating
them fails here."""

from __future__ import annotations

from pathlib import Path

import pytest

from infra import docs_reference


@pytest.mark.parametrize("name", sorted(docs_reference.PAGES))
def test_committed_reference_page_is_current(name: str) -> None:
    # GIVEN the page as committed WHEN it is generated from the code again
    committed = (docs_reference.REFERENCE / name).read_text(encoding="utf-8")
    # THEN nothing differs (regenerate with: .venv/bin/python infra/docs_reference.py)
    assert committed == docs_reference.PAGES[name](), f"docs/reference/{name} is stale"


def test_check_names_a_stale_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a reference folder whose config page lacks a field the model has
    for name, build in docs_reference.PAGES.items():
        (tmp_path / name).write_text(build(), encoding="utf-8")
    page = tmp_path / "config.md"
    page.write_text(page.read_text().replace("| `dry_run` |", "| `dry_run_removed` |"))
    monkeypatch.setattr(docs_reference, "REFERENCE", tmp_path)
    monkeypatch.setattr(docs_reference, "ROOT", tmp_path.parent)
    # WHEN --check runs THEN it fails
    assert docs_reference.main(["--check"]) == 1
    # and after regeneration it passes
    assert docs_reference.main([]) == 0
    assert docs_reference.main(["--check"]) == 0


def test_pages_name_what_the_code_has() -> None:
    # GIVEN the generated pages THEN they carry real entries from each source
    assert "## simulate" in docs_reference.cli_page()
    assert "| `sla_seconds` | float | profile | `>0`, `<=43,200` |" in docs_reference.config_page()
    page = docs_reference.metrics_page()
    assert "| `MaxLoadRatio` | None | `Stack` | evaluate, each shard tick |" in page
    assert (
        "| `LoadRatio` | None | `Queue` | evaluate (a metric only with PerQueueMetrics) |" in page
    )
    assert "| `SlaBreachAlarm` | `MaxSlaUsage` | Maximum |" in page
    assert "| `pickup_ms` | int \\| None |" in docs_reference.events_page()
