"""What ``halo train --help`` shows: the common options only (``--help-all``: every option, in panels),
each knob's default as a run on this stack gets it, with the profile that applies named, and every
domain the task registry has.

The defaults and the domains are read when the help is asked for, not when the CLI starts: a run's
defaults come from ``configs/rl_config.yaml`` and the trainer target's profile (``halo.run_defaults``,
the functions the trainer resolves runs with), the domains from the clones' task registry (its own
entry point: the CLI imports no service package).
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import typer
from typer.core import TyperCommand, TyperOption

from halo import run_defaults
from halo.schemas import knobs, rl_config_file

COMMON = "Options"  # typer's own panel: --help joins the common options there
# The knobs' sections, grouped into a few panels; a knob of COMMON_KNOBS is in the common one.
PANELS = {
    "run": "Run",
    "grpo": "GRPO (--algorithm grpo)",
    "learner": "Learner, adapter, prompt, tracking",
    "tracking": "Learner, adapter, prompt, tracking",
    "lora": "Learner, adapter, prompt, tracking",
    "full_weights": "Learner, adapter, prompt, tracking",
    "sampling": "Learner, adapter, prompt, tracking",
    "mcts": "Search (--algorithm mcts)",
}
COMMON_KNOBS = ("episodes", "learning_rate", "seed", "eval_every")


def panel(k: knobs.Knob) -> str:
    return COMMON if k.name in COMMON_KNOBS else PANELS[k.section]


def knob_help(k: knobs.Knob, default: Any, negations: list[str] | tuple[str, ...] = ()) -> str:
    """One knob's help line with the default a run gets, a switch's negation, and where docs/knobs.md
    says more, last: that link is one long word, which the help column must not cut (rich markup
    escaped: "[updates]" shows)."""
    unit = f" [{k.unit}]" if k.unit else ""
    off = f"; off: {', '.join(negations)}" if negations else ""
    more = f"; {k.docs}" if k.docs else ""
    text = f"{k.help}{unit} (default {rl_config_file.inline(default)}){off}{more}"
    return text.replace("[", "\\[")


def stack_defaults() -> tuple[dict[str, Any], str]:
    """(each knob's default on this stack, a line saying where they come from)."""
    from halo.settings.trainer import TrainerSettings

    try:
        settings = TrainerSettings()
    except ValueError as exc:  # a bad HALO_TRAINER_* value: the help still shows, and says so
        return (
            knobs.defaults(),
            f"Defaults: as declared; the trainer's settings are invalid ({' '.join(str(exc).split())[:120]}).",
        )
    profile = run_defaults.profile_for(settings.target)
    where = f"profile {profile} (embedded stack, CPU target)" if profile else f"no profile ({settings.target} target)"
    try:
        values = run_defaults.resolved_values({}, run_defaults.load_defaults(settings.rl_config), profile)
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        values = knobs.defaults() | (knobs.profile_values(profile) if profile else {})
        where += f"; {settings.rl_config} unreadable ({str(exc)[:80]}), the declared defaults"
    else:
        where += f", over {settings.rl_config}"
    return values, f"Defaults: {where} (HALO_TRAINER_TARGET={settings.target})."


def registry_domains() -> list[str]:
    """Every domain the clones' task registry has tasks for; [] when it cannot be read."""
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "halo_sites.tasks", "--domains"], capture_output=True, text=True, timeout=60
        )
        domains = json.loads(proc.stdout) if proc.returncode == 0 else []
    except (OSError, ValueError, subprocess.SubprocessError):
        return []
    return [d for d in domains if isinstance(d, str)]


def _show_all(ctx: typer.Context, _param: Any, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    ctx.meta["halo_help_all"] = True
    typer.echo(ctx.get_help(), color=ctx.color)
    raise typer.Exit()


HELP_ALL = typer.Option(
    False,
    "--help-all",
    is_eager=True,
    expose_value=False,
    callback=_show_all,
    rich_help_panel=COMMON,
    help="Show every option, in panels, and exit",
)


class TrainCommand(TyperCommand):
    """``halo train``'s command: its help is filled in when asked for (``format_help``)."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        show_all = ctx.meta.get("halo_help_all", False)
        values, where = stack_defaults()
        saved = [(p, p.hidden, p.help, p.secondary_opts) for p in self.params if isinstance(p, TyperOption)]
        saved_doc = self.help
        domains = registry_domains()
        hidden = 0
        try:
            for param in self.params:
                if not isinstance(param, TyperOption):
                    continue
                if param.name in knobs.BY_NAME:
                    k = knobs.BY_NAME[param.name]
                    # A switch's --no-<name> goes in its help: a column of its own leaves the help too narrow.
                    param.help = knob_help(k, values[k.name], param.secondary_opts)
                    param.secondary_opts = []
                    if not show_all and panel(k) != COMMON:
                        param.hidden = True
                        hidden += 1
                elif param.name == "domain" and domains:
                    param.help = f"{param.help}: {', '.join(domains)}"
            rest = f"\n\n{hidden} more options (run, GRPO, learner and search settings): --help-all." if hidden else ""
            self.help = f"{saved_doc}\n\n{where}{rest}"
            super().format_help(ctx, formatter)
        finally:
            self.help = saved_doc
            for param, was_hidden, text, negations in saved:
                param.hidden, param.help, param.secondary_opts = was_hidden, text, negations
