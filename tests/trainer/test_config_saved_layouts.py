"""Runs and defaults files saved before the knobs had their ``run`` and ``learner`` sections.

``saved_runs/rl_config_before_run_sections.yaml`` is configs/rl_config.yaml as it was (every run
knob under ``grpo``); ``saved_runs/config_before_run_sections.json`` a run folder's config.json as
that trainer wrote it, its optimiser set by the environment (HALO_TRAINER_LEARNER__WARMUP_STEPS=3,
__WEIGHT_DECAY=0.01), which the run's config did not record then.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from halo.schemas import RunSpec, knobs, rl_config_file
from halo.settings.trainer import LearnerConfig, TrainerSettings
from halo_trainer.config import checked_defaults, load_defaults, resolve, saved_run

SAVED = Path(__file__).parent / "saved_runs"
OLD_YAML = SAVED / "rl_config_before_run_sections.yaml"
OLD_RUN = SAVED / "config_before_run_sections.json"


def test_the_old_layout_is_what_this_test_says_it_is() -> None:
    old = load_defaults(OLD_YAML)
    assert "run" not in old and "learner" not in old
    assert {"episodes", "seed", "learning_rate", "max_grad_norm"} <= set(old["grpo"])


@pytest.mark.parametrize("profile", [None, "tiny"])
def test_a_defaults_file_of_the_old_layout_resolves_as_the_new_one(profile) -> None:
    """Every knob both files hold resolves to the same value; the optimiser knobs the old file
    lacks take their declared defaults, which are what its trainer ran with."""
    spec = RunSpec(domain="playground", episodes=7)
    old = resolve(spec, "r", ["t"], load_defaults(OLD_YAML), profile)
    new = resolve(spec, "r", ["t"], load_defaults(rl_config_file.YAML_PATH), profile)
    assert old == new
    assert old.learning_rate == (1e-2 if profile else 1e-6) and old.episodes == 7
    assert checked_defaults(OLD_YAML, "tiny")["grpo"]["episodes"] == 100


def test_a_knob_given_under_both_its_old_and_its_new_section_is_refused_naming_both() -> None:
    defaults = load_defaults(rl_config_file.YAML_PATH)
    both = {**defaults, "grpo": {**defaults["grpo"], "seed": 3}}
    with pytest.raises(ValueError, match="seed is given twice, under run and grpo; keep run.seed"):
        resolve(RunSpec(domain="playground"), "r", ["t"], both, None)
    # a knob that never stood under grpo is refused there as before
    with pytest.raises(ValueError, match="grpo.weight_decay is not a knob of section grpo"):
        resolve(RunSpec(domain="playground"), "r", ["t"], {**defaults, "grpo": {"weight_decay": 0.1}}, None)


def test_a_run_saved_before_resumes_with_the_optimiser_its_trainer_ran_with() -> None:
    saved = json.loads(OLD_RUN.read_text())
    assert not set(saved["run"]) & {"warmup_steps", "weight_decay", "adam_betas", "adam_eps"}
    cfg = saved_run(saved)
    for name, value in saved["run"].items():  # every value it saved, unchanged
        got = getattr(cfg, name)
        got = got.model_dump(mode="json") if hasattr(got, "model_dump") else got
        assert json.loads(json.dumps(got, default=str)) == value, name
    assert (cfg.warmup_steps, cfg.weight_decay, cfg.adam_betas, cfg.adam_eps) == (3, 0.01, (0.9, 0.99), 1e-8)
    learner = cfg.learner_config(TrainerSettings(_env_file=None).resolved_learner())
    assert (learner.warmup_steps, learner.weight_decay, learner.learning_rate) == (3, 0.01, 0.01)
    # without its trainer's record, the values the trainer's defaults gave (each knob's `before`)
    alone = saved_run({"run": saved["run"]})
    assert (alone.warmup_steps, alone.weight_decay, alone.adam_betas, alone.adam_eps) == (0, 0.0, (0.9, 0.99), 1e-8)
    # the run's config alone, as the first trainers saved it (no "run" key)
    assert saved_run(saved["run"]) == alone
    # saved again, it reads back as it is: the optimiser is now the run's own
    assert saved_run(json.loads(json.dumps({"run": cfg.model_dump(mode="json")}))) == cfg


def test_a_saved_config_that_holds_no_run_is_refused_as_such() -> None:
    for bad in ([], {"run": 3}, "x"):
        with pytest.raises(ValueError, match="holds no run config"):
            saved_run(bad)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        saved_run({"run": {"run_id": "r"}})


def test_the_optimiser_is_the_runs_and_the_environment_refuses_it(monkeypatch) -> None:
    spec = RunSpec(domain="playground", warmup_steps=4, weight_decay=0.05)
    cfg = resolve(spec, "r", ["t"], load_defaults(rl_config_file.YAML_PATH), "tiny")
    learner = cfg.learner_config(LearnerConfig())
    assert (learner.warmup_steps, learner.weight_decay) == (4, 0.05)
    assert (learner.adam_betas, learner.adam_eps) == (knobs.knob("adam_betas").default, knobs.knob("adam_eps").default)
    for name in ("WARMUP_STEPS", "WEIGHT_DECAY", "ADAM_EPS"):
        monkeypatch.setenv(f"HALO_TRAINER_LEARNER__{name}", "1")
        with pytest.raises(ValidationError, match=f"{name.lower()} belong to each run's config"):
            TrainerSettings(_env_file=None)
        monkeypatch.delenv(f"HALO_TRAINER_LEARNER__{name}")
    # what the machine decides stays the trainer's
    monkeypatch.setenv("HALO_TRAINER_LEARNER__MICRO_BATCH_SIZE", "2")
    assert TrainerSettings(_env_file=None).learner.micro_batch_size == 2
    with pytest.raises(ValidationError, match="adam_betas"):
        RunSpec(domain="playground", adam_betas=[0.9, 1.5])  # not a request knob
