"""Does GRPO learn where to click? The trainer's own GRPO loop on a Playground click task, read update by update.

The probe trains nothing itself: it runs one fresh run of the trainer's ``GrpoLoop`` with the real
``Learner`` and rollout workers in this process (``bench/inprocess_loop.py``, as ``bench/bench_loop.py``
does), against the env, reward and policy services, and reads what the loop writes in the run folder
(``eval.jsonl``, ``metrics.jsonl``, ``episodes.jsonl``). The run is the trainer's profile for its
target (``tiny`` on the CPU: configs/rl_config.yaml), set for the question by RunSpec / RunConfig
values only:

- step groups of ``--num-generations`` actions at the task's first page, ``--groups`` jobs per update
  (``jobs_per_update``), ``max_steps: 1``: the first action is the answer (a click locks the page);
  rewards are the reward service's (shaping, rings, the ``submitted`` flag, success);
- a greedy evaluation after every update (``eval_every: 1``) on ``--eval-episodes`` held-out seeds
  (default: one per slot; a one-button task puts its button on slot seed % slots, so these are its
  layouts; a multi-button task's held-out seeds are the loop's, 1,000,000 on, not one per slot);
- training job i plays seed i (the loop's sequence): a one-button task's groups cycle through its
  layouts, (k * groups + j) mod slots; a multi-button task's each see a new shuffle of the buttons.

    .venv/bin/halo stack up -s sites -s env -s reward -s policy
    .venv/bin/python experiments/learning_probe.py --task local.playground-2 --updates 100 --out var/probe/moving.jsonl

``--base-port N`` starts a private stack instead (sites, env, reward, vLLM on N..N+3, its own
redis-server on ``--redis-port``, data in var/probe-stack) and stops it at the end.

It prints (and appends to --out) one JSON line per policy version k (0 = the base model): the greedy
action per held-out seed and how many it solves (the evaluation after k updates), the sampled hit rate
and mean reward of the groups version k sampled (the metrics of update k+1: ``rollout/sample_success_rate``,
``rollout/mean_reward``) with their loss and gradient norm, where that update's signal came from (hits
per group, groups without signal, the share of |advantage| in groups that mix hits and misses, from the
episode records), and ``image_tv``: how far the screenshot moves the learner's next-token distributions
(``click_layouts.image_sensitivity`` on a click at the screen's centre, over the first evaluation's
screenshots). The last line has no sampled groups: the run ends with its evaluation.

``--full-weights vision`` (or any of the run setting's presets and module names) trains those
base-model modules too; the loop pushes them into vLLM with each adapter and gives vLLM its base
weights back at the end. ``--run DIR`` reads a training run instead of training: ``image_tv`` of the
base model and of each checkpoint the run kept (adapter and full weights), over the screenshots of
the run's first evaluation (from the screenshot store), no service needed:

    .venv/bin/python experiments/learning_probe.py --run var/runs/<run_id> --out var/probe/run.jsonl

``--plot OUT.png FILE.jsonl ...`` draws probe outputs side by side (image_tv on a log scale, greedy
layouts solved and sampled hit rate per update), one line per file, labelled by file name.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))  # inprocess_loop: the trainer's loop in this process, a private stack
sys.path.insert(0, str(Path(__file__).resolve().parent))  # click_layouts: the task check and image_tv

from click_layouts import click_task, fixed_completion, image_sensitivity  # noqa: E402
from inprocess_loop import private_stack, run_grpo  # noqa: E402

from halo.schemas import GroupMode, RunSpec  # noqa: E402
from halo.settings.trainer import TrainerSettings  # noqa: E402


def run_config(args: argparse.Namespace, task_id: str, run_id: str, settings: TrainerSettings):
    """The probe's run: the trainer's own resolution (rl_config.yaml, the target's profile, the spec),
    then the few values a RunSpec does not carry."""
    from halo_trainer.config import load_defaults, profile_for, resolve

    full = [n.strip() for n in args.full_weights.split(",") if n.strip()]
    spec = RunSpec(
        domain="playground",
        tasks=[task_id],
        episodes=args.updates * args.groups,  # a step-group job is one episode
        num_generations=args.num_generations,
        jobs_per_update=args.groups,
        prefetch_updates=0,  # version k's groups are exactly update k + 1's
        learning_rate=args.lr,
        temperature=args.temperature,
        group_mode=GroupMode.STEP,
        max_steps=1,
        eval_every=1,
        eval_episodes=args.eval_episodes,
        full_weights=full or None,
        full_weights_lr=args.full_weights_lr,
        name="probe",
    )
    cfg = resolve(spec, run_id, [task_id], load_defaults(settings.rl_config), profile_for(settings.target))
    extra = {"record_episodes_every": 1}  # every group's record: where each update's signal came from
    extra |= {k: v for k, v in (("lora_r", args.lora_r), ("lora_alpha", args.lora_alpha)) if v is not None}
    return cfg.model_copy(update=extra)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def probe_line(k: int, *, evals: list[dict], metrics: list[dict], episodes: list[dict], seeds: dict[str, int]) -> dict:
    """What the run folder says of policy version k: its evaluation (after k updates), the groups it
    sampled (episode records of version k) and the update that learned from them (metrics k + 1).
    ``seeds`` maps job ids to the seeds the loop gave them."""
    ev = next(e for e in evals if e["update"] == k)
    checked = sorted(
        (r for r in episodes if r["purpose"] == "eval" and r["update"] == k), key=lambda r: seeds[r["job_id"]]
    )
    greedy = [r["steps"][0]["candidates"][0]["action_text"] if r["steps"] else "<no step>" for r in checked]
    line = {
        "update": k,
        "greedy": greedy,
        "greedy_layouts_solved": sum(bool(r["success"]) for r in checked),
        "layouts": len(checked),
        "checked_seeds": [seeds[r["job_id"]] for r in checked],
        "solved_seeds": [seeds[r["job_id"]] for r in checked if r["success"]],
        "eval_success_rate": ev["eval/success_rate"],
        "eval_ci": [round(ev["eval/ci_low"], 3), round(ev["eval/ci_high"], 3)],
    }
    sampled = sorted(
        (r for r in episodes if r["purpose"] == "train" and r["policy_version"] == k), key=lambda r: seeds[r["job_id"]]
    )
    groups = [step["candidates"] for r in sampled for step in r["steps"]]
    if groups:
        candidates = [c for g in groups for c in g]
        hits = [sum(c["task_success"] is True for c in g) for g in groups]
        mass = [sum(abs(c["advantage"]) for c in g) for g in groups]
        mixed = sum(m for m, h, g in zip(mass, hits, groups, strict=True) if 0 < h < len(g))
        line |= {
            "train_seeds": [seeds[r["job_id"]] for r in sampled],
            # any button: a click on a wrong one submits too (the `submitted` flag every click task records)
            "sampled_button_rate": sum("submitted" in c["milestones"] for c in candidates) / len(candidates),
            # Where the update's learning signal comes from: a group whose rewards are all equal has
            # zero advantage (no gradient); only groups that mix hits and misses carry the hit signal.
            "group_hits": hits,
            "groups_without_signal": sum(m == 0 for m in mass),
            "hit_signal_share": round(mixed / sum(mass), 4) if sum(mass) else 0.0,
        }
    learned = next((m for m in metrics if m["update"] == k + 1), None)
    if learned is not None:  # the update that learned from those samples: the loop's own figures
        line |= {
            "sampled_hit_rate": learned["rollout/sample_success_rate"],
            "mean_reward": round(learned["rollout/mean_reward"], 3),
            "loss": learned.get("train/loss"),
            "grad_norm": learned.get("train/grad_norm"),
            "update_s": round(learned["train/update_s"], 2),
        }
    return line


def eval_screenshots(run_dir: Path, store) -> list[bytes]:
    """The first-step screenshots of the run's first evaluation round (one per held-out seed)."""
    from halo_trainer.observe.episode_log import read_episodes

    evals = [r for r in read_episodes(run_dir / "episodes.jsonl") if r["purpose"] == "eval" and r["steps"]]
    if not evals:
        raise SystemExit(f"{run_dir}: no evaluation episode recorded, so no screenshots to measure image_tv on")
    first = min(r["update"] for r in evals)
    return [
        store.get(r["steps"][0]["screenshot"]) for r in sorted(evals, key=lambda r: r["job_id"]) if r["update"] == first
    ]


def image_tv_of(learner, processor, shots: list[bytes], goal: str) -> float:
    """``image_sensitivity`` on a left_click at the screen's centre, under the replayed grammar."""
    from halo.prompts import tool_call_regex
    from halo_model.grammar import grammar_masks

    completion = fixed_completion(processor)
    allowed = grammar_masks(processor.tokenizer, tool_call_regex(), [completion], learner.vocab_size)
    tv = image_sensitivity(learner, processor, shots, goal, completion, allowed)
    return float(f"{tv:.4g}")  # 4 significant digits: it falls by decades


async def probe(args: argparse.Namespace, emit: Callable[[dict, dict], None]) -> Path:
    """One probe run in the trainer's loop; each version's line is emitted as soon as the run folder has it."""
    from halo.settings import resolved
    from halo_model.loading import load_model, load_processor
    from halo_trainer.api.runs import learner_model, new_run_id
    from halo_trainer.learner.learner import Learner
    from halo_trainer.observe.episode_log import read_episodes

    settings = TrainerSettings()
    task = click_task(args.task)
    run_id = new_run_id(RunSpec(domain="playground", name="probe"))
    cfg = run_config(args, task.id, run_id, settings)
    run_dir = settings.runs_dir / run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.json").write_text(
        json.dumps({"run": cfg.model_dump(mode="json"), "trainer": resolved(settings)}, indent=1)
    )
    print(f"run {run_id}: {run_dir}", file=sys.stderr, flush=True)
    model = learner_model(settings, build=True)  # the learner's model must be the one vLLM serves
    processor = load_processor(model, **settings.processor_kwargs())
    learner = Learner(
        load_model(model, device=settings.resolved_device(), dtype=settings.resolved_dtype()),
        cfg.learner_config(settings.resolved_learner()),
    )
    started, seeds, tv, shots = time.time(), {}, {}, []

    context = {"task": task.id, "run_id": run_id, "lr": cfg.learning_rate, "full_weights": list(cfg.full_weights)}

    def line(k: int) -> None:
        evals, metrics = read_jsonl(run_dir / "eval.jsonl"), read_jsonl(run_dir / "metrics.jsonl")
        episodes = read_episodes(run_dir / "episodes.jsonl")
        out = probe_line(k, evals=evals, metrics=metrics, episodes=episodes, seeds=seeds)
        emit({"update": k, "seconds": round(time.time() - started, 1), **out, "image_tv": tv.get(k)}, context)

    def instrument(loop) -> None:
        """Record each job's seed as the loop publishes it; measure image_tv once per version; emit
        version k's line once update k + 1 has closed (its samples learned from, its metrics written)."""
        parts = loop.parts
        publish, start, close_update = parts.pipeline.jobs.publish, parts.start, parts.close_update

        async def recorded_publish(job, **kw):
            seeds[job.job_id] = job.seed
            return await publish(job, **kw)

        async def measured(k: int) -> None:
            if not shots:
                shots.extend(eval_screenshots(run_dir, parts.store))
            tv[k] = await asyncio.to_thread(image_tv_of, loop.learner, processor, shots, task.goal)

        async def started_run(stop):
            await start(stop)
            await measured(0)

        async def closed_update(metrics):
            await close_update(metrics)
            await measured(loop.c.updates)
            line(loop.c.updates - 1)

        parts.pipeline.jobs.publish, parts.start, parts.close_update = recorded_publish, started_run, closed_update

    done = await run_grpo(cfg, learner, processor, settings, worker_prefix="probe-worker", instrument=instrument)
    line(done.loop.c.updates)  # the final version: its evaluation, no samples
    print(
        f"run {run_id} {done.outcome}: {done.loop.c.updates} updates in {done.wall_s:.0f} s; {run_dir}",
        file=sys.stderr,
        flush=True,
    )
    return run_dir


