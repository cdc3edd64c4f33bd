"""The GPU pre-flight (halo.cli.gpu_preflight) on nvidia-smi's own output for the cards a rented box has.

The samples are rows as ``nvidia-smi --query-gpu=index,uuid,name,driver_version,compute_cap,memory.total,
memory.used,memory.free --format=csv,noheader,nounits`` prints them: the card's name, a driver of the
535, 550, 570 or 580 branch, its compute capability, memory in MiB (memory.total as the driver reports
it, memory.free that total less the driver's reservation, about what torch reports as the total). Each
memory decision is the trainer's real memory plan (``halo memory-plan --json``) for the card read from
the sample; the driver and compute-capability decisions read the real GPU lock; no GPU is needed. The
end-to-end cases run the module as Compose does, with a stand-in ``nvidia-smi`` on PATH that prints the
sample (this machine has no driver). Before the pre-flight, a card below ~45 GB started vLLM anyway and
the policy container restarted in a loop; before its driver, capability, free-memory and disk checks,
an old driver, a T4 or a V100, a card another process held, or a full disk failed only once vLLM or the
download had started, each with its own stack trace.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from halo.cli import gpu_build, gpu_disk
from halo.cli.gpu_cards import PreflightError, explain_failure, parse_cards, pick, pick_list
from halo.cli.gpu_preflight import GpuCard, Layout, decide, memory_in_use, run_plan

ROOT = Path(__file__).resolve().parents[2]
UUID = "GPU-5f0c2a71-8d3e-4b6a-9c1f-2e7d8a9b0c{:02d}"


def _row(index: int, uuid: int, name: str, driver: str, capability: str, total: int, used: int, free: int) -> str:
    return f"{index}, {UUID.format(uuid)}, {name}, {driver}, {capability}, {total}, {used}, {free}\n"


SAMPLES = {
    "h100-80gb": _row(0, 0, "NVIDIA H100 80GB HBM3", "580.65.06", "9.0", 81559, 0, 81004),
    "a100-80gb": _row(0, 1, "NVIDIA A100-SXM4-80GB", "580.82.07", "8.0", 81920, 4, 81046),
    "l40s-48gb": _row(0, 2, "NVIDIA L40S", "580.95.05", "8.9", 46068, 0, 45457),
    "a6000-48gb": _row(0, 3, "NVIDIA RTX A6000", "580.65.06", "8.6", 49140, 1, 48667),
    "a100-40gb": _row(0, 4, "NVIDIA A100-SXM4-40GB", "580.82.07", "8.0", 40960, 0, 40337),
    "rtx4090-24gb": _row(0, 5, "NVIDIA GeForce RTX 4090", "580.95.05", "8.9", 24564, 312, 23905),
    "a10g-24gb": _row(0, 6, "NVIDIA A10G", "580.65.06", "8.6", 23028, 0, 22563),
    "two-a100-40gb": _row(0, 7, "NVIDIA A100-SXM4-40GB", "580.82.07", "8.0", 40960, 0, 40337)
    + _row(1, 8, "NVIDIA A100-SXM4-40GB", "580.82.07", "8.0", 40960, 0, 40337),
    "three-h100-80gb": "".join(
        _row(i, 10 + i, "NVIDIA H100 80GB HBM3", "580.95.05", "9.0", 81559, 0, 81004) for i in range(3)
    ),
    # An H100 another process (a forgotten notebook, someone else's job) holds 50 GiB of.
    "h100-80gb-busy": _row(0, 20, "NVIDIA H100 80GB HBM3", "580.65.06", "9.0", 81559, 51200, 29804),
}
# The same cards on the drivers rented boxes ship with: every branch before R580 lacks CUDA 13.0.
OLD_DRIVERS = {
    "h100-80gb-535": _row(0, 30, "NVIDIA H100 80GB HBM3", "535.183.01", "9.0", 81559, 0, 81004),
    "a100-80gb-550": _row(0, 31, "NVIDIA A100-SXM4-80GB", "550.127.05", "8.0", 81920, 4, 81046),
    "l4-24gb-550": _row(0, 32, "NVIDIA L4", "550.54.15", "8.9", 23034, 0, 22563),
    "rtx4090-24gb-570": _row(0, 33, "NVIDIA GeForce RTX 4090", "570.133.20", "8.9", 24564, 312, 23905),
    "a100-40gb-570": _row(0, 34, "NVIDIA A100-SXM4-40GB", "570.86.15", "8.0", 40960, 0, 40337),
}
CAPABILITIES = {
    "t4-16gb": _row(0, 40, "Tesla T4", "580.65.06", "7.5", 15360, 0, 14930),
    "v100-32gb": _row(0, 41, "Tesla V100-SXM2-32GB", "580.65.06", "7.0", 32768, 0, 32494),
    "l4-24gb": _row(0, 42, "NVIDIA L4", "580.82.07", "8.9", 23034, 0, 22563),
}
TWO_CARDS = "docker-compose.two-gpu.yml"
LOCK = ROOT / "requirements" / "gpu-lock.txt"


def _verdict(sample: str, policy: str = "0", trainer: str = "0", utilization: float = 0.45, **kw):
    cards = parse_cards(SAMPLES[sample])
    layout = Layout(pick(cards, policy, "HALO_POLICY_GPU"), pick_list(cards, trainer, "HALO_TRAINER_GPU"), utilization)
    plan = run_plan(layout.plan_args())
    return decide(layout, plan, **kw), plan


def test_nvidia_smi_rows_are_read_as_cards():
    (h100,) = parse_cards(SAMPLES["h100-80gb"])
    assert (h100.index, h100.name, h100.total_mib, h100.used_mib) == ("0", "NVIDIA H100 80GB HBM3", 81559.0, 0.0)
    assert (h100.driver, h100.compute_cap, h100.free_mib) == ("580.65.06", (9, 0), 81004.0)
    assert h100.total_gib == pytest.approx(79.65, abs=0.01)
    two = parse_cards(SAMPLES["two-a100-40gb"])
    assert [c.index for c in two] == ["0", "1"] and pick(two, UUID.format(8), "HALO_TRAINER_GPU") is two[1]
    # "[N/A]" used memory (some virtualised cards) is read; a missing total is refused by name.
    (vgpu,) = parse_cards("0, GPU-x, NVIDIA A10G, 580.65.06, [N/A], 23028, [N/A], [N/A]\n")
    assert (vgpu.used_mib, vgpu.free_mib, vgpu.compute_cap) == (0.0, None, None)
    for text, said in (
        ("0, GPU-x, NVIDIA A10G, 580.65.06, 8.6, [N/A], 0, 0\n", "no memory total for card 0 (NVIDIA A10G)"),
        ("0, GPU-x, NVIDIA A10G, 23028, 0\n", "not the 8 fields"),
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
    card = GpuCard("0", "GPU-x", "NVIDIA RTX A6000", 49140, 0, 48667, "580.65.06", (8, 6))
    plan = {
        "fits": False,
        "vllm_share_gib": 21.6,
        "vllm_need_gib": 20.5,
        "headroom_gib": -1.0,
        "problem": "the learner needs 27.9 GiB at its peak but has 26.4 GiB",
        "fix": "set HALO_TRAINER_LEARNER__MICRO_BATCH_SIZE=4",
    }
    layout = Layout(card, (card,), 0.45)
    refused = decide(layout, plan)
    assert not refused.ok and "the learner will not fit" in refused.lines[-1]
    assert decide(layout, plan, memory_check=False).ok
    # vLLM's share is refused either way: it cannot start at all.
    starved = {**plan, "vllm_share_gib": 18.0}
    assert not decide(layout, starved, memory_check=False).ok


# --- as Compose runs it ----------------------------------------------------------------------------------
ALL = {**SAMPLES, **OLD_DRIVERS, **CAPABILITIES}
EIGHT_B_BLOBS = "hub/models--Qwen--Qwen3-VL-8B-Instruct/blobs"


def _sparse(path: Path, size: int) -> None:
    with path.open("ab") as f:
        f.truncate(size)


def _run(
    tmp_path: Path, sample: str | None, *args: str, smi: tuple[str, int] | None = None, cached: bool = True, **env: str
) -> tuple[subprocess.CompletedProcess[str], float]:
    """``python -m halo.cli.gpu_preflight`` with a stand-in nvidia-smi printing ``sample`` (None: none on PATH),
    or ``smi``'s text with its exit status. ``cached``: the 8B's weights are already in the run's own
    Hugging Face cache (one sparse file: no disk used), so that no verdict depends on this machine's free
    space; the disk check has tests of its own."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    if sample is not None or smi is not None:
        text, status = smi or (ALL[sample], 0)
        fake = bin_dir / "nvidia-smi"
        fake.write_text(f"#!/bin/sh\ncat <<'EOF'\n{text}EOF\nexit {status}\n")
        fake.chmod(0o755)
    hf = tmp_path / "hf"
    if cached:
        (hf / EIGHT_B_BLOBS).mkdir(parents=True, exist_ok=True)
        _sparse(hf / EIGHT_B_BLOBS / "weights", int(17.6e9))
    base = {k: v for k, v in os.environ.items() if not k.startswith(("HALO_", "HF_"))}
    path = os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), "/usr/bin", "/bin"])
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "halo.cli.gpu_preflight", *args],
        env={
            **base,
            "PATH": path,
            "HALO_DATA_DIR": str(tmp_path),
            "HALO_TRAINER_TARGET": "gpu",
            "HALO_POLICY_TARGET": "gpu",
            "HF_HOME": str(hf),
            **env,
        },
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
    assert "nvidia-ctk runtime configure" in none.stderr
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


