"""How often a tick changes what the next tick reads from the STATE item, and the item's size.

The evaluate tick writes each queue's STATE item (a conditional PutItem, one write unit per KB
begun) every tick. A write could be skipped only where the tick changed nothing a later tick
reads. This runs the controller's default policy (predictive; `--policy` names another) in the
simulator at the production interval (the default) and compares each tick's state with the one
before it:

- a new sample whose values (arrival rate, visible, raw target, DLQ depth) differ from the last
  one: the trend, onset, stabilization and drain terms read them;
- any other field changed but the SLA loop's clock (`realized_through`): scaling times, bursts,
  the pending orders, the decayed sums of the SLA loop;
- only the clock moved: the ticks a write could skip if every reader took a missing sample as
  the last one repeated (none does today).

It also sizes the item the controller writes (`state_to_dict` plus shard, tick time, version and
the last published headline, as the adapter's `state_item` makes it: the samples packed; times as
epoch seconds) by DynamoDB's rules (`item_bytes`).

    nice -n 10 .venv/bin/python benchmarks/state_writes.py [--nasa PATH] [--policy NAME]

Writes benchmarks/results/state_writes.md.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass, fields, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "functions"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import numpy as np  # noqa: E402
from _report import add_policy_option, header, policy_words, write  # noqa: E402

from queue_autoscale.adapters.dynamodb import item_bytes, state_item  # noqa: E402
from queue_autoscale.core import ControllerState, state_to_dict  # noqa: E402
from queue_autoscale.sim import policies  # noqa: E402
from queue_autoscale.sim.arrivals import Counts, read_trace, scenario  # noqa: E402
from queue_autoscale.sim.engine import FleetView  # noqa: E402
from queue_autoscale.sim.frontier import WINDOW_SECONDS, sweep_window  # noqa: E402
from queue_autoscale.sim.runner import RunSpec, compare  # noqa: E402

EPOCH = 1_796_000_000.123457
"""Added to the simulator's times: production's `now` is an epoch second with microseconds,
whose 17 digits are what DynamoDB sizes."""
QUEUE = "orders-" + "x" * 20
"""A 26-character queue name (in the key and the item's `queue`)."""
NASA = ROOT.parent / "shared" / "traces" / "nasa-1995-per-second.tbz2"
_TIMES = (
    "last_scale_up_at",
    "last_scale_down_at",
    "unmet_since",
    "last_breach_at",
    "surge_at",
)
_FIELDS = tuple(
    f.name for f in fields(ControllerState) if f.name not in ("samples", "realized_through")
)
"""Fields compared besides the samples; the SLA loop's clock moves every tick."""


@dataclass
class Tally:
    """Per run: ticks, and how many changed what."""

    ticks: int = 0
    sample: int = 0
    other: int = 0
    clock_only: int = 0
    max_bytes: int = 0
    units: int = 0


def _values(state: ControllerState) -> tuple[float, int, int, int] | None:
    last = state.samples[-1] if state.samples else None
    if last is None:
        return None
    return (last.arrival_rate, last.visible, last.raw_target, last.dlq_depth)


def _epoch(state: ControllerState) -> ControllerState:
    """The state with every time moved to epoch seconds, as production stores it."""
    shift = {
        name: getattr(state, name) + EPOCH for name in _TIMES if getattr(state, name) is not None
    }
    return replace(
        state,
        samples=tuple(replace(s, at=s.at + EPOCH) for s in state.samples),
        realized_through=None
        if state.realized_through is None
        else float(math.floor(state.realized_through + EPOCH)),
        bursts=tuple(b._replace(at=b.at + EPOCH) for b in state.bursts),
        burst_ends=tuple(at + EPOCH for at in state.burst_ends),
        orders=tuple(o._replace(at=o.at + EPOCH) for o in state.orders),
        **shift,
    )


def item_size(state: ControllerState, now: float, version: int) -> int:
    """The STATE item's bytes as the controller writes it (controller/tick.py)."""
    named = replace(_epoch(state), queue=QUEUE)
    document = {**state_to_dict(named), "shard": "0/1", "ticked_at": now + EPOCH}
    document["version"] = version
    headline = [state.last_set_desired or 0, "hold", True, False, False, "NORMAL", False]
    document["announced"] = headline
    return item_bytes(state_item(QUEUE, document))


def run(label: str, counts: Counts, spec: RunSpec, policy: str) -> Tally:
    """`policy` on `counts`, every tick's state compared with the one before."""
    tally = Tally()
    original = policies.CorePolicy.decide

    def decide(self: policies.CorePolicy, view: FleetView) -> int:
        before = self.state
        target = original(self, view)
        after = self.state
        tally.ticks += 1
        new_sample = _values(after) != _values(before)
        other = any(getattr(before, n) != getattr(after, n) for n in _FIELDS)
        tally.sample += new_sample
        tally.other += other
        tally.clock_only += not (new_sample or other)
        size = item_size(after, float(view.now), tally.ticks)
        tally.max_bytes = max(tally.max_bytes, size)
        tally.units += math.ceil(size / 1024)
        return target

    policies.CorePolicy.decide = decide  # type: ignore[method-assign]
    try:
        compare(label, counts, [policy], spec)
    finally:
        policies.CorePolicy.decide = original  # type: ignore[method-assign]
    return tally


def poisson(rate: float, seconds: int) -> Counts:
    """Per-second Poisson arrivals at `rate` jobs/s (seed 0)."""
    return np.random.default_rng(0).poisson(rate, seconds).astype(np.int64)


POISSON_RATES: tuple[float, ...] = (0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0)
"""Jobs/s of the Poisson sweep that bills the stack's per-rate shares (`operator.cost_inputs`)."""


def poisson_sweep() -> list[tuple[float, Counts]]:
    """(jobs/s, 2 h of per-second Poisson arrivals) at each of POISSON_RATES."""
    return [(rate, poisson(rate, 7200)) for rate in POISSON_RATES]


def workloads(nasa: Path) -> list[tuple[str, Counts]]:
    """The runs these benchmarks compare: idle, the cost model's rate, steady, bursty and the
    NASA trace's bench window (when `nasa` is there)."""
    runs: list[tuple[str, Counts]] = [
        ("idle (0 jobs/s, 2 h)", poisson(0.0, 7200)),
        ("0.1 jobs/s Poisson, 2 h (the cost model's 0.3 events/s)", poisson(0.1, 7200)),
        ("steady (20 jobs/s, 2 h)", scenario("steady").counts()),
        ("bursty (40 / 2 jobs/s on/off, 2 h)", scenario("bursty").counts()),
    ]
    if nasa.is_file():
        day = read_trace(nasa, scale=10, start=1_036_800, length=86_400)
        runs.append(("NASA x10, the bench's 4 h window", sweep_window(day, WINDOW_SECONDS)[0]))
    return runs


def _reading(busy: Tally, sweep: list[tuple[float, Tally]]) -> str:
    """The tables in words: `busy` is the 0.1 jobs/s run; the sizes from the Poisson rows."""
    within = [rate for rate, t in sweep if t.max_bytes <= 1024]
    beyond = [(rate, t) for rate, t in sweep if t.max_bytes > 1024]
    sizes = [t.max_bytes for _, t in sweep]
    size = (
        f"With the samples packed (`adapters.state_codec`) the largest item at the Poisson rates "
        f"is {min(sizes):,} to {max(sizes):,} bytes: "
    )
    if within:
        size += f"up to {max(within):g} jobs/s within 1 KB, one write unit a tick; "
    if beyond:
        units = [t.units / t.ticks for _, t in beyond]
        size += (
            f"from {beyond[0][0]:g} jobs/s its samples take it past 1 KB on some ticks "
            f"({min(units):.2f} to {max(units):.2f} write units a tick), "
        )
    return (
        "A busy queue's tick changes the sample on most ticks and the rest of the state (the "
        "SLA loop's decayed sums, bursts, orders) on nearly every one (the 0.1 jobs/s row: "
        f"{busy.sample / busy.ticks:.1%} and {busy.other / busy.ticks:.1%}): the STATE item is "
        "written every tick. An idle queue's tick moves only the clock (its sample repeats; its "
        "decayed sums stay 0 here, but decay every tick for a queue that was busy before): a "
        "write could be skipped there only if every reader of the samples (the trend fit, the "
        "onset and recurrence extremes, the stabilization windows, seed-hybrid's last five "
        "depths) took a gap as the last sample repeated, which none does. "
        + size
        + "which the bill counts by rate (above). Each character of the queue name adds 2 bytes "
        "(the key and `queue`)."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nasa", type=Path, default=NASA, help="the NASA per-second trace")
    parser.add_argument("--out", default="state_writes.md")
    add_policy_option(parser)
    args = parser.parse_args()
    spec = RunSpec(sla_seconds=30.0)
    runs = workloads(args.nasa)
    out = [
        header("What a tick changes in the STATE item, and the item's size"),
        f"{policy_words(args.policy)}, SLA 30 s at p99.9, interval {spec.interval_seconds} s, "
        "workers land 60 s "
        "after the order; each tick's "
        "state compared with the one before it (warm-up ticks included). Item bytes by "
        "DynamoDB's sizing rules (`adapters.dynamodb.item_bytes`), times as epoch seconds with "
        "microseconds, a 26-character queue name.",
        "",
        "| workload | ticks | new sample values | other fields changed | only the clock moved | "
        "largest item bytes | write units a tick (mean) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    tallies = []
    for label, counts in runs:
        t = run(label, counts, spec, args.policy)
        tallies.append(t)
        out.append(
            f"| {label} | {t.ticks:,} | {t.sample / t.ticks:.1%} | {t.other / t.ticks:.1%} | "
            f"{t.clock_only / t.ticks:.1%} | {t.max_bytes:,} | "
            f"{t.units / t.ticks:.2f} |"
        )
        print(out[-1], flush=True)
    out += [
        "",
        "## By rate (Poisson, 2 h each)",
        "",
        "What `queue-autoscale cost` bills (`operator.cost_inputs.STATE_WRITE_UNITS`): the write "
        "units a tick at the queue's rate, linear between these rows.",
        "",
        "| jobs/s | events/s | ticks | largest item bytes | write units a tick (mean) |",
        "|---:|---:|---:|---:|---:|",
    ]
    sweep = []
    for rate, counts in poisson_sweep():
        t = run(f"poisson {rate:g}", counts, spec, args.policy)
        sweep.append((rate, t))
        out.append(
            f"| {rate:g} | {3 * rate:g} | {t.ticks:,} | {t.max_bytes:,} | {t.units / t.ticks:.2f} |"
        )
        print(out[-1], flush=True)
    out += ["", "## What it says", "", _reading(tallies[1], sweep)]
    write(args.out, "\n".join(out))


if __name__ == "__main__":
    main()
