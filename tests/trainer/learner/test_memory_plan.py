"""The learner's memory plan (halo_trainer.learner.memory.plan): the shipped GPU layouts, the refusals and the
settings they name, the coefficients' source, and the check at a run's start."""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from halo.schemas import RunSpec, RunState
from halo.settings.policy import PolicySettings
from halo.settings.trainer import TrainerSettings
from halo_trainer.api.runs import MemoryPlanRefused, RunManager
from halo_trainer.checks import memory_plan_cli
from halo_trainer.config import load_defaults, profile_for, resolve
from halo_trainer.learner.for_run import LearnerParts
from halo_trainer.learner.memory import fit as memory_fit
from halo_trainer.learner.memory import plan as mp
from halo_trainer.learner.memory.dims import GIB, QWEN3_VL_8B, ModelDims, image_patches
from halo_trainer.learner.memory.fit import ENV_CHECKPOINTING, ENV_DTYPE, ENV_MICRO_BATCH, Card
from halo_trainer.learner.memory.parts import (
    CUDA_CONTEXT_GIB,
    HEAD_SAVED_BYTES_PER_VOCAB,
    MEASURED_WIDTHS,
    TEXT_LAYER_BYTES,
    VISION_BLOCK_BYTES,
    Workload,
    prompt_tokens,
)
from tests.script_module import load_script
from tests.trainer.api.test_runs import api, wait_for_state  # noqa: F401 (the run API fixture)

ROOT = Path(__file__).resolve().parents[3]
H100, A100_40 = mp.CARDS_GIB["h100-80gb"], mp.CARDS_GIB["a100-40gb"]
MARGIN_GIB = 5.0  # the shipped defaults keep at least this much of an 80 GB card unused, beyond the plan's own margin


def gpu_workload(monkeypatch, algorithm: str = "grpo", **spec) -> Workload:
    """The gpu target's resolved settings and configs/rl_config.yaml's values, as a run gets them."""
    for name in (
        "HALO_TRAINER_DTYPE",
        "HALO_TRAINER_LEARNER__GRADIENT_CHECKPOINTING",
        "HALO_TRAINER_LEARNER__MICRO_BATCH_SIZE",
    ):
        monkeypatch.delenv(name, raising=False)
    settings = TrainerSettings(_env_file=None, target="gpu")
    defaults = load_defaults(ROOT / "configs" / "rl_config.yaml")
    cfg = resolve(RunSpec(domain="omnizon", algorithm=algorithm, **spec), "r", ["t"], defaults, profile_for("gpu"))
    learner = cfg.learner_config(settings.resolved_learner())
    return mp.workload_for(cfg, learner, settings.resolved_dtype())


def bench_module():
    """bench/gpu_learner_8b.py as a module (its imports put the repository and bench/ on the path)."""
    return load_script("bench/gpu_learner_8b.py")


def one_card(total: float) -> Card:
    return Card(
        total_gib=total, gpu_memory_utilization=PolicySettings(_env_file=None, target="gpu").gpu_memory_utilization
    )


def test_the_coefficients_are_the_committed_bench_results() -> None:
    results = json.loads((ROOT / "bench" / "results" / "memory_8b_layer.json").read_text())
    for table, section in ((TEXT_LAYER_BYTES, "text_layer"), (VISION_BLOCK_BYTES, "vision_block")):
        measured = {(k.split("_")[0], not k.endswith("no_checkpointing")): v for k, v in results[section].items()}
        assert table == measured
    assert HEAD_SAVED_BYTES_PER_VOCAB == results["head"]["bfloat16"] == results["head"]["float32"]
    dims = results["dims"]
    assert (dims["hidden_size"], dims["intermediate_size"], dims["vision_hidden_size"]) == (
        QWEN3_VL_8B.hidden_size,
        QWEN3_VL_8B.intermediate_size,
        QWEN3_VL_8B.vision_hidden_size,
    )
    assert {k: dims[k] for k in MEASURED_WIDTHS} == MEASURED_WIDTHS


