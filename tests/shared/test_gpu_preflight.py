"""The GPU pre-flight (halo.cli.gpu_preflight) on nvidia-smi's own output for 80, 48, 40 and 24 GB cards.

The samples are what ``nvidia-smi --query-gpu=index,uuid,name,memory.total,memory.used
--format=csv,noheader,nounits`` prints on those cards (their memory.total in MiB as the driver reports
it). Each decision is the trainer's real memory plan (``halo memory-plan --json``) for the card read
from the sample; no GPU is needed. The end-to-end cases run the module as Compose does, with a
stand-in ``nvidia-smi`` on PATH that prints the sample (this machine has no driver). Before the
pre-flight, a card below ~45 GB started vLLM anyway and the policy container restarted in a loop.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from halo.cli.gpu_preflight import GpuCard, Layout, PreflightError, decide, parse_cards, pick, run_plan

UUID = "GPU-5f0c2a71-8d3e-4b6a-9c1f-2e7d8a9b0c{:02d}"
SAMPLES = {
    "h100-80gb": f"0, {UUID.format(0)}, NVIDIA H100 80GB HBM3, 81559, 0\n",
    "a100-80gb": f"0, {UUID.format(1)}, NVIDIA A100-SXM4-80GB, 81920, 4\n",
    "l40s-48gb": f"0, {UUID.format(2)}, NVIDIA L40S, 46068, 0\n",
    "a6000-48gb": f"0, {UUID.format(3)}, NVIDIA RTX A6000, 49140, 1\n",
    "a100-40gb": f"0, {UUID.format(4)}, NVIDIA A100-SXM4-40GB, 40960, 0\n",
    "rtx4090-24gb": f"0, {UUID.format(5)}, NVIDIA GeForce RTX 4090, 24564, 312\n",
    "a10g-24gb": f"0, {UUID.format(6)}, NVIDIA A10G, 23028, 0\n",
    "two-a100-40gb": (
        f"0, {UUID.format(7)}, NVIDIA A100-SXM4-40GB, 40960, 0\n1, {UUID.format(8)}, NVIDIA A100-SXM4-40GB, 40960, 0\n"
    ),
}
TWO_CARDS = "docker-compose.two-gpu.yml"


def _verdict(sample: str, policy: str = "0", trainer: str = "0", utilization: float = 0.45, **kw):
    cards = parse_cards(SAMPLES[sample])
    layout = Layout(pick(cards, policy, "HALO_POLICY_GPU"), pick(cards, trainer, "HALO_TRAINER_GPU"), utilization)
    plan = run_plan(layout.plan_args())
    return decide(layout, plan, **kw), plan


def test_nvidia_smi_rows_are_read_as_cards():
    (h100,) = parse_cards(SAMPLES["h100-80gb"])
    assert (h100.index, h100.name, h100.total_mib, h100.used_mib) == ("0", "NVIDIA H100 80GB HBM3", 81559.0, 0.0)
    assert h100.total_gib == pytest.approx(79.65, abs=0.01)
    two = parse_cards(SAMPLES["two-a100-40gb"])
    assert [c.index for c in two] == ["0", "1"] and pick(two, UUID.format(8), "HALO_TRAINER_GPU") is two[1]
    # "[N/A]" used memory (some virtualised cards) is read; a missing total is refused by name.
    assert parse_cards("0, GPU-x, NVIDIA A10G, 23028, [N/A]\n")[0].used_mib == 0.0
    for text, said in (
        ("0, GPU-x, NVIDIA A10G, [N/A], 0\n", "no memory total for card 0 (NVIDIA A10G)"),
        ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver\n", "not the 5 fields"),
        ("", "lists no card"),
    ):
        with pytest.raises(PreflightError, match=said.replace("(", r"\(").replace(")", r"\)")):
            parse_cards(text)
    with pytest.raises(PreflightError, match=r"HALO_TRAINER_GPU=1 names no card of this machine; its cards: 0"):
        pick(parse_cards(SAMPLES["a100-40gb"]), "1", "HALO_TRAINER_GPU")


@pytest.mark.parametrize("sample", ["h100-80gb", "a100-80gb"])
def test_an_80gb_card_holds_vllm_and_the_learner(sample: str):
    verdict, plan = _verdict(sample)
    assert verdict.ok and plan["fits"], verdict.lines
    assert "the memory plan fits" in verdict.lines[-1]


@pytest.mark.parametrize("sample", ["l40s-48gb", "a100-40gb", "rtx4090-24gb", "a10g-24gb"])
def test_a_card_too_small_for_vllms_share_is_refused_naming_two_cards(sample: str):
    """vLLM's 0.45 share cannot hold the 8B: the policy container would restart in a loop."""
    verdict, plan = _verdict(sample)
    assert not verdict.ok
    line = verdict.lines[-1]
    assert "refusing this layout, vLLM cannot start" in line and "below what it needs" in line
    assert TWO_CARDS in line and "HALO_TRAINER_GPU=1" in line  # the layout to use
    assert plan["problem"] in line and plan["fix"] in line  # the plan's own words, not a second copy


