"""The GRPO learner: a LoRA adapter on Qwen3-VL's language model, and optionally chosen base-model
modules trained in full, updated from groups of completions.

One ``Learner.update(batch)`` is one optimiser step:

1. skip sequences whose advantage is 0 when there is no KL term (they have no gradient; they still
   count in the normaliser, as in the objective),
2. per micro-batch: reference log-probs with the adapter disabled (only when ``kl_coef > 0``),
   current log-probs with grad, the objective of ``halo_trainer.learner.objective``, backward,
3. clip the gradient (adapter and full weights together), AdamW step, learning-rate schedule step.

The LoRA adapter covers the language model, and the vision connector or tower too as the config's
``lora_target`` says (``halo_model.lora``); ``save_adapter``
writes exactly what vLLM's ``/v1/load_lora_adapter`` reads. The config's ``full_weights`` name
base-model modules (``halo_model.full_weights``: the vision merger, the last vision blocks, ...)
that train in full in their own AdamW param group (``full_weights_lr``); ``save_base_weights``
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
the device never holds the whole update's batch. The entropy metric is read from the logits the
log-prob function computes (a forward hook on ``lm_head``), so nothing is computed twice.
"""

from __future__ import annotations

import copy
import functools
import logging
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace
from pathlib import Path

import torch
from peft import PeftModel, get_peft_model, set_peft_model_state_dict
from safetensors.torch import load_file
from torch import Tensor, nn

from halo.settings.trainer import LearnerConfig
from halo_model import full_weights
from halo_model.grouped import PackedBatch, grouped_logprobs, pack, prompt_groups, supports_packing
from halo_model.inputs import PolicyBatch, select_rows
from halo_model.logprobs import base_model
from halo_model.lora import lora_config
from halo_trainer.learner.dpo import DPOStats, dpo_loss
from halo_trainer.learner.objective import LossStats, entropy_from_logits, policy_loss

logger = logging.getLogger(__name__)

# (model, batch, *, temperature, grad, allowed) -> per-completion-token log-probs [B, C], 0 off the mask
LogprobFn = Callable[..., Tensor]


def group_micro_batches(groups: Sequence[Sequence[int]], rows: Sequence[int], size: int) -> list[list[int]]:
    """``rows`` in micro-batches of at most ``size`` that keep the rows of a prompt group together:
    whole groups while they fit, a group larger than ``size`` in chunks of ``size``. A group split
    across two micro-batches would pay its prompt pass twice."""
    wanted = set(rows)
    out: list[list[int]] = []
    current: list[int] = []
    for group in groups:
        members = [r for r in group if r in wanted]
        for start in range(0, len(members), size):
            chunk = members[start : start + size]
            if len(current) + len(chunk) > size:
                out.append(sorted(current))
                current = []
            current += chunk
    if current:
        out.append(sorted(current))
    return out


@dataclass
class LearnerBatch:
    """A batch of completions to learn from, one row each (often one group or a few groups).

    ``behaviour_logprobs[i, j]`` is the log-prob vLLM reported for completion token ``j`` of row
    ``i`` (``Transition.behaviour_logprobs``, right-padded like ``inputs.completion_ids``); without
    it the learner's own detached log-probs stand in (ratio 1). ``allowed`` is the structured-output
    mask of ``halo_model.grammar.grammar_masks`` when vLLM sampled under a grammar.
    """

    inputs: PolicyBatch | PackedBatch  # packed: one micro-batch on its way to the device
    advantages: Tensor  # [B]
    behaviour_logprobs: Tensor | None = None  # [B, C]
    allowed: Tensor | None = None  # [B, C, V] bool

    def __len__(self) -> int:
        return self.inputs.input_ids.shape[0]

    def to(self, device: torch.device | str) -> LearnerBatch:
        return LearnerBatch(
            inputs=self.inputs.to(device),
            advantages=self.advantages.to(device),
            behaviour_logprobs=None if self.behaviour_logprobs is None else self.behaviour_logprobs.to(device),
            allowed=None if self.allowed is None else self.allowed.to(device),
        )

    def select(self, rows: Sequence[int], spatial_merge_size: int) -> LearnerBatch:
        index = torch.as_tensor(list(rows), dtype=torch.long, device=self.advantages.device)
        return replace(
            self,
            inputs=select_rows(self.inputs, rows, spatial_merge_size),
            advantages=self.advantages[index],
            behaviour_logprobs=None if self.behaviour_logprobs is None else self.behaviour_logprobs[index],
            allowed=None if self.allowed is None else self.allowed[index],
        )


