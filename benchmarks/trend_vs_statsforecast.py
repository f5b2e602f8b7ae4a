"""trend_fit's hand-written seasonal model against statsforecast (MSTL, AutoETS) by MASE.

Three hourly series of five weeks (growth x a weekly profile with 2% noise; a low-volume
queue of Poisson counts; a daily amplitude that grows and a level step in week 4). Each
forecaster is fitted on four weeks and scored on the held-out fifth by the MASE of
`glue_jobs.transforms.trend.backtest_series` (the in-sample seasonal-naive error as the
scale). statsforecast is not a project dependency: it runs in the Python given by
`--statsforecast-python` (a throwaway environment, as below), in a subprocess.

    .tools/bin/uv venv -p 3.11 /tmp/sf-venv
    .tools/bin/uv pip install -p /tmp/sf-venv/bin/python statsforecast==2.1.1
    .venv/bin/python benchmarks/trend_vs_statsforecast.py \
        --statsforecast-python /tmp/sf-venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "functions"))
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import header, write  # noqa: E402

from glue_jobs.transforms.trend import HOURS_PER_WEEK, backtest_series  # noqa: E402

MONDAY_HOUR = 20538 * 24  # epoch hour of Monday 2026-03-02 00:00 UTC
WEEKS = 5

# Runs inside the statsforecast environment: reads {"name": [rates]}, prints {"name": {...}}.
STATSFORECAST = """
import json, sys, time
import numpy as np, pandas as pd
from statsforecast import StatsForecast
from statsforecast.models import MSTL, AutoETS, SeasonalNaive
H = 168
out = {}
for name, y in json.load(sys.stdin).items():
    y = np.asarray(y)
    train, test = y[:-H], y[-H:]
    scale = np.abs(train[H:] - train[:-H]).mean()
    frame = pd.DataFrame({"unique_id": "q", "y": train,
                          "ds": pd.date_range("2026-03-02", periods=train.size, freq="h")})
    models = [MSTL(season_length=[24, 168], trend_forecaster=AutoETS(model="ZZN")),
              AutoETS(season_length=24), SeasonalNaive(season_length=168)]
    started = time.perf_counter()
    forecast = StatsForecast(models=models, freq="h").forecast(df=frame, h=H)
    seconds = time.perf_counter() - started
    out[name] = {"seconds": seconds, **{
        column: float(np.abs(test - forecast[column].to_numpy()).mean() / scale)
        for column in ("MSTL", "AutoETS", "SeasonalNaive")}}
print(json.dumps(out))
"""


def series(seed: int = 3) -> dict[str, np.ndarray]:
    """The three hourly rate series (jobs/s), WEEKS weeks from a Monday."""
    rng = np.random.default_rng(seed)
    t = np.arange(WEEKS * HOURS_PER_WEEK)
    day, hour = (t % HOURS_PER_WEEK) // 24, t % 24
    daily = np.sin(2 * np.pi * (hour - 6) / 24)
    shape = (1 + 0.6 * daily) * np.where(day >= 5, 0.5, 1.0)
    made = {
        "growth x weekly profile, 2% noise": (20 + 0.01 * (t - t.size))
        * shape
        * (1 + rng.normal(0, 0.02, t.size)),
        "low volume, Poisson counts (~20 jobs/h)": rng.poisson(20 * shape) / 3600.0,
        "daily amplitude grows, level step in week 4": (10 + 3 * (t >= 3 * HOURS_PER_WEEK))
        * (1 + (0.3 + 0.1 * t / HOURS_PER_WEEK) * daily)
        * (1 + rng.normal(0, 0.05, t.size)),
    }
    return {name: np.maximum(0.0, values) for name, values in made.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--statsforecast-python", required=True)
    parser.add_argument("--out", default="trend_vs_statsforecast.md")
    args = parser.parse_args(argv)

    data = series()
    hours = np.arange(MONDAY_HOUR, MONDAY_HOUR + WEEKS * HOURS_PER_WEEK)
    ours = {name: backtest_series(hours, rates, holdout_days=7) for name, rates in data.items()}
    done = subprocess.run(
        [args.statsforecast_python, "-c", STATSFORECAST],
        input=json.dumps({name: rates.tolist() for name, rates in data.items()}),
        capture_output=True,
        text=True,
        check=True,
        timeout=900,
    )
    theirs = json.loads(done.stdout.strip().splitlines()[-1])
    version = subprocess.run(
        [args.statsforecast_python, "-c", "import statsforecast; print(statsforecast.__version__)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()

    def verdict(mase: float, naive: float) -> str:
        return "passes" if mase < naive else "fails"

    lines = [
        header("trend_fit's seasonal model against statsforecast, by MASE", ("numpy",)),
        f"- also: statsforecast {version} (MSTL seasons 24 and 168 with an AutoETS trend; "
        "AutoETS with a 24-hour season; SeasonalNaive 168), in its own environment",
        "",
        "Five weeks of hourly rates; every forecaster fitted on four, scored on the held-out "
        "fifth by MASE (scale: the seasonal-naive error in sample). *gate* is the "
        "controller's rule: a model may raise capacity where its MASE is below "
        "seasonal-naive's. statsforecast's SeasonalNaive is an "
        "independent check of our naive column.",
        "",
        "| series | seasonal-naive (ours) | SeasonalNaive (statsforecast) | ours | gate "
        "| MSTL | gate | AutoETS | gate | statsforecast fit, s |",
        "|---|---:|---:|---:|---|---:|---|---:|---|---:|",
    ]
    for name, test in ours.items():
        assert test.mase is not None and test.naive_mase is not None
        other = theirs[name]
        naive = test.naive_mase
        lines.append(
            f"| {name} | {naive:.3f} | {other['SeasonalNaive']:.3f} | {test.mase:.3f} | "
            f"{verdict(test.mase, naive)} | {other['MSTL']:.3f} | "
            f"{verdict(other['MSTL'], naive)} | {other['AutoETS']:.3f} | "
            f"{verdict(other['AutoETS'], naive)} | {other['seconds']:.1f} |"
        )
    write(args.out, "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
