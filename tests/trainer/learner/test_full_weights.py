"""Full-weight training of chosen base-model modules beside the LoRA adapter, on the tiny Qwen3-VL."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors import safe_open

from halo.schemas import RunSpec
from halo.settings.trainer import LearnerConfig
from halo_model import full_weights
from halo_model.loading import load_model, load_processor
from halo_trainer.learner.checkpoint import CheckpointManager
from halo_trainer.learner.dpo_update import dpo_update
from halo_trainer.learner.learner import Learner
from tests.conftest import free_port
from tests.trainer.learner.test_learner import config, group_batch, tiny_model

MERGER = ("model.visual.merger.", "model.visual.deepstack_merger_list.")


@pytest.fixture(scope="module")
def processor(tiny_model_dir):
    return load_processor(tiny_model_dir)


def folder_tensors(directory: Path) -> dict[str, tuple[tuple[int, ...], str]]:
    """Every tensor of a model folder's safetensors: name -> (shape, dtype)."""
    out = {}
    for file in sorted(directory.glob("*.safetensors")):
        with safe_open(str(file), "pt") as f:
            for key in f.keys():  # noqa: SIM118 - safe_open is not a mapping
                s = f.get_slice(key)
                out[key] = (tuple(s.get_shape()), s.get_dtype())
    return out


def base_params(learner: Learner) -> dict[str, torch.Tensor]:
    """Every parameter of the model (adapter included) by PEFT name, copied."""
    return {n: p.detach().clone() for n, p in learner.model.named_parameters()}


def has_gradient(param: torch.Tensor) -> bool:
    return param.grad is not None and bool(param.grad.any())


# --- selection ---------------------------------------------------------------------------------


def test_presets_and_module_names_select_parameters_in_checkpoint_naming(base_model) -> None:
    names = [n for n, _ in base_model.named_parameters()]
    depth = base_model.config.vision_config.depth
    merger = full_weights.select(["vision_merger"], names, depth)
    assert merger and all(n.startswith(MERGER) for n in merger)
    assert len(merger) == sum(n.startswith(MERGER) for n in names)
    last = full_weights.select(["vision_last_blocks"], names, depth)
    assert {n.split(".")[3] for n in last} == {str(i) for i in range(max(0, depth - 2), depth)}
    vision = full_weights.select(["vision"], names, depth)
    assert vision == [n for n in names if n.startswith("model.visual.")]
    assert full_weights.select(["all"], names, depth) == names
    # module names match at a dot boundary; duplicates count once; model order kept
    assert full_weights.select(["model.visual.blocks.1", "vision_merger", "vision_merger"], names, depth) == [
        n for n in names if n.startswith(("model.visual.blocks.1.", *MERGER))
    ]
    assert full_weights.select([], names, depth) == []


@pytest.mark.parametrize(
    ("entry", "match"),
    [
        ("vision_tower", "neither a preset"),
        ("visual.merger", "neither a preset"),
        ("model.visual.blokcs", "matches no"),
    ],
)
def test_an_unknown_entry_is_a_clear_error(base_model, entry: str, match: str) -> None:
    names = [n for n, _ in base_model.named_parameters()]
    with pytest.raises(ValueError, match=match):
        full_weights.select([entry], names, 2)


def test_the_run_request_refuses_an_unknown_preset() -> None:
    assert RunSpec(domain="playground", full_weights=["vision_merger", "lm_head"]).full_weights == (
        "vision_merger",
        "lm_head",
    )
    with pytest.raises(ValueError, match="neither a preset"):
        RunSpec(domain="playground", full_weights=["vision_tower"])


# --- the learner -------------------------------------------------------------------------------


def test_lora_only_is_the_default(base_model) -> None:
    learner = Learner(tiny_model(base_model), config())
    assert learner.weights.full_weight_names() == [] and learner.full_params == []
    assert len(learner.optimizer.param_groups) == 1


