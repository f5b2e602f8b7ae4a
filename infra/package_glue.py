"""Zip what the Spark jobs import, for Glue's --extra-py-files and EMR Serverless --py-files.

The zip holds the `glue_jobs` package and the pieces of `queue_autoscale` it imports (config,
core, the DynamoDB adapter with its STATE codec, the config store adapter, client construction
and the error module), with fixed timestamps so the same sources give the same bytes. The job
scripts themselves (glue_jobs/daily.py on Glue; sla_report.py and trend_fit.py under
spark-submit) are uploaded separately as the Glue ScriptLocation / EMR entryPoint; they are also
in the zip.

    python infra/package_glue.py [--out build/glue/glue_jobs.zip]

Glue 5.0 has boto3, pandas, numpy, pyarrow and matplotlib; pydantic (the config parser) and
aws-lambda-powertools (the config store's reader) come from `--additional-python-modules`.
"""

from __future__ import annotations

import argparse
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "build" / "glue" / "glue_jobs.zip"
FIXED_TIME = (2020, 1, 1, 0, 0, 0)
SOURCES: list[tuple[Path, str]] = [
    (ROOT / "glue_jobs", "glue_jobs"),
    (ROOT / "functions" / "queue_autoscale" / "__init__.py", "queue_autoscale/__init__.py"),
    (ROOT / "functions" / "queue_autoscale" / "config.py", "queue_autoscale/config.py"),
    (ROOT / "functions" / "queue_autoscale" / "constants.py", "queue_autoscale/constants.py"),
    (ROOT / "functions" / "queue_autoscale" / "validation.py", "queue_autoscale/validation.py"),
    (ROOT / "functions" / "queue_autoscale" / "core", "queue_autoscale/core"),
    (
        ROOT / "functions" / "queue_autoscale" / "adapters" / "__init__.py",
        "queue_autoscale/adapters/__init__.py",
    ),
    (
        ROOT / "functions" / "queue_autoscale" / "adapters" / "errors.py",
        "queue_autoscale/adapters/errors.py",
    ),
    (
        ROOT / "functions" / "queue_autoscale" / "adapters" / "dynamodb.py",
        "queue_autoscale/adapters/dynamodb.py",
    ),
    (
        ROOT / "functions" / "queue_autoscale" / "adapters" / "state_codec.py",
        "queue_autoscale/adapters/state_codec.py",
    ),
    (
        ROOT / "functions" / "queue_autoscale" / "adapters" / "aws.py",
        "queue_autoscale/adapters/aws.py",
    ),
    (
        ROOT / "functions" / "queue_autoscale" / "adapters" / "config_store.py",
        "queue_autoscale/adapters/config_store.py",
    ),
]


def files() -> Iterator[tuple[Path, str]]:
    """(source file, name in the zip) for every .py file to ship, sorted by name."""
    found: list[tuple[Path, str]] = []
    for source, name in SOURCES:
        if source.is_dir():
            found += [
                (path, f"{name}/{path.relative_to(source).as_posix()}")
                for path in source.rglob("*.py")
                if "__pycache__" not in path.parts
            ]
        elif source.is_file():
            found.append((source, name))
        else:
            raise FileNotFoundError(f"{source} is missing: cannot package the Spark jobs")
    yield from sorted(found, key=lambda pair: pair[1])


def build(out: Path) -> Path:
    """Write the zip to `out` and return it."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path, name in files():
            info = zipfile.ZipInfo(name, date_time=FIXED_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, path.read_bytes())
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="zip to write")
    args = parser.parse_args(argv)
    try:
        out = build(args.out)
    except OSError as error:  # --out a folder, a file where its folder should be, ...
        where = f" ({error.filename})" if str(error.filename) != str(args.out) else ""
        parser.error(f"--out {args.out}: {error.strerror or error}{where}")
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