def _to(tensor: Tensor | None, device: torch.device) -> Tensor | None:
    return None if tensor is None else tensor.to(device)


def _joined_allowed(batches: Sequence[LearnerBatch], width: int) -> Tensor | None:
    """The batches' structured-output masks stacked row after row at ``width`` (on the CPU); True (no
    mask) where a batch has none and on the padding."""
    masks = [b.allowed for b in batches if b.allowed is not None]
    if not masks:
        return None
    vocab = max(m.shape[-1] for m in masks)
    parts = []
    for b in batches:
        mask = torch.ones((len(b), width, vocab), dtype=torch.bool)
        if b.allowed is not None:
            mask[:, : b.allowed.shape[1], : b.allowed.shape[2]] = b.allowed.cpu()
        parts.append(mask)
    return torch.cat(parts)


def _lm_head(model: nn.Module) -> nn.Module | None:
    return getattr(base_model(model), "lm_head", None)


def logprobs_and_entropy(
    logprob_fn: LogprobFn, model: nn.Module, batch: LearnerBatch, *, grad: bool, temperature: float = 1.0
) -> tuple[Tensor, Tensor | None]:
    """``logprob_fn``'s log-probs ``[B, C]`` and the entropy of each predicted distribution (no grad).

    The entropy comes from the logits ``logprob_fn`` already computes (captured at ``lm_head``, before
    the temperature, which is applied here as ``logprob_fn`` applies it), with the same
    structured-output mask; None if the function does not go through ``lm_head``.
    """
    captured: list[Tensor] = []
    head = _lm_head(model)
    hook = head.register_forward_hook(lambda _m, _i, out: captured.append(out.detach())) if head is not None else None
    try:
        logp = logprob_fn(model, batch.inputs, grad=grad, allowed=batch.allowed)
    finally:
        if hook is not None:
            hook.remove()
    entropy = None
    if len(captured) == 1 and captured[0].shape[:2] == logp.shape:
        logits = captured[0] / temperature if temperature != 1.0 else captured[0]
        if batch.allowed is not None:
            logits = logits.masked_fill(~batch.allowed[..., : logits.shape[-1]], float("-inf"))
        entropy = entropy_from_logits(logits)
    return logp, entropy


