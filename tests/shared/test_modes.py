"""The agent-mode registry and adapter promotion (halo.modes) on folders made here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from halo.modes import (
    MODES,
    ModeError,
    get_mode,
    openai_model,
    promote,
    promote_run,
    promoted_adapter,
    promotion_record,
    run_adapter,
)
from halo.settings.eval import EvalSettings


def _adapter(folder: Path, weights: bytes = b"w1") -> Path:
    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_text(json.dumps({"r": 8}))
    (folder / "adapter_model.safetensors").write_bytes(weights)
    return folder


@pytest.fixture
def settings(tmp_path: Path) -> EvalSettings:
    return EvalSettings(_env_file=None, data_dir=tmp_path / "var", checkpoints_dir=tmp_path / "checkpoints")


def test_the_users_modes_are_registered():
    assert list(MODES) == ["qwen3vl_base", "qwen3vl_grpo", "qwen3vl_mcts", "gpt5_baseline", "gpt4o_baseline"]
    assert get_mode("qwen3vl_grpo").adapter_dir_name == "qwen3vl_grpo_lora"
    assert get_mode("qwen3vl_base").adapter_dir_name is None
    with pytest.raises(ModeError, match="unknown mode 'qwen_worker_bc'.*qwen3vl_base"):
        get_mode("qwen_worker_bc")


def test_gpt_modes_are_refused_without_a_key_and_name_their_model(settings, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ModeError, match="gpt5_baseline needs an API key.*HALO_EVAL_OPENAI_API_KEY"):
        openai_model(get_mode("gpt5_baseline"), settings)
    monkeypatch.setenv("HALO_EVAL_OPENAI_API_KEY", "sk-x")
    keyed = EvalSettings(_env_file=None, gpt4o_model="gpt-4o-2024")
    assert openai_model(get_mode("gpt4o_baseline"), keyed) == "gpt-4o-2024"
    assert openai_model(get_mode("gpt5_baseline"), keyed) == "gpt-5.2"


def test_promotion_copies_a_runs_version_and_renames_when_the_weights_change(settings):
    runs = settings.runs_dir
    _adapter(runs / "r1" / "adapters" / "v1", b"first")
    _adapter(runs / "r1" / "adapters" / "v3", b"third")
    mode = get_mode("qwen3vl_grpo")
    with pytest.raises(ModeError, match="no promoted adapter.*halo modes promote qwen3vl_grpo"):
        promoted_adapter(mode, settings)
    assert run_adapter(runs, "r1").name == "v3"  # newest by default
    with pytest.raises(ModeError, match="no adapter v2; it has v1..v3"):
        run_adapter(runs, "r1", 2)
    target = promote("qwen3vl_grpo", run_adapter(runs, "r1", 1), settings, run_id="r1", version=1)
    assert target == settings.checkpoints_dir / "qwen3vl_grpo_lora"
    assert (target / "adapter_model.safetensors").read_bytes() == b"first"
    folder, first_name = promoted_adapter(mode, settings)
    assert folder == target and first_name.startswith("qwen3vl_grpo-")
    assert promotion_record(mode, settings)["version"] == 1
    promote("qwen3vl_grpo", run_adapter(runs, "r1"), settings, run_id="r1", version=3)
    assert (target / "adapter_model.safetensors").read_bytes() == b"third"
    assert promoted_adapter(mode, settings)[1] != first_name  # vLLM never reloads a name in place
    assert not list(settings.checkpoints_dir.glob(".*"))  # no staging folder left behind


def test_promotion_refuses_what_is_not_an_adapter_or_a_mode_without_one(settings, tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModeError, match="not a PEFT adapter folder"):
        promote("qwen3vl_mcts", tmp_path / "empty", settings)
    with pytest.raises(ModeError, match="qwen3vl_base takes no adapter"):
        promote("qwen3vl_base", _adapter(tmp_path / "a"), settings)
    with pytest.raises(ModeError, match="has no adapters"):
        run_adapter(settings.runs_dir, "missing-run")


def test_a_run_is_promoted_only_to_the_mode_of_its_algorithm(settings):
    _adapter(settings.runs_dir / "g" / "adapters" / "v2")
    # The layout the run API writes: the RunConfig under "run", the trainer's settings beside it.
    (settings.runs_dir / "g" / "config.json").write_text(json.dumps({"run": {"algorithm": "grpo"}, "trainer": {}}))
    with pytest.raises(ModeError, match="g is a grpo run; mode qwen3vl_mcts takes a mcts run's adapter"):
        promote_run("qwen3vl_mcts", "g", None, settings)
    target = promote_run("qwen3vl_grpo", "g", None, settings)
    assert json.loads((target / "promotion.json").read_text())["version"] == 2
    _adapter(settings.runs_dir / "old" / "adapters" / "v1")  # a run saved before "run" existed
    (settings.runs_dir / "old" / "config.json").write_text(json.dumps({"algorithm": "mcts"}))
    with pytest.raises(ModeError, match="old is a mcts run"):
        promote_run("qwen3vl_grpo", "old", None, settings)