def test_only_lora_and_the_chosen_modules_change(base_model, processor) -> None:
    learner = Learner(tiny_model(base_model), config(full_weights=("vision_merger",), full_weights_lr=1e-3))
    chosen = learner.weights.full_weight_names()
    assert chosen and all(n.startswith(MERGER) for n in chosen)
    groups = learner.optimizer.param_groups
    assert len(groups) == 2 and groups[1]["lr"] == 1e-3 and groups[0]["lr"] == 1e-3
    assert [id(p) for p in groups[1]["params"]] == [id(p) for p in learner.full_params]
    before = base_params(learner)
    metrics = learner.update(group_batch(processor, [1.0, -1.0]))
    assert metrics["train/grad_norm"] > 0
    changed = {n for n, p in learner.model.named_parameters() if not torch.equal(p, before[n])}
    lora = {n for n in changed if "lora_" in n}
    full = {full_weights.checkpoint_name(n.removeprefix("base_model.model.")) for n in changed - lora}
    # the tiny language model has one layer: the second DeepStack merger's output reaches no layer
    reached = {n for n, p in zip(chosen, learner.full_params, strict=True) if has_gradient(p)}
    assert any(n.startswith("model.visual.merger.") for n in reached)
    assert lora and full == reached, sorted(full ^ reached)[:5]


def test_the_full_weight_group_has_its_own_learning_rate(base_model, processor) -> None:
    """Adam's first step moves each parameter by about its group's lr: 1e-3 for LoRA, 1e-6 here."""
    learner = Learner(tiny_model(base_model), config(full_weights=("vision_merger",), full_weights_lr=1e-6))
    before = [p.detach().clone() for p in learner.full_params]
    learner.update(group_batch(processor, [1.0, -1.0]))
    moved = max(float((p.detach() - b).abs().max()) for p, b in zip(learner.full_params, before, strict=True))
    assert 0 < moved <= 1.1e-6


def test_the_reference_policy_is_the_model_as_loaded(base_model, processor) -> None:
    """With full weights the adapter-disabled model is not the base: the reference swaps the
    initial values back in (KL and DPO's base reference), then the trained ones return."""
    learner = Learner(tiny_model(base_model), config(full_weights=("vision",), kl_coef=0.1))
    batch = group_batch(processor, [1.0, -1.0])
    loaded = learner.logprobs(batch)
    for _ in range(2):
        learner.update(batch)
    trained = [p.detach().clone() for p in learner.full_params]
    assert torch.equal(learner.logprobs(batch, adapter=False), loaded)
    assert all(torch.equal(p, t) for p, t in zip(learner.full_params, trained, strict=True))
    assert not torch.allclose(learner.logprobs(batch), loaded)


def test_dpo_trains_the_full_weights_too(base_model, processor) -> None:
    learner = Learner(tiny_model(base_model), config(full_weights=("vision_merger",), full_weights_lr=1e-3))
    chosen, rejected = group_batch(processor, [0.0]), group_batch(processor, [0.0], completions=[[20, 21]])
    ref_c, ref_r = learner.logprobs(chosen, adapter=False), learner.logprobs(rejected, adapter=False)
    before = [p.detach().clone() for p in learner.full_params]
    dpo_update(learner, chosen, rejected, ref_c, ref_r, beta=0.1)
    moved = [not torch.equal(p, b) for p, b in zip(learner.full_params, before, strict=True)]
    assert moved == [has_gradient(p) for p in learner.full_params] and any(moved)


# --- model folders -----------------------------------------------------------------------------


