"""The GRPO learner: a LoRA adapter on Qwen3-VL's language model, updated from groups of completions.

One ``Learner.update(batch)`` is one optimiser step:

1. skip sequences whose advantage is 0 when there is no KL term (they have no gradient; they still
   count in the normaliser, as in the objective),
2. per micro-batch: reference log-probs with the adapter disabled (only when ``kl_coef > 0``),
   current log-probs with grad, the objective of ``halo_trainer.objective``, backward,
3. clip the LoRA gradient, AdamW step, learning-rate schedule step.

The LoRA adapter covers the language model only: vLLM applies a Qwen3-VL adapter to the language
model and drops vision-tower keys, so training the vision tower would make the served policy differ
from the trained one. ``save_adapter`` writes exactly what vLLM's ``/v1/load_lora_adapter`` reads.

Inputs and per-token log-probs are the policy package's (``halo_policy.logprobs``): its
``build_batch`` rebuilds each prompt and refuses one whose token ids differ from vLLM's, and its
``completion_logprobs`` is tested for parity with vLLM's behaviour log-probs (structured-output
masks included). The learner takes that function as ``logprob_fn`` and reads the entropy metric
from the logits it computes (a forward hook on ``lm_head``), so nothing is computed twice.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path

import torch
from peft import LoraConfig, PeftModel, get_peft_model, set_peft_model_state_dict
from safetensors.torch import load_file
from torch import Tensor, nn

from halo.settings.trainer import LearnerConfig
from halo_policy.logprobs import PolicyBatch
from halo_policy.logprobs import completion_logprobs as policy_completion_logprobs
from halo_trainer.objective import LossStats, entropy_from_logits, policy_loss

logger = logging.getLogger(__name__)

IMAGE_TOKEN_TYPE = 1  # Qwen3-VL's mm_token_type_ids: 0 text, 1 image, 2 video

# (model, batch, *, grad, allowed) -> per-completion-token log-probs [B, C], 0 off the mask
LogprobFn = Callable[..., Tensor]


def language_model_targets(modules: Sequence[str]) -> str:
    """A PEFT ``target_modules`` regex matching the given linear layers inside ``language_model`` only."""
    return r".*\.language_model\..*\.(" + "|".join(modules) + r")$"


def image_rows(batch: PolicyBatch, spatial_merge_size: int) -> list[int]:
    """The row each image of ``batch`` belongs to, from the image tokens each row holds."""
    per_row = (batch.mm_token_type_ids == IMAGE_TOKEN_TYPE).sum(-1).tolist()
    owner: list[int] = []
    row = 0
    for t, h, w in batch.image_grid_thw.tolist():
        tokens = t * h * w // spatial_merge_size**2
        while row < len(per_row) and per_row[row] == 0:
            row += 1
        if row == len(per_row) or per_row[row] < tokens:
            raise ValueError("image_grid_thw does not match the image tokens in the batch")
        owner.append(row)
        per_row[row] -= tokens
    if any(per_row):
        raise ValueError("the batch holds image tokens without an image in image_grid_thw")
    return owner


def select_rows(batch: PolicyBatch, rows: Sequence[int], spatial_merge_size: int) -> PolicyBatch:
    """The given rows of a batch, with their own images' patches."""
    index = torch.as_tensor(list(rows), dtype=torch.long, device=batch.input_ids.device)
    picked = {
        f.name: getattr(batch, f.name)[index]
        for f in fields(batch)
        if f.name not in ("pixel_values", "image_grid_thw", "prompt_lengths")
    }
    picked["prompt_lengths"] = [batch.prompt_lengths[r] for r in rows]
    if batch.image_grid_thw is None or batch.pixel_values is None or batch.image_grid_thw.numel() == 0:
        return PolicyBatch(**picked, pixel_values=batch.pixel_values, image_grid_thw=batch.image_grid_thw)
    owner = image_rows(batch, spatial_merge_size)
    starts = [0]
    for n in batch.image_grid_thw.prod(-1).tolist():
        starts.append(starts[-1] + n)
    wanted = set(rows)
    keep = [i for i, row in enumerate(owner) if row in wanted]
    if not keep:
        return PolicyBatch(**picked, pixel_values=None, image_grid_thw=None)
    patches = torch.cat([torch.arange(starts[i], starts[i + 1]) for i in keep]).to(batch.pixel_values.device)
    return PolicyBatch(**picked, pixel_values=batch.pixel_values[patches], image_grid_thw=batch.image_grid_thw[keep])


