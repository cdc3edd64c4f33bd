"""Saving and loading the learner's trained weights: the LoRA adapter as vLLM's ``/v1/load_lora_adapter``
reads it, and the base model with its full-weight modules as vLLM's ``reload_weights`` and transformers
load it (``halo_model.full_weights``). The learner holds one (``Learner.weights``) and gives it the
model, its full-weight parameters and the reference policy.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path

import torch
from peft import PeftModel, get_peft_model_state_dict
from safetensors.torch import load_file
from torch import Tensor

from halo_model import full_weights
from halo_trainer.learner import distributed
from halo_trainer.learner.distributed import Ranks

logger = logging.getLogger("halo_trainer.learner.learner")  # the learner's messages keep their logger's name


class LearnerWeights:
    """The adapter and the full weights, to and from disk (see the module docstring)."""

    def __init__(
        self,
        model: PeftModel,
        lora_params: Sequence[Tensor],
        full_names: Sequence[str],
        full_params: Sequence[Tensor],
        full_weights_setting: Sequence[str],
        reference_policy: Callable[[], AbstractContextManager[None]],
        ranks: Ranks,
    ):
        """``lora_params``: the adapter's (their device and dtype are the learner's); ``full_names``/
        ``full_params``: the trained base-model parameters by checkpoint name;
        ``full_weights_setting`` the config's ``full_weights`` (for messages); ``reference_policy``
        the learner's, which puts the full-weight modules back to their values as loaded; ``ranks``
        the learner's: the adapter is then sharded, gathered whole to save (rank 0 writes)."""
        self.model = model
        self.ranks = ranks
        self.lora_params = list(lora_params)
        self._full_names = list(full_names)
        self.full_params = list(full_params)
        self._full_weights_setting = list(full_weights_setting)
        self.reference_policy = reference_policy
        self._saved_dtype: torch.dtype | None = None

    @property
    def device(self) -> torch.device:
        return self.lora_params[0].device

    def save_adapter(self, directory: str | Path) -> Path:
        """Write ``adapter_config.json`` + ``adapter_model.safetensors`` (language-model LoRA keys) for vLLM."""
        directory = Path(directory)
        # Every rank gathers the adapter (a collective across ranks); rank 0 writes it and the others
        # wait for the file.
        state = {name: distributed.full(value) for name, value in self._adapter_state().items()}
        if self.ranks.writes:
            self.model.save_pretrained(str(directory), state_dict=state)
        self.ranks.barrier()
        return directory

    def _adapter_state(self) -> dict[str, Tensor]:
        """The adapter's tensors by the names ``adapter_model.safetensors`` gives them (the parameters' own storage)."""
        return get_peft_model_state_dict(self.model, state_dict=self.model.state_dict())

    def load_adapter(self, directory: str | Path) -> None:
        """Load adapter weights written by ``save_adapter`` into this learner's adapter (same r, targets)."""
        state = load_file(str(Path(directory) / "adapter_model.safetensors"), device=str(self.device))
        # Into the parameters' own storage, each tensor as the parameter holds it: whole in one
        # process, this rank's shard across ranks (``distributed.like``).
        targets = self._adapter_state()
        missing, unexpected = sorted(set(targets) - set(state)), sorted(set(state) - set(targets))
        if missing or unexpected:
            raise ValueError(
                f"adapter {directory} does not fit this learner: missing {missing[:3]}, unexpected {unexpected[:3]}"
            )
        with torch.no_grad():
            for name, target in targets.items():
                if tuple(state[name].shape) != tuple(target.shape):
                    raise ValueError(
                        f"{name}: shape {tuple(state[name].shape)} in {directory}, {tuple(target.shape)} here"
                    )
                target.copy_(distributed.like(target, state[name]))

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
                f"trained weights missing {missing[:3]} (full_weights={self._full_weights_setting})"
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
