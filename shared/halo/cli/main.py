"""`halo`: run the local stack, launch and watch training runs, check health, manage tasks/models."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx
import typer
from pydantic import TypeAdapter
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from halo import modes as agent_modes
from halo.cli import stack as local_stack
from halo.cli.summary import run_summary, viewer_link
from halo.schemas import RunSpec, RunState, RunStatus, Task
from halo.settings.eval import EvalSettings
from halo.settings.trainer import TrainerSettings

app = typer.Typer(help="HALO-Agent: online RL for a Qwen3-VL browser agent.", no_args_is_help=True)
stack_app = typer.Typer(help="The embedded local stack (every service as a local process).", no_args_is_help=True)
tasks_app = typer.Typer(help="Task registries.", no_args_is_help=True)
model_app = typer.Typer(help="Models for the embedded default.", no_args_is_help=True)
runs_app = typer.Typer(help="Training runs on the trainer's HTTP API.", no_args_is_help=True)
modes_app = typer.Typer(help="Agent modes (docs/evaluation.md) and adapter promotion.", no_args_is_help=True)
app.add_typer(stack_app, name="stack")
app.add_typer(tasks_app, name="tasks")
app.add_typer(model_app, name="model")
app.add_typer(runs_app, name="runs")
app.add_typer(modes_app, name="modes")
console = Console(soft_wrap=True)  # long URLs and paths stay on one line
err = Console(stderr=True)

TERMINAL = {RunState.FINISHED, RunState.STOPPED, RunState.FAILED}


def _fail(message: str, code: int = 1) -> None:
    err.print(f"[red]error:[/red] {message}")
    raise typer.Exit(code)


# -- stack -----------------------------------------------------------------------------------
@stack_app.command("up")
def stack_up(
    service: list[str] = typer.Option(None, "--service", "-s", help="Only these services (repeatable)"),
) -> None:
    """Start every service (and Redis when none is reachable), wait until all are ready."""
    console.print("starting the local stack")
    try:
        state = local_stack.up(service or None, say=console.print)
    except RuntimeError as exc:
        _fail(str(exc))
    console.print(f"[green]stack ready[/green] (redis {state.redis_url}); `halo stack down` stops it")


@stack_app.command("down")
def stack_down() -> None:
    """Stop every process `halo stack up` started."""
    local_stack.down(say=console.print)


@stack_app.command("status")
def stack_status() -> None:
    """Show each service's URL, liveness and readiness."""
    _print_status(local_stack.status())


def _print_status(rows: list[dict]) -> bool:
    table = Table("service", "url", "alive", "ready")
    ok = True
    for row in rows:
        ok &= bool(row["alive"]) and row["ready"] is not False
        mark = {True: "[green]yes[/green]", False: "[red]no[/red]", None: "-"}
        table.add_row(row["service"], row["url"], mark[row["alive"]], mark[row["ready"]])
    console.print(table)
    return ok


@app.command()
def health() -> None:
    """Check every service's /health and /ready (exit 1 if any is down)."""
    if not _print_status(local_stack.status()):
        raise typer.Exit(1)


# -- training --------------------------------------------------------------------------------
def _client(settings: TrainerSettings) -> httpx.Client:
    token = settings.api_token.get_secret_value()
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    url = f"http://{'127.0.0.1' if settings.host in ('0.0.0.0', '') else settings.host}:{settings.port}"
    return httpx.Client(base_url=url, headers=headers, timeout=30)


def _api(call, *args, **kwargs) -> httpx.Response:
    try:
        response = call(*args, **kwargs)
    except httpx.HTTPError as exc:
        _fail(f"trainer API unreachable: {exc}")
    if response.status_code >= 400:
        try:
            body = response.json()
            message = body.get("error", response.text)
        except ValueError:
            message = response.text
        _fail(f"trainer API answered {response.status_code}: {message}")
    return response


