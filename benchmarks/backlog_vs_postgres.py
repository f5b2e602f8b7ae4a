"""reconstruct_backlog (Spark windows) against seed 004's PostgreSQL approaches, same data.

Seed 004 computes the backlog with a plpgsql loop (O(n), sequential) and a recursive CTE
(O(n^2): each step scans the working table). Both are written here from the seed's
description, generalised to several queues and to gaps (capacity x elapsed intervals). The
script starts a throwaway PostgreSQL cluster on 127.0.0.1 (initdb in a temp dir, a free port,
stopped at the end), loads the same generated intervals into it and into Spark (local[2]),
checks that all methods give identical backlogs, and prints the times.

    .venv/bin/python benchmarks/backlog_vs_postgres.py [--sizes 1000 100000 1000000]

If `initdb`/`postgres` are missing it runs `apt-get install -y postgresql` (Debian's package).
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import io
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "functions"))
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import header, write  # noqa: E402

INTERVAL_SECONDS = 60
CAPACITY = 100.0
QUEUES = 4
REPEATS = 3
CTE_LIMIT = 10_000
"""The recursive CTE runs only up to this many intervals (O(n^2); see the notes)."""
CTE_TIMEOUT_SECONDS = 300
PARAMS = {"capacity": CAPACITY, "interval_s": float(INTERVAL_SECONDS)}

PLPGSQL = """
CREATE OR REPLACE FUNCTION backlog_loop(capacity float8, interval_s float8)
RETURNS TABLE (queue text, stamp timestamp, arrivals int8, backlog float8)
LANGUAGE plpgsql AS $$
DECLARE
    r record;
    current_queue text := NULL;
    previous timestamp;
    carried float8 := 0;
    elapsed float8;
BEGIN
    FOR r IN SELECT i.queue, i.stamp, i.arrivals FROM intervals i ORDER BY i.queue, i.stamp LOOP
        IF current_queue IS DISTINCT FROM r.queue THEN
            current_queue := r.queue;
            carried := 0;
            previous := r.stamp - make_interval(secs => interval_s);
        END IF;
        elapsed := extract(epoch FROM r.stamp - previous) / interval_s;
        carried := greatest(carried + r.arrivals - capacity * elapsed, 0);
        queue := r.queue; stamp := r.stamp; arrivals := r.arrivals; backlog := carried;
        RETURN NEXT;
        previous := r.stamp;
    END LOOP;
