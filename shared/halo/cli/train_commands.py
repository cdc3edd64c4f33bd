"""`halo train` and `halo runs list|status|stop`: training runs on the trainer's HTTP API, submitted
(starting the local stack when the trainer is not ready), followed with a progress bar and summed up."""

from __future__ import annotations

import queue
import textwrap
import threading
import time
from typing import Any

import httpx
import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn

from halo.cli import stack as local_stack
from halo.cli import stack_probes, train_help
from halo.cli.knob_options import spec_values, with_knob_options
from halo.cli.output import console, err, fail
from halo.cli.progress import PlainLog, Plan, RunProgress, duration, phase_line, plain_line, scores
from halo.cli.summary import run_summary, viewer_link
from halo.local_token import read_token
from halo.schemas import ALGORITHM_TITLES, RunEvent, RunPhase, RunSpec, RunState, RunStatus
from halo.settings.trainer import TrainerSettings

COMMON = train_help.COMMON
TERMINAL = {RunState.FINISHED, RunState.STOPPED, RunState.FAILED}
NOW_MIN = 16  # `halo runs list`'s "now" column wraps, but not to one word a line
# From the algorithm table (halo.schemas.choices): a new algorithm shows here without an edit.
ALGORITHM_HELP = " or ".join(f"{a.value} ({title})" for a, title in ALGORITHM_TITLES.items()) + "; docs/trainer.md"


class StackToken(httpx.Auth):
    """The run API's token, read at each request: HALO_TRAINER_API_TOKEN, else the local stack's file
    (halo.local_token). Not once when the client is made: on a fresh data folder `halo train` makes
    its client, then starts the stack, which writes the token the trainer then requires."""

    def __init__(self, settings: TrainerSettings) -> None:
        self.settings = settings

    def auth_flow(self, request: httpx.Request):
        if token := read_token(self.settings):
            request.headers["Authorization"] = f"Bearer {token}"
        yield request


def _client(settings: TrainerSettings) -> httpx.Client:
    url = f"http://{'127.0.0.1' if settings.host in ('0.0.0.0', '') else settings.host}:{settings.port}"
    return httpx.Client(base_url=url, auth=StackToken(settings), timeout=30)


def _api(call, *args, **kwargs) -> httpx.Response:
    try:
        response = call(*args, **kwargs)
    except httpx.HTTPError as exc:
        fail(f"trainer API unreachable: {exc}")
    if response.status_code >= 400:
        try:
            body = response.json()
            message = body.get("error", response.text)
        except ValueError:
            message = response.text
        fail(f"trainer API answered {response.status_code}: {message}")
    return response


@with_knob_options(panel=train_help.panel)
def train(
    domain: str = typer.Option(..., "--domain", "-d", help="Site", rich_help_panel=COMMON),
    task: list[str] = typer.Option(
        None,
        "--task",
        "-t",
        help="Task ids (repeatable; default: the domain's tasks whose site answers from here)",
        rich_help_panel=COMMON,
    ),
    algorithm: str = typer.Option("grpo", help=ALGORITHM_HELP, rich_help_panel=COMMON),
    name: str = typer.Option("", help="Run name prefix", rich_help_panel=COMMON),
    detach: bool = typer.Option(
        False, "--detach", help="Submit and return without following progress", rich_help_panel=COMMON
    ),
    no_stack: bool = typer.Option(
        False,
        "--no-stack",
        help="Do not start the local stack when the trainer is unreachable",
        rich_help_panel=COMMON,
    ),
    json_out: bool = typer.Option(
        False,
        "--json",
        help="Print the run's final status (GET /runs/{id}) as one JSON line instead of the summary; "
        "everything else goes to stderr",
        rich_help_panel=COMMON,
    ),
    help_all: bool = train_help.HELP_ALL,
    **knob_values: Any,
) -> None:
    """Submit a training run to the trainer (starting the local stack if needed) and follow it.

    Every run setting is an option (docs/knobs.md); an unset one takes its default below."""
    # With --json, stdout carries the JSON alone so that a script can parse it.
    say = err if json_out else console
    settings = TrainerSettings()
    fields = {"domain": domain, "tasks": task or None, "algorithm": algorithm, "name": name}
    fields |= spec_values(knob_values)
    try:
        spec = RunSpec.model_validate({k: v for k, v in fields.items() if v is not None})
    except ValueError as exc:
        fail(f"invalid run: {exc}", 2)
    with _client(settings) as client:
        url = str(client.base_url).rstrip("/")
        if not stack_probes.is_ready(url):
            if no_stack:
                if not stack_probes.is_alive(url, "trainer"):
                    fail(f"trainer not reachable at {url}")
                say.print(f"trainer at {url} is alive but not ready; submitting anyway (--no-stack)")
            else:
                # `up` starts only what is not running (a busy trainer is alive: it is not started twice).
                say.print("trainer not ready: checking the local stack")
                try:
                    local_stack.up(say=say.print)
                except RuntimeError as exc:
                    fail(str(exc))
        run = RunStatus.model_validate(
            _api(client.post, "/runs", json=spec.model_dump(mode="json", exclude_unset=True)).json()
        )
        say.print(f"run [bold]{run.run_id}[/bold] submitted; folder {run.run_dir}")
        say.print(f"watch it at {viewer_link(url, run.run_id)} (curves, episodes; docs/viewer.md)")
        if read_token(settings):  # the viewer's stop and promote ask for it once per tab, never in a URL
            say.print("its stop and promote buttons ask for the run API's token once: `halo stack token` prints it")
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
        fail(f"run ended {final.state.value}: {final.error or ''}")


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