@app.command()
def train(
    domain: str = typer.Option(..., "--domain", "-d", help="Site: playground, gomail, gocalendar, omnizon, zilloft"),
    episodes: int = typer.Option(None, help="Episodes to run (default from configs/rl_config.yaml)"),
    task: list[str] = typer.Option(
        None, "--task", "-t", help="Task ids (repeatable; default: the domain's tasks whose site answers)"
    ),
    algorithm: str = typer.Option("grpo", help="grpo or mcts (search + step-level DPO, docs/mcts.md)"),
    num_generations: int = typer.Option(None, help="Group size N"),
    lr: float = typer.Option(None, "--lr", help="Learning rate"),
    loss_type: str = typer.Option(None, help="dr_grpo or grpo"),
    group_mode: str = typer.Option(None, help="step or episode"),
    branch: str = typer.Option(None, help="Step groups continue from: sampled, best or random"),
    temperature: float = typer.Option(None, help="Sampling temperature of rollouts"),
    max_steps: int = typer.Option(None, help="Steps per episode"),
    eval_every: int = typer.Option(None, help="Updates between held-out evaluations (0 = never)"),
    eval_episodes: int = typer.Option(None, help="Greedy episodes per evaluation"),
    seed: int = typer.Option(0),
    lora_target: str = typer.Option(
        None,
        "--lora-target",
        help="Where the LoRA adapter reaches: language, language+merger or language+tower "
        "(the vision side needs the policy server started with HALO_POLICY_TOWER_LORA=true)",
    ),
    full_weights: list[str] = typer.Option(
        None,
        "--full-weights",
        help="Base-model modules trained in full beside the LoRA adapter (repeatable or comma-separated): "
        "vision_merger, vision_last_blocks, vision, all, or HF module names such as model.visual.blocks.26",
    ),
    full_weights_lr: float = typer.Option(None, "--full-weights-lr", help="Learning rate of those modules"),
    name: str = typer.Option("", help="Run name prefix"),
    report_to: list[str] = typer.Option(
        None, "--report-to", help="Experiment trackers (repeatable): none, tensorboard, wandb, trackio, mlflow"
    ),
    searches_per_iteration: int = typer.Option(None, help="mcts: searches per DPO iteration"),
    simulations: int = typer.Option(None, help="mcts: simulations per search"),
    ucb_c: float = typer.Option(None, help="mcts: UCB1 exploration constant"),
    max_children: int = typer.Option(None, help="mcts: distinct candidate actions per expanded node"),
    max_depth: int = typer.Option(None, help="mcts: actions from the root after which a path is cut off"),
    alpha: float = typer.Option(None, help="mcts: weight of Q_mcts in the composite Q"),
    theta: float = typer.Option(None, help="mcts: least composite-Q gap that makes a preference pair"),
    beta: float = typer.Option(None, help="mcts: DPO inverse temperature"),
    critic: str = typer.Option(None, help="mcts: self, openai or progress"),
    detach: bool = typer.Option(False, help="Submit and return without following progress"),
    no_stack: bool = typer.Option(False, help="Do not start the local stack when the trainer is unreachable"),
    json_out: bool = typer.Option(
        False,
        "--json",
        help="Print the run's final status (GET /runs/{id}) as one JSON line instead of the summary; "
        "everything else goes to stderr",
    ),
) -> None:
    """Submit a training run to the trainer (starting the local stack if needed) and follow it."""
    # With --json, stdout carries the JSON alone so that a script can parse it.
    say = err if json_out else console
    settings = TrainerSettings()
    fields = {
        "domain": domain,
        "tasks": task or None,
        "algorithm": algorithm,
        "episodes": episodes,
        "num_generations": num_generations,
        "learning_rate": lr,
        "loss_type": loss_type,
        "group_mode": group_mode,
        "branch": branch,
        "temperature": temperature,
        "max_steps": max_steps,
        "eval_every": eval_every,
        "eval_episodes": eval_episodes,
        "seed": seed,
        "lora_target": lora_target,
        "full_weights": [n.strip() for entry in full_weights or [] for n in entry.split(",") if n.strip()] or None,
        "full_weights_lr": full_weights_lr,
        "name": name,
        "report_to": report_to or None,
        "searches_per_iteration": searches_per_iteration,
        "simulations": simulations,
        "ucb_c": ucb_c,
        "max_children": max_children,
        "max_depth": max_depth,
        "alpha": alpha,
        "theta": theta,
        "beta": beta,
        "critic": critic,
    }
    try:
        spec = RunSpec.model_validate({k: v for k, v in fields.items() if v is not None})
    except ValueError as exc:
        _fail(f"invalid run: {exc}", 2)
    with _client(settings) as client:
        url = str(client.base_url).rstrip("/")
        if not local_stack.is_ready(url):
            if no_stack:
                if not local_stack.is_alive(url, "trainer"):
                    _fail(f"trainer not reachable at {url}")
                say.print(f"trainer at {url} is alive but not ready; submitting anyway (--no-stack)")
            else:
                # `up` starts only what is not running (a busy trainer is alive: it is not started twice).
                say.print("trainer not ready: checking the local stack")
                try:
                    local_stack.up(say=say.print)
                except RuntimeError as exc:
                    _fail(str(exc))
        run = RunStatus.model_validate(_api(client.post, "/runs", json=spec.model_dump(mode="json")).json())
        say.print(f"run [bold]{run.run_id}[/bold] submitted; folder {run.run_dir}")
        say.print(f"watch it at {viewer_link(url, run.run_id)} (curves, episodes; docs/viewer.md)")
        if run.task_set_note:
            say.print(f"[yellow]tasks:[/yellow] {escape(run.task_set_note)}", highlight=False)
        if detach:
            if json_out:
                typer.echo(run.model_dump_json())
            return
        final = _follow(client, run, say)
        if json_out:
            typer.echo(final.model_dump_json())
        else:
            console.print(
                run_summary(final, _evaluations(client, final.run_id), viewer_link(url, final.run_id)),
                markup=False,
                highlight=False,
            )
    if final.state is not RunState.FINISHED:
        _fail(f"run ended {final.state.value}: {final.error or ''}")


