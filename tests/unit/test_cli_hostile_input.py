"""Hostile input on the user-facing commands: one error line naming what is wrong, exit 2
(64 for `worker`, sysexits' usage error), never a traceback, and no work started first."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from botocore.exceptions import EndpointConnectionError
from typer.testing import CliRunner

import glue_jobs.session
from queue_autoscale.cli import app, main
from queue_autoscale.core import DEFAULT_POLICY
from queue_autoscale.demo import run as demo_run
from queue_autoscale.sim import commands as sim_commands
from queue_autoscale.worker import command as worker_command

runner = CliRunner()


def run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stderr


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    return lines[0]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param(
            "{bad",
            "error: --config {path}: invalid JSON at line 1 column 2: "
            "Expecting property name enclosed in double quotes",
            id="bad-json",
        ),
        pytest.param(
            '{"queue": "q", "percentile": 1.5}',
            "error: queue 'q': field 'percentile' = 1.5: Input should be less than 1",
            id="percentile-1.5",
        ),
        pytest.param(
            None, "error: --config {path}: cannot read: No such file or directory", id="missing"
        ),
    ],
)
def test_report_checks_its_config_before_starting_spark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: str | None, message: str
) -> None:
    # GIVEN an archive folder and a config file that cannot be used
    (tmp_path / "archive" / "events").mkdir(parents=True)
    config = tmp_path / "queues.json"
    if content is not None:
        config.write_text(content, encoding="utf-8")

    def no_spark(name: str) -> None:
        raise AssertionError("Spark started before the config was checked")

    monkeypatch.setattr(glue_jobs.session, "local_spark", no_spark)

    # WHEN the report is asked for
    code, err = run(
        "report",
        "--archive",
        str(tmp_path / "archive"),
        "--out",
        str(tmp_path / "out"),
        "--config",
        str(config),
    )

    # THEN one line names the option and the file as given (not the Glue job's
    # --queues_config), exit 2, before any Spark
    assert code == 2
    assert one_line(err) == message.format(path=config)


def test_report_checks_its_interval_before_starting_spark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN an interval that does not divide a day (the job said so after Spark had started,
    # naming its own interval_seconds)
    (tmp_path / "archive" / "events").mkdir(parents=True)

    def no_spark(name: str) -> None:
        raise AssertionError("Spark started before the interval was checked")

    monkeypatch.setattr(glue_jobs.session, "local_spark", no_spark)

    code, err = run(
        "report", "--archive", str(tmp_path / "archive"), "--out", str(tmp_path / "out"),
        "--interval", "7",
    )  # fmt: skip

    assert code == 2
    assert one_line(err) == (
        "error: --interval 7: interval_seconds must be > 0 and divide a day (86,400 s), got 7"
    )


def test_report_refuses_an_out_that_is_a_file_before_starting_spark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN --out naming a file (Spark started, then a 117-line Py4JJavaError:
    # ParentNotDirectoryException)
    (tmp_path / "archive" / "events").mkdir(parents=True)
    out = tmp_path / "notes.txt"
    out.write_text("mine", encoding="utf-8")

    def no_spark(name: str) -> None:
        raise AssertionError("Spark started before --out was checked")

    monkeypatch.setattr(glue_jobs.session, "local_spark", no_spark)

    code, err = run("report", "--archive", str(tmp_path / "archive"), "--out", str(out))

    assert code == 2
    assert one_line(err) == f"error: --out {out}: a file, not a folder"
    assert out.read_text(encoding="utf-8") == "mine"


def test_a_report_error_is_the_last_line_after_the_progress_bar(tmp_path: Path) -> None:
    # GIVEN an archive without events/, found once the progress bar is up (its last frame
    # was drawn below the error)
    (tmp_path / "archive").mkdir()

    code, err = run("report", "--archive", str(tmp_path / "archive"), "--out", "s3://b/r")

    assert code == 2
    assert err.strip().splitlines()[-1] == (
        f"error: ValueError: --archive {tmp_path / 'archive'}: no events/ folder in it"
    )


@pytest.mark.parametrize(
    ("archive", "out", "message"),
    [
        pytest.param(
            "s3://archive-bucket/a",
            "s3://",
            "error: --out: 's3://' is not an s3://bucket[/prefix] URI",
            id="out",
        ),
        pytest.param(
            "s3:///a",
            "s3://b/r",
            "error: --archive: 's3:///a' is not an s3://bucket[/prefix] URI",
            id="archive",
        ),
    ],
)
def test_report_checks_its_s3_uris_before_reading_anything(
    monkeypatch: pytest.MonkeyPatch, archive: str, out: str, message: str
) -> None:
    # GIVEN an s3:// URI without a bucket (--out's was found after the whole archive had
    # been downloaded, and neither error named its option)
    def no_s3(service: str) -> None:
        raise AssertionError("S3 was used before the URIs were checked")

    monkeypatch.setattr("queue_autoscale.operator.commands.make_client", no_s3)

    code, err = run("report", "--archive", archive, "--out", out)

    assert code == 2
    assert one_line(err) == message


def test_worker_names_every_bad_setting_on_one_line() -> None:
    # GIVEN settings out of range (pydantic printed four lines and a URL per field)
    code, err = run(
        "worker",
        "--queue-url",
        "http://127.0.0.1:1/000000000000/jobs",
        "--job",
        "json:dumps",
        "--concurrency",
        "0",
        "--drain-seconds",
        "-1",
    )

    # THEN one line names each setting, the value and the bound; exit 64 (usage)
    assert code == 64
    assert one_line(err) == (
        "worker: field 'concurrency' = 0: Input should be greater than or equal to 1; "
        "field 'drain_seconds' = -1.0: Input should be greater than 0"
    )


@pytest.mark.parametrize(
    ("option", "field"),
    [
        pytest.param("--job-timeout", "job_timeout_seconds", id="job-timeout"),
        pytest.param("--retry-base", "retry_base_seconds", id="retry-base"),
    ],
)
def test_worker_refuses_an_infinite_time(option: str, field: str) -> None:
    # GIVEN an infinite time (--job-timeout inf passed, then ECS protection's minutes
    # overflowed: OverflowError: cannot convert float infinity to integer)
    code, err = run(
        "worker", "--queue-url", "http://127.0.0.1:1/0/q", "--job", "json:dumps", option, "inf"
    )

    # THEN exit 64 and one line naming the setting
    assert code == 64
    assert one_line(err) == f"worker: field {field!r} = Infinity: Input should be a finite number"


def test_worker_shows_a_bad_text_setting_as_the_events_validator_does() -> None:
    # GIVEN an empty queue URL (a text value: JSON's quotes, the same formatter as an event's)
    code, err = run("worker", "--queue-url", "", "--job", "json:dumps")

    # THEN exit 64 and one line, as validation.describe_error words it
    assert code == 64
    assert one_line(err) == (
        "worker: field 'queue_url' = \"\": String should have at least 1 character"
    )


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["status", "--stack", "nope"], id="status"),
        pytest.param(["explain", "--stack", "nope", "--queue", "q"], id="explain-stack"),
        pytest.param(["validate-config", "--parameter", "/nope/queues-config"], id="parameter"),
    ],
)
def test_no_aws_region_is_one_line_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    # GIVEN no region anywhere boto3 looks (AWS_REGION alone is not read outside Lambda)
    for name in ("AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/aws-config")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
    monkeypatch.setattr(sys, "argv", ["queue-autoscale", *args])

    # WHEN the command runs as the console script does
    with pytest.raises(SystemExit) as exited:
        main()

    # THEN it says what to set, in one line (it was botocore's NoRegionError traceback)
    assert exited.value.code == 2
    assert one_line(capsys.readouterr().err) == (
        f"error: {args[0]}: no AWS region: set AWS_DEFAULT_REGION (or a region in the "
        "AWS_PROFILE's config)"
    )


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        pytest.param("counts.tbz2", "not a bzip2 file", id="tbz2"),
        pytest.param("counts.tar.gz", "not a gzip file", id="tar.gz"),
        pytest.param("counts.gz", "Not a gzipped file (b'1 ')", id="gz"),
    ],
)
def test_simulate_names_one_reason_for_a_trace_archive_it_cannot_open(
    tmp_path: Path, name: str, reason: str
) -> None:
    # GIVEN plain counts behind an archive's name (tarfile tried every compression and
    # listed each failure, five lines)
    trace = tmp_path / name
    trace.write_text("1 2 3\n", encoding="utf-8")

    # WHEN it is simulated
    code, err = run("simulate", "--trace", str(trace), "--policy", DEFAULT_POLICY)

    # THEN one line gives the file and the reason for the compression its name says
    assert code == 2
    assert one_line(err) == f"error: {trace}: cannot read trace: {reason}"


def test_bench_with_a_missing_trace_it_was_given_stops_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a --trace that does not exist (the bench ran every workload without the NASA day
    # and exit 0, as it does when the default trace is absent)
    def no_bench(**_: object) -> Path:
        raise AssertionError("the bench ran")

    monkeypatch.setattr(sim_commands, "run_bench", no_bench)
    missing = tmp_path / "nasa.tbz2"

    # WHEN the bench is asked for
    code, err = run("bench", "--quick", "--trace", str(missing))

    # THEN it says so in one line, exit 2, before any run
    assert code == 2
    assert one_line(err) == f"error: trace file not found: {missing}"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ["--percentile", "1.5"],
            "error: --percentile = 1.5: out of range (must be between 0 and 1, exclusive)",
            id="percentile-1.5",
        ),
        pytest.param(
            ["--sla", "-5"], "error: --sla = -5.0: out of range (must be > 0 s)", id="sla-neg"
        ),
        pytest.param(
            ["--sla", "0"], "error: --sla = 0.0: out of range (must be > 0 s)", id="sla-zero"
        ),
        pytest.param(
            ["--prefetch", "20", "--concurrency", "30"],
            "error: --prefetch = 20: out of range (must be >= --concurrency (30))",
            id="prefetch-below-concurrency",
        ),
    ],
)
def test_simulate_says_the_bound_an_option_broke(args: list[str], message: str) -> None:
    # 'prefetch = 20: out of range' did not say that the bound was the concurrency
    code, err = run("simulate", "--scenario", "steady", "--policy", DEFAULT_POLICY, *args)
    assert code == 2
    assert one_line(err) == message


def test_simulate_bounds_a_scenarios_length_in_its_own_words() -> None:
    # GIVEN a scenario length beyond anything numpy can draw ('simulate: ValueError: Maximum
    # allowed size exceeded'); a month is the bound, checked before any array is made
    code, err = run(
        "simulate", "--scenario", "spike", "--policy", "static", "--length", str(10**20)
    )
    assert code == 2
    assert one_line(err) == (
        "error: length = 100,000,000,000,000,000,000: a scenario runs at most 2,678,400 s (31 days)"
    )


@pytest.mark.parametrize(
    ("option", "where", "reason"),
    [
        pytest.param("--json", "", "it is a folder", id="json-at-a-folder"),
        pytest.param("--decisions", "trace.txt/d.jsonl", "a part of its folder is a file",
                     id="decisions-in-a-file"),
        pytest.param("--plot", "trace.txt/p.png", "a part of its folder is a file",
                     id="plot-in-a-file"),
    ],
)  # fmt: skip
def test_simulate_checks_where_it_will_write_before_it_runs(
    tmp_path: Path, option: str, where: str, reason: str
) -> None:
    # GIVEN an output path that cannot be written (the run finished, then a traceback:
    # IsADirectoryError, FileExistsError; hours lost on a long trace)
    trace = tmp_path / "trace.txt"
    trace.write_text("1\n2\n3\n", encoding="utf-8")
    target = tmp_path / where

    # WHEN it is simulated
    result = runner.invoke(
        app, ["simulate", "--trace", str(trace), "--policy", "static", option, str(target)]
    )

    # THEN one line names the option, the path and why, exit 2, and nothing ran
    assert result.exit_code == 2
    assert one_line(result.stderr) == f"error: {option} {target}: cannot write: {reason}"
    assert "static" not in result.stdout


@pytest.mark.parametrize("where", ["folder", "/dev/null"], ids=["a-folder", "a-device"])
def test_simulate_says_a_trace_that_is_no_file_is_no_file(tmp_path: Path, where: str) -> None:
    # GIVEN a trace path that exists but is not a file ('trace file not found: /tmp/x')
    trace = tmp_path if where == "folder" else Path(where)

    code, err = run("simulate", "--trace", str(trace), "--policy", "static")

    assert code == 2
    assert one_line(err) == f"error: trace {trace}: not a file (a folder or a device)"


def test_simulate_plots_at_the_path_given(tmp_path: Path) -> None:
    # GIVEN --plot without '.png' (matplotlib appended '.png' and the command named the path
    # it did not write)
    trace = tmp_path / "trace.txt"
    trace.write_text("1\n2\n3\n", encoding="utf-8")
    plot = tmp_path / "run-plot"

    code, _ = run("simulate", "--trace", str(trace), "--policy", "static", "--plot", str(plot))

    # THEN the PNG is where it was asked for, and only there
    assert code == 0
    assert plot.read_bytes().startswith(b"\x89PNG")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["run-plot", "trace.txt"]


def test_an_aws_error_no_command_caught_is_one_line_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN an endpoint that does not answer (`demo --endpoint-url http://127.0.0.1:1` ended
    # in botocore's EndpointConnectionError traceback, exit 1)
    def unreachable(options: object) -> None:
        raise EndpointConnectionError(endpoint_url="http://127.0.0.1:1/")

    monkeypatch.setattr(demo_run, "run_demo", unreachable)
    monkeypatch.setattr(
        sys,
        "argv",
        ["queue-autoscale", "demo", "--endpoint-url", "http://127.0.0.1:1", "--no-report",
         "--output", str(tmp_path)],
    )  # fmt: skip

    # WHEN the command runs as the console script does
    with pytest.raises(SystemExit) as exited:
        main()

    # THEN one line names the command and the error
    assert exited.value.code == 2
    assert one_line(capsys.readouterr().err) == (
        "error: demo: EndpointConnectionError: Could not connect to the endpoint URL: "
        '"http://127.0.0.1:1/"'
    )


def test_the_worker_image_entry_point_prints_plain_tracebacks(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN `python -m queue_autoscale.worker` (the image's ENTRYPOINT) failing unexpectedly
    secret = "wJalrXUtnFEMI-not-a-real-key"

    def failing(settings: object, job: object) -> int:
        credentials = {"aws_secret_access_key": secret}  # a local, as a boto3 client holds one
        raise RuntimeError(f"boom with {len(credentials)} local")

    monkeypatch.setattr(worker_command, "run_worker", failing)
    monkeypatch.setattr(
        sys, "argv", ["worker", "--queue-url", "http://127.0.0.1:1/0/q", "--job", "json:dumps"]
    )
    with pytest.raises(RuntimeError) as raised:
        worker_command.standalone()

    # WHEN the interpreter reports it (typer's hook decides how)
    sys.excepthook(RuntimeError, raised.value, raised.value.__traceback__)

    # THEN it is Python's own traceback, not typer.run's rich one with every frame's locals
    # (which printed the secret, and 41,556 lines over 14 s for a missing region)
    err = capsys.readouterr().err
    assert secret not in err
    assert err.startswith("Traceback (most recent call last):"), err[:200]
    assert err.rstrip().endswith("RuntimeError: boom with 1 local")


def test_an_input_too_large_for_memory_is_one_line_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a workload numpy cannot allocate (`simulate --scenario steady --length
    # 10000000000000` ended in numpy's _ArrayMemoryError traceback, exit 1); raised here
    # without allocating anything
    def too_large(*_: object) -> None:
        raise MemoryError("Unable to allocate 72.8 TiB for an array with shape (10000000000000,)")

    monkeypatch.setattr(sim_commands, "load_arrivals", too_large)
    monkeypatch.setattr(
        sys,
        "argv",
        ["queue-autoscale", "simulate", "--scenario", "steady", "--policy", DEFAULT_POLICY,
         "--length", "10000000000000"],
    )  # fmt: skip

    with pytest.raises(SystemExit) as exited:
        main()

    assert exited.value.code == 2
    assert one_line(capsys.readouterr().err) == (
        "error: simulate: MemoryError: Unable to allocate 72.8 TiB for an array with shape "
        "(10000000000000,)"
    )
