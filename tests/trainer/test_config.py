"""Run configuration: rl_config.yaml, then the profile, then the request."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from halo.schemas import RunSpec
from halo.settings.policy import GPU_DEFAULT_MODEL
from halo.settings.trainer import LearnerConfig, TrainerSettings
from halo_model.tiny import default_model_dir
from halo_trainer.api.runs import learner_model, same_model
from halo_trainer.config import DefaultsError, RunConfig, checked_defaults, load_defaults, profile_for, resolve


def test_seed_hyperparameters_are_the_defaults():
    cfg = resolve(RunSpec(domain="gomail"), "r1", ["local.gomail-1"], load_defaults("configs/rl_config.yaml"), None)
    assert (cfg.num_generations, cfg.temperature, cfg.learning_rate, cfg.advantage.value, cfg.kl_coef) == (
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


def test_sampling_comes_from_the_run_defaults_and_the_profile():
    defaults = load_defaults("configs/rl_config.yaml")
    gpu = resolve(RunSpec(domain="gomail"), "r3", ["local.gomail-1"], defaults, profile_for("gpu"))
    tiny = resolve(RunSpec(domain="gomail"), "r4", ["local.gomail-1"], defaults, profile_for("cpu"))
    assert gpu.profile is None and tiny.profile == "tiny"
    assert gpu.sampling.structured_outputs == "off" and tiny.sampling.structured_outputs == "regex"
    for cfg in (gpu, tiny):
        assert (cfg.sampling.max_tokens, cfg.sampling.history_limit) == (256, 8)
        assert (cfg.sampling.viewport.width, cfg.sampling.viewport.height) == (1280, 720)
        # Dr. GRPO's normaliser is the sampler's completion budget, from the same config.
        assert cfg.learner_config(LearnerConfig()).max_tokens == cfg.sampling.max_tokens
    # Saved with the run (config.json) and read back unchanged on resume.
    assert RunConfig.model_validate(json.loads(tiny.model_dump_json())) == tiny


def test_full_weights_default_to_lora_only_and_the_request_chooses_them():
    defaults = load_defaults("configs/rl_config.yaml")
    for profile in (None, "tiny"):
        cfg = resolve(RunSpec(domain="playground"), "r7", ["t"], defaults, profile)
        assert cfg.full_weights == () and cfg.learner_config(LearnerConfig()).full_weights == ()
    # a tenth of each profile's LoRA rate
    assert resolve(RunSpec(domain="playground"), "r8", ["t"], defaults, None).full_weights_lr == pytest.approx(1e-7)
    assert resolve(RunSpec(domain="playground"), "r9", ["t"], defaults, "tiny").full_weights_lr == pytest.approx(1e-3)
    spec = RunSpec(domain="playground", full_weights=["vision_merger", "model.visual.blocks.1"], full_weights_lr=5e-4)
    cfg = resolve(spec, "r10", ["t"], defaults, "tiny")
    learner = cfg.learner_config(LearnerConfig())
    assert learner.full_weights == ("vision_merger", "model.visual.blocks.1") and learner.full_weights_lr == 5e-4
    assert RunConfig.model_validate(json.loads(cfg.model_dump_json())) == cfg
    # a run saved before the setting existed resumes LoRA only
    old = json.loads(cfg.model_dump_json())
    del old["full_weights"], old["full_weights_lr"]
    assert RunConfig.model_validate(old).full_weights == ()
    with pytest.raises(ValidationError, match="neither a preset"):
        RunSpec(domain="playground", full_weights=["vision_tower"])
    with pytest.raises(ValidationError, match="neither a preset"):
        RunConfig.model_validate({**old, "full_weights": ["visual"]})


def test_lora_target_defaults_to_the_language_model_and_the_request_chooses_it():
    defaults = load_defaults("configs/rl_config.yaml")
    for profile in (None, "tiny"):
        cfg = resolve(RunSpec(domain="playground"), "r11", ["t"], defaults, profile)
        assert cfg.lora_target == "language" and cfg.learner_config(LearnerConfig()).lora_target == "language"
    cfg = resolve(RunSpec(domain="playground", lora_target="language+tower"), "r12", ["t"], defaults, "tiny")
    assert cfg.learner_config(LearnerConfig()).lora_target == "language+tower"
    assert RunConfig.model_validate(json.loads(cfg.model_dump_json())) == cfg
    # a run saved before the setting existed resumes with the adapter it had: the language model's
    old = json.loads(cfg.model_dump_json())
    del old["lora_target"]
    assert RunConfig.model_validate(old).lora_target == "language"
    with pytest.raises(ValidationError, match="language\\+merger"):
        RunSpec(domain="playground", lora_target="vision")
    # one owner: the run's config, not the trainer's environment
    with pytest.raises(ValidationError, match="lora_target belong to each run"):
        TrainerSettings(_env_file=None, learner=LearnerConfig(lora_target="language+merger"))


def _train_cli(monkeypatch):
    """``halo train`` as the command line runs it, stopped where it would send its ``RunSpec``:
    returns (invoke(args), the fields of every spec it built)."""
    from typer.testing import CliRunner

    from halo.cli import main as cli
    from halo.cli import train_commands

    sent = []

    class Spec(RunSpec):
        @classmethod
        def model_validate(cls, fields, **kwargs):
            sent.append(fields)
            raise ValueError("stop before any call")

    monkeypatch.setattr(train_commands, "RunSpec", Spec)
    return (lambda args: CliRunner().invoke(cli.app, ["train", "--domain", "playground", *args])), sent


def test_the_cli_sends_lora_target(monkeypatch):
    invoke, sent = _train_cli(monkeypatch)
    result = invoke(["--lora-target", "language+merger"])
    assert result.exit_code == 2 and sent[0]["lora_target"] == "language+merger"
    monkeypatch.undo()
    result = invoke(["--lora-target", "tower"])
    assert result.exit_code == 2 and "language+tower" in result.output


def test_every_switch_knob_can_be_turned_on_and_off_from_halo_train_and_the_seeds_scripts(monkeypatch):
    """A knob whose default is true (describe_tools) must be reachable as false: ``halo train
    --no-<name>``, which is also what the seeds' scripts pass on (``knob_options.train_flags``)."""
    from halo.cli.knob_options import cli_type, train_flags
    from halo.schemas import knobs

    invoke, sent = _train_cli(monkeypatch)
    switches = [k.name for k in knobs.KNOBS if k.request and cli_type(k) is bool]
    assert {"describe_tools", "common_random_numbers"} <= set(switches)
    for value in (False, True):
        result = invoke(train_flags(dict.fromkeys(switches, value)))
        assert result.exit_code == 2, result.output
        assert {name: sent[-1][name] for name in switches} == dict.fromkeys(switches, value)


