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

The per-token log-prob computation is a plain function of ``(model, inputs, completion_mask)``
(``completion_logprobs``) passed to the learner, so it can be replaced by one that rebuilds the
sampler's inputs exactly.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path

import torch
from peft import LoraConfig, PeftModel, get_peft_model, set_peft_model_state_dict
from safetensors.torch import load_file
from torch import Tensor, nn

from halo.settings.trainer import LearnerConfig
from halo_trainer.objective import LossStats, policy_loss, token_logprobs_and_entropy

logger = logging.getLogger(__name__)

IMAGE_TOKEN_TYPE = 1  # Qwen3-VL's mm_token_type_ids: 0 text, 1 image, 2 video
VIDEO_TOKEN_TYPE = 2

LogprobFn = Callable[..., tuple[Tensor, Tensor | None]]


def language_model_targets(modules: Sequence[str]) -> str:
    """A PEFT ``target_modules`` regex matching the given linear layers inside ``language_model`` only."""
    return r".*\.language_model\..*\.(" + "|".join(modules) + r")$"


@dataclass
class LearnerBatch:
    """Model inputs for a batch of completions, one row per completion (prompt + completion tokens).

    ``completion_mask[i, t]`` is set where ``input_ids[i, t]`` is a sampled completion token;
    ``behaviour_logprobs[i, t]`` is the sampler's log-prob of that token (anything elsewhere).
    Images are concatenated in row order, as Qwen3-VL's processor lays them out. Left padding keeps
    the logits the learner computes to the last ``max completion length + 1`` positions.
    """

    input_ids: Tensor  # [B, L] long
    attention_mask: Tensor  # [B, L]
    completion_mask: Tensor  # [B, L] bool
    advantages: Tensor  # [B]
    behaviour_logprobs: Tensor | None = None  # [B, L]
    pixel_values: Tensor | None = None  # [sum of t*h*w patches, C * temporal_patch * patch^2]
    image_grid_thw: Tensor | None = None  # [images, 3]

    def __len__(self) -> int:
        return self.input_ids.shape[0]

    def to(self, device: torch.device | str) -> LearnerBatch:
        moved = {f.name: getattr(self, f.name) for f in fields(self)}
        return LearnerBatch(**{k: v.to(device) if isinstance(v, Tensor) else v for k, v in moved.items()})

    def select(self, rows: Sequence[int], image_token_id: int, spatial_merge_size: int) -> LearnerBatch:
        """The given rows, with their own images' patches."""
        index = torch.as_tensor(list(rows), dtype=torch.long, device=self.input_ids.device)
        sub = replace(
            self,
            input_ids=self.input_ids[index],
            attention_mask=self.attention_mask[index],
            completion_mask=self.completion_mask[index],
            advantages=self.advantages[index],
            behaviour_logprobs=None if self.behaviour_logprobs is None else self.behaviour_logprobs[index],
        )
        if self.image_grid_thw is None or self.pixel_values is None:
            return sub
        owner = self.image_rows(image_token_id, spatial_merge_size)
        patches = self.image_grid_thw.prod(-1).tolist()
        starts = [0]
        for n in patches:
            starts.append(starts[-1] + n)
        wanted = set(rows)
        keep = [i for i, row in enumerate(owner) if row in wanted]
        if not keep:
            return replace(sub, pixel_values=None, image_grid_thw=None)
        pixel_rows = torch.cat([torch.arange(starts[i], starts[i + 1]) for i in keep]).to(self.pixel_values.device)
        return replace(sub, pixel_values=self.pixel_values[pixel_rows], image_grid_thw=self.image_grid_thw[keep])

    def image_rows(self, image_token_id: int, spatial_merge_size: int) -> list[int]:
        """The row each image belongs to, from the image placeholder tokens each row holds."""
        assert self.image_grid_thw is not None
        per_row = (self.input_ids == image_token_id).sum(-1).tolist()
        owner: list[int] = []
        row = 0
        for t, h, w in self.image_grid_thw.tolist():
            tokens = t * h * w // spatial_merge_size**2
            while row < len(per_row) and per_row[row] == 0:
                row += 1
            if row == len(per_row) or per_row[row] < tokens:
                raise ValueError("image_grid_thw does not match the image placeholder tokens in input_ids")
            owner.append(row)
            per_row[row] -= tokens
        if any(per_row):
            raise ValueError("input_ids hold image placeholder tokens without an image in image_grid_thw")
        return owner


