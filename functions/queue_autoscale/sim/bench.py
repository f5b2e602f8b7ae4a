"""The policy-quality suite: every scenario plus a day of the NASA trace, every policy.

Writes a markdown report (tables, goal check, the exact command) for benchmarks/results/.
"""

from __future__ import annotations

import platform
import subprocess
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
from rich.console import Console

from queue_autoscale.sim.arrivals import SCENARIOS, Counts, read_trace
from queue_autoscale.sim.console import run_comparison, score_table
from queue_autoscale.sim.peers import keda, target_tracking
from queue_autoscale.sim.peers.static import p99_rate
from queue_autoscale.sim.policies import POLICY_NAMES
from queue_autoscale.sim.runner import Comparison, RunSpec, compare
from queue_autoscale.sim.scores import PRICE_NOTE, Score

GOAL_COMPLIANCE = 0.999
GOAL_UTILIZATION = 0.80


def _row(cells: Sequence[object]) -> str:
    return "| " + " | ".join(str(cell) for cell in cells) + " |"


def scores_markdown(scores: Sequence[Score]) -> list[str]:
    """A markdown table, one row per policy."""
    lines = [
        _row(
            [
                "policy",
                "jobs",
                "within SLA",
                "p50 pickup s",
                "p99 pickup s",
                "max pickup s",
                "worker-s",
                "busy-s",
                "utilization",
                "actions",
                "peak workers",
                "cost $",
                "wall s",
            ]
        ),
        _row(["---"] + ["---:"] * 12),
    ]
    for s in scores:
        lines.append(
            _row(
                [
                    s.policy,
                    f"{s.jobs:,}",
                    f"{s.sla_compliance:.4%}",
                    f"{s.p50_pickup_seconds:.2f}",
                    f"{s.p99_pickup_seconds:.2f}",
                    f"{s.max_pickup_seconds:.1f}",
                    f"{s.worker_seconds:,.0f}",
                    f"{s.busy_seconds:,.0f}",
                    f"{s.utilization:.3f}",
                    s.scaling_actions,
                    s.peak_workers,
                    f"{s.cost_usd:.2f}",
                    f"{s.wall_seconds:.1f}",
                ]
            )
        )
    return lines


def goal_check(label: str, scores: Sequence[Score]) -> tuple[str, list[str]]:
    """One goal-table row and the reasons it fails, in words with numbers."""
    ours = next(s for s in scores if s.policy == "hybrid")
    peers = [s for s in scores if s.policy != "hybrid"]
    misses: list[str] = []
    if ours.sla_compliance < GOAL_COMPLIANCE:
        misses.append(f"compliance {ours.sla_compliance:.4%} < {GOAL_COMPLIANCE:.1%}")
    if ours.utilization < GOAL_UTILIZATION:
        misses.append(f"utilization {ours.utilization:.3f} < {GOAL_UTILIZATION:.2f}")
    better_compliance = [p for p in peers if p.sla_compliance > ours.sla_compliance]
    cheaper = [p for p in peers if p.worker_seconds < ours.worker_seconds]
    for p in better_compliance:
        misses.append(
            f"{p.policy} kept more jobs within SLA ({p.sla_compliance:.4%} vs "
            f"{ours.sla_compliance:.4%})"
        )
    for p in cheaper:
        misses.append(
            f"{p.policy} used fewer worker-seconds ({p.worker_seconds:,.0f} vs "
            f"{ours.worker_seconds:,.0f}, {p.worker_seconds / ours.worker_seconds - 1:+.1%}) at "
            f"{p.sla_compliance:.4%} within SLA"
        )
    row = _row(
        [
            label,
            f"{ours.sla_compliance:.4%}",
            f"{ours.utilization:.3f}",
            "yes"
            if not better_compliance
            else "no: " + ", ".join(p.policy for p in better_compliance),
            "yes" if not cheaper else "no: " + ", ".join(p.policy for p in cheaper),
        ]
    )
    return row, misses