# --- the driver against the lock's CUDA ------------------------------------------------------------------
def test_the_lock_names_its_cuda_and_the_tables_cover_it():
    """The shipped lock's runtime is CUDA 13.0, which needs the R580 driver; the architecture table is the
    installed torch's own (this checkout's torch is the lock's build), so neither drifts from the lock."""
    build = gpu_build.read_build(LOCK)
    assert build is not None and build.cuda == (13, 0) and build.source.startswith("nvidia-cuda-runtime==13.0.")
    assert build.min_driver == "580.65.06" and build.arches is not None
    torch = pytest.importorskip("torch")
    if torch.version.cuda is None or tuple(map(int, torch.version.cuda.split(".")[:2])) != build.cuda:
        pytest.skip(f"this torch is not the lock's {build.name} build")
    flags = torch._C._cuda_getArchFlags().split()  # what torch.cuda.get_arch_list() reads, without a card
    built = tuple(sorted((int(f[3:-1]), int(f[-1])) for f in flags if f.startswith("sm_")))
    assert built == build.arches


def test_another_lock_moves_the_minimum_driver_with_it(tmp_path: Path):
    """CUDA 12.8 (the cu12 runtime package, or only torch's +cu128) needs 570.26; no CUDA at all: None."""
    for text, cuda in (
        ("torch==2.8.0\nnvidia-cuda-runtime-cu12==12.8.90\n", (12, 8)),
        ("torch==2.7.1+cu128\n", (12, 8)),
        ("nvidia-cuda-runtime-cu12==12.6.77\nnvidia-cuda-runtime==13.0.96\n", (13, 0)),  # the newest
    ):
        lock = tmp_path / "lock.txt"
        lock.write_text(text)
        build = gpu_build.read_build(lock)
        assert build is not None and build.cuda == cuda, text
    assert build.min_driver == "580.65.06"
    lock.write_text("torch==2.7.1+cu128\n")
    cu128 = gpu_build.read_build(lock)
    assert cu128 is not None and cu128.min_driver == "570.26"
    assert gpu_build.driver_problem(parse_cards(OLD_DRIVERS["l4-24gb-550"]), cu128) is not None
    assert gpu_build.driver_problem(parse_cards(OLD_DRIVERS["rtx4090-24gb-570"]), cu128) is None
    lock.write_text("torch==2.13.0+cpu\n")
    assert gpu_build.read_build(lock) is None


