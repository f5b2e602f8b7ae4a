"""`python -m queue_autoscale.worker`: the same command as `queue-autoscale worker`."""

from queue_autoscale.worker.command import standalone

if __name__ == "__main__":
    standalone()