def batch_from_token_ids(
    prompts: Sequence[Sequence[int]],
    completions: Sequence[Sequence[int]],
    *,
    pad_token_id: int,
    image_token_id: int,
    pixel_values: Tensor | None = None,
    image_grid_thw: Tensor | None = None,
) -> PolicyBatch:
    """A right-padded ``PolicyBatch`` from token ids and ready pixels, laid out as ``halo_policy.logprobs.build_batch``.

    For callers that already hold model inputs; ``build_batch`` (which also checks that the prompt
    is the one vLLM saw) is the way from transitions.
    """
    if len(prompts) != len(completions) or not prompts:
        raise ValueError(f"{len(prompts)} prompts for {len(completions)} completions")
    for i, (prompt, completion) in enumerate(zip(prompts, completions, strict=True)):
        if not prompt or not completion:
            raise ValueError(f"row {i}: empty prompt or completion")
    batch = len(prompts)
    width = max(len(p) + len(c) for p, c in zip(prompts, completions, strict=True))
    max_completion = max(len(c) for c in completions)
    input_ids = torch.full((batch, width), pad_token_id, dtype=torch.long)
    attention = torch.zeros((batch, width), dtype=torch.long)
    completion_ids = torch.zeros((batch, max_completion), dtype=torch.long)
    completion_mask = torch.zeros((batch, max_completion), dtype=torch.bool)
    positions = torch.zeros((batch, max_completion), dtype=torch.long)
    prompt_part = torch.zeros((batch, width), dtype=torch.bool)  # image tokens count only in prompts
    for b, (prompt, completion) in enumerate(zip(prompts, completions, strict=True)):
        row = list(prompt) + list(completion)
        prompt_part[b, : len(prompt)] = True
        input_ids[b, : len(row)] = torch.tensor(row)
        attention[b, : len(row)] = 1
        completion_ids[b, : len(completion)] = torch.tensor(list(completion))
        completion_mask[b, : len(completion)] = True
        positions[b, : len(completion)] = torch.arange(len(prompt), len(row))
    return PolicyBatch(
        input_ids=input_ids,
        attention_mask=attention,
        mm_token_type_ids=((input_ids == image_token_id) & prompt_part).int() * IMAGE_TOKEN_TYPE,
        pixel_values=pixel_values,
        image_grid_thw=image_grid_thw,
        completion_ids=completion_ids,
        completion_mask=completion_mask,
        completion_positions=positions,
        prompt_lengths=[len(p) for p in prompts],
    )


@dataclass
class LearnerBatch:
    """A batch of completions to learn from, one row each (often one group or a few groups).

    ``behaviour_logprobs[i, j]`` is the log-prob vLLM reported for completion token ``j`` of row
    ``i`` (``Transition.behaviour_logprobs``, right-padded like ``inputs.completion_ids``); without
    it the learner's own detached log-probs stand in (ratio 1). ``allowed`` is the structured-output
    mask of ``halo_policy.logprobs.grammar_masks`` when vLLM sampled under a grammar.
    """

    inputs: PolicyBatch
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


def _lm_head(model: nn.Module) -> nn.Module | None:
    base = model.get_base_model() if isinstance(model, PeftModel) else model
    return getattr(base, "lm_head", None)


