"""configs/rl_config.yaml and docs/knobs.md, rendered from the run's knobs (``halo.schemas.knobs``).

    python -m halo.schemas.rl_config_file --write      # configs/rl_config.yaml
    python -m halo.schemas.rl_config_file --markdown   # the table and notes of docs/knobs.md

The file holds the knobs' defaults and the profiles' overrides, each with its one-line help as a
comment (and the docs/knobs.md anchor of a knob explained at length there);
``tests/shared/test_knobs.py`` fails when the committed file or docs differ from the rendering.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

from halo.schemas.knob_notes import NOTES
from halo.schemas.knobs import KNOBS, PROFILES, SECTIONS, UNSET, Knob, in_section

YAML_PATH = "configs/rl_config.yaml"
HEADER = """\
# The settings of a training run and their defaults (the GPU target's), by section, with the
# `tiny` profile the CPU target applies on top. `POST /runs` / `halo train` flags override them
# per run; the trainer saves the resolved values with the run (config.json) and every checkpoint.
#
# Generated from shared/halo/schemas/knobs.py, where each setting is declared once:
#     python -m halo.schemas.rl_config_file --write
# Edit the declaration there, not this file (a test compares the two). A file of your own
# (HALO_TRAINER_RL_CONFIG) may give any of these keys other values and add profiles; one written
# before the run and learner sections existed (their knobs under grpo) still loads.
# docs/knobs.md explains each knob; one whose comment ends in (docs #<name>) at length, under that anchor.
"""


def _plain(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, str):
        return str(value)  # a StrEnum as its value
    return value


def inline(value: Any) -> str:
    return yaml.safe_dump(_plain(value), default_flow_style=True, width=10_000).strip().removesuffix("\n...")


def _line(key: str, value: Any, comment: str, indent: str = "  ") -> str:
    left = f"{indent}{key}: {inline(value)}"
    return f"{left:<34} # {comment}"


def _comment(k: Knob) -> str:
    note = k.help + (f" [{k.unit}]" if k.unit else "")
    if k.seeds is not UNSET:
        note += f" (seeds: {inline(k.seeds)})"
    return note + (f" (docs #{k.name})" if k.docs else "")


def render_yaml() -> str:
    lines = [HEADER]
    for section in SECTIONS:
        lines.append(f"{section}:")
        for k in in_section(section):
            lines.append(_line(k.name, k.default, _comment(k)))
        lines.append("")
    lines.append("profiles:")
    for name, overrides in PROFILES.items():
        lines.append(f"  {name}:")
        lines += [_line(key, o.value, o.why, indent="    ") for key, o in overrides.items()]
    return "\n".join(lines) + "\n"


def render_markdown() -> str:
    """The knobs as a table for docs/knobs.md, then the long notes under an anchor per knob."""
    rows = ["| knob | section | default | tiny | seeds | unit | request | what it decides |", "|" + " --- |" * 8]
    tiny = PROFILES["tiny"]
    for k in KNOBS:
        seeds = f"`{inline(k.seeds)}`" if k.seeds is not UNSET else ""
        small = f"`{inline(tiny[k.name].value)}`" if k.name in tiny else ""
        flag = k.flag + (f" ({k.seeds_flag})" if k.seeds_flag else "")
        more = f" ([more](#{k.name}))" if k.docs else ""
        rows.append(
            f"| `{k.name}` | {k.section} | `{inline(k.default)}` | {small} | {seeds} | {k.unit} | "
            f"{flag if k.request else 'no'} | {k.help.replace('|', '/')}{more} |"
        )
    notes = ["## Notes", ""]
    for k in KNOBS:
        if k.name in NOTES:
            # A heading that is the bare name: its anchor is #<name>, what Knob.docs links to.
            notes += [f"### {k.name}", "", NOTES[k.name], ""]
    return "\n".join(rows) + "\n\n" + "\n".join(notes)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m halo.schemas.rl_config_file", description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"write {YAML_PATH} (from the repository root)")
    parser.add_argument("--markdown", action="store_true", help="print the knob table and notes as markdown")
    args = parser.parse_args(argv)
    if args.markdown:
        sys.stdout.write(render_markdown())
    elif args.write:
        Path(YAML_PATH).write_text(render_yaml())
        sys.stdout.write(f"wrote {YAML_PATH} ({len(KNOBS)} knobs, {len(PROFILES)} profiles)\n")
    else:
        sys.stdout.write(render_yaml())
    return 0


if __name__ == "__main__":
    sys.exit(main())