@pytest.mark.parametrize("sample", sorted(OLD_DRIVERS))
def test_a_driver_older_than_the_locks_cuda_is_refused_naming_the_minimum(sample: str):
    build = gpu_build.read_build(LOCK)
    cards = parse_cards(OLD_DRIVERS[sample])
    line = gpu_build.driver_problem(cards, build)
    assert line is not None
    assert f"the NVIDIA driver is {cards[0].driver}" in line and "needs 580.65.06 or newer" in line
    assert "CUDA 13.0" in line and "nvidia-cuda-runtime==13.0" in line
    assert "update the host's NVIDIA driver to 580.65.06 or newer" in line and "driver >= 580.65.06" in line


@pytest.mark.parametrize("sample", ["h100-80gb", "a100-80gb", "l40s-48gb", "rtx4090-24gb"])
def test_an_r580_driver_passes(sample: str):
    assert gpu_build.driver_problem(parse_cards(SAMPLES[sample]), gpu_build.read_build(LOCK)) is None


def test_the_preflight_refuses_an_old_driver_before_the_plan(tmp_path: Path):
    result, _ = _run(tmp_path, "h100-80gb-535")
    assert result.returncode == 2
    (line,) = [x for x in result.stderr.splitlines() if "refusing" in x]
    assert "the NVIDIA driver is 535.183.01" in line and "580.65.06" in line and "Traceback" not in result.stderr