def test_parameter_counts_are_the_model_transformers_builds() -> None:
    import torch
    from transformers import Qwen3VLForConditionalGeneration

    from halo_model.tiny import qwen3vl_config

    DIMS = bench_module().DIMS

    tokenizer = SimpleNamespace(convert_tokens_to_ids=lambda token: 0)
    config = qwen3vl_config(DIMS["8b"], tokenizer, vocab_size=DIMS["8b"].vocab_size)
    assert ModelDims.from_config(config) == QWEN3_VL_8B  # the bench's sizes are the plan's
    with torch.device("meta"):
        model = Qwen3VLForConditionalGeneration(config)
    count = lambda params: sum(p.numel() for p in params)  # noqa: E731
    assert count(model.parameters()) == QWEN3_VL_8B.params()
    assert count(model.model.visual.parameters()) == QWEN3_VL_8B.vision_params()
    mergers = [*model.model.visual.merger.parameters(), *model.model.visual.deepstack_merger_list.parameters()]
    assert count(mergers) == QWEN3_VL_8B.full_weight_params(["vision_merger"])[0]
    assert count(model.model.visual.blocks[0].parameters()) == QWEN3_VL_8B.vision_block_params()


def test_lora_parameters_are_what_peft_adds(tiny_model_dir) -> None:
    from peft import get_peft_model

    from halo_model.loading import load_model
    from halo_model.lora import LANGUAGE_MODEL_LINEAR_LAYERS, lora_config

    model = load_model(tiny_model_dir)
    dims = ModelDims.from_pretrained(tiny_model_dir)
    assert dims.params() == sum(p.numel() for p in model.parameters())
    peft = get_peft_model(model, lora_config(8, 16))
    added = sum(p.numel() for n, p in peft.named_parameters() if "lora_" in n)
    assert added == dims.lora_params(8, LANGUAGE_MODEL_LINEAR_LAYERS)