def test_a_grammar_the_learner_cannot_replay_is_refused():
    defaults = load_defaults("configs/rl_config.yaml")
    defaults["sampling"] = {**defaults["sampling"], "structured_outputs": "json"}
    with pytest.raises(ValidationError, match="cannot be replayed"):
        resolve(RunSpec(domain="gomail"), "r5", ["local.gomail-1"], defaults, None)
    with pytest.raises(ValueError, match="profile 'huge'"):
        resolve(RunSpec(domain="gomail"), "r6", ["local.gomail-1"], load_defaults("configs/rl_config.yaml"), "huge")


def test_the_learner_model_follows_the_trainer_settings_alone():
    cpu = TrainerSettings(_env_file=None, target="cpu")
    assert learner_model(cpu, build=False) == str(default_model_dir())
    assert cpu.resolved_device() == "cpu"
    gpu = TrainerSettings(_env_file=None, target="gpu")
    assert learner_model(gpu, build=False) == GPU_DEFAULT_MODEL and gpu.resolved_device() == "cuda"
    mine = TrainerSettings(_env_file=None, target="gpu", model="/models/qwen3-vl-8b")
    assert learner_model(mine, build=False) == "/models/qwen3-vl-8b"
    assert same_model("/models/qwen3-vl-8b", "/models/../models/qwen3-vl-8b")
    assert not same_model(GPU_DEFAULT_MODEL, str(default_model_dir()))


