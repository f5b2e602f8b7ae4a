"""How late events may reach the load table's counters, and the waits that spend that bound.

An event waits in its producer's buffer (EventRecorder sends every PRODUCER_FLUSH_SECONDS), then
in the events queue until the event source's batching window closes (template.yaml's
MaximumBatchingWindowInSeconds, EVENTS_BATCHING_WINDOW_SECONDS), then for its batch's writes.
Each wait is paid for: shorter waits mean more SendMessageBatch calls, more record_events
invocations and more archive objects (benchmarks/results/ingest_batching.md).

A tick reads the counters of the last seconds short by the events still on their way: rate x
mean lateness of them (Little's law), as if the newest `mean lateness` seconds were missing
whole. Its arrival rates read low and its FIFO age high by that much.
"""

from __future__ import annotations

from typing import Final

MEAN_LATENESS_SECONDS: Final = 2.0
"""The most an event may be late in the counters on average, seconds: what the controller was
measured to tolerate (benchmarks/results/counter_lateness.md, five scenarios at SLAs of 5 to
60 s, three seeds: 2 s of counters withheld from every tick keeps every cell within 0.3 points
of on-time compliance, the spread 1 s already shows; 5 s costs bursty traffic 1.1 points at
SLAs of 10 and 30 s)."""

RECORD_BATCH_SECONDS: Final = 0.5
"""The most a batch itself takes from its window's end to its counters written, seconds: a
batch of BatchSize 100 messages holds about 100 counter keys at low rates (ingest_batching.md:
0.8 writes per event), written 10 at once in 0.5 s at the slowest per-key cost measured
(4.96 ms on the emulator, ingest_worst_batch.md); a larger BatchSize would not fit. The event
source's own hand-off is not measured."""

PRODUCER_FLUSH_SECONDS: Final = 1.0
"""How long a producer keeps an event before sending it, seconds (EventRecorder's default). Of
the splits of the waits between this and the window, the one whose record-path bill is, at its
worst size, least above the cheapest split at each of 1 to 10,000 queues
(benchmarks/results/ingest_batching.md: 1 s + 2 s at most 6 % above the cheapest, 2 s + 1 s
40 %): a longer window pays at 10 queues, a longer flush at 10,000, where batches fill up
before any window closes."""

EVENTS_BATCHING_WINDOW_SECONDS: Final = int(
    2 * (MEAN_LATENESS_SECONDS - RECORD_BATCH_SECONDS) - PRODUCER_FLUSH_SECONDS
)
"""The events queue's batching window, whole seconds: what the bound leaves. An event waits on
average half the flush and half the window, so their sum may be twice the bound less the batch
(template.yaml's MaximumBatchingWindowInSeconds repeats it; a test checks)."""
