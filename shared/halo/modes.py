"""Agent modes: the named policies the users compare (evaluation, the run API and the CLI use this one table).

- ``qwen3vl_base``: the served base model, no adapter.
- ``qwen3vl_<algorithm>`` (``qwen3vl_grpo``, ``qwen3vl_mcts``): one per run algorithm
  (``halo.schemas.Algorithm``), the base model plus the adapter promoted from a run of it, kept as
  ``<checkpoints>/qwen3vl_<algorithm>_lora/``.
- ``gpt5_baseline`` / ``gpt4o_baseline``: a frontier model through an OpenAI-compatible chat API,
  given the policy's own prompt and parsed by the policy's own parser.

Promotion copies a run's adapter version into the mode's folder (atomically: a half-copied adapter
is never served) with a ``promotion.json`` saying where it came from. vLLM serves it under
``<mode>-<digest>``: the digest of the weights, because vLLM never reloads a name in place (its
prefix cache is keyed by the name), so a re-promoted adapter needs a new name.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from halo.schemas.choices import ALGORITHM_TITLES, Algorithm
from halo.settings.eval import EvalSettings

ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors")
PROMOTION_FILE = "promotion.json"


class ModeError(Exception):
    """A mode that does not exist or cannot be used as asked (the message says what to do)."""


@dataclass(frozen=True)
class Mode:
    name: str
    backend: Literal["vllm", "openai"]
    description: str
    algorithm: str | None = None  # the run algorithm whose adapter the mode serves (None: no adapter)
    model_field: str | None = None  # the EvalSettings field naming an openai mode's model

    @property
    def adapter_dir_name(self) -> str | None:
        return f"{self.name}_lora" if self.algorithm else None


def _promotable(algorithm: Algorithm) -> Mode:
    """The mode serving the adapter promoted from a run of ``algorithm``: one per ``Algorithm``."""
    title = ALGORITHM_TITLES[algorithm]
    return Mode(
        f"qwen3vl_{algorithm.value}",
        "vllm",
        f"Qwen3-VL + the LoRA promoted from an {title} run",
        algorithm=algorithm.value,
    )


MODES: dict[str, Mode] = {
    m.name: m
    for m in (
        Mode("qwen3vl_base", "vllm", "Qwen3-VL as served, no adapter (before training)"),
        *(_promotable(a) for a in Algorithm),
        Mode("gpt5_baseline", "openai", "GPT-5.2 through an OpenAI-compatible API", model_field="gpt5_model"),
        Mode("gpt4o_baseline", "openai", "GPT-4o through an OpenAI-compatible API", model_field="gpt4o_model"),
    )
}


def get_mode(name: str) -> Mode:
    try:
        return MODES[name]
    except KeyError:
        raise ModeError(f"unknown mode {name!r}; the modes are {', '.join(MODES)}") from None


def openai_model(mode: Mode, settings: EvalSettings) -> str:
    """The model an openai mode asks for; refused without a key (never silently skipped)."""
    if mode.model_field is None:
        raise ModeError(f"mode {mode.name} is served by vLLM, not by an OpenAI-compatible API")
    if not settings.openai_api_key.get_secret_value():
        raise ModeError(
            f"mode {mode.name} needs an API key for {settings.openai_base_url}: "
            "set HALO_EVAL_OPENAI_API_KEY (or OPENAI_API_KEY), or leave the mode out"
        )
    return getattr(settings, mode.model_field)


def adapter_folder(mode: Mode, settings: EvalSettings) -> Path:
    if mode.adapter_dir_name is None:
        raise ModeError(f"mode {mode.name} has no adapter")
    return settings.checkpoints_dir / mode.adapter_dir_name


def promoted_adapter(mode: Mode, settings: EvalSettings) -> tuple[Path, str]:
    """The mode's adapter folder and the name vLLM serves it under; refused when none was promoted."""
    folder = adapter_folder(mode, settings)
    if not all((folder / f).is_file() for f in ADAPTER_FILES):
        raise ModeError(
            f"mode {mode.name} has no promoted adapter in {folder}: promote a {mode.algorithm} run's adapter "
            f"with `halo modes promote {mode.name} --run <run_id> [--version k]`"
        )
    return folder, f"{mode.name}-{_digest(folder)[:12]}"


