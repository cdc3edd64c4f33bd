"""The learner: the model and its updates (GRPO objective, DPO), batching, checkpoints, and the
memory plan (``memory``) a gpu run is checked against before it starts."""