def _plan(client: httpx.Client, run_id: str) -> Plan:
    """The run's evaluation schedule from its resolved config (the viewer's route); unknown (no
    evaluations counted in the ETA) when it cannot be read."""
    try:
        response = client.get(f"/ui/api/runs/{run_id}")
        if response.status_code != 200:
            return Plan()
        config = response.json().get("config", {})
        run = config.get("run", config)  # config.json holds {"run": <the resolved run config>, "trainer": ...}
        return Plan(eval_every=int(run.get("eval_every") or 0), eval_episodes=int(run.get("eval_episodes") or 0))
    except (httpx.HTTPError, ValueError, TypeError, AttributeError):
        return Plan()


def _follow(client: httpx.Client, run: RunStatus, out: Console) -> RunStatus:
    """Poll the run and draw it until it ends; Ctrl-C detaches (the run goes on).

    Two lines: the run's episodes with its ETA and latest scores, and under it the phase the run is
    in with its own count and ETA ("evaluating v0  7/32 episodes, ETA 1m 10s"); a phase that stalls
    or waits (vLLM not ready, a job reclaimed) gets a line of its own above them (``halo.cli.progress``).
    Where the output is no terminal, plain lines instead (``_log``).
    """
    watch = RunProgress(_plan(client, run.run_id))
    try:
        return _draw(client, run, watch, out) if out.is_terminal else _log(client, run, watch, out)
    except KeyboardInterrupt:
        out.print(f"detached; the run goes on. `halo runs status {run.run_id}` or `halo runs stop {run.run_id}`")
        raise typer.Exit(0) from None


def _poll(client: httpx.Client, run_id: str) -> RunStatus:
    return RunStatus.model_validate(_api(client.get, f"/runs/{run_id}").json())


def _log(client: httpx.Client, run: RunStatus, watch: RunProgress, out: Console) -> RunStatus:
    """No terminal (a pipe, a file): plain lines a log can read, at each phase change and every 15 s.

    The phases come from the run's event stream (``/runs/{id}/events``), not from polls: a phase
    shorter than a poll (a one-episode evaluation on a warm stack takes under a second) still gets
    its line. Where the stream breaks (a trainer restarting), the status is polled instead."""
    log = PlainLog()
    events: queue.Queue[RunEvent | None] = queue.Queue()
    threading.Thread(target=_stream_events, args=(client, run.run_id, events), daemon=True).start()
    streaming = True
    while True:
        event = None
        if streaming:
            try:
                event = events.get(timeout=max(0.05, log.left(time.monotonic())))
            except queue.Empty:
                pass  # nothing new in a while: the periodic line below
            else:
                streaming = event is not None
        if event is None or event.kind == "done":
            run = _poll(client, run.run_id)
        elif event.kind == "status":
            run = RunStatus.model_validate(event.data)
        elif event.kind == "phase":
            run = run.model_copy(update={"phase": RunPhase.model_validate(event.data) if event.data else None})
        now = time.monotonic()
        for line in watch.observe(run, now):
            out.print(line, markup=False, highlight=False, soft_wrap=True)
        if log.due((run.state, watch.phase_text()[0]), now):
            out.print(plain_line(run, watch), markup=False, highlight=False, soft_wrap=True)
        if run.state in TERMINAL:
            return run
        if not streaming:
            time.sleep(min(2.0, log.left(time.monotonic())))