def _evaluations(client: httpx.Client, run_id: str) -> list[dict]:
    """The run's eval.jsonl lines as the viewer serves them; [] (the summary says none) when it cannot."""
    try:
        response = client.get(f"/ui/api/runs/{run_id}/metrics")
        response.raise_for_status()
        lines = response.json().get("eval", [])
    except (httpx.HTTPError, ValueError, AttributeError) as exc:
        err.print(f"[yellow]warning:[/yellow] the run's evaluations could not be read ({escape(str(exc))})")
        return []
    return [line for line in lines if isinstance(line, dict)] if isinstance(lines, list) else []


def _follow(client: httpx.Client, run: RunStatus, out: Console) -> RunStatus:
    """Poll the run and draw a progress bar until it ends; Ctrl-C detaches (the run goes on)."""
    columns = [
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[info]}"),
    ]
    try:
        with Progress(*columns, console=out) as progress:
            bar = progress.add_task(f"{run.run_id}", total=run.episodes_total or None, info="")
            while True:
                run = RunStatus.model_validate(_api(client.get, f"/runs/{run.run_id}").json())
                m = run.latest_metrics
                if run.spec.algorithm.value == "mcts":
                    scores = (
                        f"pairs {m.get('dpo/pairs', float('nan')):.0f} "
                        f"success found {m.get('mcts/success_found', float('nan')):.2f}"
                    )
                else:
                    scores = (
                        f"reward {m.get('rollout/mean_reward', float('nan')):.3f} "
                        f"success {m.get('rollout/success_rate', float('nan')):.2f}"
                    )
                info = f"v{run.policy_version} upd {run.updates} {scores}"
                progress.update(bar, completed=run.episodes_done, total=run.episodes_total or None, info=info)
                if run.state in TERMINAL:
                    break
                time.sleep(2)
    except KeyboardInterrupt:
        out.print(f"detached; the run goes on. `halo runs status {run.run_id}` or `halo runs stop {run.run_id}`")
        raise typer.Exit(0) from None
    return run


@runs_app.command("list")
def runs_list() -> None:
    """List runs."""
    with _client(TrainerSettings()) as client:
        rows = _api(client.get, "/runs").json()
    table = Table("run", "state", "episodes", "updates", "version")
    for r in rows:
        table.add_row(
            r["run_id"],
            r["state"],
            f"{r['episodes_done']}/{r['episodes_total']}",
            str(r["updates"]),
            str(r["policy_version"]),
        )
    console.print(table)


@runs_app.command("status")
def runs_status(run_id: str) -> None:
    """A run's status and latest metrics as JSON."""
    with _client(TrainerSettings()) as client:
        console.print_json(_api(client.get, f"/runs/{run_id}").text)


@runs_app.command("stop")
def runs_stop(run_id: str) -> None:
    """Ask a run to stop after the current update (it checkpoints first)."""
    with _client(TrainerSettings()) as client:
        console.print_json(_api(client.post, f"/runs/{run_id}/stop").text)


