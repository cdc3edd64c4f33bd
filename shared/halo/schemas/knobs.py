"""Every setting of a training run, declared once: name, type and bounds, unit, default, the seeds' value, help.

Everything else derives from this table:

- ``RunSpec`` (``POST /runs``): one optional field per knob a request may set (``request``);
- ``RunConfig`` (the run's resolved config, saved with the run): one field per knob;
- ``MCTSConfig`` (the ``mcts`` section) and ``SamplingParams`` (the ``sampling`` section), which
  travel on every search job and transition;
- the run-owned fields of the learner's ``LearnerConfig`` (``learner``);
- ``configs/rl_config.yaml``, rendered from the table (``python -m halo.schemas.rl_config_file --write``);
  a test fails when the file and the table differ, so the yaml never holds a second default;
- the flags of ``halo train`` and of ``scripts/train_online_grpo.py`` / ``train_mcts.py``
  (``--<name-with-dashes>``, plus the seeds' spelling where the seeds' commands use another one).

Each help is one line; where a knob needs more, ``halo.schemas.knob_notes`` holds the long text,
rendered into docs/knobs.md under the knob's anchor (``Knob.docs``).

A default is the GPU target's (the 8B's); a profile (``PROFILES``: ``tiny`` for the CPU target's
random-weight model) overrides values of knobs declared here and declares nothing. ``before`` is
the value a run saved before the knob existed ran with, so that such a run resumes as it ran;
``old_section`` is where a defaults file written before ``run`` and ``learner`` were split from
``grpo`` keeps the knob, so that such a file still loads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import AfterValidator, Field

from halo.schemas.base import WireBool, WireFloat, WireInt
from halo.schemas.choices import (
    Advantage,
    Algorithm,
    BranchPolicy,
    Critic,
    GroupMode,
    ImportanceLevel,
    LoraTarget,
    LossNorm,
    Reference,
    RolloutNodes,
    Selection,
    StructuredMode,
    TaskSampling,
    TrackerName,
    check_full_weights,
    check_trackers,
    takes_section,
)
from halo.schemas.env import Viewport
from halo.schemas.knob_notes import NOTES

UNSET: Any = object()  # a knob without a seeds' value, or without a value before it existed

# run: the run as a whole, whatever its algorithm; grpo: GRPO's groups, objective and pipeline;
# learner: the optimiser; then what the adapter reaches, how the policy is asked, the search.
SECTIONS = ("run", "grpo", "learner", "tracking", "lora", "full_weights", "sampling", "mcts")
# What a GRPO run's command line takes (scripts/train_online_grpo.py): every section a GRPO run takes
# (``halo.schemas.choices.ALGORITHMS``: not another algorithm's own).
GRPO_SECTIONS = tuple(s for s in SECTIONS if takes_section(Algorithm.GRPO, s))
DOCS = "docs/knobs.md"


@dataclass(frozen=True, kw_only=True)
class Knob:
    name: str  # the one name: RunSpec, RunConfig, the yaml, the CLI flag (dashes) and the learner use it
    section: str  # its section of configs/rl_config.yaml
    type: Any  # the type with its bounds, checked wherever a value arrives (request, yaml, profile, resume)
    unit: str = ""
    default: Any  # the GPU target's value
    help: str  # one line; the long explanation, where there is one, is knob_notes.NOTES[name]
    seeds: Any = UNSET  # the users' seed documents' value, where they give one
    seeds_flag: str | None = None  # the seeds' command-line spelling, where it is not --<name>
    request: bool = True  # a request (POST /runs, halo train) may set it
    learner: bool = False  # the learner reads it (a run-owned field of LearnerConfig)
    before: Any = UNSET  # what a run saved before this knob existed ran with
    old_section: str | None = None  # where a defaults file written before the sections were split keeps it

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def docs(self) -> str | None:
        """Where docs/knobs.md explains the knob at length, or None where its help line says it all."""
        return f"{DOCS}#{self.name}" if self.name in NOTES else None


def _int(ge: int, le: int) -> Any:
    return Annotated[WireInt, Field(ge=ge, le=le)]


def _float(**bounds: float) -> Any:
    return Annotated[WireFloat, Field(**bounds)]


Positive = _float(gt=0.0, le=1.0)
FullWeights = Annotated[
    tuple[Annotated[str, Field(max_length=200)], ...], Field(max_length=64), AfterValidator(check_full_weights)
]
Trackers = Annotated[tuple[TrackerName, ...], Field(max_length=5), AfterValidator(check_trackers)]
Beta = _float(ge=0.0, lt=1.0)
LANGUAGE_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")

# fmt: off
KNOBS: tuple[Knob, ...] = (
    # -- run: the run as a whole, GRPO or search ------------------------------------------------
    Knob(name="episodes", section="run", type=_int(1, 1_000_000), unit="episodes", default=100, seeds=100,
         help="Training episodes; a step-group job is one episode, a search one", old_section="grpo"),
    Knob(name="seed", section="run", type=_int(0, 2**31 - 1), default=0,
         help="Seed of the training jobs' tasks and episodes", old_section="grpo"),
    Knob(name="max_steps", section="run", type=_int(1, 200), unit="steps", default=15,
         help="Steps per episode before truncation", old_section="grpo"),
    Knob(name="temperature", section="run", type=_float(ge=0.01, le=2.0), default=0.7, seeds=0.7, learner=True,
         help="Sampling temperature of training rollouts, and the one the learner scores at", old_section="grpo"),
    Knob(name="learning_rate", section="run", type=Positive, default=1e-6, seeds=1e-6, seeds_flag="--lr",
         learner=True, help="AdamW peak learning rate on the LoRA parameters", old_section="grpo"),
    Knob(name="jobs_per_update", section="run", type=_int(1, 1024), unit="jobs", default=4, old_section="grpo",
         help="Rollout jobs per update (a step group gives one group per step); with mcts, the searches of one "
              "DPO iteration"),
    Knob(name="epochs_per_batch", section="run", type=_int(1, 16), unit="passes", default=1,
         help="Passes over each batch of groups or preference pairs", old_section="grpo"),
    Knob(name="common_random_numbers", section="run", type=WireBool, default=False, before=False,
         help="The jobs of one update sample with the same seeds, so that the reward, not the draw, differs "
              "between them", old_section="grpo"),
    Knob(name="eval_every", section="run", type=_int(0, 1_000_000), unit="updates", default=10,
         help="Updates between held-out evaluations (0 = never)", old_section="grpo"),
    Knob(name="eval_episodes", section="run", type=_int(0, 10_000), unit="episodes", default=32,
         help="Greedy episodes per evaluation", old_section="grpo"),
    Knob(name="checkpoint_every", section="run", type=_int(1, 1_000_000), unit="updates", default=5,
         request=False, help="Updates between checkpoints", old_section="grpo"),
    # -- grpo: groups, objective, asynchronous pipeline ----------------------------------------
    Knob(name="num_generations", section="grpo", type=_int(2, 32), unit="samples", default=8, seeds=8,
         help="Group size N: actions sampled per state (step groups) or episodes per task (episode groups)"),
    Knob(name="group_mode", section="grpo", type=GroupMode, default=GroupMode.STEP,
         help="step: fork N ways at each state; episode: N full episodes per task"),
    Knob(name="branch", section="grpo", type=BranchPolicy, default=BranchPolicy.SAMPLED,
         help="Step groups continue from: sampled | best | random"),
    Knob(name="task_sampling", section="grpo", type=TaskSampling, default=TaskSampling.ROUND_ROBIN,
         before=TaskSampling.ROUND_ROBIN,
         help="Which task each job plays when a run has several: round_robin (in turn) | signal (by recent "
              "advantage)"),
    Knob(name="advantage", section="grpo", type=Advantage, default=Advantage.DR_GRPO, seeds=Advantage.DR_GRPO,
         seeds_flag="--loss_type",
         help="Estimator: dr_grpo r - mean(r) | grpo over std(r) | rloo r - others' mean | reinforce_pp_baseline over "
              "the batch's std"),
    Knob(name="loss_norm", section="grpo", type=LossNorm, default=LossNorm.CONSTANT, seeds=LossNorm.CONSTANT,
         learner=True,
         help="constant: token losses / (max_tokens * G) | sequence: each completion's mean / G (GRPO's length bias)"),
    Knob(name="kl_coef", section="grpo", type=_float(ge=0.0, le=10.0), default=0.001, seeds=0.001, learner=True,
         help="Weight of the k3 KL estimate to the frozen base (adapter disabled); 0 = off"),
    Knob(name="importance_level", section="grpo", type=ImportanceLevel, default=ImportanceLevel.TOKEN,
         learner=True, before=ImportanceLevel.TOKEN,
         help="What one importance ratio covers: token (PPO, GRPO) | sequence (GSPO: exp of the mean log-ratio)"),
    Knob(name="clip_eps_low", section="grpo", type=_float(ge=0.0, lt=1.0) | None, default=0.2, learner=True,
         help="PPO ratio clip: floor 1 - eps, used when a batch is reused or rollouts are stale; null = no floor"),
    Knob(name="clip_eps_high", section="grpo", type=_float(ge=0.0, le=10.0) | None, default=0.2, learner=True,
         help="PPO ratio clip: ceiling 1 + eps (above clip_eps_low: DAPO's clip-higher); null = no ceiling"),
    Knob(name="tis_cap", section="grpo", type=_float(ge=1.0, le=100.0) | None, default=2.0, learner=True,
         before=None,
         help="Truncated importance sampling: cap on each token's weight pi_learner / pi_vLLM; null = none"),
    Knob(name="use_behaviour_logprobs", section="grpo", type=WireBool, default=True, request=False,
         help="Importance ratios against vLLM's log-probs (the learner replays the grammar mask)"),
    Knob(name="behaviour_gap_alarm", section="grpo", type=_float(gt=0.0, le=10.0) | None, unit="nats/token",
         default=0.05, before=None,
         help="Warn and count (train/behaviour_gap_alarms) when train/behaviour_logprob_gap passes this; null = off"),
    Knob(name="seed_contrast", section="grpo", type=_float(ge=0.0, le=1.0), default=0.0, before=0.0,
         help="Share of an action's advantage earned on every seed alike that is taken out (step groups); 0 = none"),
    Knob(name="prefetch_updates", section="grpo", type=_int(0, 8), unit="updates", default=0, before=0,
         help="Updates' worth of jobs in flight beyond the current one (1: sample while the learner updates); 0 = "
              "synchronous"),
    Knob(name="sync_every", section="grpo", type=_int(1, 1000), unit="updates", default=1, request=False,
         help="Updates between adapter versions pushed to vLLM"),
    Knob(name="max_staleness", section="grpo", type=_int(0, 100), unit="versions", default=2, request=False,
         help="Drop transitions sampled by a policy more than this many versions old"),
    # -- learner: the optimiser (what the machine decides, dtype, micro-batch, is the trainer's) --
    Knob(name="max_grad_norm", section="learner", type=_float(gt=0.0, le=1000.0), default=1.0, learner=True,
         request=False, help="Gradient clipping: global L2 norm", old_section="grpo"),
    Knob(name="warmup_steps", section="learner", type=_int(0, 1_000_000), unit="updates", default=0,
         learner=True, before=0, help="Updates of linear warm-up to the peak rate, then constant"),
    Knob(name="weight_decay", section="learner", type=_float(ge=0.0, le=1.0), default=0.0, learner=True,
         before=0.0, help="AdamW decoupled weight decay on every trained parameter"),
    Knob(name="adam_betas", section="learner", type=tuple[Beta, Beta], default=(0.9, 0.99), learner=True,
         request=False, before=(0.9, 0.99), help="AdamW (beta1, beta2): decay rates of the first and second moment estimates"),
    Knob(name="adam_eps", section="learner", type=_float(gt=0.0, le=1.0), default=1e-8, learner=True,
         request=False, before=1e-8, help="AdamW epsilon, added to the root of the second moment estimate"),
    # -- tracking --------------------------------------------------------------------------------
    Knob(name="report_to", section="tracking", type=Trackers, default=("none",),
         help="none | tensorboard | wandb | trackio | mlflow (several allowed), offline stores in the run folder"),
    Knob(name="record_episodes_every", section="tracking", type=_int(0, 1_000_000), unit="jobs", default=1,
         request=False,
         help="Every k-th training job's episodes go to episodes.jsonl for the viewer (evaluations always); 0 = none"),
    # -- lora ------------------------------------------------------------------------------------
    Knob(name="lora_r", section="lora", type=_int(1, 256), default=16, learner=True, request=False,
         help="LoRA rank (vLLM needs --max-lora-rank >= r)"),
    Knob(name="lora_alpha", section="lora", type=_float(gt=0.0, le=4096.0), default=32.0, learner=True,
         request=False, help="LoRA alpha; the update is scaled by alpha / r"),
    Knob(name="lora_target_modules", section="lora", type=tuple[Annotated[str, Field(max_length=100)], ...],
         default=LANGUAGE_MODULES, learner=True, request=False,
         help="The language model's linear layers given an adapter"),
    Knob(name="lora_target", section="lora", type=LoraTarget, default="language", learner=True, before="language",
         help="Where the adapter reaches: language | language+merger | language+tower (vLLM with tower LoRA)"),
    # -- full_weights ----------------------------------------------------------------------------
    Knob(name="full_weights", section="full_weights", type=FullWeights, default=(), learner=True, before=(),
         help="Base-model modules trained in full beside the adapter, by preset or module name; [] = LoRA only"),
    Knob(name="full_weights_lr", section="full_weights", type=Positive, default=1e-7, learner=True, before=1e-7,
         help="AdamW rate of the full-weight modules: a tenth of the LoRA rate, as full fine-tuning wants"),
    # -- sampling: how the policy is asked; carried by every job and transition ------------------
    Knob(name="max_tokens", section="sampling", type=_int(8, 32_768), unit="tokens", default=256, learner=True,
         request=False, help="Completion budget per candidate (also Dr. GRPO's constant normaliser)"),
    Knob(name="structured_outputs", section="sampling", type=StructuredMode, default="off", request=False,
         help="off | regex (Qwen's exact tool-call format); json cannot be replayed by the learner"),
    Knob(name="history_limit", section="sampling", type=_int(0, 256), unit="actions", default=8, request=False,
         help="Previous actions listed in the prompt"),
    Knob(name="describe_tools", section="sampling", type=WireBool, default=True, before=True,
         help="Describe the computer_use tool in the system turn (~700 tokens); false keeps the role line alone"),
    Knob(name="viewport", section="sampling", type=Viewport, unit="pixels", default=Viewport(width=1280, height=720),
         request=False, help="The screen the prompt describes: the env service's viewport"),
    # -- mcts: search + step-level DPO (docs/mcts.md: each default's source) ---------------------
    Knob(name="simulations", section="mcts", type=_int(1, 10_000), default=50, seeds=50,
         seeds_flag="--num_simulations", help="Simulations (select, expand, roll out, back up) per search"),
    Knob(name="ucb_c", section="mcts", type=_float(ge=0.0, le=100.0), default=1.414, seeds=1.414,
         seeds_flag="--ucb_constant", help="UCB1 exploration constant; sqrt(2), UCB1's own (Auer et al. 2002)"),
    Knob(name="max_children", section="mcts", type=_int(2, 32), unit="actions", default=5, seeds=5,
         help="Candidate actions proposed per request at a node (K); Agent Q, ExACT and Koh et al. branch 5 ways"),
    Knob(name="max_depth", section="mcts", type=_int(1, 200), unit="actions", default=15,
         help="Actions from the root after which a path (tree plus rollout) is cut off; a GRPO episode's max_steps"),
    Knob(name="widening", section="mcts", type=_float(ge=0.0, le=1.0), default=0.5,
         help="Progressive widening: at most ceil((n + 1) ** widening) children after n visits; 0 = all K at once"),
    Knob(name="env_step_budget", section="mcts", type=_int(0, 1_000_000), unit="env steps", default=0,
         help="Env steps a search may take (expansions and rollouts); 0 = only simulations bound it"),
    Knob(name="rollout_depth", section="mcts", type=_int(0, 1000) | None, unit="actions", default=None, before=None,
         help="Actions a rollout takes past a new child; 0 = no rollout; null = to max_depth (Agent Q)"),
    Knob(name="rollout_nodes", section="mcts", type=RolloutNodes, default=RolloutNodes.NONE,
         before=RolloutNodes.NONE, help="Rollout steps kept as tree nodes: none (Agent Q) | milestone | all"),
    Knob(name="selection", section="mcts", type=Selection, default=Selection.UCB1, before=Selection.UCB1,
         help="Child selection: ucb1 | puct (the critic's scores as the prior)"),
    Knob(name="alpha", section="mcts", type=_float(ge=0.0, le=1.0), default=0.5,
         help="Weight of Q_mcts in Q = alpha*Q_mcts + (1-alpha)*Q_critic; unreported by Agent Q, 0.5 weighs both alike"),
    Knob(name="theta", section="mcts", type=_float(ge=0.0), default=0.1,
         help="Least composite-Q gap between two children that makes a preference pair; unreported by Agent Q, the low "
              "end of 0.1-0.2"),
    Knob(name="beta", section="mcts", type=_float(gt=0.0, le=10.0), default=0.1,
         help="DPO inverse temperature; DPO's (Rafailov et al. 2023), TRL's and MCTS-DPO's default"),
    Knob(name="critic", section="mcts", type=Critic, default=Critic.SELF,
         help="self (Agent Q's) | openai | progress | neutral (0.5 for every child: the critic ablation)"),
    Knob(name="reference", section="mcts", type=Reference, default=Reference.ITERATION,
         help="DPO's reference: base (adapter disabled) | iteration (the adapter as the iteration began, Agent Q's)"),
    Knob(name="rpo_alpha", section="mcts", type=_float(ge=0.0), default=0.0,
         help="Weight of the chosen action's NLL (RPO, Pang et al. 2024, who use 1.0); 0 is Agent Q's plain DPO"),
    Knob(name="dense_return", section="mcts", type=WireBool, default=False,
         help="Back up the path's edge rewards on top of the terminal success; off is Agent Q's success-only value"),
    # The openai critic's endpoint. Not settable by a request: the key never travels with the run,
    # each process that searches reads it from the environment variable named here.
    Knob(name="critic_base_url", section="mcts", default="https://api.openai.com/v1", request=False,
         type=Annotated[str, Field(min_length=1, max_length=300, pattern=r"^https?://")],
         help="OpenAI-compatible chat API of the openai critic (up to /v1)"),
    Knob(name="critic_model", section="mcts", type=Annotated[str, Field(min_length=1, max_length=200)],
         default="gpt-4o", request=False, help="Model the openai critic asks"),
    Knob(name="critic_api_key_env", section="mcts", default="OPENAI_API_KEY", request=False,
         type=Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")],
         help="Environment variable holding the openai critic's API key (never stored with the run)"),
)
# fmt: on

BY_NAME: dict[str, Knob] = {k.name: k for k in KNOBS}


@dataclass(frozen=True)
class Override:
    value: Any
    why: str


# The embedded default: a random-weight tiny Qwen3-VL on 2 CPU cores learns only with far larger
# steps than an 8B model; `tiny` is applied when the trainer's target is cpu (HALO_TRAINER_TARGET).
PROFILES: dict[str, dict[str, Override]] = {
    "tiny": {
        "learning_rate": Override(1e-2, "Adam on a random-weight model; 2e-2 once collapsed (notebook/)"),
        "temperature": Override(1.0, "explore the whole grammar"),
        "lora_r": Override(8, "the tiny model's adapter"),
        "lora_alpha": Override(16.0, "alpha / r = 2, as the default's"),
        "full_weights_lr": Override(1e-3, "a tenth of the tiny LoRA rate"),
        "max_steps": Override(3, "short episodes: each step is a forward of the policy on 2 cores"),
        "task_sampling": Override(
            TaskSampling.SIGNAL,
            "a blind random-weight policy reached 3/3 held-out by update 20 in 2 of 3 runs drawn by signal, 0 of 4 "
            "in turn (notebook/)",
        ),
        "kl_coef": Override(0.0, "the reference pass doubles the learner's time on 2 cores"),
        "checkpoint_every": Override(1, "a tiny checkpoint is cheap; a short run loses no update to a kill"),
        "structured_outputs": Override(
            "regex", "an untrained model answers well-formed tool calls only under the grammar"
        ),
        "critic": Override(Critic.PROGRESS, "the built critic that needs no model"),
        "max_depth": Override(3, "an episode's max_steps"),
    },
}


def fields(knobs: list[Knob], *, how: str) -> dict[str, Any]:
    """Pydantic field definitions of ``knobs`` for ``create_model``: ``how`` is ``default`` (the
    knob's default), ``optional`` (None = not given: a request's fields), ``required``, or
    ``resolved`` (required, but for the value a run saved before the knob existed ran with)."""
    out: dict[str, Any] = {}
    for k in knobs:
        if how == "optional":
            out[k.name] = (k.type | None, Field(None, description=k.help))
        elif how in ("resolved", "required"):
            given = how == "resolved" and k.before is not UNSET
            out[k.name] = (k.type, Field(k.before if given else ..., description=k.help))
        else:
            out[k.name] = (k.type, Field(k.default, description=k.help))
    return out


def knob(name: str) -> Knob:
    return BY_NAME[name]


def in_section(*sections: str) -> list[Knob]:
    return [k for k in KNOBS if k.section in sections]


def defaults() -> dict[str, Any]:
    """Every knob's default, by name."""
    return {k.name: k.default for k in KNOBS}


def profile_values(profile: str) -> dict[str, Any]:
    if profile not in PROFILES:
        raise ValueError(f"profile {profile!r} is not one of {sorted(PROFILES)}")
    return {name: o.value for name, o in PROFILES[profile].items()}
