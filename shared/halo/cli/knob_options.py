"""Command-line options of the run's knobs (``halo.schemas.knobs``), derived, never declared here.

``halo train`` gets one ``--<knob-name>`` option per knob a request may set (plus the seeds'
spelling where their commands use another, e.g. ``--lr``), and the seeds' scripts
(``scripts/train_online_grpo.py``, ``scripts/train_mcts.py``) their ``--<knob_name>`` flags from
``add_knob_arguments``; both hand the values on as a ``RunSpec``'s fields.
"""

from __future__ import annotations

import argparse
import enum
import inspect
import types
import typing
from collections.abc import Callable
from typing import Any

import typer

from halo.schemas import knobs, rl_config_file
from halo.schemas.choices import section_owner


def _base(tp: Any) -> Any:
    """The plain type under ``Annotated[...]`` and ``... | None``."""
    while True:
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            tp = typing.get_args(tp)[0]
        elif origin in (typing.Union, types.UnionType):
            tp = next(a for a in typing.get_args(tp) if a is not type(None))
        else:
            return tp


def cli_type(k: knobs.Knob) -> Any:
    """What a command line gives for ``k``: int, float, bool, str, or a list of str (repeatable)."""
    tp = _base(k.type)
    if typing.get_origin(tp) in (tuple, list):
        return list[str]
    if tp in (int, float, bool):
        return tp
    return str  # enums, literals and text


def choices(k: knobs.Knob) -> list[str] | None:
    tp = _base(k.type)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return [m.value for m in tp]
    if typing.get_origin(tp) is typing.Literal:
        return [str(a) for a in typing.get_args(tp)]
    return None


def _help(k: knobs.Knob, section_note: bool = True) -> str:
    note = f"{k.section}: " if section_note and section_owner(k.section) is not None else ""
    unit = f" [{k.unit}]" if k.unit else ""
    more = f"; {k.docs}" if k.docs else ""
    return f"{note}{k.help}{unit} (default {rl_config_file.inline(k.default)}{more})"


def spec_values(given: dict[str, Any]) -> dict[str, Any]:
    """Knob values as a ``RunSpec`` takes them: lists from repeated or comma-separated entries."""
    out: dict[str, Any] = {}
    for name, value in given.items():
        if value is None:
            continue
        if cli_type(knobs.BY_NAME[name]) == list[str]:
            value = [part.strip() for entry in value for part in str(entry).split(",") if part.strip()] or None
        if value is not None:
            out[name] = value
    return out


def with_knob_options(
    command: Callable[..., Any] | None = None, *, panel: Callable[[knobs.Knob], str] | None = None
) -> Any:
    """``command`` (whose last parameter is ``**knob_values``) with one typer option per request knob;
    ``panel`` names the help panel of each (``rich_help_panel``)."""
    if command is None:
        return lambda command: with_knob_options(command, panel=panel)
    hints = typing.get_type_hints(command)
    own = [p for p in inspect.signature(command).parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    own = [p.replace(annotation=hints.get(p.name, p.annotation)) for p in own]
    taken = {p.name for p in own}
    extra = []
    for k in knobs.KNOBS:
        if not k.request or k.name in taken:
            continue
        # The seeds' spelling too where it is a typer-style flag (--lr); theirs with underscores
        # (--num_simulations) belong to the seeds' scripts.
        seeds = [k.seeds_flag] if k.seeds_flag and "_" not in k.seeds_flag else []
        # A switch has its negation too (--no-<name>): a knob whose default is true can be turned off.
        names = [f"{k.flag}/--no-{k.flag[2:]}"] if cli_type(k) is bool else [k.flag, *seeds]
        # Typer renders help as rich markup, where "[updates]" or a default of "[none]" is a tag
        # and vanishes: escaped, the unit and the default show.
        option = typer.Option(
            None, *names, help=_help(k).replace("[", "\\["), rich_help_panel=panel(k) if panel else None
        )
        extra.append(inspect.Parameter(k.name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=cli_type(k)))

    def wrapper(**kwargs: Any) -> Any:
        return command(**kwargs)

    wrapper.__name__, wrapper.__doc__ = command.__name__, command.__doc__
    params = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own] + extra
    wrapper.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in params}
    return wrapper


def add_knob_arguments(parser: argparse.ArgumentParser, sections: tuple[str, ...]) -> list[str]:
    """The seeds' scripts' flags: ``--<knob_name>`` (and the seeds' own spelling) for each request
    knob of ``sections``; returns the knob names added."""
    added = []
    for k in knobs.KNOBS:
        if not k.request or k.section not in sections:
            continue
        flags = ["--" + k.name] + ([k.seeds_flag] if k.seeds_flag else [])
        kind = cli_type(k)
        if kind == list[str]:
            parser.add_argument(*flags, dest=k.name, action="append", default=None, help=_help(k, False))
        elif kind is bool:
            parser.add_argument(
                *flags, dest=k.name, action=argparse.BooleanOptionalAction, default=None, help=_help(k, False)
            )
        else:
            parser.add_argument(*flags, dest=k.name, type=kind, choices=choices(k), default=None, help=_help(k, False))
        added.append(k.name)
    return added


def train_flags(values: dict[str, Any]) -> list[str]:
    """``halo train`` flags for knob values (None left out)."""
    out: list[str] = []
    for name, value in values.items():
        if value is None:
            continue
        k = knobs.BY_NAME[name]
        if cli_type(k) is bool:
            out.append(k.flag if value else "--no-" + k.flag[2:])
        elif isinstance(value, list):
            for v in value:
                out += [k.flag, str(v)]
        else:
            out += [k.flag, str(value)]
    return out
