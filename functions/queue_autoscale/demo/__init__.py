"""`queue-autoscale demo`: the whole system end to end on the embedded AWS emulator.

The parts, each passed what it needs:

- `options`: what a run does (`DemoOptions`) and the one queue it drives;
- `emulator`, `template`: moto's server on 127.0.0.1 and template.yaml's stack on it, with
  `intrinsics` (Ref, Fn::GetAtt, Fn::Sub ... resolved against the created stack) and `direct`
  (what moto's CloudFormation lacks, created through each resource's own API);
- `stack`: the endpoint, the stack, the clients and the two handlers invoked in-process, each
  with its function's environment as the stack holds it;
- `driver`: the producer of real jobs and the pump that stands in for Lambda's SQS mappings
  (the events queue's and the tick queue's, with `sqs_event`, which the ingest tests and
  benchmarks use too);
- `fleet`: one `queue_autoscale.worker` process per running ECS task; scale-in is SIGTERM;
- `live`: the 80-column live table or per-tick lines, and the full table written out;
- `summary`: every job accounted for (completed, dead-lettered, left, lost, interrupted);
- `run`: one run from start to summary; `command`: the typer command.

Only `command` and `driver` are imported with the CLI; the rest needs the dev extra (moto, the SAM
translator) and the repository checkout (template.yaml).
"""

from queue_autoscale.demo.command import register
from queue_autoscale.demo.driver import sqs_event

__all__ = ["register", "sqs_event"]