def run_adapter(runs_dir: Path, run_id: str, version: int | None = None) -> Path:
    """A run's adapter ``v<version>`` (default: its newest) under ``<runs_dir>/<run_id>/adapters/``."""
    adapters = runs_dir / run_id / "adapters"
    if not adapters.is_dir():
        # The run's own folder names it; no absolute path (the run API answers clients with this).
        raise ModeError(f"run {run_id!r} has no adapters (no adapters/ in its run folder)")
    versions = sorted(int(p.name[1:]) for p in adapters.glob("v*") if p.name[1:].isdigit())
    if not versions:
        raise ModeError(f"run {run_id!r} has saved no adapter version yet")
    chosen = versions[-1] if version is None else version
    if chosen not in versions:
        raise ModeError(f"run {run_id!r} has no adapter v{chosen}; it has v{versions[0]}..v{versions[-1]}")
    return adapters / f"v{chosen}"


def promote(
    mode_name: str, source: Path, settings: EvalSettings, *, run_id: str = "", version: int | None = None
) -> Path:
    """Copy the adapter folder ``source`` to the mode's folder, replacing any previous one atomically."""
    mode = get_mode(mode_name)
    if mode.algorithm is None:
        raise ModeError(f"mode {mode.name} takes no adapter; promote to one of {', '.join(_adapter_modes())}")
    missing = [f for f in ADAPTER_FILES if not (source / f).is_file()]
    if missing:
        raise ModeError(f"{source} is not a PEFT adapter folder (missing {', '.join(missing)})")
    target = adapter_folder(mode, settings)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.with_name(f".{target.name}.incoming")
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(source, staging)
    record = {
        "mode": mode.name,
        "source": str(source.resolve()),
        "run_id": run_id,
        "version": version,
        "sha256": _digest(staging),
        "promoted_at": time.time(),
    }
    (staging / PROMOTION_FILE).write_text(json.dumps(record, indent=1))
    retired = target.with_name(f".{target.name}.previous")
    shutil.rmtree(retired, ignore_errors=True)
    if target.exists():
        target.rename(retired)
    staging.rename(target)
    shutil.rmtree(retired, ignore_errors=True)
    return target


def promote_run(mode_name: str, run_id: str, version: int | None, settings: EvalSettings) -> Path:
    """Promote adapter ``v<version>`` (default: the newest) of a run of the mode's algorithm."""
    mode = get_mode(mode_name)
    source = run_adapter(settings.runs_dir, run_id, version)
    config = settings.runs_dir / run_id / "config.json"
    saved = json.loads(config.read_text()) if config.is_file() else {}
    # A run's config.json keeps its RunConfig under "run"; runs saved before that kept it at the top.
    algorithm = (saved.get("run") or {}).get("algorithm") or saved.get("algorithm")
    if mode.algorithm and algorithm and algorithm != mode.algorithm:
        raise ModeError(f"run {run_id} is a {algorithm} run; mode {mode.name} takes a {mode.algorithm} run's adapter")
    return promote(mode_name, source, settings, run_id=run_id, version=int(source.name[1:]))


def promotion_record(mode: Mode, settings: EvalSettings) -> dict | None:
    path = adapter_folder(mode, settings) / PROMOTION_FILE
    return json.loads(path.read_text()) if path.is_file() else None


def _adapter_modes() -> list[str]:
    return [m.name for m in MODES.values() if m.algorithm]


def _digest(folder: Path) -> str:
    """SHA-256 over the adapter's files (config and weights): what vLLM would load."""
    h = hashlib.sha256()
    for name in ADAPTER_FILES:
        h.update(name.encode())
        h.update((folder / name).read_bytes())
    return h.hexdigest()
