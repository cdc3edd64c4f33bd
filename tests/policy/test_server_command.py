"""The vLLM command line and environment for both targets, from one settings class."""

from __future__ import annotations

from halo.settings.policy import GPU_DEFAULT_MODEL, PolicySettings
from halo_policy.server import build_command, build_env, served_model


def _arg(cmd: list[str], flag: str) -> str:
    return cmd[cmd.index(flag) + 1]


def test_cpu_target_serves_the_tiny_model_in_float32_with_runtime_lora() -> None:
    s = PolicySettings(target="cpu", port=8123)
    model = served_model(s, build=False)
    cmd = build_command(s, model)
    assert cmd[1:3] == ["-m", "vllm.entrypoints.openai.api_server"]
    assert "tiny-qwen3vl-" in _arg(cmd, "--model")
    assert _arg(cmd, "--dtype") == "float32"
    assert _arg(cmd, "--port") == "8123"
    assert "--enable-lora" in cmd and int(_arg(cmd, "--max-loras")) >= 2
    assert _arg(cmd, "--chat-template-content-format") == "openai"
    assert "--gpu-memory-utilization" not in cmd
    # seeded requests must never be prefilled in chunks on vLLM-CPU (engine crash)
    assert "--no-enable-chunked-prefill" in cmd and int(_arg(cmd, "--max-num-batched-tokens")) >= s.max_model_len
    env = build_env(s, base={})
    assert env["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] == "1"
    assert env["VLLM_CPU_KVCACHE_SPACE"] == "1"
    assert env["VLLM_SERVER_DEV_MODE"] == "1"  # full-weight reload on by default on cpu
    assert "VLLM_SERVER_DEV_MODE" not in build_env(PolicySettings(target="cpu", weight_reload=False), base={})
    assert s.resolved_structured_outputs() == "regex"


def test_gpu_target_serves_the_8b_in_bfloat16_with_a_memory_split() -> None:
    s = PolicySettings(target="gpu", gpu_memory_utilization=0.4, max_lora_rank=32, extra_args=("--enforce-eager",))
    cmd = build_command(s, served_model(s))
    assert _arg(cmd, "--model") == GPU_DEFAULT_MODEL
    assert _arg(cmd, "--dtype") == "bfloat16"
    assert _arg(cmd, "--gpu-memory-utilization") == "0.4"
    assert _arg(cmd, "--max-lora-rank") == "32"
    assert cmd[-1] == "--enforce-eager"
    assert "--no-enable-chunked-prefill" not in cmd
    assert "VLLM_CPU_KVCACHE_SPACE" not in build_env(s, base={})
    assert "VLLM_SERVER_DEV_MODE" not in build_env(s, base={})  # admin routes only when asked
    assert build_env(PolicySettings(target="gpu", weight_reload=True), base={})["VLLM_SERVER_DEV_MODE"] == "1"
    assert s.resolved_structured_outputs() == "off"


def test_explicit_model_wins() -> None:
    assert served_model(PolicySettings(model="/models/mine")) == "/models/mine"


def test_sampling_and_log_probs_are_the_requests_alone_and_the_image_budget_is_one_setting() -> None:
    import json

    for target in ("cpu", "gpu"):
        cmd = build_command(PolicySettings(target=target), "model")
        # nothing inherited from a model's generation_config.json (Qwen's top_k 20, top_p 0.8)
        assert _arg(cmd, "--generation-config") == "vllm"
        # behaviour log-probs of the distribution sampled from (after the temperature)
        assert _arg(cmd, "--logprobs-mode") == "processed_logprobs"
        assert "--mm-processor-kwargs" not in cmd  # the model's own budget unless one is set
    s = PolicySettings(max_pixels=200_000)
    assert json.loads(_arg(build_command(s, "model"), "--mm-processor-kwargs")) == {"max_pixels": 200_000}
    assert s.processor_kwargs() == {"max_pixels": 200_000} and PolicySettings().processor_kwargs() == {}


def test_one_image_budget_builds_both_sides_processors(tiny_model_dir) -> None:
    """The server's --mm-processor-kwargs and the trainer's processor come from the same value
    (HALO_MAX_PIXELS in Compose); load_processor itself reads no settings."""
    from halo.settings.trainer import TrainerSettings
    from halo_model.loading import load_processor

    assert load_processor(tiny_model_dir).image_processor.size["longest_edge"] == 448 * 256
    server = PolicySettings(_env_file=None, max_pixels=64_000).processor_kwargs()
    trainer = TrainerSettings(_env_file=None, max_pixels=64_000).processor_kwargs()
    assert server == trainer == {"max_pixels": 64_000}
    assert load_processor(tiny_model_dir, **trainer).image_processor.size["longest_edge"] == 64_000


def test_max_loras_holds_the_default_runs_adapter_versions() -> None:
    import pytest
    from pydantic import ValidationError

    assert PolicySettings(_env_file=None).max_loras >= 4  # max_staleness 2 + 2 (halo_trainer.config)
    with pytest.raises(ValidationError, match="max_pixels"):
        PolicySettings(max_pixels=10)


def test_tower_lora_is_off_unless_asked(monkeypatch) -> None:
    """vLLM applies an adapter's vision-tower and merger keys only with this flag; without it they
    are dropped, so a run whose lora_target reaches the vision side needs the server to have it."""
    flag = "--enable-tower-connector-lora"
    for target in ("cpu", "gpu"):
        assert flag not in build_command(PolicySettings(_env_file=None, target=target), "model")
        assert flag not in build_command(PolicySettings(_env_file=None, target=target, tower_lora=False), "model")
        assert flag in build_command(PolicySettings(_env_file=None, target=target, tower_lora=True), "model")
    # Compose passes an unset HALO_TOWER_LORA through as ""
    monkeypatch.setenv("HALO_POLICY_TOWER_LORA", "")
    assert PolicySettings(_env_file=None).tower_lora is None
    monkeypatch.setenv("HALO_POLICY_TOWER_LORA", "true")
    assert flag in build_command(PolicySettings(_env_file=None), "model")


def test_a_model_path_that_is_not_a_folder_is_named_before_vllm_starts(tmp_path) -> None:
    from halo_policy.server import missing_model_folder

    assert missing_model_folder(PolicySettings(model=str(tmp_path), _env_file=None)) == ""
    assert missing_model_folder(PolicySettings(model="Qwen/Qwen3-VL-8B-Instruct", _env_file=None)) == ""
    said = missing_model_folder(PolicySettings(model=str(tmp_path / "nope"), _env_file=None))
    assert said.startswith(f"HALO_POLICY_MODEL={tmp_path / 'nope'} is not a folder here")


def test_the_gpu_target_in_an_environment_of_vllms_cpu_build_is_named_before_vllm_starts() -> None:
    """A cluster node set up from the CPU lock, given the gpu target (the sbatch exports it)."""
    from halo_policy.server import target_problem

    assert target_problem(PolicySettings(target="cpu", _env_file=None)) == ""
    said = target_problem(PolicySettings(target="gpu", _env_file=None))
    assert said.startswith("HALO_POLICY_TARGET=gpu, but this environment's vLLM is the CPU build (vllm-cpu ")
    assert "requirements/gpu-lock.txt" in said
