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


# ------------------------------------------------------------------ the queue config


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch):
    """SSM and S3 on moto (in-process), holding the stack's config store parameter."""
    import boto3
    from moto import mock_aws

    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.setenv(key, "testing")
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        ssm = boto3.client("ssm", region_name="us-east-1")
        s3 = boto3.client("s3", region_name="us-east-1")
        yield ssm, s3


def test_the_job_reads_the_config_store_by_parameter_name(store) -> None:
    from glue_jobs.options import queue_config_document

    ssm, s3 = store
    ssm.put_parameter(Name="/stack/queues-config", Value='{"queue": "orders"}', Type="String")
    values = {"config_parameter": "/stack/queues-config", "config": None, "queues_config": None}
    assert queue_config_document(values, ssm, s3) == ('{"queue": "orders"}', "/stack/queues-config")


def test_the_job_follows_the_stores_s3_pointer(store) -> None:
    from glue_jobs.options import queue_config_document

    ssm, s3 = store
    s3.create_bucket(Bucket="stack-archive")
    s3.put_object(Bucket="stack-archive", Key="config/q.json", Body=b'[{"queue": "big"}]')
    ssm.put_parameter(Name="/s/q", Value="s3://stack-archive/config/q.json", Type="String")
    text, source = queue_config_document({"config_parameter": "/s/q"}, ssm, s3) or ("", "")
    assert (text, source) == (
        '[{"queue": "big"}]',
        "s3://stack-archive/config/q.json (named by /s/q)",
    )


def test_an_unreadable_store_stops_the_job_naming_it(store) -> None:
    from glue_jobs.options import queue_config_document

    ssm, s3 = store
    with pytest.raises(
        ValueError, match="--config_parameter /missing: ssm:GetParameter on /missing"
    ):
        queue_config_document({"config_parameter": "/missing"}, ssm, s3)


def test_a_local_config_file_and_the_text_still_work(tmp_path) -> None:
    from glue_jobs.options import queue_config_document

    path = tmp_path / "queues.json"
    path.write_text('{"queue": "local"}', encoding="utf-8")
    assert queue_config_document({"config": str(path)}) == ('{"queue": "local"}', str(path))
    assert queue_config_document({"queues_config": "[]"}) == ("[]", "--queues_config")
    assert queue_config_document({"config": None}) is None
    with pytest.raises(ValueError, match="cannot read"):
        queue_config_document({"config": str(tmp_path / "none.json")})
    with pytest.raises(
        ValueError, match="give one of --config_parameter, --config, --queues_config"
    ):
        queue_config_document({"config": str(path), "queues_config": "[]"})
