"""The checks a run passes against the policy server before it samples: the learner rebuilds the
prompt vLLM tokenises (``prompt_check``), and vLLM applies the adapter's vision-side LoRA
(``tower_check``)."""