def build_batch(
    prompts: Sequence[Sequence[int]],
    completions: Sequence[Sequence[int]],
    advantages: Sequence[float] | Tensor,
    *,
    pad_token_id: int,
    behaviour_logprobs: Sequence[Sequence[float]] | None = None,
    pixel_values: Tensor | None = None,
    image_grid_thw: Tensor | None = None,
) -> LearnerBatch:
    """Left-padded rows ``prompt + completion`` from token ids (the sampler's ``prompt_token_ids``/``token_ids``)."""
    if not (len(prompts) == len(completions) == len(advantages)):
        raise ValueError(f"{len(prompts)} prompts, {len(completions)} completions, {len(advantages)} advantages")
    if behaviour_logprobs is not None and len(behaviour_logprobs) != len(completions):
        raise ValueError(f"{len(behaviour_logprobs)} behaviour log-prob lists for {len(completions)} completions")
    width = max(len(p) + len(c) for p, c in zip(prompts, completions, strict=True))
    batch = len(prompts)
    input_ids = torch.full((batch, width), pad_token_id, dtype=torch.long)
    attention = torch.zeros((batch, width), dtype=torch.long)
    completion = torch.zeros((batch, width), dtype=torch.bool)
    behaviour = torch.zeros((batch, width), dtype=torch.float32)
    for i, (prompt, comp) in enumerate(zip(prompts, completions, strict=True)):
        if not prompt:
            raise ValueError(f"row {i}: empty prompt (the first completion token needs a context)")
        start = width - len(prompt) - len(comp)
        input_ids[i, start:] = torch.tensor(list(prompt) + list(comp), dtype=torch.long)
        attention[i, start:] = 1
        completion[i, width - len(comp) :] = True
        if behaviour_logprobs is not None:
            if len(behaviour_logprobs[i]) != len(comp):
                raise ValueError(f"row {i}: {len(behaviour_logprobs[i])} behaviour log-probs for {len(comp)} tokens")
            if comp:
                behaviour[i, width - len(comp) :] = torch.tensor(list(behaviour_logprobs[i]), dtype=torch.float32)
    return LearnerBatch(
        input_ids=input_ids,
        attention_mask=attention,
        completion_mask=completion,
        advantages=torch.as_tensor(advantages, dtype=torch.float32),
        behaviour_logprobs=behaviour if behaviour_logprobs is not None else None,
        pixel_values=pixel_values,
        image_grid_thw=image_grid_thw,
    )


def mm_token_type_ids(config, input_ids: Tensor) -> Tensor:
    """Qwen3-VL's modality per position (needed for its 3-D rope) from the placeholder token ids."""
    types = torch.zeros_like(input_ids, dtype=torch.int32)
    types[input_ids == config.image_token_id] = IMAGE_TOKEN_TYPE
    types[input_ids == config.video_token_id] = VIDEO_TOKEN_TYPE
    return types


def completion_logprobs(
    model: nn.Module, inputs: Mapping[str, Tensor | None], completion_mask: Tensor, *, with_entropy: bool = False
) -> tuple[Tensor, Tensor | None]:
    """Per-position log-prob of each completion token, ``[B, L]`` (0 elsewhere), and its entropy.

    ``logp[i, t] = log p(input_ids[i, t] | input_ids[i, :t], images)``. Logits are computed only for
    the positions from the earliest completion token on (``logits_to_keep``), not the whole prompt.
    """
    input_ids = inputs["input_ids"]
    assert input_ids is not None
    batch, width = input_ids.shape
    mask = completion_mask.bool()
    has = mask.any(-1)
    if not has.any():
        zeros = torch.zeros(batch, width, device=input_ids.device)
        return zeros, (zeros.clone() if with_entropy else None)
    first = int(mask.float().argmax(-1)[has].min())
    if first < 1:
        raise ValueError("a completion token at position 0 has no context to be predicted from")
    kwargs = {k: v for k, v in inputs.items() if v is not None}
    if "pixel_values" in kwargs and "mm_token_type_ids" not in kwargs:
        kwargs["mm_token_type_ids"] = mm_token_type_ids(model.config, input_ids)
    logits = model(**kwargs, logits_to_keep=width - first + 1, use_cache=False).logits
    # logits[:, j] predicts the token at position first + j
    logp, entropy = token_logprobs_and_entropy(logits[:, :-1], input_ids[:, first:], with_entropy)
    on = mask[:, first:]
    logp = torch.cat([logp.new_zeros(batch, first), logp.masked_fill(~on, 0.0)], dim=1)
    if entropy is not None:
        entropy = torch.cat([entropy.new_zeros(batch, first), entropy.masked_fill(~on, 0.0)], dim=1)
    return logp, entropy