def logprobs_and_entropy(
    logprob_fn: LogprobFn, model: nn.Module, batch: LearnerBatch, *, grad: bool
) -> tuple[Tensor, Tensor | None]:
    """``logprob_fn``'s log-probs ``[B, C]`` and the entropy of each predicted distribution (no grad).

    The entropy comes from the logits ``logprob_fn`` already computes (captured at ``lm_head``), with
    the same structured-output mask; None if the function does not go through ``lm_head``.
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
        logits = captured[0]
        if batch.allowed is not None:
            logits = logits.masked_fill(~batch.allowed[..., : logits.shape[-1]], float("-inf"))
        entropy = entropy_from_logits(logits)
    return logp, entropy


class Learner:
    """LoRA policy-gradient learner over a transformers Qwen3-VL model (see the module docstring)."""

    def __init__(self, model: nn.Module, config: LearnerConfig, *, logprob_fn: LogprobFn = policy_completion_logprobs):
        if isinstance(model, PeftModel):
            raise ValueError("pass the base model: the learner adds its own LoRA adapter")
        self.config = config
        self.logprob_fn = logprob_fn
        model.requires_grad_(False)
        lora = LoraConfig(
            r=config.lora_r,
            lora_alpha=config.lora_alpha,
            target_modules=language_model_targets(config.lora_target_modules),
            # Dropout would make the learner's log-probs differ from the sampler's (ratio != 1 on-policy).
            lora_dropout=0.0,
            bias="none",
        )
        self.model: PeftModel = get_peft_model(model, lora)
        if config.gradient_checkpointing:
            self.model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        if not self.params:
            raise ValueError(f"no layer named {config.lora_target_modules} inside the language model")
        self.optimizer = torch.optim.AdamW(
            self.params,
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
        base_config = self.model.get_base_model().config
        self._merge: int = base_config.vision_config.spatial_merge_size
        self._vision_token_ids = [base_config.image_token_id, base_config.video_token_id]
        self.model.eval()

    @classmethod
    def from_pretrained(
        cls,
        model_path: str | Path,
        config: LearnerConfig,
        *,
        dtype: torch.dtype = torch.float32,
        device: str | torch.device = "cpu",
        logprob_fn: LogprobFn = policy_completion_logprobs,
    ) -> Learner:
        from transformers import Qwen3VLForConditionalGeneration

        model = Qwen3VLForConditionalGeneration.from_pretrained(str(model_path), dtype=dtype).to(device)
        return cls(model, config, logprob_fn=logprob_fn)

    @property
    def vocab_size(self) -> int:
        """Rows of ``lm_head``: the width of structured-output masks."""
        return int(self.model.get_base_model().config.text_config.vocab_size)

    @property
    def device(self) -> torch.device:
        return self.params[0].device

    def trainable_state(self) -> dict[str, Tensor]:
        """The LoRA parameters by name (a copy)."""
        return {n: p.detach().clone() for n, p in self.model.named_parameters() if p.requires_grad}

    def update(self, batch: LearnerBatch) -> dict[str, float]:
        """One optimiser step on a batch of completions; returns ``train/*`` metrics."""
        cfg = self.config
        batch = batch.to(self.device)
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
        for key in ("tokens", "kl", "entropy", "clip_frac", "ratio_mean", "ratio_min", "ratio_max"):
            metrics[f"train/{key}"] = summary[key]
        if stats.entropy_tokens == 0 and stats.tokens > 0:
            metrics["train/entropy"] = float("nan")  # the log-prob function gave no logits to read it from
        metrics["train/behaviour_logprob_gap"] = summary["behaviour_logprob_gap"]
        return metrics

    def _holds_vision_placeholder(self, inputs: PolicyBatch) -> Tensor:
        """Per row: does the completion contain an image or video placeholder token id?"""
        ids = inputs.completion_ids.masked_fill(~inputs.completion_mask, -1)
        return torch.isin(ids, torch.tensor(self._vision_token_ids, device=ids.device)).any(-1)

    def _step(self, batch: LearnerBatch, rows: list[int]) -> tuple[LossStats, float, float, float]:
        """Forward/backward over the needed rows in micro-batches, then one optimiser step."""
        cfg = self.config
        self.optimizer.zero_grad(set_to_none=True)
        stats = LossStats()
        loss_total = 0.0
        for start in range(0, len(rows), cfg.micro_batch_size):
            micro = batch.select(rows[start : start + cfg.micro_batch_size], self._merge)
            ref = None
            if cfg.kl_coef > 0:
                with torch.no_grad(), self.model.disable_adapter():
                    ref = self.logprob_fn(self.model, micro.inputs, grad=False, allowed=micro.allowed)
            logp, entropy = logprobs_and_entropy(self.logprob_fn, self.model, micro, grad=True)
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
            )
            loss.backward()
            loss_total += float(loss.detach())
            stats = stats.merge(micro_stats)

        grad_norm = 0.0
        if rows:
            grad_norm = float(torch.nn.utils.clip_grad_norm_(self.params, cfg.max_grad_norm))
            if not math.isfinite(grad_norm):
                # A non-finite gradient would poison AdamW's moments for good: skip the step, say so.
                logger.warning("non-finite gradient norm at update %d: step skipped", self.step)
                self.optimizer.zero_grad(set_to_none=True)
        lr = self.scheduler.get_last_lr()[0]
        self.optimizer.step()  # parameters without a gradient (all rows skipped) do not move
        self.scheduler.step()
        self.step += 1
        return stats, loss_total, grad_norm, lr

    @torch.no_grad()
    def logprobs(self, batch: LearnerBatch | PolicyBatch, *, adapter: bool = True) -> Tensor:
        """Per-completion-token log-probs ``[B, C]`` under the current adapter (or the base model)."""
        inputs = batch.inputs if isinstance(batch, LearnerBatch) else batch
        allowed = batch.allowed if isinstance(batch, LearnerBatch) else None
        inputs = inputs.to(self.device)
        allowed = None if allowed is None else allowed.to(self.device)
        if adapter:
            return self.logprob_fn(self.model, inputs, grad=False, allowed=allowed)
        with self.model.disable_adapter():
            return self.logprob_fn(self.model, inputs, grad=False, allowed=allowed)

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
