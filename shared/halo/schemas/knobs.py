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

A default is the GPU target's (the 8B's); a profile (``PROFILES``: ``tiny`` for the CPU target's
random-weight model) overrides values of knobs declared here and declares nothing. ``before`` is
the value a run saved before the knob existed ran with, so that such a run resumes as it ran.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import AfterValidator, Field

from halo.schemas.base import WireBool, WireFloat, WireInt
from halo.schemas.choices import (
    Advantage,
    BranchPolicy,
    Critic,
    GroupMode,
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
)
from halo.schemas.env import Viewport

UNSET: Any = object()  # a knob without a seeds' value, or without a value before it existed

SECTIONS = ("grpo", "tracking", "lora", "full_weights", "sampling", "mcts")


@dataclass(frozen=True)
class Knob:
    name: str  # the one name: RunSpec, RunConfig, the yaml, the CLI flag (dashes) and the learner use it
    section: str  # its section of configs/rl_config.yaml
    type: Any  # the type with its bounds, checked wherever a value arrives (request, yaml, profile, resume)
    default: Any  # the GPU target's value
    help: str
    unit: str = ""
    seeds: Any = UNSET  # the users' seed documents' value, where they give one
    seeds_flag: str | None = None  # the seeds' command-line spelling, where it is not --<name>
    request: bool = True  # a request (POST /runs, halo train) may set it
    learner: bool = False  # the learner reads it (a run-owned field of LearnerConfig)
    before: Any = UNSET  # what a run saved before this knob existed ran with

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


def _int(ge: int, le: int) -> Any:
    return Annotated[WireInt, Field(ge=ge, le=le)]


Positive = Annotated[WireFloat, Field(gt=0.0, le=1.0)]
FullWeights = Annotated[
    tuple[Annotated[str, Field(max_length=200)], ...], Field(max_length=64), AfterValidator(check_full_weights)
]
Trackers = Annotated[tuple[TrackerName, ...], Field(max_length=5), AfterValidator(check_trackers)]
LANGUAGE_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")