def test_a_48gb_card_that_holds_vllm_gets_the_plans_own_verdict():
    """An RTX A6000 (47.99 GiB): 0.45 of it holds vLLM, so the learner's side decides, as the plan says."""
    verdict, plan = _verdict("a6000-48gb")
    assert plan["vllm_share_gib"] >= plan["vllm_need_gib"]
    assert verdict.ok == plan["fits"]
    if not verdict.ok:
        assert "the learner will not fit" in verdict.lines[-1] and plan["fix"] in verdict.lines[-1]


def test_two_40gb_cards_hold_the_two_card_layout():
    verdict, plan = _verdict("two-a100-40gb", trainer="1", utilization=0.90)
    assert verdict.ok, verdict.lines
    assert "on card 0" in verdict.lines[0] and "the learner on card 1" in verdict.lines[0]


def test_a_two_card_layout_at_the_one_card_share_is_refused_with_the_share_to_set():
    """HALO_TRAINER_GPU=1 without docker-compose.two-gpu.yml: vLLM keeps 0.45 of a 40 GB card."""
    verdict, _ = _verdict("two-a100-40gb", trainer="1", utilization=0.45)
    assert not verdict.ok and "give vLLM's card a larger share" in verdict.lines[-1]


def test_a_learner_that_does_not_fit_passes_only_with_the_memory_check_off():
    card = GpuCard("0", "GPU-x", "NVIDIA RTX A6000", 49140, 0)
    plan = {
        "fits": False,
        "vllm_share_gib": 21.6,
        "vllm_need_gib": 20.5,
        "headroom_gib": -1.0,
        "problem": "the learner needs 27.9 GiB at its peak but has 26.4 GiB",
        "fix": "set HALO_TRAINER_LEARNER__MICRO_BATCH_SIZE=4",
    }
    layout = Layout(card, card, 0.45)
    refused = decide(layout, plan)
    assert not refused.ok and "the learner will not fit" in refused.lines[-1]
    assert decide(layout, plan, memory_check=False).ok
    # vLLM's share is refused either way: it cannot start at all.
    starved = {**plan, "vllm_share_gib": 18.0}
    assert not decide(layout, starved, memory_check=False).ok