def _stream_events(client: httpx.Client, run_id: str, into: queue.Queue[RunEvent | None]) -> None:
    """Each event of the run's server-sent stream onto ``into``; ``None`` once it ends or breaks."""
    try:
        with client.stream("GET", f"/runs/{run_id}/events", timeout=httpx.Timeout(30, read=None)) as response:
            if response.status_code == 200:
                for line in response.iter_lines():
                    if line.startswith("data: "):
                        into.put(RunEvent.model_validate_json(line[len("data: ") :]))
    except (httpx.HTTPError, ValueError):
        pass  # the caller polls from here on
    into.put(None)


def _draw(client: httpx.Client, run: RunStatus, watch: RunProgress, out: Console) -> RunStatus:
    """A terminal: the two bars of ``_follow``, redrawn in place."""
    columns = [
        TextColumn("{task.description}"),
        BarColumn(bar_width=20),
        TextColumn("{task.fields[count]}"),
        TextColumn("{task.fields[info]}", style="dim"),
    ]
    with Progress(*columns, console=out) as progress:
        bar = progress.add_task(run.run_id, total=run.episodes_total or None, count="", info="")
        phase_bar = progress.add_task("  starting", total=None, count="", info="")
        while True:
            run = _poll(client, run.run_id)
            for line in watch.observe(run, time.monotonic()):
                progress.console.print(f"[yellow]{escape(line)}[/yellow]", highlight=False)
            eta = watch.run_eta()
            count = f"{run.episodes_done}/{run.episodes_total} episodes, ETA {duration(eta)}"
            progress.update(
                bar,
                completed=run.episodes_done,
                total=run.episodes_total or None,
                count=count,
                info=f"v{run.policy_version} upd {run.updates} {scores(run)}",
            )
            label, detail = watch.phase_text()
            phase = run.phase if run.state not in TERMINAL else None
            progress.update(
                phase_bar,
                description=f"  {escape(label) or run.state.value}",
                completed=phase.done if phase and phase.total else 0,
                total=phase.total if phase and phase.total else None,
                count=escape(detail),
                info=escape(phase.note or "") if phase else "",
                visible=phase is not None,
            )
            if run.state in TERMINAL:
                return run
            time.sleep(2)


def runs_list() -> None:
    """List runs."""
    with _client(TrainerSettings()) as client:
        rows = _api(client.get, "/runs").json()
    print_runs(rows)


def print_runs(rows: list[dict]) -> None:
    """One row a run, its id whole whatever the terminal's width (it is what `halo runs status` takes):
    only the last column, what a running run is doing, wraps (a table would cut the id to "…")."""
    headers = ["run", "state", "episodes", "updates", "version", "now"]
    cells = []
    for r in rows:
        phase = RunPhase.model_validate(r["phase"]) if r.get("phase") and r["state"] == "running" else None
        cells.append(
            [
                r["run_id"],
                r["state"],
                f"{r['episodes_done']}/{r['episodes_total']}",
                str(r["updates"]),
                str(r["policy_version"]),
                phase_line(phase) if phase else "",
            ]
        )
    widths = [max(len(row[i]) for row in [headers, *cells]) for i in range(len(headers) - 1)]
    indent = sum(widths) + 2 * len(widths)
    room = max(NOW_MIN, console.width - indent)
    for row in [headers, *cells]:
        fixed = "".join(f"{cell:<{w}}  " for cell, w in zip(row, widths, strict=False))
        now = textwrap.wrap(row[-1], room) or [""]
        lines = [fixed + now[0], *(" " * indent + more for more in now[1:])]
        for line in lines:
            console.print(line.rstrip(), markup=False, highlight=False)


def runs_status(run_id: str) -> None:
    """A run's status and latest metrics as JSON."""
    with _client(TrainerSettings()) as client:
        console.print_json(_api(client.get, f"/runs/{run_id}").text)


def runs_stop(run_id: str) -> None:
    """Ask a run to stop after the current update (it checkpoints first)."""
    with _client(TrainerSettings()) as client:
        # A JSON content type even without a body: the run API refuses mutations without one (guard).
        console.print_json(_api(client.post, f"/runs/{run_id}/stop", json={}).text)