def run_bench(
    out: Path,
    trace: Path,
    trace_scale: int,
    trace_start: int,
    trace_length: int,
    speed: bool,
    plots: Path | None,
    seed: int,
    console: Console,
    command: str,
) -> Path:
    """Run the suite and write the report; returns its path."""
    spec = RunSpec(seed=seed)
    workloads: list[tuple[str, Counts, str]] = [
        (name, s.counts(seed=seed), s.description) for name, s in SCENARIOS.items()
    ]
    trace_note = ""
    if trace.is_file():
        counts = read_trace(trace, scale=trace_scale, start=trace_start, length=trace_length)
        label = f"nasa x{trace_scale}"
        workloads.append(
            (
                label,
                counts,
                f"NASA-HTTP 1995, seconds {trace_start:,}..{trace_start + counts.size:,} "
                f"(day {trace_start // 86_400 + 1}, the busiest day), every second's count "
                f"x{trace_scale}: mean {counts.mean():.1f} jobs/s, busiest minute "
                f"{busiest_minute(counts):.1f} jobs/s",
            )
        )
    else:
        trace_note = f"The NASA trace was skipped: {trace} is absent."
    comparisons: list[tuple[str, str, Comparison, Score]] = []
    for label, counts, description in workloads:
        console.print(f"[bold]{label}[/bold]: {description}")
        comparison = run_comparison(label, counts, list(POLICY_NAMES), spec, console)
        console.print(score_table(comparison.scores, label))
        diagnostic = compare(label, counts, ["hybrid"], replace(spec, cloudwatch_age=False))
        comparisons.append((label, description, comparison, diagnostic.scores[0]))
        if plots is not None:
            from queue_autoscale.sim.plot import plot  # noqa: PLC0415 - matplotlib loads slowly

            slug = label.replace(" ", "-")
            plot(comparison, plots / f"{slug}.png", spec.sla_seconds)
    speed_lines: list[str] = []
    if speed:
        counts = np.random.default_rng(seed).poisson(60.0, 86_400).astype(np.int64)
        started = time.perf_counter()
        comparison = run_comparison(
            "steady 60 jobs/s, 1 day", counts, list(POLICY_NAMES), spec, console
        )
        console.print(score_table(comparison.scores, "speed: 60 jobs/s for a day"))
        speed_lines = [
            f"A day at 60 jobs/s: {comparison.workload.scored_jobs:,} scored jobs "
            f"({comparison.workload.arrivals.size:,} with the warm-up), all five policies in "
            f"{time.perf_counter() - started:.0f} s on this machine "
            f"({platform.processor() or platform.machine()}, 2 cores). `wall s` is per policy:",
            "",
            *scores_markdown(comparison.scores),
        ]
    text = report(spec, comparisons, speed_lines, trace_note, command)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    return out


def core_version() -> str:
    """The commit the core was at (and whether core/ had local changes), for the report."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "functions/queue_autoscale/core"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return f"{head}{' with local changes in core/' if dirty else ''}"


def busiest_minute(counts: Counts) -> float:
    """The busiest minute's mean rate, jobs/s."""
    minutes = counts.size // 60
    if minutes == 0:
        return float(counts.mean())
    return float(counts[: minutes * 60].reshape(minutes, 60).mean(axis=1).max())


