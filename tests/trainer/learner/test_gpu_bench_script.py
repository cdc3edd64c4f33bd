"""bench/gpu_learner_8b.py: its code path at toy sizes on the CPU (the 8B run needs a GPU box)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "bench" / "gpu_learner_8b.py"


# The LoRA case is the fast tier's proof that the device-ready bench runs (about 20 s quiet: one
# update of a real job's size at tiny widths); the full-weights case adds little and waits for make test.
@pytest.mark.parametrize(
    "full_weights",
    [pytest.param([], id="lora"), pytest.param(["vision"], id="full-vision", marks=pytest.mark.slow)],
)
def test_tiny_dims_run_one_update_and_report(tmp_path: Path, full_weights: list[str]) -> None:
    out = tmp_path / "gpu_learner_tiny.json"
    run = subprocess.run(
        [sys.executable, str(SCRIPT), "--dims", "tiny", "--device", "cpu", "--updates", "1", "--out", str(out)]
        + (["--full-weights", *full_weights] if full_weights else []),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    r = json.loads(out.read_text())
    assert r["dims"] == "tiny" and r["group"] == 8 and r["dtype"] == "float32"
    assert 0 < r["lora_params"] < r["params"]
    assert r["full_weights"] == full_weights
    assert (r["full_weight_params"] > 0) == bool(full_weights) and r["full_weight_params"] < r["params"]
    assert r["image_tokens"] > 0 and r["completion_tokens"] > 8
    # The counted forward is at least the dense matmuls of the language model over every token.
    assert r["forward_tflop"] * 1e12 >= 2 * r["group"] * r["sequence_tokens"] * 128 * 128
    # forward + backward, and the KL reference's forward when the trainer's config has one (gpu: 0.001)
    passes = 2 + (r["kl_coef"] > 0)
    assert r["model_tflop_per_update"] == pytest.approx(passes * r["forward_tflop"])
    assert r["update_s_median"] > 0 and 0 < r["mfu"] < r["hfu"]
    assert "MFU" in run.stdout


def test_an_unknown_full_weights_entry_is_a_clear_error(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, str(SCRIPT), "--dims", "tiny", "--device", "cpu", "--full-weights", "model.visual.nope"]
        + ["--out", str(tmp_path / "x.json")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 2
    assert "matches no parameter" in run.stderr and "Traceback" not in run.stderr


def test_8b_dims_without_a_gpu_is_a_clear_error() -> None:
    run = subprocess.run(
        [sys.executable, str(SCRIPT), "--dims", "8b", "--device", "cpu"], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 2
    assert "need a CUDA GPU" in run.stderr and "Traceback" not in run.stderr


def test_the_random_model_is_built_wholly_in_the_requested_dtype() -> None:
    # bf16 throughout: a float32 language model would double the 8B run's memory and skew its MFU.
    sys.path.insert(0, str(ROOT / "bench"))
    from gpu_learner_8b import DIMS, random_model

    from halo_model.loading import load_processor
    from halo_model.tiny import build_tiny_model

    tokenizer = load_processor(build_tiny_model()).tokenizer
    model = random_model(DIMS["tiny"], tokenizer, torch.bfloat16, "cpu")
    assert {p.dtype for p in model.parameters()} == {torch.bfloat16}
