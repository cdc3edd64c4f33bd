"""`python -m halo_trainer`: the trainer service (run API, rollout workers, learner). With
`HALO_TRAINER_LEARNER_RANKS=N` it starts itself N times under torch's elastic launcher
(``halo_trainer.learner.launch``; the same as `torchrun --standalone --nproc-per-node N -m
halo_trainer`): rank 0 is the service and the other ranks follow its learner
(``halo_trainer.learner.ranks``)."""

import logging
import os
import signal
import sys

from halo.settings import settings_or_exit
from halo.settings.trainer import TrainerSettings

if __name__ == "__main__":
    settings = settings_or_exit(TrainerSettings, "halo_trainer")
    if (problem := settings.exposure_problem()) is not None:
        # Checked before the service's heavy imports: a clear line and a non-zero exit, no traceback.
        sys.stderr.write(f"halo_trainer: {problem}\n")
        sys.exit(2)
    device = settings.resolved_device()
    if device.startswith("cuda"):
        import torch  # the gpu target: a card must be there before anything waits on the services

        if not torch.cuda.is_available():
            sys.stderr.write(
                f"halo_trainer: HALO_TRAINER_TARGET={settings.target} trains on {device}, but torch finds no CUDA "
                f"device here (torch {torch.__version__}, CUDA build {torch.version.cuda}): in a container, the "
                "NVIDIA container runtime must give it the card (`nvidia-smi` inside it lists one); on a machine "
                "without a GPU, HALO_TRAINER_TARGET=cpu trains the tiny model\n"
            )
            sys.exit(2)
    from halo_trainer.config import DefaultsError, checked_defaults, profile_for

    try:  # every run reads it: a broken file stops the trainer here, not each run's request
        checked_defaults(settings.rl_config, profile_for(settings.target))
    except DefaultsError as exc:
        sys.stderr.write(f"halo_trainer: {exc}\n")
        sys.exit(2)
    if (settings.learner_ranks > 1 or settings.learner_nodes > 1) and "WORLD_SIZE" not in os.environ:
        # HALO_TRAINER_LEARNER_RANKS / _NODES: this process becomes the launcher of the ranks (torchrun's).
        from halo_trainer.learner import launch

        if (problem := launch.problem(settings.learner_ranks, device)) is not None:
            sys.stderr.write(f"halo_trainer: {problem}\n")
            sys.exit(2)
        sys.exit(
            launch.launch(
                settings.learner_ranks,
                settings.learner_nodes,
                settings.learner_node_rank,
                settings.learner_rendezvous,
            )
        )
    channel = None
    if os.environ.get("WORLD_SIZE", "1") != "1":  # under torchrun: the learner spans the ranks
        from halo_trainer.learner import launch, ranks

        launch.die_with_launcher()
        try:
            channel = ranks.join()
        except ValueError as exc:
            sys.stderr.write(f"halo_trainer: {exc}\n")
            sys.exit(2)
        if channel is not None and not channel.ranks.writes:
            # The API, Redis, vLLM and the run loop are rank 0's: this rank follows its learner.
            # Rank 0 ends it ("exit" on its way out, or its closed connections): a SIGTERM that
            # reaches every rank at once (a stop of the process group) must not end this rank
            # while rank 0 still tells it to drop a run's learner.
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            logging.basicConfig(level=logging.INFO, format=f"halo_trainer rank {channel.ranks.rank}: %(message)s")
            try:
                ranks.serve(channel)
            # Rank 0 gone (its connections closed), this rank's learner failed to build, or a call failed
            # here while rank 0 waits in a collective (RankFailed): this exit ends that collective.
            except RuntimeError as exc:
                sys.stderr.write(f"halo_trainer rank {channel.ranks.rank}: stopped following rank 0: {exc}\n")
                sys.exit(1)
            sys.exit(0)
    import uvicorn

    from halo_trainer.api.app import create_app

    app = create_app(settings)
    if channel is not None:
        # uvicorn raises the signal it shut down on once more after its shutdown, which would end
        # this process before the other ranks hear the exit below: after uvicorn, it does nothing.
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda signum, frame: None)
    uvicorn.run(app, host=settings.host, port=settings.port, log_level="warning")
    if channel is not None:
        try:
            ranks.close()  # the other ranks' serve returns
        except RuntimeError as exc:  # a rank already gone (killed): nothing left to tell it
            sys.stderr.write(f"halo_trainer: the other ranks did not hear the exit: {exc}\n")