def test_a_driver_too_old_for_the_query_names_the_minimum_driver(tmp_path: Path):
    """A driver before R510 has no compute_cap field: nvidia-smi refuses the query (its own words)."""
    said = 'Field "compute_cap" is not a valid field to query.\n\n'
    result, _ = _run(tmp_path, None, smi=(said, 2))
    assert result.returncode == 2 and "too old for the query" in result.stderr, result.stderr
    assert "580.65.06" in result.stderr and "Traceback" not in result.stderr


# --- compute capability ----------------------------------------------------------------------------------
def _capability_lines(sample: str, dtype: str = "bfloat16") -> list[str]:
    (card,) = parse_cards({**SAMPLES, **CAPABILITIES}[sample])
    roles = [("vLLM", card, dtype), ("the learner", card, dtype)]
    return gpu_build.capability_problems(roles, gpu_build.read_build(LOCK))


def test_a_t4_is_refused_for_bfloat16_and_a_v100_for_the_cuda_build():
    t4 = _capability_lines("t4-16gb")
    assert len(t4) == 2 and "Tesla T4" in t4[0] and "compute capability 7.5" in t4[0]
    assert "vLLM runs in bfloat16, which needs 8.0 or newer" in t4[0] and "the learner runs in bfloat16" in t4[1]
    assert _capability_lines("t4-16gb", dtype="float16") == []  # Turing runs the build, only not in bfloat16
    v100 = _capability_lines("v100-32gb")
    assert "compute capability 7.0" in v100[0] and "CUDA 13.0 build of torch and vLLM has no kernels" in v100[0]
    assert "7.5 or newer" in v100[0]
    assert _capability_lines("v100-32gb", dtype="float16") == v100  # no dtype helps


@pytest.mark.parametrize("sample", ["h100-80gb", "a100-40gb", "l40s-48gb", "a6000-48gb", "rtx4090-24gb", "l4-24gb"])
def test_ampere_and_newer_cards_run_the_build(sample: str):
    assert _capability_lines(sample) == []


def test_a_later_minor_runs_an_earlier_kernel_of_its_major_only():
    arches = gpu_build.read_build(LOCK).arches
    assert gpu_build.runs_on((8, 9), arches) and gpu_build.runs_on((12, 1), arches)
    assert not gpu_build.runs_on((7, 0), arches) and not gpu_build.runs_on((11, 0), arches)


def test_the_preflight_refuses_a_t4_naming_its_capability_and_every_other_reason_at_once(tmp_path: Path):
    """A T4 on a 550 driver: the driver, the capability and the memory plan each get their line, in one run."""
    t4, _ = _run(tmp_path, "t4-16gb")
    assert t4.returncode == 2 and "compute capability 7.5" in t4.stderr and "bfloat16" in t4.stderr
    old = CAPABILITIES["t4-16gb"].replace("580.65.06", "550.127.05")
    result, _ = _run(tmp_path, None, smi=(old, 0))
    refusals = [x for x in result.stderr.splitlines() if "refusing" in x]
    assert result.returncode == 2 and len(refusals) == 4, result.stderr  # vLLM's share, driver, 2 x bfloat16
    assert "the NVIDIA driver is 550.127.05" in result.stderr and "vLLM cannot start" in result.stderr
    assert "Traceback" not in result.stderr


