"""Redis key names of the trainer, in one place (the queues over them: ``halo_trainer.streams``)."""

JOBS = "halo:rollout:jobs"  # RolloutJob stream shared by every run and every worker
RUNS = "halo:runs"  # hash run_id -> RunStatus JSON
STOPPED_RUNS = "halo:runs:stopped"  # set of run ids whose queued jobs workers drop


def results(run_id: str) -> str:
    """RolloutResult stream of one run (consumed by its learner); ``<stream>:done:<job id>`` marks a job
    whose result is in a checkpointed update (``halo.queue``'s done-marks)."""
    return f"halo:run:{run_id}:results"


def policy(run_id: str) -> str:
    """The run's current PolicyVersion JSON, read by workers before every sample."""
    return f"halo:run:{run_id}:policy"


def events(run_id: str) -> str:
    """Capped list of RunEvent JSON for the SSE stream."""
    return f"halo:run:{run_id}:events"