@pytest.mark.parametrize(("width", "height"), [(1280, 720), (1920, 1080), (800, 600), (64, 64), (5000, 5000)])
def test_image_patches_follow_the_processors_resize(width: int, height: int) -> None:
    from transformers.models.qwen2_vl.image_processing_qwen2_vl import smart_resize

    limits = {"max_pixels": 16777216 // 8, "min_pixels": 65536}
    h, w = smart_resize(height, width, factor=32, min_pixels=limits["min_pixels"], max_pixels=limits["max_pixels"])
    assert image_patches(width, height, **limits) == (h // 16) * (w // 16)
    assert image_patches(1280, 720, max_pixels=16777216, min_pixels=65536) == 3520  # 880 image tokens


def test_shipped_gpu_defaults_fit_one_80gb_card_beside_vllm(monkeypatch) -> None:
    work = gpu_workload(monkeypatch)
    assert (work.dtype, work.gradient_checkpointing, work.micro_batch_size) == ("bfloat16", True, 8)
    assert work.kl_coef == 0.001 and work.completion_tokens == 256 and not work.grammar
    plan = memory_fit.plan(QWEN3_VL_8B, work, one_card(H100))
    assert plan.fits, plan.table()
    assert plan.headroom_gib >= MARGIN_GIB, plan.table()
    # The KL reference pass (kl_coef 0.001) adds no weights; its no-grad peak is below the gradient pass's.
    assert plan.reference_pass_gib < plan.learner_gib
    assert plan.vllm_share_gib >= plan.vllm_need_gib > 16.3  # vLLM's bf16 weights alone are 16.3 GiB


def test_the_old_defaults_are_refused_naming_the_settings(monkeypatch) -> None:
    old = replace(gpu_workload(monkeypatch), dtype="float32", gradient_checkpointing=False, micro_batch_size=8)
    plan = memory_fit.plan(QWEN3_VL_8B, old, one_card(H100))
    assert not plan.fits and plan.peak_gib > 80  # more than the whole card, packed
    per_row = memory_fit.plan(QWEN3_VL_8B, replace(old, group_size=1), one_card(H100))
    assert per_row.peak_gib > 150  # the per-row layout main had: ~190-210 GiB read from the 8B's sizes
    assert plan.fix == f"set {ENV_DTYPE}=bfloat16 and {ENV_CHECKPOINTING}=true"
    assert "HALO_TRAINER_DTYPE=bfloat16" in plan.verdict()


def test_a_micro_batch_too_large_is_refused_naming_the_micro_batch(monkeypatch) -> None:
    work = replace(gpu_workload(monkeypatch), micro_batch_size=32)
    plan = memory_fit.plan(QWEN3_VL_8B, work, one_card(H100))
    assert not plan.fits and plan.fix.startswith(f"set {ENV_MICRO_BATCH}=")
    smaller = int(plan.fix.rsplit("=", 1)[1])
    assert memory_fit.plan(QWEN3_VL_8B, replace(work, micro_batch_size=smaller), one_card(H100)).fits
    assert not memory_fit.plan(QWEN3_VL_8B, replace(work, micro_batch_size=smaller + 1), one_card(H100)).fits


def test_a_40gb_card_is_refused_naming_the_two_card_layout(monkeypatch) -> None:
    plan = memory_fit.plan(QWEN3_VL_8B, gpu_workload(monkeypatch), one_card(A100_40))
    assert not plan.fits and not plan.vllm_fits  # 0.45 x 39.4 = 17.7 GiB < vLLM's 16.3 weights + KV + working
    assert "two cards" in plan.verdict() and "HALO_TRAINER_GPU=1" in plan.verdict()
    # Raising vLLM's share is no way out on one 40 GB card: what is left cannot hold the learner's weights.
    for utilization in (0.35, 0.55, 0.6):
        assert not memory_fit.plan(
            QWEN3_VL_8B, gpu_workload(monkeypatch), replace(one_card(A100_40), gpu_memory_utilization=utilization)
        ).fits


@pytest.mark.parametrize("total", [A100_40, H100])
def test_two_cards_fit_vllm_on_one_learner_on_the_other(monkeypatch, total: float) -> None:
    card = Card(total_gib=total, policy_shares_card=False, gpu_memory_utilization=0.9, policy_card_gib=total)
    plan = memory_fit.plan(QWEN3_VL_8B, gpu_workload(monkeypatch), card)
    assert plan.fits and plan.available_gib == total, plan.table()
    # The trainer's own check does not know vLLM's card: it checks the learner's only.
    unknown = memory_fit.plan(QWEN3_VL_8B, gpu_workload(monkeypatch), replace(card, policy_card_gib=None))
    assert unknown.vllm_fits and unknown.fits


def test_the_clis_policy_values_are_the_policy_settings_defaults() -> None:
    policy = PolicySettings(_env_file=None, target="gpu")
    assert (policy.gpu_memory_utilization, policy.max_model_len) == (mp.POLICY_UTILIZATION, mp.POLICY_MAX_MODEL_LEN)


def test_measured_free_memory_limits_the_learner(monkeypatch) -> None:
    """vLLM took more than its setting says (another value in .env, say): the card's free memory decides."""
    card = replace(one_card(H100), free_gib=20.0)
    plan = memory_fit.plan(QWEN3_VL_8B, gpu_workload(monkeypatch), card)
    assert not plan.fits and plan.available_gib == pytest.approx(20.0 + CUDA_CONTEXT_GIB)


def test_full_weights_vision_adds_its_copies_and_activations(monkeypatch) -> None:
    lora = memory_fit.plan(QWEN3_VL_8B, gpu_workload(monkeypatch), one_card(H100))
    vision = memory_fit.plan(QWEN3_VL_8B, gpu_workload(monkeypatch, full_weights=["vision"]), one_card(H100))
    items = dict((name, gib) for name, gib, _ in vision.items)
    params = QWEN3_VL_8B.vision_params()
    assert 570e6 < params < 580e6
    # Gradients, AdamW's two moments and the frozen reference copy, bf16: 4 x 2 bytes a parameter.
    assert items["full weights: reference, grads, AdamW"] == pytest.approx(params * 8 / GIB)
    patches = 3520  # one prompt: the step group's 8 rows share its screenshot
    kept = patches * (27 * VISION_BLOCK_BYTES[("bfloat16", True)] + VISION_BLOCK_BYTES[("bfloat16", False)])
    assert items["vision activations (trained)"] == pytest.approx(kept / GIB)
    added = vision.learner_gib - lora.learner_gib
    assert added == pytest.approx((params * 8 + kept) / GIB, rel=0.06)  # the rest: the 5 % margin on it
    assert 4.3 < added < 5.3


def test_target_resolves_dtype_device_and_checkpointing(monkeypatch) -> None:
    for name in ("HALO_TRAINER_DTYPE", "HALO_TRAINER_DEVICE", "HALO_TRAINER_LEARNER__GRADIENT_CHECKPOINTING"):
        monkeypatch.delenv(name, raising=False)
    gpu, cpu = TrainerSettings(_env_file=None, target="gpu"), TrainerSettings(_env_file=None, target="cpu")
    assert (gpu.resolved_device(), gpu.resolved_dtype(), gpu.resolved_learner().gradient_checkpointing) == (
        "cuda",
        "bfloat16",
        True,
    )
    assert (cpu.resolved_device(), cpu.resolved_dtype(), cpu.resolved_learner().gradient_checkpointing) == (
        "cpu",
        "float32",
        False,
    )
    assert gpu.learner.gradient_checkpointing is None  # one owner: resolved by target, saved resolved
    monkeypatch.setenv("HALO_TRAINER_DTYPE", "float32")
    monkeypatch.setenv("HALO_TRAINER_LEARNER__GRADIENT_CHECKPOINTING", "false")
    mine = TrainerSettings(_env_file=None, target="gpu")
    assert (mine.resolved_dtype(), mine.resolved_learner().gradient_checkpointing) == ("float32", False)


def test_the_cli_prints_the_plan_and_exits_1_when_it_does_not_fit(capsys) -> None:
    assert memory_plan_cli.main(["--card", "h100-80gb"]) == 0
    assert "fits:" in capsys.readouterr().out
    assert memory_plan_cli.main(["--card", "a100-40gb", "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert not out["fits"] and "two cards" in out["fix"]
    assert memory_plan_cli.main(["--card", "a100-40gb", "--two-cards"]) == 0


# -- the check at a run's start ---------------------------------------------------------------------
def start_check(monkeypatch, settings: TrainerSettings, total: float, utilization: float = 0.45) -> list[str]:
    """RunManager.check_memory with vLLM holding ``utilization`` of a ``total`` GiB card."""
    queried: list[str] = []

    def card(device, shares):
        queried.append(device)
        free = total * (1 - utilization) - CUDA_CONTEXT_GIB  # vLLM, started first, holds its share
        return Card(total_gib=total, free_gib=free, policy_shares_card=shares)

    monkeypatch.setattr(mp, "card_from_device", card)
    monkeypatch.setattr(ModelDims, "from_pretrained", classmethod(lambda cls, path: QWEN3_VL_8B))
    defaults = load_defaults(ROOT / "configs" / "rl_config.yaml")
    cfg = resolve(RunSpec(domain="omnizon"), "r", ["t"], defaults, profile_for(settings.target))
    learner = cfg.learner_config(settings.resolved_learner())
    RunManager.check_memory(SimpleNamespace(settings=settings), cfg, LearnerParts("any", None, learner))
    return queried


def test_a_run_that_does_not_fit_is_refused_at_start_with_the_plans_message(monkeypatch) -> None:
    monkeypatch.delenv("HALO_TRAINER_LEARNER__MICRO_BATCH_SIZE", raising=False)
    settings = TrainerSettings(_env_file=None, target="gpu")
    # 0.53: the least share vLLM starts with on a 40 GB card (its weights, KV cache, working memory).
    with pytest.raises(MemoryPlanRefused, match="use two cards") as refused:
        start_check(monkeypatch, settings, A100_40, utilization=0.53)
    assert "the learner needs 25.4 GiB" in str(refused.value) and "halo memory-plan" in str(refused.value)
    assert start_check(monkeypatch, settings, H100) == ["cuda"]  # fits: no error


def test_the_check_can_be_turned_off_and_is_only_logged_on_the_cpu_target(monkeypatch, caplog) -> None:
    caplog.set_level(logging.INFO, logger="halo.trainer.runs")
    off = TrainerSettings(_env_file=None, target="gpu", memory_check=False)
    start_check(monkeypatch, off, A100_40, utilization=0.53)
    assert "HALO_TRAINER_MEMORY_CHECK=false" in caplog.text
    cpu = TrainerSettings(_env_file=None, target="cpu")
    assert start_check(monkeypatch, cpu, A100_40) == []  # no card asked for
    assert "cpu target, not checked" in caplog.text


def test_the_processors_image_budget_sets_the_prompt(monkeypatch) -> None:
    processor = SimpleNamespace(image_processor=SimpleNamespace(size={"longest_edge": 200704, "shortest_edge": 3136}))
    assert mp.pixel_limits(processor) == (200704, 3136)
    work = replace(gpu_workload(monkeypatch), max_pixels=200704, min_pixels=3136)
    assert prompt_tokens(QWEN3_VL_8B, work) < prompt_tokens(QWEN3_VL_8B, gpu_workload(monkeypatch))


async def test_through_the_api_a_run_that_does_not_fit_fails_at_once_with_the_message(api, monkeypatch) -> None:  # noqa: F811
    """POST /runs answers 201; the run then fails before its learner loads, the plan's message as its error,
    and the trainer is free for the next run."""
    released: list[bool] = []
    monkeypatch.setattr("halo_trainer.api.runs.release_accelerator_memory", lambda: released.append(True))

    def parts(cfg):
        settings = TrainerSettings(_env_file=None, target="gpu")
        start_check(monkeypatch, settings, A100_40, utilization=0.53)
        raise AssertionError("the plan should have refused the run")

    monkeypatch.setattr(api.manager, "_learner_parts", parts)
    response = await api.client.post("/runs", json={"domain": "playground", "episodes": 8, "eval_every": 0})
    assert response.status_code == 201, response.text
    run_id = response.json()["run_id"]
    failed = await wait_for_state(api.manager, run_id, {RunState.FAILED})
    assert failed.error.startswith("MemoryPlanRefused: does not fit: the learner needs")
    assert "use two cards" in failed.error and released == [True]
    shown = await api.client.get(f"/runs/{run_id}")
    assert shown.status_code == 200 and shown.json()["state"] == "failed"
    assert api.manager.busy() is None


def test_the_gpu_bench_dry_run_resolves_the_trainers_configuration_without_cuda() -> None:
    import subprocess
    import sys

    run = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "gpu_learner_8b.py"), "--dry-run", "--device", "cpu"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    first, *plan = run.stdout.splitlines()
    summary = json.loads(first)
    assert summary["dtype"] == "bfloat16" and summary["gradient_checkpointing"] is True
    assert (summary["kl_coef"], summary["micro_batch"], summary["completion_tokens"]) == (0.001, 8, 256)
    assert (summary["steps"], summary["group"]) == (15, 8)  # a step-group job: max_steps x num_generations
    assert plan[0].startswith("memory plan: Qwen3-VL 8.77 B params") and plan[-1].startswith("fits:")


def test_the_plan_counts_a_shared_prompt_once(monkeypatch) -> None:
    """The learner packs rows that share a prompt (halo_model.grouped): a step group of 8 is one
    prompt and 8 completions; the per-row layout (episode groups) 8 of each; DPO pairs one prompt
    each. The shipped MCTS defaults fit one 80 GB card only because pairs share their state."""
    grouped = gpu_workload(monkeypatch)
    assert (grouped.rows(), grouped.prompts()) == (8, 1)
    per_row = replace(grouped, group_size=1)
    assert per_row.prompts() == 8
    tokens = {
        w.prompts(): dict((n, g) for n, g, _ in memory_fit.plan(QWEN3_VL_8B, w, one_card(H100)).items)[
            "decoder activations"
        ]
        for w in (grouped, per_row)
    }
    prompt = prompt_tokens(QWEN3_VL_8B, grouped)
    assert tokens[1] / tokens[8] == pytest.approx((prompt + 8 * 256) / (8 * (prompt + 256)))
    mcts = gpu_workload(monkeypatch, algorithm="mcts")
    assert (mcts.rows(), mcts.prompts()) == (16, 8)
    assert memory_fit.plan(QWEN3_VL_8B, mcts, one_card(H100)).fits
    assert not memory_fit.plan(
        QWEN3_VL_8B, replace(mcts, dpo=False, group_size=1, micro_batch_size=16), one_card(H100)
    ).fits