class Learner:
    """LoRA (and full-weight) policy-gradient learner over a transformers Qwen3-VL model (see the module
    docstring)."""

    def __init__(self, model: nn.Module, config: LearnerConfig, *, logprob_fn: LogprobFn = grouped_logprobs):
        """``logprob_fn`` takes a ``PolicyBatch`` (``logprobs.completion_logprobs``: the per-row path);
        ``grouped_logprobs``, the default, is given its micro-batches packed by prompt. Either is
        called at ``config.temperature``, the run's sampling temperature."""
        if isinstance(model, PeftModel):
            raise ValueError("pass the base model: the learner adds its own LoRA adapter")
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
        self._saved_dtype: torch.dtype | None = None
        base_config = base.config
        self._merge: int = base_config.vision_config.spatial_merge_size
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
        """The trained parameters (LoRA and full weights) by PEFT name (a copy)."""
        return {n: p.detach().clone() for n, p in self.model.named_parameters() if p.requires_grad}

    def update(self, batch: LearnerBatch) -> dict[str, float]:
        """One optimiser step on a batch of completions; returns ``train/*`` metrics."""
        cfg = self.config
        completion_mask = batch.inputs.completion_mask
        lengths = completion_mask.sum(-1)
        if int(lengths.max()) > cfg.max_completion_tokens:
            raise ValueError(
                f"a completion has {int(lengths.max())} tokens, more than max_completion_tokens="
                f"{cfg.max_completion_tokens} (Dr. GRPO's constant normaliser; set it to the sampler's max_tokens)"
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

        self.model.train()
        try:
            stats, loss_total, grad_norm, lr = self._step(batch, rows)
        finally:
            self.model.eval()

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

    def _micro_batches(self, inputs: PolicyBatch, rows: Sequence[int]) -> list[list[int]]:
        groups = prompt_groups(inputs, self._merge)
        return group_micro_batches(groups, rows, self.config.micro_batch_size)

    def _packed(self, *inputs: PolicyBatch) -> PolicyBatch | PackedBatch:
        """A micro-batch's inputs as the log-prob function takes them: packed by prompt (on the
        CPU, so that each prompt's pixels travel to the device once) for the grouped path."""
        if self._packs and supports_packing(self.model):
            return pack(*inputs, spatial_merge_size=self._merge)
        return inputs[0]

    def _on_device(self, batch: LearnerBatch, rows: Sequence[int]) -> LearnerBatch:
        """Rows of ``batch`` selected where the batch is, then moved to the device: one micro-batch."""
        micro = batch.select(rows, self._merge)
        return replace(micro, inputs=self._packed(micro.inputs)).to(self.device)

    def _step(self, batch: LearnerBatch, rows: list[int]) -> tuple[LossStats, float, float, float]:
        """Forward/backward over the needed rows in micro-batches, then one optimiser step."""
        cfg = self.config
        self.optimizer.zero_grad(set_to_none=True)
        stats = LossStats()
        loss_total = 0.0
        for micro_rows in self._micro_batches(batch.inputs, rows):
            micro = self._on_device(batch, micro_rows)
            ref = None
            if cfg.kl_coef > 0:
                with torch.no_grad(), self.reference_policy():
                    ref = self.logprob_fn(self.model, micro.inputs, grad=False, allowed=micro.allowed)
            logp, entropy = logprobs_and_entropy(
                self.logprob_fn, self.model, micro, grad=True, temperature=cfg.temperature
            )
            behaviour = micro.behaviour_logprobs if micro.behaviour_logprobs is not None else logp.detach()
            loss, micro_stats = policy_loss(
                logp,
                behaviour,
                micro.advantages,
                micro.inputs.completion_mask,
                ref_logprobs=ref,
                entropy=entropy,
                loss_type=cfg.loss_type,
                clip_eps_low=cfg.clip_eps_low,
                clip_eps_high=cfg.clip_eps_high,
                kl_coef=cfg.kl_coef,
                max_completion_tokens=cfg.max_completion_tokens,
                num_sequences=len(batch),
                tis_cap=cfg.tis_cap,
            )
            loss.backward()
            loss_total += float(loss.detach())
            stats = stats.merge(micro_stats)

        grad_norm, lr = self._optimizer_step(bool(rows))
        return stats, loss_total, grad_norm, lr

    def _optimizer_step(self, any_gradient: bool) -> tuple[float, float]:
        """Clip the gradient (LoRA and full weights), AdamW step, schedule step; returns (grad norm, learning rate used)."""
        grad_norm = 0.0
        if any_gradient:
            grad_norm = float(torch.nn.utils.clip_grad_norm_(self.params, self.config.max_grad_norm))
            if not math.isfinite(grad_norm):
                # A non-finite gradient would poison AdamW's moments for good: skip the step, say so.
                logger.warning("non-finite gradient norm at update %d: step skipped", self.step)
                self.optimizer.zero_grad(set_to_none=True)
        lr = self.scheduler.get_last_lr()[0]
        self.optimizer.step()  # parameters without a gradient (all rows skipped) do not move
        self.scheduler.step()
        self.step += 1
        return grad_norm, lr

    def dpo_update(
        self,
        chosen: LearnerBatch,
        rejected: LearnerBatch,
        ref_chosen: Tensor,
        ref_rejected: Tensor,
        *,
        beta: float,
        rpo_alpha: float = 0.0,
    ) -> dict[str, float]:
        """One optimiser step of step-level DPO (``halo_trainer.learner.dpo``) on preference pairs: row i of
        ``chosen`` and of ``rejected`` is pair i's two actions at the same prompt; ``ref_*`` are the
        reference's per-token log-probs of those rows (``logprobs``), computed before the step.
        Returns ``dpo/*`` metrics."""
        if len(chosen) != len(rejected) or len(chosen) == 0:
            raise ValueError(f"{len(chosen)} chosen and {len(rejected)} rejected actions: need the same, at least 1")
        n = len(chosen)
        self.optimizer.zero_grad(set_to_none=True)
        stats = DPOStats()
        self.model.train()
        try:
            for rows in self._micro_batches(chosen.inputs, range(n)):
                micro_w, micro_l = chosen.select(rows, self._merge), rejected.select(rows, self._merge)
                logp_w, logp_l = self._pair_logprobs(micro_w, micro_l)
                mask_w = micro_w.inputs.completion_mask.to(self.device)
                mask_l = micro_l.inputs.completion_mask.to(self.device)
                ref_w = ref_chosen[rows][:, : mask_w.shape[1]].to(self.device)
                ref_l = ref_rejected[rows][:, : mask_l.shape[1]].to(self.device)
                loss, micro_stats = dpo_loss(
                    logp_w, logp_l, ref_w, ref_l, mask_w, mask_l, beta=beta, rpo_alpha=rpo_alpha, num_pairs=n
                )
                loss.backward()
                stats = stats.merge(micro_stats)
            grad_norm, lr = self._optimizer_step(True)
        finally:
            self.model.eval()
        return {f"dpo/{k}": v for k, v in stats.summary().items()} | {
            "dpo/grad_norm": grad_norm,
            "dpo/lr": lr,
            "train/step": float(self.step),
        }

    def _pair_logprobs(self, chosen: LearnerBatch, rejected: LearnerBatch) -> tuple[Tensor, Tensor]:
        """Log-probs (with grad) of a micro-batch of pairs' chosen and rejected rows: on the grouped
        path one packed forward, so a state's prompt is scored once for both of its actions (and an
        action both sides share, once)."""
        if not (self._packs and supports_packing(self.model)):
            return tuple(
                self.logprob_fn(self.model, m.inputs.to(self.device), grad=True, allowed=_to(m.allowed, self.device))
                for m in (chosen, rejected)
            )
        width_w = chosen.inputs.completion_ids.shape[1]
        width_l = rejected.inputs.completion_ids.shape[1]
        allowed = _joined_allowed([chosen, rejected], max(width_w, width_l))
        logp = self.logprob_fn(
            self.model,
            self._packed(chosen.inputs, rejected.inputs).to(self.device),
            grad=True,
            allowed=_to(allowed, self.device),
        )
        n = len(chosen)
        return logp[:n, :width_w], logp[n:, :width_l]

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
            for rows in self._micro_batches(inputs, range(len(inputs.prompt_lengths))):
                micro = self._packed(select_rows(inputs, rows, self._merge)).to(self.device)
                mask = None if allowed is None else allowed[rows].to(self.device)
                out[rows] = self.logprob_fn(self.model, micro, grad=False, allowed=mask)
        return out

    def save_adapter(self, directory: str | Path) -> Path:
        """Write ``adapter_config.json`` + ``adapter_model.safetensors`` (language-model LoRA keys) for vLLM."""
        directory = Path(directory)
        self.model.save_pretrained(str(directory))
        return directory

    def load_adapter(self, directory: str | Path) -> None:
        """Load adapter weights written by ``save_adapter`` into this learner's adapter (same r, targets)."""
        state = load_file(str(Path(directory) / "adapter_model.safetensors"), device=str(self.device))
        result = set_peft_model_state_dict(self.model, state)
        missing = [k for k in result.missing_keys if "lora_" in k]
        if missing or result.unexpected_keys:
            raise ValueError(
                f"adapter does not fit this learner: missing {missing[:3]}, unexpected {result.unexpected_keys[:3]}"
            )

    # --- full weights ------------------------------------------------------------------------

    def full_weight_names(self) -> list[str]:
        """The trained base-model parameters by their checkpoint name ([] when only LoRA trains)."""
        return list(self._full_names)

    def save_initial_base_weights(self, directory: str | Path) -> Path:
        """``save_base_weights`` with the full-weight modules at their values as loaded: the weights
        vLLM must get back when a full-weights run ends (``PolicyPublisher.release``)."""
        with self.reference_policy():
            return self.save_base_weights(directory)

    def save_base_weights(self, directory: str | Path, *, trained_only: bool = False) -> Path:
        """Write the base model's weights (LoRA not merged) as safetensors with the keys, shapes and
        dtype of the model's own folder, the full-weight modules at their trained values, plus its
        ``config.json``: a folder vLLM's ``reload_weights`` and transformers load. Written beside it and
        renamed into place (``full_weights.write_weights``): it replaces a folder written earlier, whole.

        ``trained_only``: only the full-weight parameters, in the learner's own dtype (a checkpoint's
        exact copy; ``load_base_weights`` reads it back)."""
        base = self.model.get_base_model()
        if trained_only:
            state = dict(zip(self._full_names, self.full_params, strict=True))
            return full_weights.write_weights(state, directory)
        dtype = self._checkpoint_dtype()
        config = copy.deepcopy(base.config)
        config.dtype = dtype
        return full_weights.write_weights(full_weights.base_state(base), directory, dtype=dtype, config=config)

    def load_base_weights(self, directory: str | Path) -> None:
        """Load base-model weights written by ``save_base_weights`` (all of them or ``trained_only``);
        every full-weight parameter must be there, and every tensor must be a base-model parameter."""
        state = full_weights.read_weights(directory, device=str(self.device))
        targets = full_weights.base_state(self.model.get_base_model())
        unknown = sorted(set(state) - set(targets))
        missing = sorted(set(self._full_names) - set(state))
        if unknown or missing:
            raise ValueError(
                f"{directory} does not fit this learner: unknown weights {unknown[:3]}, "
                f"trained weights missing {missing[:3]} (full_weights={list(self.config.full_weights)})"
            )
        for name, tensor in state.items():
            if tensor.shape != targets[name].shape:
                raise ValueError(
                    f"{name}: shape {tuple(tensor.shape)} in {directory}, {tuple(targets[name].shape)} here"
                )
        with torch.no_grad():
            for name, tensor in state.items():
                targets[name].copy_(tensor)

    def _checkpoint_dtype(self) -> torch.dtype:
        """The dtype of the model's own safetensors (config.json's), which the learner may hold in
        float32; the parameters' dtype for a model without a folder."""
        if self._saved_dtype is None:
            from transformers import AutoConfig

            base = self.model.get_base_model()
            dtype = None
            try:
                dtype = AutoConfig.from_pretrained(base.config._name_or_path).dtype
            except (OSError, ValueError):
                logger.info(
                    "no model folder for %r: base weights saved in the parameters' dtype", base.config._name_or_path
                )
            if isinstance(dtype, str):
                dtype = getattr(torch, dtype)
            self._saved_dtype = dtype if isinstance(dtype, torch.dtype) else self.lora_params[0].dtype
        return self._saved_dtype
