"""Ingest: the events-queue consumer's logic behind `handlers/record_events.py`.

One pass per SQS batch: parse the records (`parse`), validate every body and event
(`queue_autoscale.events`, the one contract), dead-letter the rejections with their reason
(`reject`), archive the accepted events, aggregate them per (queue, second) (`aggregate`) and
ADD them to the load table (`write`). `batch.ingest` runs the pass; `runtime` wires it.
"""