# --- free memory -----------------------------------------------------------------------------------------
def test_a_card_another_process_holds_is_refused_and_a_running_stacks_is_not():
    """50 GiB of the H100 held by another process: vLLM's 0.45 share and the learner's peak no longer fit in
    what is free, though the card's total holds them. The same memory while the stack's vLLM answers is the
    stack's own (a second `make up`)."""
    verdict, plan = _verdict("h100-80gb-busy")
    assert verdict.ok  # the totals' verdict: the card is large enough
    (card,) = parse_cards(SAMPLES["h100-80gb-busy"])
    layout = Layout(card, (card,), 0.45)
    notes, refusals = memory_in_use(layout, plan)
    (line,) = refusals
    assert "card 0 (NVIDIA H100 80GB HBM3) has 29.1 GiB free, 50.0 GiB already in use by another process" in line
    assert f"the learner's peak {plan['learner_peak_gib']:.1f}" in line and "vLLM's 0.45 share 35.8" in line
    assert "HALO_POLICY_GPU" in line
    notes, refusals = memory_in_use(layout, plan, stack_running="policy:8000")
    assert refusals == [] and "taken as the running stack's own" in notes[0]
    (idle_card,) = parse_cards(SAMPLES["h100-80gb"])
    idle_notes, idle = memory_in_use(Layout(idle_card, (idle_card,), 0.45), plan)
    need = 0.45 * idle_card.total_gib + plan["learner_peak_gib"]
    assert idle == [] and idle_notes == [f"card 0: 79.1 GiB free, this layout puts {need:.1f} GiB on it"]


@pytest.mark.slow  # two runs of the pre-flight, each with the memory plan
def test_the_preflight_tells_a_busy_card_from_the_running_stack(tmp_path: Path):
    refused, _ = _run(tmp_path, "h100-80gb-busy", "--policy-address", "127.0.0.1:1")
    assert refused.returncode == 2 and "already in use by another process" in refused.stderr, refused.stderr
    with socket.socket() as vllm:  # where the stack's vLLM would listen
        vllm.bind(("127.0.0.1", 0))
        vllm.listen()
        address = f"127.0.0.1:{vllm.getsockname()[1]}"
        running, _ = _run(tmp_path, "h100-80gb-busy", "--policy-address", address)
    assert running.returncode == 0 and f"its vLLM answers at {address}" in running.stdout, running.stderr


# --- disk ------------------------------------------------------------------------------------------------
def test_disk_needs_on_one_file_system_add_up_and_a_short_one_is_refused(tmp_path: Path):
    free = shutil.disk_usage(tmp_path).free / gpu_disk.GIB
    cache = tmp_path / "hf" / "hub"  # not created yet: its nearest existing folder is measured
    fits = [gpu_disk.DiskNeed(cache, "the Hugging Face cache", 0.5, "the weights")]
    notes, refusals = gpu_disk.check(fits)
    assert refusals == [] and "free at" in notes[0] and "0.5 GiB needed (0.5 GiB the weights)" in notes[0]
    half = free / 2 + 0.5  # each fits alone, not both: they share the file system
    short = [
        gpu_disk.DiskNeed(cache, "the Hugging Face cache", half, "Qwen/Qwen3-VL-8B-Instruct's weights"),
        gpu_disk.DiskNeed(tmp_path, "Docker's data root", half, "the containers' caches"),
    ]
    assert gpu_disk.check(short[:1])[1] == []
    _, (line,) = gpu_disk.check(short)
    assert f"but this stack needs {2 * half:.1f} GiB there" in line and "the Hugging Face cache" in line
    assert "Docker's data root" in line and "docker system prune" in line


def test_what_the_cache_holds_is_not_downloaded_again(tmp_path: Path):
    blobs = tmp_path / "models--Qwen--Qwen3-VL-8B-Instruct" / "blobs"
    blobs.mkdir(parents=True)
    _sparse(blobs / "a", 3 * gpu_disk.GIB)
    _sparse(blobs / "b.incomplete", gpu_disk.GIB)  # a download cut short still counts
    assert gpu_disk.cached_gib(tmp_path, "Qwen/Qwen3-VL-8B-Instruct") == pytest.approx(4.0)
    assert gpu_disk.cached_gib(tmp_path, "Qwen/other") == 0.0
    assert gpu_disk.is_hub_name("Qwen/Qwen3-VL-8B-Instruct") and not gpu_disk.is_hub_name(str(tmp_path))


