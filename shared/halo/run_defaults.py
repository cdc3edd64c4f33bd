"""The run defaults a trainer resolves each run from: the knobs' declared defaults, the run defaults
file (``configs/rl_config.yaml``) and the profile the trainer's target implies.

Here, not in the trainer, so that ``halo train --help`` shows the defaults a run will get without
importing the trainer (the CLI runs where torch is not installed); ``halo_trainer.config`` resolves
each run's config with these same functions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from halo.schemas import knobs
from halo.settings import REPO_ROOT


def profile_for(target: str) -> str | None:
    """The run profile a trainer target implies: ``tiny`` for the CPU target's random-weight model."""
    return "tiny" if target == "cpu" else None


def load_defaults(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    p = p if p.is_absolute() else REPO_ROOT / p
    return yaml.safe_load(p.read_text())


def _file_values(defaults: dict[str, Any]) -> dict[str, Any]:
    """The run defaults file's values by knob name; a key that is no knob of its section is refused.

    A file written before the ``run`` and ``learner`` sections were split from ``grpo`` still
    loads: a knob may stand under its ``old_section``, but not under both."""
    values: dict[str, Any] = {}
    where: dict[str, str] = {}
    for section, entries in defaults.items():
        if section == "profiles":
            continue
        if section not in knobs.SECTIONS:
            raise ValueError(f"run defaults: {section!r} is not a section ({', '.join(knobs.SECTIONS)}, profiles)")
        if not isinstance(entries, dict | None):
            raise ValueError(f"run defaults: section {section} holds {type(entries).__name__}, not its knobs")
        for name, value in (entries or {}).items():
            k = knobs.BY_NAME.get(name)
            if k is None or section not in (k.section, k.old_section):
                raise ValueError(
                    f"run defaults: {section}.{name} is not a knob of section {section} (halo.schemas.knobs)"
                )
            if name in where:
                raise ValueError(
                    f"run defaults: {name} is given twice, under {where[name]} and {section}; keep {k.section}.{name}"
                )
            values[name], where[name] = value, section
    return values


def _profile(defaults: dict[str, Any], profile: str) -> dict[str, Any]:
    """A profile's values: overrides of knobs, never new ones."""
    profiles = defaults.get("profiles") or {}
    if profile not in profiles:
        raise ValueError(f"profile {profile!r} is not in the run defaults' profiles ({', '.join(profiles) or 'none'})")
    values = dict(profiles[profile] or {})
    if unknown := [n for n in values if n not in knobs.BY_NAME]:
        raise ValueError(f"profile {profile!r}: {unknown} are not knobs (a profile overrides knobs, it declares none)")
    return values


def resolved_values(given: dict[str, Any], defaults: dict[str, Any], profile: str | None) -> dict[str, Any]:
    """Every knob's value: its declared default, then the run defaults file, the profile, ``given``."""
    values = knobs.defaults() | _file_values(defaults)
    if profile:
        values |= _profile(defaults, profile)
    return values | given
