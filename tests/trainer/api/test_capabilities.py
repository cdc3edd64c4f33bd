"""Settings the learner cannot train as asked are refused at submit (api/capabilities.learner_refusals).

Full-weight modules in bfloat16 (the gpu target's learner dtype) do not train: AdamW's steps at the
full-weight learning rate are below bfloat16's resolution and round away. Measured here on 4,096
weights, the reason for the refusal.
"""

from __future__ import annotations

import torch

from halo.schemas import RunSpec
from halo.settings.trainer import TrainerSettings
from halo_trainer.api.capabilities import learner_refusals
from halo_trainer.config import load_defaults, resolve


def _changed_after_adamw(dtype: torch.dtype, lr: float = 1e-7, steps: int = 100) -> int:
    torch.manual_seed(0)
    weight = torch.nn.Parameter(torch.randn(4096).to(dtype))
    start = weight.detach().clone()
    optimiser = torch.optim.AdamW([weight], lr=lr, weight_decay=0.0)
    for _ in range(steps):
        optimiser.zero_grad()
        (weight.float() * torch.randn(4096)).sum().backward()
        optimiser.step()
    return int((weight.detach() != start).sum())


def test_adamw_steps_at_the_full_weight_rate_vanish_in_bfloat16() -> None:
    assert _changed_after_adamw(torch.float32) > 4096 * 0.9  # 3,801 here
    assert _changed_after_adamw(torch.bfloat16) < 4096 * 0.01  # 0 here


def test_full_weights_on_a_bfloat16_learner_are_refused_naming_the_fix() -> None:
    defaults = load_defaults("configs/rl_config.yaml")
    cfg = resolve(RunSpec(domain="playground", full_weights=["vision_merger"]), "r", ["t"], defaults, None)
    gpu = TrainerSettings(_env_file=None, target="gpu")
    [(status, message)] = learner_refusals(cfg, gpu)
    assert status == 422 and "full_weights ['vision_merger']" in message and "HALO_TRAINER_DTYPE=float32" in message
    assert learner_refusals(cfg, gpu.model_copy(update={"dtype": "float32"})) == []
    assert learner_refusals(cfg, TrainerSettings(_env_file=None, target="cpu")) == []
    lora_only = resolve(RunSpec(domain="playground"), "r", ["t"], defaults, None)
    assert learner_refusals(lora_only, gpu) == []