def test_the_preflight_sizes_the_download_at_the_hugging_face_cache(tmp_path: Path):
    empty, _ = _run(tmp_path, "h100-80gb", cached=False)
    disk = [x for x in empty.stdout.splitlines() if x.startswith("gpu pre-flight: disk:")]
    assert empty.returncode == 0 and disk, empty.stdout + empty.stderr
    assert "16.3 GiB Qwen/Qwen3-VL-8B-Instruct's weights" in disk[0] and str(tmp_path / "hf" / "hub") in disk[0]
    cached, _ = _run(tmp_path, "h100-80gb")
    assert "0.0 GiB Qwen/Qwen3-VL-8B-Instruct's weights (16.4 GiB already cached)" in cached.stdout


# --- the NVIDIA container runtime ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("said", "status", "expected"),
    [
        ("No devices were found\n", 6, "Docker's NVIDIA runtime passed none"),
        (
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the "
            "latest NVIDIA driver is installed and running.\n",
            9,
            "the NVIDIA driver is not loaded on the host",
        ),
        ("Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 580.95\n", 18, "reboot"),
        ("Failed to initialize NVML: Unknown Error\n", 255, "lost its access to the cards"),
    ],
)
def test_nvidia_smi_failures_name_their_fix(tmp_path: Path, said: str, status: int, expected: str):
    result, _ = _run(tmp_path, None, smi=(said, status))
    assert result.returncode == 2 and expected in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    if status == 6:
        assert "nvidia-container-toolkit" in result.stderr and "--gpus all" in result.stderr
    assert explain_failure(said, status, "x") in result.stderr


# --- the learner on several cards ------------------------------------------------------------------------
def test_a_list_of_learner_cards_is_picked_once_each():
    cards = parse_cards(SAMPLES["three-h100-80gb"])
    assert [c.index for c in pick_list(cards, "1,2", "HALO_TRAINER_GPU")] == ["1", "2"]
    assert pick_list(cards, UUID.format(12), "HALO_TRAINER_GPU")[0].index == "2"
    with pytest.raises(PreflightError, match="names a card twice"):
        pick_list(cards, "1,1", "HALO_TRAINER_GPU")
    with pytest.raises(PreflightError, match="HALO_TRAINER_GPU=1,3: 3 names no card"):
        pick_list(cards, "1,3", "HALO_TRAINER_GPU")


@pytest.mark.slow  # two runs of the pre-flight, each with the memory plan
def test_two_learner_ranks_are_planned_per_card_beside_vllm_alone(tmp_path: Path):
    """HALO_TRAINER_GPU=1,2 with the two-card file: vLLM alone on card 0, a learner rank on cards 1 and 2,
    planned with --learner-gpus 2 (the plan per rank); the ranks setting must match the list."""
    env = {"HALO_TRAINER_POLICY_SHARES_CARD": "false", "HALO_POLICY_GPU_MEMORY_UTILIZATION": "0.90"}
    ranks = {**env, "HALO_TRAINER_LEARNER_RANKS": "2"}
    result, _ = _run(tmp_path, "three-h100-80gb", "--policy-gpu", "0", "--trainer-gpu", "1,2", **ranks)
    assert result.returncode == 0, result.stderr
    assert "the learner's 2 ranks on card 1" in result.stdout and "--learner-gpus 2 --two-cards" in result.stdout
    one_rank, _ = _run(tmp_path, "three-h100-80gb", "--policy-gpu", "0", "--trainer-gpu", "1,2", **env)
    assert one_rank.returncode == 2 and "set HALO_TRAINER_LEARNER_RANKS=2 in .env" in one_rank.stderr


def test_a_layout_with_two_learner_ranks_plans_each_as_the_smallest_card():
    cards = parse_cards(SAMPLES["three-h100-80gb"])
    layout = Layout(cards[0], (cards[0], cards[1]), 0.45)
    assert layout.shares_card and "--learner-gpus" in layout.plan_args() and "--two-cards" not in layout.plan_args()
    assert len(layout.cards) == 2