def test_tis_cap_and_gap_alarm_come_from_the_run_defaults_and_the_request():
    defaults = load_defaults("configs/rl_config.yaml")
    for profile in (None, "tiny"):
        cfg = resolve(RunSpec(domain="playground"), "r11", ["t"], defaults, profile)
        assert (cfg.tis_cap, cfg.behaviour_gap_alarm) == (2.0, 0.05)
        assert cfg.learner_config(LearnerConfig()).tis_cap == 2.0
    spec = RunSpec(domain="playground", tis_cap=5.0, behaviour_gap_alarm=0.2, temperature=0.9)
    cfg = resolve(spec, "r12", ["t"], defaults, None)
    assert (cfg.tis_cap, cfg.behaviour_gap_alarm, cfg.temperature) == (5.0, 0.2, 0.9)
    assert cfg.learner_config(LearnerConfig()).tis_cap == 5.0
    assert RunConfig.model_validate(json.loads(cfg.model_dump_json())) == cfg
    # null in the run defaults turns them off
    off = {**defaults, "grpo": {**defaults["grpo"], "tis_cap": None, "behaviour_gap_alarm": None}}
    cfg = resolve(RunSpec(domain="playground"), "r13", ["t"], off, None)
    assert cfg.tis_cap is None and cfg.learner_config(LearnerConfig()).tis_cap is None
    # a run saved before the settings existed resumes as it ran: no cap, no alarm
    old = json.loads(cfg.model_dump_json())
    del old["tis_cap"], old["behaviour_gap_alarm"]
    assert (RunConfig.model_validate(old).tis_cap, RunConfig.model_validate(old).behaviour_gap_alarm) == (None, None)


def test_bad_tis_and_temperature_settings_are_refused_naming_the_field():
    for field, value in (("tis_cap", 0.5), ("behaviour_gap_alarm", 0.0), ("temperature", 0.0)):
        with pytest.raises(ValidationError, match=field):
            RunSpec(domain="playground", **{field: value})
    defaults = load_defaults("configs/rl_config.yaml")
    two_passes = {**defaults, "run": {**defaults["run"], "epochs_per_batch": 2}}
    with pytest.raises(ValidationError, match="tis_cap=2.0 needs epochs_per_batch=1"):
        resolve(RunSpec(domain="playground"), "r14", ["t"], two_passes, None)
    with pytest.raises(ValidationError, match="tis_cap belong to each run's config"):
        TrainerSettings(_env_file=None, learner={"tis_cap": 3.0})


def test_vllm_holds_every_adapter_version_the_default_runs_keep():
    """The policy server's default --max-loras holds what the loop keeps loaded for the shipped run
    defaults (both targets' profiles): beyond it vLLM would evict and reload adapters from disk."""
    from halo.settings.policy import PolicySettings
    from halo_trainer.config import resident_adapters

    defaults = load_defaults("configs/rl_config.yaml")
    for profile in (None, "tiny"):
        cfg = resolve(RunSpec(domain="playground"), "r15", ["t"], defaults, profile)
        assert resident_adapters(cfg.max_staleness) <= PolicySettings(_env_file=None).max_loras
    assert resident_adapters(2) == 4


def test_the_learner_scores_at_the_runs_temperature():
    """One owner: the run's ``temperature`` is what rollouts sample at and what the learner scores at."""
    from halo_model.grouped import grouped_logprobs
    from halo_trainer.api.runs import RunManager

    spec = RunSpec(domain="playground", temperature=0.7)
    cfg = resolve(spec, "r16", ["t"], load_defaults("configs/rl_config.yaml"), "tiny")
    manager = RunManager.__new__(RunManager)  # the learner's parts need the settings alone
    manager.settings = TrainerSettings(_env_file=None, target="cpu")
    leader, _ = manager._learner_parts(cfg)
    learner = leader.local  # the run loop holds a Leader (learner/ranks.py); this process's learner scores
    assert learner.config.temperature == 0.7
    assert learner.logprob_fn.func is grouped_logprobs and learner.logprob_fn.keywords == {"temperature": 0.7}
    assert learner.config.tis_cap == cfg.tis_cap == 2.0


# --- a run defaults file that cannot serve runs ---------------------------------------------------