def run_image_tv(run_dir: Path, model: str | None) -> list[dict]:
    """``image_tv`` of the base model (update 0) and of every checkpoint ``run_dir`` kept."""
    from halo.screenshots import ScreenshotStore
    from halo_model.loading import load_model, load_processor
    from halo_sites.tasks import get_task
    from halo_trainer.api.runs import learner_model
    from halo_trainer.config import RunConfig
    from halo_trainer.learner.checkpoint import CheckpointManager
    from halo_trainer.learner.learner import Learner

    config = json.loads((run_dir / "config.json").read_text())
    cfg = RunConfig.model_validate(config.get("run", config))  # the run folder nests the RunConfig under "run"
    recorded = config.get("trainer", {}).get("data_dir")  # the data folder the run's screenshots went to
    settings = TrainerSettings()
    if recorded and TrainerSettings(data_dir=recorded).screenshots_dir.exists():
        settings = TrainerSettings(data_dir=recorded)
    model = model or learner_model(settings, build=False)
    processor = load_processor(model, **settings.processor_kwargs())
    shots = eval_screenshots(run_dir, ScreenshotStore(settings.screenshots_dir))
    goal = get_task(cfg.tasks[0]).goal
    lines = []
    for ckpt in [None, *CheckpointManager(run_dir / "checkpoints").complete()]:
        learner = Learner(load_model(model), cfg.learner_config(settings.resolved_learner()))
        if ckpt is not None:
            learner.weights.load_adapter(ckpt.adapter_dir)
            if learner.weights.full_weight_names():
                learner.weights.load_base_weights(ckpt.full_weights_dir)
        tv = image_tv_of(learner, processor, shots, goal)
        lines.append(
            {"run": run_dir.name, "task": cfg.tasks[0], "update": 0 if ckpt is None else ckpt.step, "image_tv": tv}
        )
        print(json.dumps(lines[-1]), flush=True)
    return lines


