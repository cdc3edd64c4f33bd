"""Online GRPO: the run loop (``loop``), the groups an update keeps (``groups``), the seed contrast
(``seed_contrast``) and where its jobs' tasks are drawn (``task_schedule``); its loss is
``halo_trainer.learner.objective``."""