# -- tasks and models ------------------------------------------------------------------------
# The CLI imports no service package: each of these runs the owning service's own entry point.
def _service_module(*argv: str) -> str:
    """``python -m <argv>`` in this environment; its standard output (its errors go to the terminal)."""
    proc = subprocess.run([sys.executable, "-m", *argv], stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        _fail(f"`python -m {' '.join(argv)}` exited with {proc.returncode}")
    return proc.stdout


@tasks_app.command("snapshot")
def tasks_snapshot(out: str = typer.Option("configs/real_v2_task_registry.json", help="Output JSON file")) -> None:
    """Write agisdk's REAL v2 task registry to a JSON file (reproducible task lists)."""
    count = _service_module("halo_env.registry", "--out", out).strip()
    console.print(f"wrote {count} tasks to {out}")


@tasks_app.command("list")
def tasks_list(domain: str = typer.Option(None, help="Only this site")) -> None:
    """List the local clones' tasks."""
    tasks = TypeAdapter(list[Task]).validate_json(
        _service_module("halo_sites.tasks", *(["--site", domain] if domain else []))
    )
    if not tasks:
        _fail(f"no local tasks for site {domain!r}" if domain else "no local tasks")
    table = Table("task", "difficulty", "type", "goal")
    for t in tasks:
        table.add_row(t.id, str(t.difficulty), t.challengeType, t.goal[:90])
    console.print(table)


@model_app.command("build-tiny")
def model_build_tiny(
    seed: int = typer.Option(None, help="Weights seed (default: HALO_POLICY_TINY_SEED)"),
    out: str = typer.Option(None, help="Output folder (default: cached by hash)"),
) -> None:
    """Build (or find cached) the tiny random-weight Qwen3-VL that vLLM serves on the CPU."""
    args = [*(["--seed", str(seed)] if seed is not None else []), *(["--out", out] if out else [])]
    path = _service_module("halo_policy", "build-tiny", *args).strip().splitlines()[-1]
    console.print(f"tiny Qwen3-VL at {path}")


# -- modes, evaluation, smoke test -------------------------------------------------------------
@modes_app.command("list")
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


@modes_app.command("promote")
def modes_promote(
    mode: str = typer.Argument(..., help="qwen3vl_grpo or qwen3vl_mcts"),
    run: str = typer.Option(None, "--run", help="Run id whose adapter to promote (its folder under the data dir)"),
    version: int = typer.Option(None, "--version", help="Adapter version v<k> of the run (default: its newest)"),
    adapter: str = typer.Option(None, "--adapter", help="Or any PEFT adapter folder"),
) -> None:
    """Copy a run's adapter version to the mode's folder (checkpoints/<mode>_lora/)."""
    settings = EvalSettings()
    if (run is None) == (adapter is None):
        _fail("name either --run (with an optional --version) or --adapter", 2)
    try:
        if run:
            target = agent_modes.promote_run(mode, run, version, settings)
        else:
            target = agent_modes.promote(mode, Path(adapter), settings)
        _, served = agent_modes.promoted_adapter(agent_modes.get_mode(mode), settings)
    except agent_modes.ModeError as exc:
        _fail(str(exc), 2)
    source = (agent_modes.promotion_record(agent_modes.get_mode(mode), settings) or {}).get("source")
    console.print(f"promoted {source} to {target}; evaluations load it into vLLM as {served}")


@app.command(
    "eval",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []},
)
def evaluate(ctx: typer.Context) -> None:
    """Evaluate agent modes side by side (`halo eval --help` lists the options; docs/evaluation.md).

    Runs the trainer's evaluation entry point, which plays greedy episodes through the stack's
    services and writes results, a table and a chart under the data folder.
    """
    raise typer.Exit(subprocess.run([sys.executable, "-m", "halo_trainer.evaluation", *ctx.args]).returncode)


@app.command(
    "view",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []},
)
def view(ctx: typer.Context) -> None:
    """Serve the run viewer on a run folder, e.g. a finished run copied from a GPU box (`halo view --help`).

    Runs the trainer's viewer entry point; it reads the folder and the screenshot store only.
    """
    raise typer.Exit(subprocess.run([sys.executable, "-m", "halo_trainer.viewer", *ctx.args]).returncode)


@app.command(
    "memory-plan",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []},
)
def memory_plan(ctx: typer.Context) -> None:
    """Will the learner fit beside vLLM? The gpu target's memory plan for a card (`halo memory-plan --card
    a100-40gb`, `--two-cards`, `--help`), as the trainer checks it when a run starts; exit 1 when it does not fit.
    """
    raise typer.Exit(subprocess.run([sys.executable, "-m", "halo_trainer.memory_plan", *ctx.args]).returncode)


@app.command()
def smoke(max_steps: int = typer.Option(2, help="Steps of each backend's episode")) -> None:
    """Every service healthy, one short episode per reachable backend, the target, what is missing."""
    healthy = _print_status(local_stack.status())
    if not healthy:
        err.print("[red]missing[/red]  services: some are not alive or ready (`halo stack up` starts them)")
        raise typer.Exit(1)
    code = subprocess.run([sys.executable, "-m", "halo_trainer.smoke", "--max-steps", str(max_steps)]).returncode
    if code:
        err.print("[red]smoke test failed[/red]: see the `missing` lines")
    raise typer.Exit(code)


def main() -> None:  # pragma: no cover - console entry point
    sys.exit(app())


if __name__ == "__main__":  # pragma: no cover
    main()
