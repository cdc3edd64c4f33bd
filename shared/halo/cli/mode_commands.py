"""`halo modes list|promote`: the agent modes (docs/evaluation.md), what each would serve, and promoting
a run's adapter to a mode."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from halo import modes as agent_modes
from halo.cli.output import console, fail
from halo.settings.eval import EvalSettings


def modes_list() -> None:
    """The agent modes and what each would serve now."""
    settings = EvalSettings()
    table = Table("mode", "backend", "serves", "description")
    for mode in agent_modes.MODES.values():
        try:
            if mode.backend == "openai":
                serves = f"{agent_modes.openai_model(mode, settings)} at {settings.openai_base_url}"
            elif mode.algorithm:
                folder, name = agent_modes.promoted_adapter(mode, settings)
                record = agent_modes.promotion_record(mode, settings) or {}
                source = f" (run {record['run_id']} v{record['version']})" if record.get("run_id") else ""
                serves = f"{name} from {folder}{source}"
            else:
                serves = "the served base model"
        except agent_modes.ModeError as exc:
            serves = f"[yellow]unavailable[/yellow]: {escape(str(exc))}"
        table.add_row(mode.name, mode.backend, serves, mode.description)
    console.print(table)


def modes_promote(
    mode: str = typer.Argument(..., help="qwen3vl_grpo or qwen3vl_mcts"),
    run: str = typer.Option(None, "--run", help="Run id whose adapter to promote (its folder under the data dir)"),
    version: int = typer.Option(None, "--version", help="Adapter version v<k> of the run (default: its newest)"),
    adapter: str = typer.Option(None, "--adapter", help="Or any PEFT adapter folder"),
) -> None:
    """Copy a run's adapter version to the mode's folder (checkpoints/<mode>_lora/)."""
    settings = EvalSettings()
    if (run is None) == (adapter is None):
        fail("name either --run (with an optional --version) or --adapter", 2)
    try:
        if run:
            target = agent_modes.promote_run(mode, run, version, settings)
        else:
            target = agent_modes.promote(mode, Path(adapter), settings)
        _, served = agent_modes.promoted_adapter(agent_modes.get_mode(mode), settings)
    except agent_modes.ModeError as exc:
        fail(str(exc), 2)
    source = (agent_modes.promotion_record(agent_modes.get_mode(mode), settings) or {}).get("source")
    console.print(f"promoted {source} to {target}; evaluations load it into vLLM as {served}")
