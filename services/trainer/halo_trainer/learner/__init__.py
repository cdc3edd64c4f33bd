"""The learner: the model and its updates (GRPO objective, DPO), batching, checkpoints, and the
checks a run passes before it starts (memory plan, prompt parity, tower LoRA)."""
