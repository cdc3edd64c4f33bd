"""Trainer service settings (prefix ``HALO_TRAINER_``)."""

from __future__ import annotations

import ipaddress
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, create_model, field_validator, model_validator
from pydantic_settings import SettingsConfigDict

from halo.schemas import knobs
from halo.settings import HaloSettings


class _LearnerSettings(BaseModel):
    """Hyper-parameters of the learner (halo_trainer.learner.learner); saved with every checkpoint.

    The fields below are the machine's, set from the environment as ``HALO_TRAINER_LEARNER__<FIELD>``
    (e.g. ``HALO_TRAINER_LEARNER__MICRO_BATCH_SIZE=4``): they change memory and time, not the update.
    The others are the run's knobs the learner reads (``halo.schemas.knobs``, ``learner=True``:
    ``RUN_OWNED_LEARNER_FIELDS``, the optimiser's included): one owner, the run's config
    (``RunConfig.learner_config``), so they are refused in the environment.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    micro_batch_size: Annotated[int, Field(ge=1)] = Field(
        8, description="Sequences per forward/backward pass (gradients accumulate to one step)"
    )
    gradient_checkpointing: bool | None = Field(
        None,
        description="Recompute activations in the backward pass (GPU memory for time); None = by the trainer's "
        "target, on for gpu, off for cpu (TrainerSettings.resolved_learner; the Learner reads None as off)",
    )


LearnerConfig = create_model(
    "LearnerConfig",
    __base__=_LearnerSettings,
    __module__=__name__,
    **knobs.fields([k for k in knobs.KNOBS if k.learner], how="default"),
)

# Set per run (configs/rl_config.yaml, its profile, the RunSpec): one owner, so not settable here.
RUN_OWNED_LEARNER_FIELDS = frozenset(k.name for k in knobs.KNOBS if k.learner)


class TrainerSettings(HaloSettings):
    model_config = SettingsConfigDict(
        env_prefix="HALO_TRAINER_",
        env_file=".env",
        extra="ignore",
        frozen=True,
        env_nested_delimiter="__",
        env_ignore_empty=True,  # Compose passes an unset `${HALO_MAX_PIXELS:-}` through as ""
    )

    host: str = Field("127.0.0.1", description="Bind address")
    port: int = Field(8400, description="HTTP port of the run API")
    api_token: SecretStr = Field(
        SecretStr(""),
        description="Bearer token for mutating endpoints; empty = open, allowed only on a loopback bind address",
    )
    allowed_origins: list[str] = Field(
        default_factory=list,
        description="Web origins besides the API's own (its address on a loopback name or the bind host) whose "
        "pages may change runs, e.g. a reverse proxy's https://halo.example; JSON list",
    )
    env_url: str = Field("http://127.0.0.1:8100", description="Environment service")
    reward_url: str = Field("http://127.0.0.1:8200", description="Reward service")
    policy_url: str = Field("http://127.0.0.1:8000", description="vLLM server the rollout workers sample from")
    policy_api_key: SecretStr = Field(
        SecretStr(""), description="The vLLM server's (or every replica's) HALO_POLICY_API_KEY, sent with each request"
    )
    policy_model_name: str = Field(
        "halo-base", description="Name vLLM serves the base model under (policy version 0 samples from it)"
    )
    policy_replicas: str | None = Field(
        None,
        description="Redis key prefix of a policy replica registry (the cluster's HALO_CLUSTER_KEY_PREFIX, "
        "`halo:cluster:`): rollouts sample from the live replicas registered there (least loaded, then the same one "
        "per job, failover) and each version is loaded on every one; None = the one server at policy_url",
    )
    policy_sticky_ttl_s: Annotated[int, Field(ge=1)] = Field(
        3_600,
        description="With policy_replicas: how long a job stays on the replica it started on (its forks share "
        "that replica's prompt cache), s",
    )
    cluster_nodes: str | None = Field(
        None,
        description="Redis key prefix of the cluster (HALO_CLUSTER_KEY_PREFIX, `halo:cluster:`): list and probe a run's "
        "tasks, and check readiness, through any running rollout node's env and reward (the supervisor's status), "
        "not env_url and reward_url; None = env_url and reward_url",
    )
    target: Literal["cpu", "gpu"] = Field(
        "cpu",
        description="cpu: the learner loads the tiny Qwen3-VL and runs use the `tiny` profile; "
        "gpu: Qwen3-VL-8B-Instruct on CUDA with the seeds' hyper-parameters",
    )
    model: str | None = Field(
        None,
        description="Model the learner loads (path or Hugging Face name); None = the tiny model the project "
        "builds (cpu) or Qwen/Qwen3-VL-8B-Instruct (gpu). Must be the model vLLM serves (checked at run start)",
    )
    learner: LearnerConfig = Field(
        default_factory=LearnerConfig,
        description="The learner's memory settings (HALO_TRAINER_LEARNER__MICRO_BATCH_SIZE, __GRADIENT_CHECKPOINTING); "
        "its other fields are each run's knobs, refused here",
    )
    rollout_workers: Annotated[int, Field(ge=0, le=64)] = Field(
        2,
        description="Rollout worker tasks inside the trainer (more can run as `python -m halo_trainer.worker`)",
    )
    learner_ranks: Annotated[int, Field(ge=1, le=64)] = Field(
        1,
        description="Processes the learner spans, data-parallel with FSDP2: one per GPU on the gpu target "
        "(the first N cards the trainer sees), gloo processes on the cpu target. Above 1, `python -m halo_trainer` "
        "starts itself N times under torch's elastic launcher (torchrun) on this machine; rank 0 is the service",
    )
    learner_nodes: Annotated[int, Field(ge=1, le=64)] = Field(
        1,
        description="Machines the learner spans, each running HALO_TRAINER_LEARNER_RANKS ranks. Above 1, every "
        "machine starts `python -m halo_trainer` with the same HALO_TRAINER_LEARNER_RENDEZVOUS and its own "
        "HALO_TRAINER_LEARNER_NODE_RANK: node 0's rank 0 is the service, every other rank follows its learner",
    )
    learner_node_rank: Annotated[int, Field(ge=0, le=63)] = Field(
        0, description="This machine's place among HALO_TRAINER_LEARNER_NODES (0: the service's)"
    )
    learner_rendezvous: str = Field(
        "",
        description="host:port on node 0 where the learner's ranks of every machine meet (torchrun's static "
        "rendezvous, --master-addr/--master-port); needed above one node, reachable from each",
    )
    job_claim_idle_s: Annotated[float, Field(gt=0)] = Field(
        60.0, description="A job silent this long (no heartbeat) is reclaimed from its dead worker, s"
    )
    job_max_deliveries: Annotated[int, Field(ge=1)] = Field(
        3, description="Deliveries of a job before it goes to the dead-letter stream"
    )
    request_timeout_s: Annotated[float, Field(gt=0)] = Field(120.0, description="Timeout of one env/reward call, s")
    outage_wait_s: Annotated[float, Field(gt=0)] = Field(
        900.0,
        description="A run whose rollouts all fail on infrastructure (or whose vLLM is down) this long fails, s",
    )
    rl_config: str = Field("configs/rl_config.yaml", description="Run defaults (relative to the repository root)")
    device: str | None = Field(None, description="Torch device of the learner; None = cpu (cpu target), cuda (gpu)")
    dtype: Literal["float32", "bfloat16", "float16"] | None = Field(
        None,
        description="The learner's weights and activations; None = float32 on cpu (the CPU vLLM's dtype: exact "
        "log-prob parity), bfloat16 on gpu (the 8B's weights in float32 and its activations leave no room beside vLLM)",
    )
    max_pixels: int | None = Field(
        None,
        ge=1024,
        description="Image-token budget of the learner's processor: must equal the policy server's "
        "HALO_POLICY_MAX_PIXELS (Compose sets both from HALO_MAX_PIXELS); checked at run start against one "
        "prompt vLLM tokenises. None = the model's own processor default",
    )
    policy_shares_card: bool = Field(
        True,
        description="vLLM runs on the learner's card (one-card layout): the memory plan sets its "
        "gpu_memory_utilization share aside; false = the learner has its card to itself (two cards)",
    )
    memory_check: bool = Field(
        True,
        description="On the gpu target, refuse a run whose memory plan (halo_trainer.learner.memory.plan) does not fit "
        "the card; false = log the plan only",
    )
    checkpoint_keep: Annotated[int, Field(ge=1)] = Field(
        3, description="Complete checkpoints kept per run (older ones deleted)"
    )

    @model_validator(mode="after")
    def _learner_nodes_meet_somewhere(self) -> TrainerSettings:
        if self.learner_node_rank >= self.learner_nodes:
            raise ValueError(
                f"HALO_TRAINER_LEARNER_NODE_RANK={self.learner_node_rank} with HALO_TRAINER_LEARNER_NODES="
                f"{self.learner_nodes}: a node's rank is 0 to {self.learner_nodes - 1}"
            )
        if self.learner_nodes > 1:
            host, _, port = self.learner_rendezvous.rpartition(":")
            if not host or not port.isdigit() or not 0 < int(port) < 65536:
                raise ValueError(
                    f"HALO_TRAINER_LEARNER_NODES={self.learner_nodes} needs HALO_TRAINER_LEARNER_RENDEZVOUS=host:port "
                    f"(node 0's address and a free port every node reaches), not {self.learner_rendezvous!r}"
                )
        return self

    @field_validator("learner", mode="before")
    @classmethod
    def _learner_fields_not_owned_by_runs(cls, learner: Any) -> Any:
        # Checked before the values are: a run-owned name is refused as such, whatever its value.
        given = set(learner) if isinstance(learner, dict) else set(getattr(learner, "model_fields_set", ()))
        if owned := sorted(given & RUN_OWNED_LEARNER_FIELDS):
            raise ValueError(
                f"{', '.join(owned)} belong to each run's config (configs/rl_config.yaml or the POST /runs body), "
                "not to HALO_TRAINER_LEARNER__*"
            )
        return learner

    def resolved_device(self) -> str:
        return self.device or ("cpu" if self.target == "cpu" else "cuda")

    def resolved_dtype(self) -> str:
        return self.dtype or ("float32" if self.target == "cpu" else "bfloat16")

    def processor_kwargs(self) -> dict[str, int]:
        """What the learner's processor is built with (``load_processor``): the image budget."""
        return {} if self.max_pixels is None else {"max_pixels": self.max_pixels}

    def resolved_learner(self) -> LearnerConfig:
        """``learner`` with the fields left None taken from the target: gradient checkpointing on
        the gpu target (without it the 8B's activations do not fit beside vLLM), off on cpu."""
        if self.learner.gradient_checkpointing is not None:
            return self.learner
        return self.learner.model_copy(update={"gradient_checkpointing": self.target == "gpu"})

    def exposure_problem(self) -> str | None:
        """Why serving on ``host`` would be unsafe, or None: an open run API must stay on loopback."""
        if self.api_token.get_secret_value() or _is_loopback(self.host):
            return None
        return (
            f"refusing to serve the run API on {self.host}:{self.port} without a token: anyone who reaches "
            "that address could start runs. Set HALO_TRAINER_API_TOKEN (`make up` writes a random one to .env) "
            "or bind to 127.0.0.1 (HALO_TRAINER_HOST)."
        )


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve to any interface