def test_saved_base_weights_have_the_model_folders_keys_and_load_back(base_model, tiny_model_dir, tmp_path) -> None:
    learner = Learner(tiny_model(base_model), config(full_weights=("vision_merger",)))
    with torch.no_grad():
        for p in learner.full_params:
            p.add_(0.25)
        for n, p in learner.model.named_parameters():
            if "lora_B" in n:
                p.fill_(1.0)  # a non-zero adapter: it must not be merged into what is saved
    out = learner.weights.save_base_weights(tmp_path / "base")
    assert folder_tensors(out) == folder_tensors(Path(tiny_model_dir))
    # transformers loads it: the base weights, trained modules updated, adapter not merged
    loaded = load_model(out)
    chosen = set(learner.weights.full_weight_names())
    for name, param in loaded.named_parameters():
        expected = base_model.get_parameter(name) + (0.25 if name in chosen else 0.0)
        assert torch.equal(param, expected), name
    # and a fresh learner loads it back
    fresh = Learner(tiny_model(base_model), config(full_weights=("vision_merger",)))
    fresh.weights.load_base_weights(out)
    assert all(torch.equal(a, b) for a, b in zip(fresh.full_params, learner.full_params, strict=True))
    # written again after more training: the folder is replaced whole
    with torch.no_grad():
        learner.full_params[0].add_(1.0)
    assert learner.weights.save_base_weights(out) == out and folder_tensors(out) == folder_tensors(Path(tiny_model_dir))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["base"]  # no temp or old folder left
    name = learner.weights.full_weight_names()[0]
    assert torch.equal(full_weights.read_weights(out)[name], learner.full_params[0].detach())
    # a folder holding anything else (a model's own, with its tokenizer) is refused and left as it is
    model_like = tmp_path / "model"
    full_weights.write_weights({"x": torch.zeros(2)}, model_like)
    (model_like / "tokenizer.json").write_text("{}")
    with pytest.raises(ValueError, match="not a weights folder written here"):
        learner.weights.save_base_weights(model_like)
    assert sorted(p.name for p in model_like.iterdir()) == ["model.safetensors", "tokenizer.json"]


def test_saved_base_weights_keep_the_folders_dtype(base_model, tiny_model_dir, tmp_path) -> None:
    """A bf16 model folder trained in float32 is written back in bf16 (what vLLM serves)."""
    bf16_dir = tmp_path / "bf16"
    load_model(tiny_model_dir, dtype="bfloat16").save_pretrained(bf16_dir)
    learner = Learner(load_model(bf16_dir), config(full_weights=("vision_merger",)))
    assert {p.dtype for p in learner.full_params} == {torch.float32}
    out = learner.weights.save_base_weights(tmp_path / "base")
    assert folder_tensors(out) == folder_tensors(bf16_dir)


def test_loading_weights_that_do_not_fit_is_refused(base_model, tmp_path) -> None:
    learner = Learner(tiny_model(base_model), config(full_weights=("vision",)))
    partial = Learner(tiny_model(base_model), config(full_weights=("vision_merger",)))
    partial.weights.save_base_weights(tmp_path / "merger", trained_only=True)
    with pytest.raises(ValueError, match="trained weights missing"):
        learner.weights.load_base_weights(tmp_path / "merger")
    full_weights.write_weights({"model.visual.nothing.weight": torch.zeros(2)}, tmp_path / "odd")
    with pytest.raises(ValueError, match="unknown weights"):
        learner.weights.load_base_weights(tmp_path / "odd")
    with pytest.raises(ValueError, match="no .safetensors"):
        learner.weights.load_base_weights(tmp_path)


def test_learner_config_full_weights_belong_to_runs() -> None:
    from halo.settings.trainer import TrainerSettings

    assert LearnerConfig().full_weights == ()
    with pytest.raises(ValueError, match="full_weights"):
        TrainerSettings(learner=LearnerConfig(full_weights=("vision",)))


# --- checkpoints -------------------------------------------------------------------------------

FULL = {"full_weights": ("vision_merger", "vision_last_blocks"), "full_weights_lr": 1e-3, "warmup_steps": 3}


def optimizer_state(learner: Learner) -> dict[str, torch.Tensor]:
    """AdamW's moments of every trained parameter, by the parameter's PEFT name."""
    names = {id(p): n for n, p in learner.model.named_parameters()}
    out = {}
    for param, state in learner.optimizer.state.items():
        for key, value in state.items():
            out[f"{names[id(param)]}:{key}"] = value.detach().clone()
    return out