def report(
    spec: RunSpec,
    comparisons: Sequence[tuple[str, str, Comparison, Score]],
    speed_lines: list[str],
    trace_note: str,
    command: str,
) -> str:
    """The markdown text."""
    settings = spec.settings()
    lines = [
        "# Policy quality: SLA compliance vs worker-seconds",
        "",
        "Generated by the simulator (`functions/queue_autoscale/sim/`); do not edit by hand. "
        "Reproduce from the repository root with:",
        "",
        "```",
        f".venv/bin/{command}",
        "```",
        "",
        "## Set-up",
        "",
        f"- Core at commit {core_version()}.",
        f"- SLA {spec.sla_seconds:g} s pickup; jobs {spec.service_seconds:g} s mean, gamma with "
        f"cv {spec.service_cv:g} (exponential); concurrency {spec.concurrency}; a new worker takes "
        f"jobs {spec.provision_delay_seconds} s after it is ordered; fleet {spec.min_workers}.."
        f"{spec.max_workers} for every policy; seed {spec.seed}.",
        f"- Every run starts with a {spec.warmup_seconds // 60}-minute warm-up at the workload's "
        "first-five-minute rate (not scored) so each policy starts settled; the same jobs (arrival "
        "instants and durations) are replayed under every policy.",
        f"- `hybrid` and `seed-hybrid` are `queue_autoscale.core.decide` / `decide_seed_hybrid`, "
        f"called every {spec.interval_seconds} s with the snapshot the evaluate function builds: "
        "live SQS visible / in-flight, ECS running / pending, 5-min and 1-min rates and mean job "
        "time from the per-second counters, and the oldest age by DESIGN's rule (max of "
        "CloudWatch's age datapoint + its lag, and the counters' FIFO estimate); percentile "
        f"{settings.percentile}.",
        f"- `keda`: queueLength = {keda.queue_length(settings)} (SLA x concurrency / job time), "
        "visible + in-flight, HPA every 15 s, tolerance 10 %, up max(+100 %, +4)/15 s, down "
        "stabilization 300 s.",
        "- `target-tracking`: target backlog per task = "
        f"{target_tracking.acceptable_backlog(settings):g} (acceptable latency = SLA / job "
        "time), 1-minute CloudWatch datapoints published "
        f"{spec.cloudwatch_lag_seconds} s after their minute, out on 3 of 3 above, in on 15 of 15 "
        "below 90 %, cooldowns 60 s out / 300 s in.",
        "- `static`: Erlang-C size for the 99th-percentile 1-minute arrival rate of the whole "
        "window (given the future).",
        f"- Cost: {PRICE_NOTE}.",
        "- Compliance counts every scored job: one never picked up is a miss.",
        "",
        "## Workloads",
        "",
        _row(["workload", "what", "scored jobs", "static size"]),
        _row(["---", "---", "---:", "---:"]),
    ]
    for label, description, comparison, _ in comparisons:
        static = next(s for s in comparison.scores if s.policy == "static")
        counts = comparison.workload.counts[comparison.workload.warmup_seconds :]
        lines.append(
            _row(
                [
                    label,
                    description,
                    f"{comparison.workload.scored_jobs:,}",
                    f"{static.peak_workers} (p99 rate {p99_rate(counts):.1f}/s)",
                ]
            )
        )
    if trace_note:
        lines += ["", trace_note]
    lines += ["", "## Results", ""]
    for label, _, comparison, _ in comparisons:
        lines += [f"### {label}", "", *scores_markdown(comparison.scores), ""]
    lines += [
        "## Goal check",
        "",
        f"Goal: `hybrid` keeps >= {GOAL_COMPLIANCE:.1%} of jobs within SLA at utilization >= "
        f"{GOAL_UTILIZATION:.2f}, and is at least as good as every peer on both compliance and "
        "worker-seconds.",
        "",
        _row(
            [
                "workload",
                "hybrid within SLA",
                "hybrid utilization",
                ">= every peer on compliance",
                "<= every peer on worker-s",
            ]
        ),
        _row(["---", "---:", "---:", "---", "---"]),
    ]
    details: list[str] = []
    for label, _, comparison, _ in comparisons:
        row, misses = goal_check(label, comparison.scores)
        lines.append(row)
        details += [f"- **{label}**: " + "; ".join(misses)] if misses else []
    lines += ["", "Where the goal is missed:", "", *(details or ["- nowhere"]), ""]
    lines += [
        "## Diagnostic: the oldest-age input",
        "",
        "`hybrid` again, with the CloudWatch age datapoint withheld (oldest age from the "
        "counters alone); everything else identical.",
        "",
        _row(
            [
                "workload",
                "within SLA (as built)",
                "worker-s (as built)",
                "utilization (as built)",
                "within SLA (counters only)",
                "worker-s (counters only)",
                "utilization (counters only)",
            ]
        ),
        _row(["---"] + ["---:"] * 6),
    ]
    for label, _, comparison, diag in comparisons:
        ours = next(s for s in comparison.scores if s.policy == "hybrid")
        lines.append(
            _row(
                [
                    label,
                    f"{ours.sla_compliance:.4%}",
                    f"{ours.worker_seconds:,.0f}",
                    f"{ours.utilization:.3f}",
                    f"{diag.sla_compliance:.4%}",
                    f"{diag.worker_seconds:,.0f}",
                    f"{diag.utilization:.3f}",
                ]
            )
        )
    if speed_lines:
        lines += ["", "## Speed", "", *speed_lines]
    lines += ["", NOTES]
    return "\n".join(lines) + "\n"