# A table: each knob, its help, then its unit and flags.
# fmt: off
KNOBS: tuple[Knob, ...] = (
    # -- grpo: the run and its GRPO updates ------------------------------------------------------
    Knob("episodes", "grpo", _int(1, 1_000_000), 100,
         "Training episodes; a step-group job is one episode, a search one",
         "episodes", seeds=100),
    Knob("num_generations", "grpo", _int(2, 32), 8,
         "Group size N: actions sampled per state (step groups) or episodes per task (episode groups)",
         "samples", seeds=8),
    Knob("temperature", "grpo", Annotated[WireFloat, Field(ge=0.01, le=2.0)], 0.7,
         "Sampling temperature of training rollouts, and the one the learner scores at (> 0: vLLM samples "
         "greedily below 1e-5); nothing else shapes sampling: no top-k/top-p (docs/policy.md)",
         seeds=0.7, learner=True),
    Knob("learning_rate", "grpo", Positive, 1e-6,
         "AdamW peak learning rate on the LoRA parameters",
         seeds=1e-6, seeds_flag="--lr", learner=True),
    Knob("advantage", "grpo", Advantage, Advantage.DR_GRPO,
         "The advantage estimator: dr_grpo A = r - mean(r); grpo divides by std(r); rloo A = r - mean of the "
         "other rewards (docs/objective.md)",
         seeds=Advantage.DR_GRPO, seeds_flag="--loss_type"),
    Knob("loss_norm", "grpo", LossNorm, LossNorm.CONSTANT,
         "constant: summed token losses / (max_tokens * G), every token weighs the same; sequence: each "
         "completion's mean, then / G (GRPO's length bias)",
         seeds=LossNorm.CONSTANT, learner=True),
    Knob("kl_coef", "grpo", Annotated[WireFloat, Field(ge=0.0, le=10.0)], 0.001,
         "Weight of the k3 KL estimate to the frozen base (adapter disabled); 0 = off. Kept on the 8B: the "
         "memory plan (halo memory-plan) finds the reference pass adds no weights and peaks below the gradient"
         " pass; it costs one more forward per micro-batch",
         seeds=0.001, learner=True),
    Knob("clip_eps_low", "grpo", Annotated[WireFloat, Field(ge=0.0, lt=1.0)] | None, 0.2,
         "PPO ratio clip: floor 1 - eps, used when a batch is reused (epochs > 1) or rollouts are stale; null "
         "= no floor",
         learner=True),
    Knob("clip_eps_high", "grpo", Annotated[WireFloat, Field(ge=0.0, le=10.0)] | None, 0.2,
         "PPO ratio clip: ceiling 1 + eps (above clip_eps_low: DAPO's clip-higher); null = no ceiling",
         learner=True),
    Knob("epochs_per_batch", "grpo", _int(1, 16), 1,
         "Passes over each batch of groups",
         "passes"),
    Knob("jobs_per_update", "grpo", _int(1, 1024), 4,
         "Rollout jobs per update (a step-group job gives one group per step); with algorithm mcts, the "
         "searches of one DPO iteration",
         "jobs"),
    Knob("common_random_numbers", "grpo", WireBool, False,
         "The jobs of one update sample with the same seeds (common random numbers): where the policy "
         "cannot yet tell their states apart, their groups draw the same candidates, so the reward, "
         "not the draw, is what differs between them (a moving target's layouts); false: each job its own",
         before=False),
    Knob("seed_contrast", "grpo", Annotated[WireFloat, Field(ge=0.0, le=1.0)], 0.0,
         "Share of an action's advantage that it earned on every seed alike, taken out (step groups): where one "
         "update played the same action at the same step of one task on several seeds, each gets its advantage "
         "minus this times their mean, so what is left is what the seed changed. 1 removes the part of the "
         "update that moves every seed's policy the same way (a screen-blind step); it also removes all signal "
         "from tasks whose answer does not depend on the seed. A different objective, not an unbiased "
         "estimate (docs/trainer.md); 0 = plain group advantages",
         before=0.0),
    Knob("prefetch_updates", "grpo", _int(0, 8), 0,
         "Updates' worth of jobs in flight beyond the current one (1: workers sample while the learner "
         "updates); 0 = synchronous. On 2 CPU cores 1 gained no wall time (bench/bench_loop.py, docs/env.md); "
         "try 1 with the learner on a GPU",
         "updates", before=0),
    Knob("max_grad_norm", "grpo", Annotated[WireFloat, Field(gt=0.0, le=1000.0)], 1.0,
         "Gradient clipping: global L2 norm",
         learner=True, request=False),
    Knob("use_behaviour_logprobs", "grpo", WireBool, True,
         "Importance ratios against vLLM's log-probs (the learner replays the grammar mask)",
         request=False),
    Knob("tis_cap", "grpo", Annotated[WireFloat, Field(ge=1.0, le=100.0)] | None, 2.0,
         "Truncated importance sampling: cap on each token's weight pi_learner / pi_vLLM (docs/trainer.md); "
         "null = none, the PPO ratio against vLLM's log-probs",
         learner=True, before=None),
    Knob("behaviour_gap_alarm", "grpo", Annotated[WireFloat, Field(gt=0.0, le=10.0)] | None, 0.05,
         "Warn and count (train/behaviour_gap_alarms) when train/behaviour_logprob_gap passes this; null = off",
         "nats/token", before=None),
    Knob("group_mode", "grpo", GroupMode, GroupMode.STEP,
         "step: fork N ways at each state; episode: N full episodes per task"),
    Knob("task_sampling", "grpo", TaskSampling, TaskSampling.ROUND_ROBIN,
         "Which task each training job plays when a run has several: round_robin (in turn) | signal (drawn in "
         "proportion to the task's recent mean absolute advantage, a quarter of the draws spread evenly so that no task is "
         "dropped; a task with no groups yet counts as the best seen). GRPO only (docs/trainer.md)",
         before=TaskSampling.ROUND_ROBIN),
    Knob("branch", "grpo", BranchPolicy, BranchPolicy.SAMPLED,
         "Step groups continue from: sampled | best | random"),
    Knob("max_steps", "grpo", _int(1, 200), 15,
         "Steps per episode before truncation",
         "steps"),
    Knob("sync_every", "grpo", _int(1, 1000), 1,
         "Updates between adapter versions pushed to vLLM",
         "updates", request=False),
    Knob("max_staleness", "grpo", _int(0, 100), 2,
         "Drop transitions sampled by a policy more than this many versions old",
         "versions", request=False),
    Knob("eval_every", "grpo", _int(0, 1_000_000), 10,
         "Updates between held-out evaluations (0 = never)",
         "updates"),
    Knob("eval_episodes", "grpo", _int(0, 10_000), 32,
         "Greedy episodes per evaluation",
         "episodes"),
    Knob("checkpoint_every", "grpo", _int(1, 1_000_000), 5,
         "Updates between checkpoints",
         "updates", request=False),
    Knob("seed", "grpo", _int(0, 2**31 - 1), 0,
         "Seed of the training jobs' tasks and episodes"),
    # -- tracking --------------------------------------------------------------------------------
    Knob("report_to", "tracking", Trackers, ("none",),
         "none | tensorboard | wandb | trackio | mlflow (several allowed), offline stores in the run folder "
         "(docs/viewer.md)"),
    Knob("record_episodes_every", "tracking", _int(0, 1_000_000), 1,
         "Every k-th training job's episodes go to episodes.jsonl for the viewer (evaluations always); 0 = "
         "none",
         "jobs", request=False),
    # -- lora ------------------------------------------------------------------------------------
    Knob("lora_r", "lora", _int(1, 256), 16,
         "LoRA rank (vLLM needs --max-lora-rank >= r)",
         learner=True, request=False),
    Knob("lora_alpha", "lora", Annotated[WireFloat, Field(gt=0.0, le=4096.0)], 32.0,
         "LoRA alpha; the update is scaled by alpha / r",
         learner=True, request=False),
    Knob("lora_target_modules", "lora", tuple[Annotated[str, Field(max_length=100)], ...], LANGUAGE_MODULES,
         "The language model's linear layers given an adapter",
         learner=True, request=False),
    Knob("lora_target", "lora", LoraTarget, "language",
         'Where the adapter reaches (docs/trainer.md, "What learns"): language | language+merger (+ the vision'
         " merger and deepstack mergers) | language+tower (+ the vision blocks); the vision side needs the "
         "policy server started with tower LoRA (HALO_POLICY_TOWER_LORA=true; Compose: HALO_TOWER_LORA=true),"
         " and a run refuses to start against one without it",
         learner=True, before="language"),
    # -- full_weights ----------------------------------------------------------------------------
    Knob("full_weights", "full_weights", FullWeights, (),
         "Base-model modules trained in full beside the adapter, by preset (vision_merger, vision_last_blocks,"
         " vision, all) or Hugging Face module name (model.visual.blocks.26); [] = LoRA only; the patch "
         "embedding (a Conv3d) learns only this way",
         learner=True, before=()),
    Knob("full_weights_lr", "full_weights", Positive, 1e-7,
         "AdamW rate of the full-weight modules: a tenth of the LoRA rate, as full fine-tuning wants",
         learner=True, before=1e-7),
    # -- sampling: how the policy is asked; carried by every job and transition ------------------
    Knob("max_tokens", "sampling", _int(8, 32_768), 256,
         "Completion budget per candidate (also Dr. GRPO's constant normaliser)",
         "tokens", learner=True, request=False),
    Knob("structured_outputs", "sampling", StructuredMode, "off",
         "off | regex (Qwen's exact tool-call format); json cannot be replayed by the learner",
         request=False),
    Knob("history_limit", "sampling", _int(0, 256), 8,
         "Previous actions listed in the prompt",
         "actions", request=False),
    Knob("describe_tools", "sampling", WireBool, True,
         "Describe the computer_use tool in the system turn (Qwen's # Tools block, ~700 tokens); false keeps "
         "the role line alone, for a model that answers under the grammar and cannot read the description",
         before=True),
    Knob("viewport", "sampling", Viewport, Viewport(width=1280, height=720),
         "The screen the prompt describes: the env service's viewport",
         "pixels", request=False),
    # -- mcts: search + step-level DPO (docs/mcts.md: each default's source) ---------------------
    Knob("simulations", "mcts", _int(1, 10_000), 50,
         "Simulations (select, expand, roll out, back up) per search",
         seeds=50, seeds_flag="--num_simulations"),
    Knob("ucb_c", "mcts", Annotated[WireFloat, Field(ge=0.0, le=100.0)], 1.414,
         "UCB1 exploration constant; sqrt(2), UCB1's own (Auer et al. 2002)",
         seeds=1.414, seeds_flag="--ucb_constant"),
    Knob("max_children", "mcts", _int(2, 32), 5,
         "Candidate actions proposed per request at a node (K, one vLLM request); a node whose proposals are all "
         "tried asks for K more, so K bounds a request, not a node's children; Agent Q, ExACT and Koh et al. "
         "branch 5 ways",
         "actions", seeds=5),
    Knob("max_depth", "mcts", _int(1, 200), 15,
         "Actions from the root after which a path (tree plus rollout) is cut off; a GRPO episode's max_steps,"
         " so a search sees the horizon an episode does",
         "actions"),
    Knob("widening", "mcts", Annotated[WireFloat, Field(ge=0.0, le=1.0)], 0.5,
         "Progressive widening: a node holds at most ceil((n + 1) ** widening) children after n visits "
         "(at once when every child ended the episode), and each visit that widens executes one more of its proposed"
         " actions (the policy's most proposed first); 0 executes all K at the first expansion (best-of-K per node)"),
    Knob("env_step_budget", "mcts", _int(0, 1_000_000), 0,
         "Env steps a search may take (expansions and rollouts); it stops at the first simulation that "
         "would start past it and cuts a rollout there; 0 = only simulations bound it",
         "env steps"),
    Knob("rollout_depth", "mcts", _int(0, 1000) | None, None,
         "Actions a rollout takes past a new child before the task is asked for its verdict (max_depth and the "
         "budget bound it too); 0 = no rollout, every env step of a search becomes a tree node; null = to "
         "max_depth (Agent Q)",
         "actions", before=None),
    Knob("rollout_nodes", "mcts", RolloutNodes, RolloutNodes.NONE,
         "Rollout steps kept as tree nodes (re-enterable states): none (Agent Q: scored, never kept) | milestone"
         " (a step that pays a milestone, with the rollout's steps before it) | all (every executed step); with "
         "either, each rollout step costs a snapshot, no env step",
         before=RolloutNodes.NONE),
    Knob("selection", "mcts", Selection, Selection.UCB1,
         "Child selection: ucb1, q + ucb_c * sqrt(ln N / (1 + n)) | puct, q + ucb_c * P * sqrt(N) / (1 + n) with "
         "the prior P the critic's score normalised over the siblings (uniform when it gives none)",
         before=Selection.UCB1),
    Knob("alpha", "mcts", Annotated[WireFloat, Field(ge=0.0, le=1.0)], 0.5,
         "Weight of Q_mcts in the composite Q = alpha*Q_mcts + (1-alpha)*Q_critic; unreported by Agent Q, 0.5 "
         "weighs search and critic equally"),
    Knob("theta", "mcts", Annotated[WireFloat, Field(ge=0.0)], 0.1,
         "Least composite-Q gap between two children that makes a preference pair; unreported by Agent Q, the "
         "low end of 0.1-0.2"),
    Knob("beta", "mcts", Annotated[WireFloat, Field(gt=0.0, le=10.0)], 0.1,
         "DPO inverse temperature; DPO's (Rafailov et al. 2023), TRL's and MCTS-DPO's default"),
    Knob("critic", "mcts", Critic, Critic.SELF,
         "self | openai | progress | neutral (0.5 for every child: the critic ablation); self is Agent Q's, "
         "a random-weight model cannot critique so the embedded default needs progress"),
    Knob("reference", "mcts", Reference, Reference.ITERATION,
         "base (adapter disabled) | iteration (the adapter as the iteration began: Agent Q refreshes the "
         "reference every iteration)"),
    Knob("rpo_alpha", "mcts", Annotated[WireFloat, Field(ge=0.0)], 0.0,
         "Weight of the chosen action's NLL (RPO, Pang et al. 2024, who use 1.0); 0 is Agent Q's plain DPO"),
    Knob("dense_return", "mcts", WireBool, False,
         "Back up the rewards of the path's edges on top of the terminal success; off is Agent Q's sparse "
         "success-only value"),
    # The openai critic's endpoint. Not settable by a request: the key never travels with the run,
    # each process that searches reads it from the environment variable named here.
    Knob("critic_base_url", "mcts", Annotated[str, Field(min_length=1, max_length=300, pattern=r"^https?://")], "https://api.openai.com/v1",
         "OpenAI-compatible chat API of the openai critic (up to /v1)",
         request=False),
    Knob("critic_model", "mcts", Annotated[str, Field(min_length=1, max_length=200)], "gpt-4o",
         "Model the openai critic asks",
         request=False),
    Knob("critic_api_key_env", "mcts", Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")], "OPENAI_API_KEY",
         "Environment variable holding the openai critic's API key (never stored with the run)",
         request=False),
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
        "learning_rate": Override(1e-2, "Adam on a random-weight model; 2e-2 once collapsed (docs/results.md)"),
        "temperature": Override(1.0, "explore the whole grammar"),
        "lora_r": Override(8, "the tiny model's adapter"),
        "lora_alpha": Override(16.0, "alpha / r = 2, as the default's"),
        "full_weights_lr": Override(1e-3, "a tenth of the tiny LoRA rate"),
        "max_steps": Override(3, "short episodes: each step is a forward of the policy on 2 cores"),
        "task_sampling": Override(
            TaskSampling.SIGNAL,
            "of the 12 Playground tasks a blind random-weight policy learns one within minutes; it reached 3/3 "
            "held-out by update 20 in 2 of 3 runs drawn by signal, 0 of 4 in turn (docs/results.md)",
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