END;
$$;
"""

# The seed's recursion: start from each queue's first row, then repeatedly join the working
# row to "the next row" of the same queue. The numbered CTE has no index, so every step scans
# it: O(n^2) like the seed's plan.
RECURSIVE_CTE = """
WITH RECURSIVE numbered AS MATERIALIZED (
    SELECT queue, stamp, arrivals,
           row_number() OVER (PARTITION BY queue ORDER BY stamp) AS rn,
           coalesce(extract(epoch FROM stamp - lag(stamp) OVER (PARTITION BY queue ORDER BY stamp))
                    / %(interval_s)s, 1) AS elapsed
    FROM intervals
), walk AS (
    SELECT queue, stamp, arrivals, rn,
           greatest(arrivals - %(capacity)s * elapsed, 0)::float8 AS backlog
    FROM numbered WHERE rn = 1
  UNION ALL
    SELECT n.queue, n.stamp, n.arrivals, n.rn,
           greatest(w.backlog + n.arrivals - %(capacity)s * n.elapsed, 0)::float8
    FROM walk w JOIN numbered n ON n.queue = w.queue AND n.rn = w.rn + 1
)
SELECT queue, stamp, arrivals, backlog FROM walk
"""


def generate(size: int, seed: int = 4) -> pd.DataFrame:
    """`size` intervals over QUEUES queues: 1-minute stamps with ~5% gaps, bursty arrivals."""
    rng = np.random.default_rng(seed + size)
    frames = []
    per_queue = np.full(QUEUES, size // QUEUES)
    per_queue[: size % QUEUES] += 1
    for index, count in enumerate(per_queue):
        steps = np.where(rng.random(count) < 0.95, 1, rng.integers(2, 6, count))
        seconds = 946_684_800 + np.cumsum(steps) * INTERVAL_SECONDS  # from 2000-01-01
        bursts = rng.random(count) < 0.08
        arrivals = np.where(bursts, rng.poisson(260, count), rng.poisson(85, count))
        frames.append(
            pd.DataFrame(
                {
                    "queue": f"q{index}",
                    "stamp": pd.to_datetime(seconds, unit="s"),
                    "arrivals": arrivals.astype("int64"),
                    "capacity": CAPACITY,
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def keyed(frame: pd.DataFrame) -> pd.Series:
    """Backlog indexed by (queue, epoch second), sorted, for exact comparison."""
    stamps = pd.to_datetime(frame["stamp"])
    if stamps.dt.tz is not None:
        stamps = stamps.dt.tz_convert("UTC").dt.tz_localize(None)
    seconds = stamps.astype("datetime64[s]").astype("int64").to_numpy()
    index = pd.MultiIndex.from_arrays([frame["queue"].astype(str).to_numpy(), seconds])
    return pd.Series(frame["backlog"].to_numpy(dtype=float), index=index).sort_index()


def identical(got: pd.Series, expected: pd.Series) -> bool:
    """Same keys and exactly the same values; prints the first differences otherwise."""
    if got.index.equals(expected.index) and np.array_equal(got.to_numpy(), expected.to_numpy()):
        return True
    both = pd.concat([got, expected], axis=1, keys=["got", "expected"])
    print("differences:\n", both[both["got"] != both["expected"]].head(10))
    return False


# --- PostgreSQL ------------------------------------------------------------------------------


def postgres_bin() -> Path:
    """The directory holding initdb/pg_ctl/postgres; installs Debian's package when missing."""

    def find() -> Path | None:
        found = shutil.which("initdb")
        if found and shutil.which("pg_ctl"):
            return Path(found).resolve().parent
        candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
        return Path(candidates[-1]).parent if candidates else None

    location = find()
    if location is None:
        sudo = [] if os.geteuid() == 0 else ["sudo"]
        print("PostgreSQL not found: apt-get install -y postgresql", flush=True)
        subprocess.run([*sudo, "apt-get", "install", "-y", "postgresql"], check=True)
        location = find()
    if location is None:
        raise SystemExit("PostgreSQL is not installed and could not be installed")
    return location


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def postgres_cluster() -> Iterator[tuple[str, str]]:
    """A temporary cluster on 127.0.0.1: yields (conninfo, server version); stopped after."""
    bindir = postgres_bin()
    workdir = Path(tempfile.mkdtemp(prefix="pg-bench-"))
    data, sockets = workdir / "data", workdir / "sock"
    sockets.mkdir()
    as_user: list[str] = []
    if os.geteuid() == 0:  # initdb refuses to run as root: use the postgres account
        shutil.chown(workdir, "postgres")
        shutil.chown(sockets, "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    port = free_port()
    subprocess.run(
        [
            *as_user,
            str(bindir / "initdb"),
            "-D",
            str(data),
            "-U",
            "bench",
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-sync",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    options = (
        f"-h 127.0.0.1 -p {port} -k {sockets} -c shared_buffers=512MB -c work_mem=256MB "
        "-c fsync=off -c synchronous_commit=off -c max_parallel_workers_per_gather=2"
    )
    pg_ctl = [*as_user, str(bindir / "pg_ctl"), "-D", str(data)]
    subprocess.run(
        [*pg_ctl, "-o", options, "-l", str(workdir / "server.log"), "-w", "start"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    try:
        version = subprocess.run(
            [str(bindir / "postgres"), "--version"], capture_output=True, text=True, check=True
        ).stdout.strip()
        yield f"host=127.0.0.1 port={port} user=bench dbname=postgres", version
    finally:
        subprocess.run(
            [*pg_ctl, "-m", "fast", "-w", "stop"], check=False, stdout=subprocess.DEVNULL
        )
        shutil.rmtree(workdir, ignore_errors=True)


def load_postgres(connection, frame: pd.DataFrame) -> None:
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE IF EXISTS intervals")
        cursor.execute("CREATE TABLE intervals (queue text, stamp timestamp, arrivals int8)")
        buffer = io.StringIO()
        frame[["queue", "stamp", "arrivals"]].to_csv(buffer, index=False, header=False)
        with cursor.copy("COPY intervals FROM STDIN WITH (FORMAT csv)") as copy:
            copy.write(buffer.getvalue())
        cursor.execute("CREATE INDEX ON intervals (queue, stamp)")
        cursor.execute("ANALYZE intervals")
        cursor.execute(PLPGSQL)
    connection.commit()


def timed_sql(connection, sql: str, params: dict[str, float] | None = None) -> float:
    """Seconds to run `sql` into a temp table (the result is materialised, not fetched)."""
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE IF EXISTS result")
        started = time.perf_counter()
        cursor.execute(f"CREATE TEMP TABLE result AS {sql}", params)
        elapsed = time.perf_counter() - started
    connection.commit()
    return elapsed


def fetch_result(connection) -> pd.DataFrame:
    with connection.cursor() as cursor:
        cursor.execute("SELECT queue, stamp, backlog FROM result")
        rows = cursor.fetchall()
    return pd.DataFrame(rows, columns=["queue", "stamp", "backlog"])


# --- Spark -----------------------------------------------------------------------------------


def spark_session():
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from glue_jobs.session import local_spark

    return local_spark(
        "backlog-benchmark",
        driver_memory="4g",
        shuffle_partitions=4,
        extra={"spark.sql.execution.arrow.pyspark.enabled": "true"},
    )


def best_of(run: Callable[[], float], repeats: int = REPEATS) -> float:
    return min(run() for _ in range(repeats))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000, 1_000_000])
    parser.add_argument("--out", default="backlog_vs_postgres.md")
    args = parser.parse_args(argv)

    import psycopg
    import pyspark

    from glue_jobs.transforms.backlog import reconstruct_backlog

    load_before = " ".join(f"{value:.1f}" for value in os.getloadavg())
    spark = spark_session()
    java = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False).stderr
    rows = []
    with postgres_cluster() as (conninfo, pg_version), psycopg.connect(conninfo) as connection:
        # Warm the JVM so the first size does not pay for class loading.
        warm = spark.createDataFrame(generate(1_000))
        reconstruct_backlog(warm, INTERVAL_SECONDS).write.format("noop").mode("overwrite").save()
        for size in args.sizes:
            frame = generate(size)
            load_postgres(connection, frame)
            loop_s = best_of(
                lambda: timed_sql(
                    connection,
                    "SELECT * FROM backlog_loop(%(capacity)s, %(interval_s)s)",
                    PARAMS,
                )
            )
            expected = keyed(fetch_result(connection))

            cte_s: float | None = None
            cte_note = f"skipped: O(n^2), > {CTE_LIMIT:,} intervals"
            if size <= CTE_LIMIT:
                with connection.cursor() as cursor:
                    cursor.execute(f"SET statement_timeout = '{CTE_TIMEOUT_SECONDS}s'")
                try:
                    cte_s = best_of(
                        lambda: timed_sql(connection, RECURSIVE_CTE, PARAMS),
                        1 if size > 1_000 else REPEATS,
                    )
                    cte_same = identical(keyed(fetch_result(connection)), expected)
                    cte_note = "identical" if cte_same else "DIFFERENT"
                    assert cte_same, "recursive CTE disagrees with the plpgsql loop"
                except psycopg.errors.QueryCanceled:
                    connection.rollback()
                    cte_note = f"did not finish in {CTE_TIMEOUT_SECONDS} s"
                with connection.cursor() as cursor:
                    cursor.execute("SET statement_timeout = 0")

            source = spark.createDataFrame(frame).cache()
            source.count()
            result = reconstruct_backlog(source, INTERVAL_SECONDS)

            def spark_run(result=result) -> float:
                started = time.perf_counter()
                result.write.format("noop").mode("overwrite").save()
                return time.perf_counter() - started

            spark_s = best_of(spark_run)
            got = keyed(result.select("queue", "stamp", "backlog").toPandas())
            same = identical(got, expected)
            assert same, "Spark windows disagree with the plpgsql loop"
            # The same data already laid out by queue and sorted by stamp (as a table
            # partitioned by queue would be read): the windows need no shuffle or sort.
            laid_out = source.repartition("queue").sortWithinPartitions("queue", "stamp").cache()
            laid_out.count()
            prepared = reconstruct_backlog(laid_out, INTERVAL_SECONDS)
            prepared_s = best_of(lambda prepared=prepared: spark_run(prepared))
            same = same and identical(
                keyed(prepared.select("queue", "stamp", "backlog").toPandas()), expected
            )
            laid_out.unpersist()
            source.unpersist()
            rows.append(
                (size, float(expected.max()), loop_s, cte_s, cte_note, spark_s, prepared_s, same)
            )
            print(f"{size:>9,} intervals: loop {loop_s:.3f} s, spark {spark_s:.3f} s", flush=True)

    lines = [
        header(
            "Backlog reconstruction: Spark window functions vs seed 004's PostgreSQL",
            ("pyspark", "psycopg", "numpy"),
        ),
        f"- also: {pg_version}; {java.splitlines()[0] if java else 'java ?'}; "
        f"pyspark {pyspark.__version__} local[2]",
        f"- load average before / after the run: {load_before} / "
        + " ".join(f"{value:.1f}" for value in os.getloadavg())
        + " (1/5/15-minute; the machine is shared with other work)",
        "",
        f"Data: {QUEUES} queues, 1-minute intervals with ~5% missing (gaps of 2-5 intervals), "
        f"Poisson arrivals (mean 85, bursts of 260 in 8% of intervals), capacity "
        f"{CAPACITY:g} per interval. Times are the best of {REPEATS} runs on warm data: "
        "PostgreSQL materialises the result into a temp table (`CREATE TEMP TABLE AS`), Spark "
        "computes every column of a cached DataFrame into the `noop` sink. Values are compared "
        "exactly (all are integers held in doubles) on every row.",
        "",
        "| intervals | max backlog | plpgsql loop, s | recursive CTE, s | Spark windows, s "
        "| Spark, input laid out by queue, s | loop / Spark | values |",
        "|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for size, peak, loop_s, cte_s, cte_note, spark_s, prepared_s, same in rows:
        cte_text = f"{cte_s:.3f} ({cte_note})" if cte_s is not None else cte_note
        lines.append(
            f"| {size:,} | {peak:,.0f} | {loop_s:.3f} | {cte_text} | {spark_s:.3f} | "
            f"{prepared_s:.3f} | {loop_s / spark_s:.2f}x | {'identical' if same else 'DIFFERENT'} |"
        )
    largest = rows[-1]
    ratio = largest[2] / largest[5]
    best_ratio = largest[2] / min(largest[5], largest[6])
    lines += [
        "",
        f"Goal: >= 10x faster than the plpgsql loop at the largest size "
        f"({largest[0]:,}): {ratio:.2f}x ({best_ratio:.2f}x with the input laid out by queue), "
        f"{'met' if ratio >= 10 else 'NOT met'}.",
        "",
        "Notes: the recursive CTE joins the working row to the next row of a numbered, "
        "unindexed CTE, so each step scans it (O(n^2), the plan seed 004 shows); it runs only "
        f"up to {CTE_LIMIT:,} intervals. The Spark plan is one shuffle by queue, a sort by "
        "stamp and two running window aggregates (sum, then min); its parallelism is bounded "
        "by the number of queues and the 2 cores.",
    ]
    measured = [(row[0], row[3]) for row in rows if row[3] is not None]
    if measured:
        size, seconds = measured[-1]
        lines.append(
            f"At O(n^2) the recursive CTE's {seconds:.2f} s at {size:,} intervals extrapolates to "
            f"~{seconds * (100_000 / size) ** 2:,.0f} s at 100,000 and "
            f"~{seconds * (1_000_000 / size) ** 2 / 3600:,.0f} h at 1,000,000."
        )
    lines.append(
        "Why the goal is missed: the plpgsql loop is O(n) and runs in one process at about a "
        "microsecond per row, with the data in shared buffers; Spark's window operators cost "
        "more per row, add a shuffle by queue and a sort (the laid-out column shows the "
        "windows alone), and on 2 local cores cannot spread the work further. What the "
        "window form buys is that it needs no stored "
        "procedure and no ordered cursor, runs in the same job as the rest of the report, and "
        "parallelises by queue across executors on Glue or EMR; on one small machine the "
        "sequential loop is the faster tool."
    )
    write(args.out, "\n".join(lines))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