def test_a_checkpoint_restores_full_weights_and_their_optimizer_state_exactly(base_model, processor, tmp_path) -> None:
    manager = CheckpointManager(tmp_path)
    original = Learner(tiny_model(base_model), config(**FULL))
    for _ in range(2):
        original.update(group_batch(processor, [1.0, -1.0]))
    saved = manager.save(original, config={"run_id": "run-test"})
    assert saved.full_weight_names() == sorted(original.weights.full_weight_names())

    restored = Learner(tiny_model(base_model), config(**FULL))
    manager.restore(restored, manager.load_latest())
    expected, got = original.trainable_state(), restored.trainable_state()
    assert expected.keys() == got.keys() and all(torch.equal(expected[k], got[k]) for k in expected)
    expected_opt, got_opt = optimizer_state(original), optimizer_state(restored)
    assert any(".visual." in k for k in expected_opt)
    assert expected_opt.keys() == got_opt.keys() and all(torch.equal(expected_opt[k], got_opt[k]) for k in expected_opt)
    assert [g["lr"] for g in restored.optimizer.param_groups] == [g["lr"] for g in original.optimizer.param_groups]

    # one more update from each: the same metrics and the same parameters, bit for bit
    batch = group_batch(processor, [0.5, -1.0, 0.5])
    assert restored.update(batch) == original.update(batch)
    expected, got = original.trainable_state(), restored.trainable_state()
    assert all(torch.equal(expected[k], got[k]) for k in expected)
    # and the test can tell: a learner restored without the full weights takes another step
    lora_only = Learner(tiny_model(base_model), config(**FULL))
    lora_only.weights.load_adapter(saved.adapter_dir)
    lora_only.optimizer.load_state_dict(torch.load(saved.path / "optimizer.pt", weights_only=True)["optimizer"])
    lora_only.update(batch)
    other = lora_only.trainable_state()
    assert not all(torch.equal(other[k], expected[k]) for k in expected)


def test_a_checkpoint_of_other_full_weights_is_refused(base_model, tmp_path) -> None:
    lora_dir, full_dir = tmp_path / "lora", tmp_path / "full"
    CheckpointManager(lora_dir).save(Learner(tiny_model(base_model), config()), config={})
    CheckpointManager(full_dir).save(Learner(tiny_model(base_model), config(**FULL)), config={})
    assert not (lora_dir / "ckpt-0" / "full_weights").exists()

    # a LoRA-only checkpoint still loads into a LoRA-only learner
    CheckpointManager(lora_dir).resume(Learner(tiny_model(base_model), config()))
    cases = [
        (lora_dir, config(**FULL), "trained LoRA only, this learner trains LoRA and"),
        (full_dir, config(), "this learner trains LoRA only"),
        (full_dir, config(full_weights=("vision",)), "full-weight parameters"),
    ]
    for root, cfg, match in cases:
        learner = Learner(tiny_model(base_model), cfg)
        before = learner.trainable_state()
        with pytest.raises(ValueError, match=match):
            CheckpointManager(root).resume(learner)
        after = learner.trainable_state()
        assert learner.step == 0 and all(torch.equal(before[k], after[k]) for k in before)


# --- the command line --------------------------------------------------------------------------


def test_halo_train_full_weights_flag(tmp_path) -> None:
    """An unknown name stops before anything is sent; comma-separated and repeated names pass the
    request's validation (and then find no trainer on a closed port)."""
    env = {**os.environ, "HALO_TRAINER_PORT": str(free_port())}
    halo = [sys.executable, "-m", "halo.cli.main", "train", "--domain", "playground", "--no-stack"]
    bad = subprocess.run([*halo, "--full-weights", "vision_tower"], capture_output=True, text=True, env=env)
    assert bad.returncode == 2 and "neither a preset" in bad.stderr
    good = subprocess.run(
        [*halo, "--full-weights", "vision_merger,vision_last_blocks", "--full-weights", "model.visual.blocks.0"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert good.returncode == 1 and "not reachable" in good.stderr, good.stderr


def test_the_initial_base_weights_are_the_model_as_loaded(base_model, processor, tmp_path) -> None:
    """What vLLM gets back when a full-weights run ends: after training, the folder holds the
    weights as loaded (the trained ones stay in the learner)."""
    learner = Learner(tiny_model(base_model), config(full_weights=("vision_merger",), full_weights_lr=1e-3))
    learner.update(group_batch(processor, [1.0, -1.0]))
    trained = [p.detach().clone() for p in learner.full_params]
    assert any(
        not torch.equal(t, base_model.get_parameter(n))
        for n, t in zip(learner.weights.full_weight_names(), trained, strict=True)
    )
    loaded = load_model(learner.weights.save_initial_base_weights(tmp_path / "v0"))
    for name, param in loaded.named_parameters():
        assert torch.equal(param, base_model.get_parameter(name)), name
    assert all(torch.equal(p, t) for p, t in zip(learner.full_params, trained, strict=True))
