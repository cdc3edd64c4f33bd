"""The learner: a LoRA adapter on Qwen3-VL's language model, and optionally chosen base-model modules
trained in full, updated by policy gradient from groups of completions (GRPO's ``update``) or by
step-level DPO from preference pairs (MCTS's ``dpo_update.dpo_update``, an objective given to optimise).

One ``Learner.update(batch)`` is one optimiser step:

1. skip sequences whose advantage is 0 when there is no KL term (they have no gradient; they still
   count in the normaliser, as in the objective),
2. per micro-batch: reference log-probs with the adapter disabled (only when ``kl_coef > 0``),
   current log-probs with grad, the objective of ``halo_trainer.learner.objective``, backward,
3. clip the gradient (adapter and full weights together), AdamW step, learning-rate schedule step.

The LoRA adapter covers the language model, and the vision connector or tower too as the config's
``lora_target`` says (``halo_model.lora``); ``weights.save_adapter``
writes exactly what vLLM's ``/v1/load_lora_adapter`` reads. The config's ``full_weights`` name
base-model modules (``halo_model.full_weights``: the vision merger, the last vision blocks, ...)
that train in full in their own AdamW param group (``full_weights_lr``); ``weights.save_base_weights``
writes the base model with them as a model folder vLLM's ``reload_weights`` and transformers load.

The reference policy (``kl_coef > 0``, ``logprobs(adapter=False)``) is the model as loaded: the
adapter disabled *and* the full-weight modules swapped back to the values they had when the learner
was built (a frozen copy kept on the learner's device, the size of those modules).

Inputs and per-token log-probs are the model library's (``halo_model``): ``inputs.build_batch``
rebuilds each prompt and refuses one whose token ids differ from vLLM's, and
``logprobs.completion_logprobs`` is tested for parity with vLLM's behaviour log-probs
(structured-output masks included). The learner's default ``logprob_fn`` is its grouped form,
``grouped.grouped_logprobs``: the completions of a micro-batch that share a prompt (a step group,
the two actions of DPO pairs at one state) get one prompt pass, vision tower included, instead of
one each; the same log-probs and gradients. Micro-batches keep a group's rows together, and each is
packed on the CPU (``grouped.pack``: each prompt's pixels once) and moved to the device alone, so
the device never holds the whole update's batch; the batch itself holds each screenshot's pixels
once, and a micro-batch takes those its rows show (``inputs.select_rows``). The entropy metric is read from the logits the
log-prob function computes (a forward hook on ``lm_head``), so nothing is computed twice, and a
chunk of positions at a time (``learner_batch.chunked_entropy``), so that its float32 copies do not
raise the step's peak above the backward's.

The ``Learner`` is in this module: the GRPO update, the reference policy, ``logprobs``, and the half
every objective shares, ``optimise`` (micro-batches shared over the ranks, backward, the optimiser
step). An objective is a loss over one micro-batch's rows: the policy loss table of ``objective``
(``update``), or step-level DPO (``dpo_update.dpo_update``, beside it, through the same public
``micro_batches``, ``packed`` and ``optimise``). Saving and loading the adapter and the full weights
are the learner's ``weights`` (``learner_weights.LearnerWeights``); the batch, its micro-batches and
the log-prob call are in ``learner_batch``.

Across GPUs (``ranks``, under torchrun): the model is sharded with FSDP2 before the optimiser is
built, each rank scores its share of the micro-batches, and the gradients are summed over the ranks,
so an update equals one process's (``distributed``).
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import replace
from typing import TypeVar

import torch
from peft import PeftModel, get_peft_model
from torch import Tensor, nn

from halo.settings.trainer import LearnerConfig
from halo_model import full_weights
from halo_model.grouped import PackedBatch, grouped_logprobs, pack, prompt_groups, supports_packing
from halo_model.inputs import PolicyBatch, select_rows
from halo_model.lora import lora_config
from halo_trainer.learner import distributed
from halo_trainer.learner.distributed import Ranks
from halo_trainer.learner.learner_batch import LearnerBatch, LogprobFn, group_micro_batches, logprobs_and_entropy
from halo_trainer.learner.learner_weights import LearnerWeights
from halo_trainer.learner.objective import LossStats, policy_loss

logger = logging.getLogger(__name__)

Stats = TypeVar("Stats")  # an objective's micro-batch statistics: ``merge``-able (LossStats, DPOStats)


class Learner:
    """LoRA (and full-weight) learner over a transformers Qwen3-VL model: GRPO's ``update``, any
    objective's ``optimise``, the weights on disk ``weights`` (see the module docstring)."""

    def __init__(
        self,
        model: nn.Module,
        config: LearnerConfig,
        *,
        logprob_fn: LogprobFn = grouped_logprobs,
        ranks: Ranks | None = None,
    ):
        """``logprob_fn`` takes a ``PolicyBatch`` (``logprobs.completion_logprobs``: the per-row path);
        ``grouped_logprobs``, the default, is given its micro-batches packed by prompt. Either is
        called at ``config.temperature``, the run's sampling temperature. ``ranks``
        (``distributed.Ranks.from_env()`` under torchrun): data-parallel over the ranks with FSDP2,
        every rank given the same batches (``halo_trainer.learner.distributed``)."""
        if isinstance(model, PeftModel):
            raise ValueError("pass the base model: the learner adds its own LoRA adapter")
        ranks = ranks or Ranks()
        if ranks.several and config.full_weights:
            raise ValueError(
                f"full_weights={list(config.full_weights)} across ranks is not supported yet: "
                "the learner across ranks trains the LoRA adapter only"
            )
        self.ranks = ranks
        self.config = config
        # Bound to the sampling temperature: vLLM's behaviour log-probs are of the distribution it
        # sampled from (processed_logprobs), and TRL's GRPO scores at that temperature too.
        self.logprob_fn = functools.partial(logprob_fn, temperature=config.temperature)
        self._packs = logprob_fn is grouped_logprobs
        model.requires_grad_(False)
        lora = lora_config(config.lora_r, config.lora_alpha, config.lora_target_modules, config.lora_target)
        self.model: PeftModel = get_peft_model(model, lora)
        if config.gradient_checkpointing:
            self.model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        # Before the parameter lists and the optimiser: sharding replaces every parameter.
        ranks.shard(self.model)
        self.lora_params = [p for p in self.model.parameters() if p.requires_grad]
        if not self.lora_params:
            raise ValueError(f"no layer named {config.lora_target_modules} inside the language model")
        base = self.model.get_base_model()
        by_name = {
            full_weights.checkpoint_name(n): p
            for n, p in base.named_parameters()
            if not full_weights.is_adapter_tensor(n)
        }
        self._full_names = full_weights.select(config.full_weights, list(by_name), base.config.vision_config.depth)
        self.full_params = [by_name[n].requires_grad_(True) for n in self._full_names]
        # The reference policy's values of the full-weight modules: the model as loaded.
        self._reference_full = [p.detach().clone() for p in self.full_params]
        self.params = self.lora_params + self.full_params
        groups = [{"params": self.lora_params, "lr": config.learning_rate}]
        if self.full_params:
            groups.append({"params": self.full_params, "lr": config.full_weights_lr})
        self.optimizer = torch.optim.AdamW(
            groups,
            lr=config.learning_rate,
            betas=config.adam_betas,
            eps=config.adam_eps,
            weight_decay=config.weight_decay,
        )
        warmup = config.warmup_steps
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda step: min(1.0, (step + 1) / warmup) if warmup else 1.0
        )
        self.step = 0
        self.weights = LearnerWeights(
            self.model,
            self.lora_params,
            self._full_names,
            self.full_params,
            config.full_weights,
            self.reference_policy,
            ranks,
        )
        base_config = base.config
        self.merge_size: int = base_config.vision_config.spatial_merge_size
        self._vision_token_ids = [base_config.image_token_id, base_config.video_token_id]
        self.model.eval()

    @property
    def vocab_size(self) -> int:
        """Rows of ``lm_head``: the width of structured-output masks."""
        return int(self.model.get_base_model().config.text_config.vocab_size)

    @property
    def device(self) -> torch.device:
        return self.params[0].device

    def trainable_state(self) -> dict[str, Tensor]:
        """The trained parameters (LoRA and full weights) by PEFT name (a copy, whole: a collective across ranks)."""
        return {n: distributed.full(p).clone() for n, p in self.model.named_parameters() if p.requires_grad}

    def update(self, batch: LearnerBatch) -> dict[str, float]:
        """One optimiser step on a batch of completions; returns ``train/*`` metrics."""
        cfg = self.config
        completion_mask = batch.inputs.completion_mask
        lengths = completion_mask.sum(-1)
        if int(lengths.max()) > cfg.max_tokens:
            raise ValueError(
                f"a completion has {int(lengths.max())} tokens, more than max_tokens="
                f"{cfg.max_tokens} (Dr. GRPO's constant normaliser; set it to the sampler's max_tokens)"
            )
        if batch.behaviour_logprobs is not None and batch.behaviour_logprobs.shape != completion_mask.shape:
            raise ValueError(
                f"behaviour_logprobs {tuple(batch.behaviour_logprobs.shape)} do not match the completions "
                f"{tuple(completion_mask.shape)}"
            )
        needed = (lengths > 0) & ((batch.advantages != 0) | (cfg.kl_coef > 0))
        # A sampled vision placeholder token cannot be scored: the model would look for an image for it.
        unscorable = self._holds_vision_placeholder(batch.inputs)
        if bool(unscorable.any()):
            logger.warning(
                "update %d: %d completions hold a vision placeholder token; left out", self.step, int(unscorable.sum())
            )
        rows = (needed & ~unscorable).nonzero().flatten().tolist()

        stats, loss_total, grad_norm, lr = self._step(batch, rows)

        summary = stats.summary()
        metrics = {
            "train/loss": loss_total,
            "train/grad_norm": grad_norm,
            "train/lr": lr,
            "train/step": float(self.step),
            "train/sequences": float(len(batch)),
            "train/skipped_sequences": float(len(batch) - len(rows)),
            "train/unscorable_sequences": float(unscorable.sum()),
        }
        for key in ("tokens", "kl", "entropy", "clip_frac", "tis_frac", "ratio_mean", "ratio_min", "ratio_max"):
            metrics[f"train/{key}"] = summary[key]
        if stats.entropy_tokens == 0 and stats.tokens > 0:
            metrics["train/entropy"] = float("nan")  # the log-prob function gave no logits to read it from
        metrics["train/behaviour_logprob_gap"] = summary["behaviour_logprob_gap"]
        return metrics

    def _holds_vision_placeholder(self, inputs: PolicyBatch) -> Tensor:
        """Per row: does the completion contain an image or video placeholder token id?"""
        ids = inputs.completion_ids.masked_fill(~inputs.completion_mask, -1)
        return torch.isin(ids, torch.tensor(self._vision_token_ids, device=ids.device)).any(-1)

    def micro_batches(self, inputs: PolicyBatch, rows: Sequence[int]) -> list[list[int]]:
        """``rows`` of ``inputs`` cut into micro-batches of at most ``micro_batch_size`` rows, a prompt's
        rows kept together (so that the grouped path scores each prompt once)."""
        groups = prompt_groups(inputs, self.merge_size)
        return group_micro_batches(groups, rows, self.config.micro_batch_size)

    @property
    def packs_prompts(self) -> bool:
        """Whether ``logprob_fn`` takes micro-batches packed by prompt (the grouped path)."""
        return self._packs and supports_packing(self.model)

    def packed(self, *inputs: PolicyBatch) -> PolicyBatch | PackedBatch:
        """A micro-batch's inputs as the log-prob function takes them: packed by prompt (on the
        CPU, so that each prompt's pixels travel to the device once) for the grouped path; several
        inputs packed as one (DPO's two sides), where the per-row path takes the first."""
        if self.packs_prompts:
            return pack(*inputs, spatial_merge_size=self.merge_size)
        return inputs[0]

    def _on_device(self, batch: LearnerBatch, rows: Sequence[int]) -> LearnerBatch:
        """Rows of ``batch`` selected where the batch is, then moved to the device: one micro-batch."""
        micro = batch.select(rows, self.merge_size)
        return replace(micro, inputs=self.packed(micro.inputs)).to(self.device)

    def _step(self, batch: LearnerBatch, rows: list[int]) -> tuple[LossStats, float, float, float]:
        """The policy loss over the needed rows in micro-batches, then one optimiser step."""
        cfg = self.config

        def loss_of(micro_rows: list[int]) -> tuple[Tensor, LossStats]:
            micro = self._on_device(batch, micro_rows)
            ref = None
            if cfg.kl_coef > 0:
                with torch.no_grad(), self.reference_policy():
                    ref = self.logprob_fn(self.model, micro.inputs, grad=False, allowed=micro.allowed)
            logp, entropy = logprobs_and_entropy(
                self.logprob_fn, self.model, micro, grad=True, temperature=cfg.temperature
            )
            behaviour = micro.behaviour_logprobs if micro.behaviour_logprobs is not None else logp.detach()
            return policy_loss(
                logp,
                behaviour,
                micro.advantages,
                micro.inputs.completion_mask,
                ref_logprobs=ref,
                entropy=entropy,
                loss_norm=cfg.loss_norm,
                clip_eps_low=cfg.clip_eps_low,
                clip_eps_high=cfg.clip_eps_high,
                kl_coef=cfg.kl_coef,
                max_completion_tokens=cfg.max_tokens,
                num_sequences=len(batch),
                tis_cap=cfg.tis_cap,
                importance_level=cfg.importance_level,
            )

        return self.optimise(self.micro_batches(batch.inputs, rows), loss_of, LossStats())

    def optimise(
        self,
        micro_batches: list[list[int]],
        loss_of: Callable[[list[int]], tuple[Tensor, Stats]],
        stats: Stats,
    ) -> tuple[Stats, float, float, float]:
        """One optimiser step of an objective: ``loss_of(rows)`` is one micro-batch's loss (already
        divided by the whole batch's normaliser) and its statistics, merged into ``stats``. Each rank
        scores its share of ``micro_batches`` (``distributed.share``: a padding repeat's loss counts
        zero), the statistics and the summed loss are gathered over the ranks, then the gradient is
        clipped and AdamW steps (no step moves a parameter when there are no micro-batches). Returns
        (statistics, summed loss, gradient norm, learning rate used)."""
        self.optimizer.zero_grad(set_to_none=True)
        loss_total = 0.0
        self.model.train()
        try:
            for rows, counts in self.ranks.share(micro_batches):
                loss, micro_stats = loss_of(rows)
                if not counts:
                    (loss * 0).backward()  # a repeat that keeps this rank's collectives in step with the others
                    continue
                loss.backward()
                loss_total += float(loss.detach())
                stats = stats.merge(micro_stats)  # type: ignore[attr-defined]
            loss_total = sum(self.ranks.gathered(loss_total))
            stats = self.ranks.merged(stats)
            grad_norm, lr = self._optimizer_step(bool(micro_batches))
        finally:
            self.model.eval()
        return stats, loss_total, grad_norm, lr

    def _optimizer_step(self, any_gradient: bool) -> tuple[float, float]:
        """Clip the gradient (LoRA and full weights), AdamW step, schedule step; returns (grad norm, learning rate used)."""
        grad_norm = 0.0
        if any_gradient:
            grad_norm = float(distributed.full(torch.nn.utils.clip_grad_norm_(self.params, self.config.max_grad_norm)))
            if not math.isfinite(grad_norm):
                # A non-finite gradient would poison AdamW's moments for good: skip the step, say so.
                logger.warning("non-finite gradient norm at update %d: step skipped", self.step)
                self.optimizer.zero_grad(set_to_none=True)
        lr = self.scheduler.get_last_lr()[0]
        self.optimizer.step()  # parameters without a gradient (all rows skipped) do not move
        self.scheduler.step()
        self.step += 1
        return grad_norm, lr

    @contextmanager
    def reference_policy(self) -> Iterator[None]:
        """Inside: the model as loaded, adapter disabled and the full-weight modules at their initial
        values (no gradient; the trained values come back on exit, the optimizer's state untouched)."""
        trained = [p.data for p in self.full_params]
        with torch.no_grad(), self.model.disable_adapter():
            try:
                for p, initial in zip(self.full_params, self._reference_full, strict=True):
                    p.data = initial
                yield
            finally:
                for p, data in zip(self.full_params, trained, strict=True):
                    p.data = data

    @torch.no_grad()
    def logprobs(self, batch: LearnerBatch | PolicyBatch, *, adapter: bool = True) -> Tensor:
        """Per-completion-token log-probs ``[B, C]`` (on the learner's device) under the current policy,
        or (``adapter=False``) the reference policy: the model as loaded (``reference_policy``), which
        is the base model only when no full weights train. Computed micro-batch by micro-batch."""
        inputs = batch.inputs if isinstance(batch, LearnerBatch) else batch
        allowed = batch.allowed if isinstance(batch, LearnerBatch) else None
        out = torch.zeros(inputs.completion_ids.shape, device=self.device)
        with nullcontext() if adapter else self.reference_policy():
            for rows in self.micro_batches(inputs, range(len(inputs.prompt_lengths))):
                micro = self.packed(select_rows(inputs, rows, self.merge_size)).to(self.device)
                mask = None if allowed is None else allowed[rows].to(self.device)
                out[rows] = self.logprob_fn(self.model, micro, grad=False, allowed=mask)
        return out