# --- as Compose runs it ----------------------------------------------------------------------------------
def _run(tmp_path: Path, sample: str | None, *args: str, **env: str) -> tuple[subprocess.CompletedProcess[str], float]:
    """``python -m halo.cli.gpu_preflight`` with a stand-in nvidia-smi printing ``sample`` (None: none on PATH)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    if sample is not None:
        fake = bin_dir / "nvidia-smi"
        fake.write_text(f"#!/bin/sh\ncat <<'EOF'\n{SAMPLES[sample]}EOF\n")
        fake.chmod(0o755)
    base = {k: v for k, v in os.environ.items() if not k.startswith("HALO_")}
    path = os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), "/usr/bin", "/bin"])
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "halo.cli.gpu_preflight", *args],
        env={**base, "PATH": path, "HALO_DATA_DIR": str(tmp_path), "HALO_TRAINER_TARGET": "gpu", **env},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return result, time.monotonic() - started


def test_the_preflight_refuses_a_40gb_card_in_seconds_with_one_reason(tmp_path: Path):
    result, seconds = _run(tmp_path, "a100-40gb", "--policy-gpu", "0", "--trainer-gpu", "0")
    assert result.returncode == 2, result.stderr
    assert "refusing this layout, vLLM cannot start" in result.stderr and TWO_CARDS in result.stderr
    assert "Traceback" not in result.stderr and seconds < 120  # seconds on an idle machine; CI is loaded


def test_the_preflight_passes_an_80gb_card_and_the_cpu_target(tmp_path: Path):
    result, _ = _run(tmp_path, "h100-80gb")
    assert result.returncode == 0 and "the memory plan fits" in result.stdout, result.stderr
    cpu, _ = _run(tmp_path, None, HALO_TRAINER_TARGET="cpu")
    assert cpu.returncode == 0 and "nothing to check" in cpu.stdout, cpu.stderr


def test_the_preflight_without_a_card_or_with_a_bad_setting_says_so(tmp_path: Path):
    none, _ = _run(tmp_path, None)
    assert none.returncode == 2 and "nvidia-smi is not in this container" in none.stderr
    assert "NVIDIA Container Toolkit" in none.stderr and "HALO_TARGET=cpu" in none.stderr
    wrong, _ = _run(tmp_path, "h100-80gb", "--trainer-gpu", "1")
    assert wrong.returncode == 2 and "HALO_TRAINER_GPU=1 names no card" in wrong.stderr
    bad, _ = _run(tmp_path, "h100-80gb", HALO_POLICY_GPU_MEMORY_UTILIZATION="lots")
    assert bad.returncode == 2 and "gpu_memory_utilization" in bad.stderr
    for r in (none, wrong, bad):
        assert "Traceback" not in r.stderr


def test_another_model_is_planned_from_its_config_and_an_unreadable_one_is_not_refused(tmp_path: Path, tiny_model_dir):
    """HALO_MODEL other than the 8B: the plan reads its config.json (the tiny model fits a 24 GB card the
    8B does not); a config the pre-flight cannot read is not refused on a guess."""
    small, _ = _run(tmp_path, "rtx4090-24gb", HALO_TRAINER_MODEL=str(tiny_model_dir))
    assert small.returncode == 0 and "the memory plan fits" in small.stdout, small.stderr
    assert f"--model {tiny_model_dir}" in small.stdout
    unknown, _ = _run(tmp_path, "rtx4090-24gb", HALO_TRAINER_MODEL=str(tmp_path / "elsewhere"))
    assert unknown.returncode == 0 and "not checked" in unknown.stdout, unknown.stderr
    assert "Traceback" not in unknown.stderr + unknown.stdout


def test_the_two_card_file_on_one_card_is_refused(tmp_path: Path):
    """docker-compose.two-gpu.yml without HALO_TRAINER_GPU=1: vLLM's 0.90 and the learner on card 0, while
    the trainer's plan would count the whole card as the learner's."""
    env = {"HALO_TRAINER_POLICY_SHARES_CARD": "false", "HALO_POLICY_GPU_MEMORY_UTILIZATION": "0.90"}
    result, _ = _run(tmp_path, "two-a100-40gb", "--policy-gpu", "0", "--trainer-gpu", "0", **env)
    assert result.returncode == 2 and "both on card 0: set HALO_TRAINER_GPU=1" in result.stderr, result.stderr
    apart, _ = _run(tmp_path, "two-a100-40gb", "--policy-gpu", "0", "--trainer-gpu", "1", **env)
    assert apart.returncode == 0 and "the memory plan fits" in apart.stdout, apart.stderr
