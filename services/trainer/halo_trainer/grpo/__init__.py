"""Online GRPO: the run loop (``loop``); its loss is ``halo_trainer.learner.objective``."""