@pytest.mark.parametrize(
    "text, named",
    [
        ("grpo:\n  learning_rate: 1.0e-06\nmcts:\n  rollout_depthh: 1\n", "mcts.rollout_depthh is not a knob"),
        ("grpo:\n  learning_rate: fast\nprofiles:\n  tiny: {}\n", "learning_rate"),
        ("grpo: [unclosed\n", "not usable"),
        ("just a string\n", "holds no sections"),
        ("grpo:\n  episodes: 10\nprofiles:\n  other: {}\n", "profile 'tiny' is not in"),
    ],
    ids=["unknown-knob", "wrong-type", "not-yaml", "no-sections", "no-profile"],
)
def test_a_broken_run_defaults_file_is_told_with_what_is_wrong(tmp_path, text, named):
    path = tmp_path / "rl_config.yaml"
    path.write_text(text)
    with pytest.raises(DefaultsError, match=named) as refused:
        checked_defaults(path, "tiny")
    assert str(path) in str(refused.value)


def test_the_shipped_run_defaults_file_passes_for_both_targets():
    for target in ("cpu", "gpu"):
        assert checked_defaults("configs/rl_config.yaml", profile_for(target))["grpo"]


def test_the_trainer_refuses_to_start_on_a_broken_run_defaults_file(tmp_path):
    import os
    import subprocess
    import sys

    path = tmp_path / "rl_config.yaml"
    path.write_text("mcts:\n  not_a_knob: 1\n")
    env = os.environ | {"HALO_TRAINER_RL_CONFIG": str(path), "HALO_TRAINER_DATA_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "halo_trainer"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.startswith("halo_trainer: the run defaults file") and "mcts.not_a_knob" in done.stderr
    assert "Traceback" not in done.stderr


def test_common_random_numbers_give_the_jobs_of_one_update_one_sampling_seed():
    from halo.schemas import PolicyVersion
    from halo_trainer.loop_parts.jobs import train_job

    defaults = load_defaults("configs/rl_config.yaml")
    policy = PolicyVersion(run_id="r", version=0, adapter_name="r-v0", created_at=0.0)
    for seed in (0, 1):
        spec = RunSpec(domain="playground", jobs_per_update=4, common_random_numbers=True, seed=seed)
        cfg = resolve(spec, "r", ["local.playground-2"], defaults, "tiny")
        jobs = [train_job(cfg, policy, i) for i in range(12)]
        assert [j.seed % 4 for j in jobs[:4]] == [(seed * 100_003 + i) % 4 for i in range(4)]  # 4 layouts
        by_update = [{j.sampling_seed for j in jobs[u * 4 : u * 4 + 4]} for u in range(3)]
        assert all(len(s) == 1 for s in by_update) and len(set.union(*by_update)) == 3
    plain = resolve(RunSpec(domain="playground"), "r", ["t"], defaults, "tiny")
    assert plain.common_random_numbers is False
    assert train_job(plain, policy, 5).sampling_seed is None


def test_seed_contrast_needs_step_groups():
    defaults = load_defaults("configs/rl_config.yaml")
    spec = RunSpec(domain="playground", seed_contrast=1.0, common_random_numbers=True)
    assert resolve(spec, "r", ["local.playground-2"], defaults, "tiny").seed_contrast == 1.0
    assert resolve(RunSpec(domain="playground"), "r", ["t"], defaults, "tiny").seed_contrast == 0.0
    with pytest.raises(ValueError, match="seed_contrast=1.0 needs group_mode=step"):
        resolve(RunSpec(domain="playground", seed_contrast=1, group_mode="episode"), "r", ["t"], defaults, "tiny")


def test_a_run_saved_with_loss_type_resumes_with_the_advantage_and_normaliser_it_meant():
    defaults = load_defaults("configs/rl_config.yaml")
    cfg = resolve(RunSpec(domain="playground", advantage="rloo"), "r13", ["t"], defaults, "tiny")
    assert (cfg.advantage, cfg.loss_norm) == ("rloo", "constant")
    assert cfg.learner_config(LearnerConfig()).loss_norm == "constant"
    saved = json.loads(cfg.model_dump_json())
    del saved["advantage"], saved["loss_norm"]
    for loss_type, meant in (("dr_grpo", ("dr_grpo", "constant")), ("grpo", ("grpo", "sequence"))):
        old = RunConfig.model_validate({**saved, "loss_type": loss_type})
        assert (old.advantage, old.loss_norm) == meant
    with pytest.raises(ValidationError, match="advantage"):
        RunSpec(domain="playground", advantage="ppo")
    with pytest.raises(ValidationError, match="loss_type"):  # a request names the two knobs
        RunSpec(domain="playground", loss_type="grpo")