class Learner:
    """LoRA policy-gradient learner over a transformers Qwen3-VL model (see the module docstring)."""

    def __init__(self, model: nn.Module, config: LearnerConfig, *, logprob_fn: LogprobFn = completion_logprobs):
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
        self._image_token_id: int = base_config.image_token_id
        self._merge: int = base_config.vision_config.spatial_merge_size
        self.model.eval()

    @classmethod
    def from_pretrained(
        cls,
        model_path: str | Path,
        config: LearnerConfig,
        *,
        dtype: torch.dtype = torch.float32,
        device: str | torch.device = "cpu",
        logprob_fn: LogprobFn = completion_logprobs,
    ) -> Learner:
        from transformers import Qwen3VLForConditionalGeneration

        model = Qwen3VLForConditionalGeneration.from_pretrained(str(model_path), dtype=dtype).to(device)
        return cls(model, config, logprob_fn=logprob_fn)

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
        lengths = batch.completion_mask.sum(-1)
        if int(lengths.max()) > cfg.max_completion_tokens:
            raise ValueError(
                f"a completion has {int(lengths.max())} tokens, more than max_completion_tokens="
                f"{cfg.max_completion_tokens} (Dr. GRPO's constant normaliser; set it to the sampler's max_tokens)"
            )
        needed = (lengths > 0) & ((batch.advantages != 0) | (cfg.kl_coef > 0))
        rows = needed.nonzero().flatten().tolist()

        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        stats = LossStats()
        loss_total = 0.0
        for start in range(0, len(rows), cfg.micro_batch_size):
            micro = batch.select(rows[start : start + cfg.micro_batch_size], self._image_token_id, self._merge)
            inputs = {
                "input_ids": micro.input_ids,
                "attention_mask": micro.attention_mask,
                "pixel_values": micro.pixel_values,
                "image_grid_thw": micro.image_grid_thw,
            }
            ref = None
            if cfg.kl_coef > 0:
                with torch.no_grad(), self.model.disable_adapter():
                    ref, _ = self.logprob_fn(self.model, inputs, micro.completion_mask)
            logp, entropy = self.logprob_fn(self.model, inputs, micro.completion_mask, with_entropy=True)
            behaviour = micro.behaviour_logprobs if micro.behaviour_logprobs is not None else logp.detach()
            loss, micro_stats = policy_loss(
                logp,
                behaviour,
                micro.advantages,
                micro.completion_mask,
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
        self.optimizer.step()  # parameters without a gradient (skipped rows only) do not move
        self.scheduler.step()
        self.step += 1
        self.model.eval()

        summary = stats.summary()
        metrics = {
            "train/loss": loss_total,
            "train/grad_norm": grad_norm,
            "train/lr": lr,
            "train/step": float(self.step),
            "train/sequences": float(len(batch)),
            "train/skipped_sequences": float(len(batch) - len(rows)),
        }
        for key in ("tokens", "kl", "entropy", "clip_frac", "ratio_mean", "ratio_min", "ratio_max"):
            metrics[f"train/{key}"] = summary[key]
        metrics["train/behaviour_logprob_gap"] = summary["behaviour_logprob_gap"]
        return metrics

    @torch.no_grad()
    def logprobs(self, batch: LearnerBatch, *, adapter: bool = True) -> Tensor:
        """Per-position completion log-probs ``[B, L]`` under the current adapter (or the base model)."""
        batch = batch.to(self.device)
        inputs = {
            "input_ids": batch.input_ids,
            "attention_mask": batch.attention_mask,
            "pixel_values": batch.pixel_values,
            "image_grid_thw": batch.image_grid_thw,
        }
        if adapter:
            return self.logprob_fn(self.model, inputs, batch.completion_mask)[0]
        with self.model.disable_adapter():
            return self.logprob_fn(self.model, inputs, batch.completion_mask)[0]

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