NOTES = """## Reading the results

See `docs/simulator.md` for the model. What drives the numbers above.

### Why `hybrid` misses the goal where it does

The causes below were traced tick by tick through the decision records of the core commit
named in the set-up; the "with a local patch" numbers come from throw-away experiments that
changed one thing in a scratch copy (nothing here edits the core).

1. **No controller that only reacts reaches 99.9 % on `spike`, `bursty` or `flash-crowd`
   with a 60 s provisioning delay.** The same jobs replayed under an *ideal reaction* - a
   fleet sized (Erlang C, p99.9) for the pre-surge rate, and unlimited workers ordered at the
   first 10 s tick after each surge starts, landing 60 s later - keep 98.85 % within SLA on
   `spike`, 89.9 % on `bursty` (its first burst met by the warm-up fleet) and 91.35 % on
   `flash-crowd`: every job arriving from a few seconds into a surge until ~30 s before the
   new workers land waits longer than the SLA, whatever is ordered. Only foresight does
   better: `static` meets the SLA there because it is handed the window's peak in advance
   (or a standing fleet kept through the troughs, which costs what `static` costs).
2. **The in-flight floor latches the stabilization window** (core `hybrid._bounds` +
   `next_state`). The sample stored each tick as `raw_target` is the recommendation *after*
   the "never below what in-flight work needs" floor. Whenever every worker happens to be
   busy at a tick (Erlang C: ~10 % of ticks at rho 0.8, so almost every 300 s window has
   one), the sample records the current fleet size, and the scale-down-to-the-window-max
   rule then never lets the fleet shrink. On `steady` (20 jobs/s) the largest term is 20-23
   workers on 96 % of ticks for two hours while the fleet stays at 27-35 ("stabilization" on
   95 % of ticks; 26-27 with the counters-only age of item 3): utilization 0.65-0.76
   instead of ~0.88. `simulate --decisions` shows it tick by tick. Storing the pre-floor
   target (the max of the terms, within min/max) in the sample, with a local patch: steady
   191,176 -> 164,673 worker-s (utilization 0.757 -> 0.879) at 100 % within SLA.
3. **The oldest-age rule adds CloudWatch's whole publication lag to a stale age.** The age
   datapoint is the maximum of its minute and is 60-120 s old when read; `core.oldest_age`
   adds that lag whenever anything is visible, so a queue whose jobs wait 1-2 s reads 61-122 s
   the moment a few jobs are momentarily visible at a tick, i.e. BREACH, and the drain term
   orders workers for a breach that is not happening (on `steady`, 24 of 720 ticks read
   60-70 s while no job waited more than 1.1 s, and drain won with 29-35 workers against a
   steady term of 20-22). The diagnostic table shows the same runs with the counters' FIFO estimate
   alone: less waste on smooth traffic (diurnal 0.666 -> 0.820 utilization); on bursty
   traffic the phantom breaches happen to pre-provision and compliance drops without them.
   A sounder rule: add the lag only if the counters show the queue has not emptied since
   the datapoint (started since then < visible then), else trust the counters.
4. **The breach drain ignores the provisioning lead, and scale-down is slow.** Near or past
   the SLA the drain term sizes to clear the backlog within the recovery horizon,
   max(1, 0.1 x SLA) = 3 s by default, so a 1,500-job backlog asks for ~500-1,000 workers
   (the max) although none of them can take a job for 60 s, by when a fraction of them would
   do. Coming back down is limited to `scale_down_step` = 5 workers per 60 s after a 300 s
   stabilization: ~3 hours from 1,000 to 14 (the blue ramp in the spike plot). This is what
   sinks utilization on `spike`, `bursty`, `flash-crowd` and the NASA day (0.03-0.22).
   With a local patch (item 2's fix, counters-only age, a 30 s recovery horizon): spike
   4.33 M -> 0.37 M worker-s (peak 201 instead of 1,000), flash-crowd 1.70 M -> 0.71 M,
   at similar compliance (97.3 % and 82.6 %). Sizing the drain for workers that arrive after
   the lead L, (backlog + lambda (L + T)) / (mu T) with T the horizon after they arrive, and
   a step that scales with the fleet (e.g. 10 % of it) would address both.

### The peers

- **Backlog-target peers run at the SLA, not under it.** KEDA's queueLength and target
  tracking's acceptable backlog are both "messages one worker clears within the SLA", which
  is what their docs tell users to set. The fleet only grows once the backlog per worker
  reaches that target, i.e. once the newest job's wait is about the SLA, so a large share of
  jobs lands just over it (~73-74 % within SLA on every workload).
- **KEDA** counts in-flight messages too, so with a queue that keeps up it recommends
  ceil(in-flight / queueLength) ~ 1 pod; after the 300 s stabilization the fleet collapses,
  the backlog rebuilds to ~queueLength per pod, and the cycle repeats (the saw-tooth in the
  plots). It is cheaper than `hybrid` where `hybrid` over-provisions (items 2-4), not because
  it meets the SLA.
- **Target tracking on backlog per task** reads a metric that is 0 whenever the fleet keeps
  up, so after 15 low minutes it scales in proportionally (to the minimum); scaling out
  needs 3 published minutes (+ the 60 s publication lag + the provisioning delay), by which
  time the backlog asks for 5-10x the fleet, held for the next 15 minutes.
- **`static`** is given the whole window's 99th-percentile rate in advance; it is the
  cheapest safe fleet on flat traffic and wasteful on anything with a peak.
- **`seed-hybrid`** is seed 001 taken literally; its drain term divides by the time left to
  the SLA and asks for the maximum whenever the oldest age reads at or past the SLA - which
  item 3's phantom ages make frequent.
"""
