"""The long explanations of the run's knobs, by knob name: what a one-line help cannot hold.

Each knob is declared once in ``halo.schemas.knobs`` with a one-line help; where that line leaves
out why a default is what it is, or how a value interacts with others, the rest is here.
docs/knobs.md renders these under an anchor per knob (``docs/knobs.md#<name>``), which the yaml's
comments, the command lines' help and the docs table link to. A key that is no knob fails a test.
"""

from __future__ import annotations

NOTES: dict[str, str] = {
    "temperature": (
        "The learner scores completions at the same temperature the rollouts sampled at. It must be > 0: vLLM "
        "samples greedily below 1e-5. Nothing else shapes sampling: no top-k or top-p (docs/policy.md)."
    ),
    "common_random_numbers": (
        "The jobs of one update sample with the same seeds (common random numbers): where the policy cannot yet "
        "tell their states apart, their groups draw the same candidates, so the reward, not the draw, is what "
        "differs between them (a moving target's layouts). False: each job draws its own."
    ),
    "task_sampling": (
        "Which task each training job plays when a run has several: `round_robin` (in turn) or `signal` (drawn in "
        "proportion to the task's recent mean absolute advantage, a quarter of the draws spread evenly so that no "
        "task is dropped; a task with no groups yet counts as the best seen). GRPO only (docs/trainer.md)."
    ),
    "advantage": (
        "The advantage estimator: `dr_grpo` A = r - mean(r); `grpo` divides that by std(r); `rloo` A = r - the "
        "mean of the other rewards of the group; `reinforce_pp_baseline` (REINFORCE++-baseline) divides r - mean(r) "
        "by the standard deviation of those differences over the whole update's batch, not the group's "
        "(docs/objective.md)."
    ),
    "importance_level": (
        "What one importance ratio covers. `token`: one ratio per token (PPO, GRPO). `sequence`: GSPO's one ratio "
        "per completion, exp of the mean over its tokens of log pi_learner - log pi_behaviour, clipped per "
        "completion; the TIS weight (`tis_cap`) is then per completion too. A sequence ratio stays much closer to 1 "
        "than a token's, so GSPO's clip is far narrower: the paper (and TRL) use clip_eps_low 3e-4 and "
        "clip_eps_high 4e-4, set them with it. GSPO's own normaliser is each completion's mean (`loss_norm` "
        "sequence); `constant` weighs each completion by its length (docs/objective.md)."
    ),
    "loss_norm": (
        "`constant`: the summed token losses divided by (max_tokens * G), so every token weighs the same; "
        "`sequence`: each completion's mean token loss, then divided by G (GRPO's length bias)."
    ),
    "kl_coef": (
        "Weight of the k3 estimate of the KL divergence to the frozen base (the adapter disabled); 0 turns it "
        "off. Kept on the 8B: the memory plan (`halo memory-plan`) finds the reference pass adds no weights and "
        "peaks below the gradient pass; it costs one more forward per micro-batch."
    ),
    "tis_cap": (
        "Truncated importance sampling: each token's weight pi_learner / pi_vLLM is capped at this value "
        "(docs/trainer.md). Null: no cap, the PPO ratio against vLLM's log-probs. Needs one pass per batch "
        "(`epochs_per_batch` 1): the learner keeps no log-probs from before a first pass."
    ),
    "seed_contrast": (
        "Share of an action's advantage that it earned on every seed alike, taken out (step groups): where one "
        "update played the same action at the same step of one task on several seeds, each gets its advantage "
        "minus this times their mean, so what is left is what the seed changed. 1 removes the part of the update "
        "that moves every seed's policy the same way (a screen-blind step); it also removes all signal from tasks "
        "whose answer does not depend on the seed. A different objective, not an unbiased estimate "
        "(docs/trainer.md); 0 = plain group advantages."
    ),
    "prefetch_updates": (
        "Updates' worth of jobs in flight beyond the current one (1: workers sample while the learner updates); "
        "0 = synchronous. On 2 CPU cores 1 gained no wall time (bench/bench_loop.py, docs/env.md); try 1 with the "
        "learner on a GPU."
    ),
    "warmup_steps": (
        "Updates of linear warm-up: update k runs at (k + 1) / warmup_steps of the peak rate (`learning_rate`, "
        "and `full_weights_lr` for full-weight modules), then the rate stays constant. Before it was a run knob "
        "it was the trainer's HALO_TRAINER_LEARNER__WARMUP_STEPS; runs saved before resume with the value their "
        "trainer saved beside them, 0 where none was saved."
    ),
    "weight_decay": (
        "AdamW's decoupled weight decay, applied to every trained parameter (the adapter and any full-weight "
        "modules). Formerly HALO_TRAINER_LEARNER__WEIGHT_DECAY; runs saved before resume with their trainer's "
        "saved value, 0 where none was saved."
    ),
    "adam_betas": (
        "AdamW's (beta1, beta2), the decay rates of its first and second moment estimates; beta2 is 0.99, not "
        "torch's 0.999. Formerly HALO_TRAINER_LEARNER__ADAM_BETAS; runs saved before resume with their trainer's "
        "saved value, (0.9, 0.99) where none was saved."
    ),
    "adam_eps": (
        "AdamW's epsilon. Adam's first step moves an entry by lr * g / (|g| + eps): with 1e-8 an entry whose "
        "gradient is within float32 summation noise of 0 may move by up to lr either way, which is why the "
        "learner's equivalence tests use 1e-3. Formerly HALO_TRAINER_LEARNER__ADAM_EPS; runs saved before resume "
        "with their trainer's saved value, 1e-8 where none was saved."
    ),
    "report_to": (
        "Experiment trackers the run's metrics go to: `none`, `tensorboard`, `wandb`, `trackio`, `mlflow`, several "
        "allowed; the offline ones store in the run folder (docs/viewer.md)."
    ),
    "lora_target": (
        'Where the adapter reaches (docs/trainer.md, "What learns"): `language`; `language+merger` (adds the '
        "vision merger and deepstack mergers); `language+tower` (adds the vision blocks). The vision side needs "
        "the policy server started with tower LoRA (HALO_POLICY_TOWER_LORA=true; Compose: HALO_TOWER_LORA=true), "
        "and a run refuses to start against one without it."
    ),
    "full_weights": (
        "Base-model modules trained in full beside the adapter, by preset (`vision_merger`, `vision_last_blocks`, "
        "`vision`, `all`) or Hugging Face module name (`model.visual.blocks.26`); [] = LoRA only. The patch "
        "embedding (a Conv3d) learns only this way."
    ),
    "describe_tools": (
        "Describe the computer_use tool in the system turn (Qwen's # Tools block, ~700 tokens); false keeps the "
        "role line alone, for a model that answers under the grammar and cannot read the description."
    ),
    "max_children": (
        "Candidate actions proposed per request at a node (K, one vLLM request). A node whose proposals are all "
        "tried asks for K more, so K bounds a request, not a node's children. Agent Q, ExACT and Koh et al. "
        "branch 5 ways."
    ),
    "widening": (
        "Progressive widening: a node holds at most ceil((n + 1) ** widening) children after n visits (at once "
        "when every child ended the episode), and each visit that widens executes one more of its proposed "
        "actions (the policy's most proposed first); 0 executes all K at the first expansion (best-of-K per "
        "node)."
    ),
    "env_step_budget": (
        "Env steps a search may take (expansions and rollouts); the search stops at the first simulation that "
        "would start past it and cuts a rollout there; 0 = only `simulations` bound it."
    ),
    "rollout_depth": (
        "Actions a rollout takes past a new child before the task is asked for its verdict (`max_depth` and the "
        "budget bound it too); 0 = no rollout, every env step of a search becomes a tree node; null = to "
        "`max_depth` (Agent Q)."
    ),
    "rollout_nodes": (
        "Rollout steps kept as tree nodes (re-enterable states): `none` (Agent Q: scored, never kept); "
        "`milestone` (a step that pays a milestone, with the rollout's steps before it); `all` (every executed "
        "step). With either of the last two, each kept rollout step costs a snapshot, no env step."
    ),
    "selection": (
        "Child selection: `ucb1`, q + ucb_c * sqrt(ln N / (1 + n)); `puct`, q + ucb_c * P * sqrt(N) / (1 + n) "
        "with the prior P the critic's score normalised over the siblings (uniform when it gives none)."
    ),
    "critic": (
        "`self` (the policy critiques its own candidates, Agent Q's) | `openai` | `progress` | `neutral` (0.5 for "
        "every child: the critic ablation). A random-weight model cannot critique, so the tiny profile uses "
        "`progress`."
    ),
}
