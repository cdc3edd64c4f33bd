"""Run configuration: rl_config.yaml, then the profile, then the request."""

from __future__ import annotations

from halo.schemas import RunSpec
from halo_trainer.config import load_defaults, resolve


def test_seed_hyperparameters_are_the_defaults():
    cfg = resolve(RunSpec(domain="gomail"), "r1", ["local.gomail-1"], load_defaults("configs/rl_config.yaml"), None)
    assert (cfg.num_generations, cfg.temperature, cfg.learning_rate, cfg.loss_type.value, cfg.kl_coef) == (
        8,
        0.7,
        1e-6,
        "dr_grpo",
        0.001,
    )


def test_profile_then_request_override():
    defaults = load_defaults("configs/rl_config.yaml")
    spec = RunSpec(domain="playground", num_generations=4, learning_rate=0.01, episodes=12)
    cfg = resolve(spec, "r2", ["local.playground-1"], defaults, "tiny")
    assert cfg.kl_coef == 0.0 and cfg.lora_r == 8 and cfg.max_steps == 3  # from the tiny profile
    assert cfg.num_generations == 4 and cfg.learning_rate == 0.01 and cfg.episodes == 12  # from the request
