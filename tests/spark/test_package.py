"""The --extra-py-files zip holds everything the job scripts import."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from infra.package_glue import build, main

CHECK = """
import sys
import glue_jobs.daily, glue_jobs.sla_report, glue_jobs.trend_fit, glue_jobs.model_store
import queue_autoscale.config, queue_autoscale.adapters.config_store
outside = sorted(
    name for name, module in sys.modules.items()
    if name.split(".")[0] in ("glue_jobs", "queue_autoscale")
    and not str(getattr(module, "__file__", "") or "").startswith(sys.argv[1])
)
print(outside)
"""


def test_zip_is_reproducible_and_self_sufficient(tmp_path: Path) -> None:
    first = build(tmp_path / "a.zip")
    second = build(tmp_path / "b.zip")
    assert first.read_bytes() == second.read_bytes()
    names = zipfile.ZipFile(first).namelist()
    assert "glue_jobs/sla_report.py" in names
    assert "glue_jobs/daily.py" in names
    assert "queue_autoscale/core/state.py" in names
    assert not any(name.startswith("queue_autoscale/handlers") for name in names)
    # every project module the jobs import is loaded from the zip, not from the checkout
    result = subprocess.run(
        [sys.executable, "-c", CHECK, str(first)],
        env={"PYTHONPATH": str(first), "PATH": "/usr/bin:/bin"},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.strip() == "[]"


def test_an_out_that_cannot_be_written_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN --out at a folder (docs/deploy.md's command; it ended in IsADirectoryError's traceback)
    with pytest.raises(SystemExit) as exited:
        main(["--out", str(tmp_path)])

    # THEN argparse's usage error naming the option, the path and what is wrong, exit 2
    assert exited.value.code == 2
    assert capsys.readouterr().err.strip().endswith(f"error: --out {tmp_path}: Is a directory")