def plot(out: Path, files: list[Path]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (tv_ax, solved_ax, hit_ax) = plt.subplots(1, 3, figsize=(15, 4))
    for f in files:
        rows = read_jsonl(f)
        with_tv = [r for r in rows if r.get("image_tv") is not None]
        tv_ax.plot([r["update"] for r in with_tv], [max(r["image_tv"], 1e-6) for r in with_tv], label=f.stem)
        solved_ax.plot(
            [r["update"] for r in rows], [r["greedy_layouts_solved"] / r["layouts"] for r in rows], label=f.stem
        )
        sampled = [r for r in rows if "sampled_hit_rate" in r]  # the last version samples nothing
        xs = [r["update"] for r in sampled]
        (line,) = hit_ax.plot(xs, [r["sampled_hit_rate"] for r in sampled], label=f"{f.stem}: target")
        if all("sampled_button_rate" in r for r in sampled):  # any button, dashed
            hit_ax.plot(
                xs,
                [r["sampled_button_rate"] for r in sampled],
                ls="--",
                c=line.get_color(),
                label=f"{f.stem}: any button",
            )
    tv_ax.set(yscale="log", xlabel="update", ylabel="image_tv", title="how much the screenshot moves the policy")
    solved_ax.set(
        xlabel="update", ylabel="share of layouts solved", title="greedy answer, checked layouts", ylim=(-0.05, 1.05)
    )
    solved_ax.axhline(0.25, ls="--", c="grey", lw=1, label="chance (one slot of 4)")
    hit_ax.set(xlabel="update", ylabel="share of samples", title="sampled actions on the target (and on any button)")
    for ax in (tv_ax, solved_ax, hit_ax):
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    print(f"wrote {out}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", default="local.playground-1", help="a Playground click task")
    p.add_argument("--updates", type=int, default=25)
    p.add_argument("--lr", type=float, default=None, help="LoRA learning rate (default: the profile's, tiny 1e-2)")
    p.add_argument("--num-generations", type=int, default=8, help="group size N")
    p.add_argument("--groups", type=int, default=4, help="groups per update (jobs_per_update)")
    p.add_argument("--lora-r", type=int, default=None, help="default: the profile's (tiny: 8)")
    p.add_argument("--lora-alpha", type=float, default=None, help="default: the profile's (tiny: 16)")
    p.add_argument("--temperature", type=float, default=None, help="default: the profile's (tiny: 1.0)")
    p.add_argument(
        "--eval-episodes", type=int, default=None, help="held-out seeds checked after every update (default: slots)"
    )
    p.add_argument(
        "--full-weights",
        default="",
        help="base-model modules trained in full too, comma-separated (a run's full_weights: vision, ...)",
    )
    p.add_argument("--full-weights-lr", type=float, default=None, help="default: the profile's (tiny: 1e-3)")
    p.add_argument("--policy-url", default=None, help="vLLM base URL (default: the trainer settings')")
    p.add_argument("--model", default=None, help="model directory (default: the trainer's, the tiny model on cpu)")
    p.add_argument("--base-port", type=int, default=None, help="start a private stack on these ports (sites first)")
    p.add_argument("--redis-port", type=int, default=None, help="the private stack's redis-server (default: base + 79)")
    p.add_argument("--out", default=None, help="also append the JSON lines to this file")
    p.add_argument(
        "--run", default=None, help="a run folder: image_tv of its checkpoints instead of training (its own task)"
    )
    p.add_argument(
        "--plot", nargs="+", metavar="OUT.png FILE.jsonl", help="plot probe outputs (the first name: the PNG) and exit"
    )
    args = p.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("halo").setLevel(logging.INFO)  # the loop's own account (evaluations, versions) on stderr
    if args.plot:
        return plot(Path(args.plot[0]), [Path(f) for f in args.plot[1:]])
    out = Path(args.out) if args.out else None
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
    if args.run:
        lines = run_image_tv(Path(args.run), args.model)
        if out:
            with out.open("a") as fh:
                fh.writelines(json.dumps(line) + "\n" for line in lines)
        return
    if args.eval_episodes is None:
        args.eval_episodes = len(click_task(args.task).config["slots"])
    if args.policy_url:
        os.environ["HALO_TRAINER_POLICY_URL"] = args.policy_url
    if args.model:
        os.environ["HALO_TRAINER_MODEL"] = args.model

    def emit(line: dict, context: dict) -> None:
        print(json.dumps(line), flush=True)
        if out:
            with out.open("a") as fh:
                fh.write(json.dumps({**context, **line}) + "\n")

    if args.base_port is None:
        asyncio.run(probe(args, emit))
        return
    from halo_model.resolution import resolve_model

    model = args.model or resolve_model(None, "cpu", build=True)  # the tiny model of the default data folder
    redis_port = args.redis_port or args.base_port + 79
    with private_stack(args.base_port, redis_port, ROOT / "var" / "probe-stack", model):
        asyncio.run(probe(args, emit))


if __name__ == "__main__":
    main()
