"""The policy model library: the one home of what the trainer and the policy service share.

``loading`` (model and processor), ``resolution`` (which model a target serves and trains),
``tiny`` (the offline tiny Qwen3-VL), ``lora`` (the adapter layout), ``full_weights`` (which
base-model modules a run trains in full, and the model folders they travel in), ``inputs``
(prompts rebuilt as vLLM saw them, the parity check), ``logprobs`` (per-token log-probs) and
``grammar`` (structured-output replay). Needs the ``ml`` extra (torch, transformers, peft),
imported lazily.
"""
