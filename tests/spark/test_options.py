"""Job options: the same names through Glue's getResolvedOptions or argparse."""

from __future__ import annotations

import sys
import types

import pytest

from glue_jobs.options import as_int, resolve_options

REQUIRED = ("input_uri", "output_uri")
OPTIONAL = {"table_name": None, "holdout_days": "7"}


def test_locally_argparse_reads_required_and_defaults() -> None:
    argv = ["trend_fit.py", "--input_uri", "/a", "--output_uri", "/b", "--holdout_days", "3"]
    assert resolve_options(argv, REQUIRED, OPTIONAL) == {
        "input_uri": "/a",
        "output_uri": "/b",
        "table_name": None,
        "holdout_days": "3",
    }


def test_locally_a_missing_required_option_stops_with_its_name(capsys) -> None:
    with pytest.raises(SystemExit):
        resolve_options(["trend_fit.py", "--input_uri", "/a"], REQUIRED, OPTIONAL)
    assert "--output_uri" in capsys.readouterr().err


def test_on_glue_only_the_options_given_are_asked_for(monkeypatch) -> None:
    asked: list[list[str]] = []

    def get_resolved_options(argv: list[str], names: list[str]) -> dict[str, str]:
        asked.append(names)
        return {name: argv[argv.index(f"--{name}") + 1] for name in names}

    glue = types.ModuleType("awsglue")
    utils = types.ModuleType("awsglue.utils")
    utils.getResolvedOptions = get_resolved_options  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "awsglue", glue)
    monkeypatch.setitem(sys.modules, "awsglue.utils", utils)
    argv = ["script", "--JOB_ID", "j", "--input_uri", "s3://a", "--output_uri", "s3://b"]
    argv += ["--table_name", "load"]
    values = resolve_options(argv, REQUIRED, OPTIONAL)
    assert asked == [["input_uri", "output_uri", "table_name"]]
    assert values == {
        "input_uri": "s3://a",
        "output_uri": "s3://b",
        "table_name": "load",
        "holdout_days": "7",
    }


def test_as_int_names_the_option_and_value() -> None:
    assert as_int({"holdout_days": "14"}, "holdout_days", 7) == 14
    assert as_int({"holdout_days": None}, "holdout_days", 7) == 7
    with pytest.raises(ValueError, match=r"--holdout_days = 'two' is not an integer"):
        as_int({"holdout_days": "two"}, "holdout_days", 7)
