"""Learning curves of a run folder as PNG: held-out success with its 95% interval, and train reward.

python -m halo_trainer.observe.plots var/runs/<run_id> [--chance 0.25] [--minutes] [--out curve.png]
python -m halo_trainer.observe.plots RUN_DIR RUN_DIR ... [--minutes] --out compare.png   # runs on one plot
python -m halo_trainer.observe.plots RUN_DIR ... --methods --out methods.png   # runs pooled per method
python -m halo_trainer.observe.plots RUN_DIR ... --methods --milestone boxes_checked --out m.png

With several run folders the figure is one plot of their held-out success curves (each with its
95% interval), labelled by run and algorithm, so methods can be compared against wall time.
``--methods`` pools the runs of each algorithm instead: at each evaluation round, the successes
and episodes of all its runs give one rate with its Wilson band, drawn against the env steps the
runs had taken (their mean) and against wall-clock minutes, each run's own curve faint beside it.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path


def plot_run(run_dir: Path, out: Path | None = None, chance: float | None = None, minutes: bool = False) -> Path | None:
    """Write ``curve.png`` from ``eval.jsonl`` and ``metrics.jsonl``; None when there is nothing to plot.

    ``minutes`` puts wall-clock minutes since the run was created on the x axes instead of learner
    updates (the learning targets are stated in wall time); ``chance`` draws the chance rate.
    """
    import matplotlib.pyplot as plt

    run_dir = Path(run_dir)
    fig = curve_figure(run_dir, chance, minutes)
    if fig is None:
        return None
    target = Path(out) if out else run_dir / "curve.png"
    fig.savefig(target, dpi=100)
    plt.close(fig)
    return target


def curve_figure(run_dir: Path, chance: float | None = None, minutes: bool = False):
    """The curve as a matplotlib figure (evaluation axes first, rollouts second); None without lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    run_dir = Path(run_dir)
    # Runs written before a stopped evaluation stopped being recorded may hold a row with no episode.
    evals = [e for e in _lines(run_dir / "eval.jsonl") if e.get("eval/episodes", 1) > 0]
    train = _lines(run_dir / "metrics.jsonl")
    if not evals and not train:
        return None
    start = _created_at(run_dir, evals + train)

    def xs(lines: list[dict]) -> list[float]:
        return [(line["time"] - start) / 60 if minutes else line["update"] for line in lines]

    xlabel = "wall-clock minutes since the run was created" if minutes else "learner updates"
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    if evals:
        x = xs(evals)
        y = [e["eval/success_rate"] for e in evals]
        ax1.plot(x, y, "o-", label="held-out success (greedy)")
        ax1.fill_between(
            x,
            [e["eval/ci_low"] for e in evals],
            [e["eval/ci_high"] for e in evals],
            alpha=0.2,
            label="95% Wilson interval",
        )
        if chance is not None:
            ax1.axhline(chance, color="grey", linestyle="--", label=f"chance {chance:.2f}")
        ax1.set_ylim(-0.02, 1.02)
        ax1.set_xlabel(xlabel)
        ax1.set_ylabel("success rate")
        ax1.set_title(f"evaluation ({int(evals[-1]['eval/episodes'])} episodes per point)")
        ax1.legend(loc="best")
    if train:
        x = xs(train)
        ax2.plot(x, [m.get("rollout/mean_reward") for m in train], label="mean step reward")
        ax2.plot(x, [m.get("rollout/success_rate") for m in train], label="train episodes' success")
        if any("rollout/sample_success_rate" in m for m in train):
            sampled = [m.get("rollout/sample_success_rate", float("nan")) for m in train]
            ax2.plot(x, sampled, label="successful sampled actions")
        ax2.set_xlabel(xlabel)
        ax2.set_title("rollouts")
        ax2.legend()
    fig.suptitle(run_dir.name)
    fig.tight_layout()
    return fig


def plot_runs(run_dirs: list[Path], out: Path, chance: float | None = None, minutes: bool = False) -> Path | None:
    """Write the held-out success curves of several runs on one plot to ``out``; None without evaluations."""
    return save_figure(compare_figure(run_dirs, chance, minutes), out)


def compare_figure(run_dirs: list[Path], chance: float | None = None, minutes: bool = False):
    """One axes: each run's greedy held-out success (with its Wilson band) against updates or
    wall-clock minutes since that run was created; None when no run has an evaluation."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    plotted = 0
    for run_dir in map(Path, run_dirs):
        evals = [e for e in _lines(run_dir / "eval.jsonl") if e.get("eval/episodes", 1) > 0]
        if not evals:
            continue
        start = _created_at(run_dir, evals)
        x = [(e["time"] - start) / 60 if minutes else e["update"] for e in evals]
        n = int(evals[-1]["eval/episodes"])
        label = f"{_algorithm(run_dir)}: {run_dir.name} ({n} greedy episodes per point)"
        (line,) = ax.plot(x, [e["eval/success_rate"] for e in evals], "o-", label=label)
        ax.fill_between(
            x, [e["eval/ci_low"] for e in evals], [e["eval/ci_high"] for e in evals], alpha=0.15, color=line.get_color()
        )
        plotted += 1
    if not plotted:
        plt.close(fig)
        return None
    if chance is not None:
        ax.axhline(chance, color="grey", linestyle="--", label=f"chance {chance:.2f}")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("wall-clock minutes since each run was created" if minutes else "learner updates")
    ax.set_ylabel("held-out success (greedy); band: 95% Wilson")
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    return fig


def env_steps_by_update(metrics: list[dict]) -> dict[int, float]:
    """Env steps a run had taken when update ``u`` ended: an MCTS iteration's searches count theirs
    (``mcts/env_steps``), a GRPO update one per transition (each candidate runs in its own fork);
    the same rule as the viewer's compare view."""
    total, steps = 0.0, {0: 0.0}
    for line in sorted(metrics, key=lambda m: m["update"]):
        total += line.get("mcts/env_steps", line.get("rollout/transitions", 0.0))
        steps[int(line["update"])] = total
    return steps


def paid_milestones(episode: dict) -> set[str]:
    """The milestones an episode record (an episodes.jsonl line) was paid, over all its steps."""
    return {m for step in episode["steps"] for cand in step["candidates"] for m in cand.get("milestones") or []}


def milestone_rounds(run_dir: Path, evals: list[dict], milestone: str) -> list[dict]:
    """``evals`` with each round's rate replaced by the share of its greedy episodes (episodes.jsonl's
    eval records of that update) in which ``milestone`` was paid: partial progress on a task whose
    success stays at zero."""
    counts: dict[int, list[int]] = {}
    for ep in _lines(Path(run_dir) / "episodes.jsonl"):
        if ep.get("purpose") != "eval":
            continue
        hits_n = counts.setdefault(int(ep["update"]), [0, 0])
        hits_n[0] += milestone in paid_milestones(ep)
        hits_n[1] += 1
    return [
        e | {"eval/success_rate": counts[u][0] / counts[u][1], "eval/episodes": float(counts[u][1])}
        for e in evals
        if (u := int(e["update"])) in counts
    ]


@dataclass(frozen=True)
class Round:
    """One evaluation round of one run: ``hits`` of ``n`` greedy episodes, at ``env_steps`` and
    ``minutes`` since the run was created."""

    update: int
    hits: float
    n: float
    env_steps: float
    minutes: float


def method_rounds(run_dirs: list[Path], milestone: str | None = None) -> dict[str, list[list[Round]]]:
    """Per algorithm, each run folder's evaluation rounds (runs without an evaluation left out). With
    ``milestone``, a round's hits are the greedy episodes that reached it instead of successes."""
    by_method: dict[str, list[list[Round]]] = {}
    for run_dir in map(Path, run_dirs):
        evals = [e for e in _lines(run_dir / "eval.jsonl") if e.get("eval/episodes", 1) > 0]
        if milestone:
            evals = milestone_rounds(run_dir, evals, milestone)
        if not evals:
            continue
        steps = env_steps_by_update(_lines(run_dir / "metrics.jsonl"))
        start = _created_at(run_dir, evals)
        by_method.setdefault(_algorithm(run_dir), []).append(
            [
                Round(
                    update=int(e["update"]),
                    hits=e["eval/success_rate"] * float(e["eval/episodes"]),
                    n=float(e["eval/episodes"]),
                    env_steps=steps.get(int(e["update"]), max(steps.values())),
                    minutes=(e["time"] - start) / 60,
                )
                for e in evals
            ]
        )
    return by_method


def methods_figure(run_dirs: list[Path], chance: float | None = None, milestone: str | None = None):
    """Two axes (env steps, wall-clock minutes): per algorithm, the pooled greedy held-out success of
    its runs at each evaluation round with its 95% Wilson band; each run faint. None without evaluations.
    With ``milestone``, the share of greedy episodes that reached it instead of success."""
    what = f"greedy episodes reaching {milestone}" if milestone else "held-out success (greedy)"
    return draw_methods(method_rounds(run_dirs, milestone), what, chance)


def draw_methods(by_method: dict[str, list[list[Round]]], what: str, chance: float | None = None):
    """The figure of ``methods_figure`` from rounds however they were read (run folders, or a record
    of runs whose folders are gone). Runs without a round are left out; None without rounds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from halo_trainer.observe.metrics import wilson_interval

    # A run without a round (stopped before its first evaluation) would keep every round unpooled.
    by_method = {method: [run for run in runs if run] for method, runs in by_method.items()}
    by_method = {method: runs for method, runs in by_method.items() if runs}
    if not by_method:
        return None
    fig, (by_steps, by_minutes) = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (method, runs) in enumerate(sorted(by_method.items())):
        colour = colours[i % len(colours)]
        rounds: dict[int, list[Round]] = {}
        for run in runs:
            for r in run:
                rounds.setdefault(r.update, []).append(r)
            ys = [r.hits / r.n for r in run]
            faint = {"color": colour, "alpha": 0.25, "linewidth": 1}
            by_steps.plot([r.env_steps for r in run], ys, "-", **faint)
            by_minutes.plot([r.minutes for r in run], ys, "-", **faint)
        # A round counts only where every run of the method reached it, so each point pools all of them.
        pooled = [r for _, r in sorted(rounds.items()) if len(r) == len(runs)]
        hits = [round(sum(v.hits for v in r)) for r in pooled]
        ns = [round(sum(v.n for v in r)) for r in pooled]
        rates = [h / n for h, n in zip(hits, ns, strict=True)]
        low, high = (
            zip(*(wilson_interval(h, n) for h, n in zip(hits, ns, strict=True)), strict=True) if pooled else ((), ())
        )
        label = f"{method}: {len(runs)} runs, {ns[0] if ns else 0} greedy episodes per point"
        for ax, key in ((by_steps, "env_steps"), (by_minutes, "minutes")):
            xs = [sum(getattr(v, key) for v in r) / len(r) for r in pooled]
            ax.plot(xs, rates, "o-", color=colour, label=label)
            ax.fill_between(xs, low, high, color=colour, alpha=0.15)
    by_steps.set_xlabel("env steps in training (mean over the runs)")
    by_minutes.set_xlabel("wall-clock minutes since each run was created (mean over the runs)")
    for ax in (by_steps, by_minutes):
        if chance is not None:
            ax.axhline(chance, color="grey", linestyle="--", label=f"chance {chance:.2f}")
        ax.set_ylim(-0.02, 1.02)
    by_steps.set_ylabel(f"{what}\nruns pooled; band: 95% Wilson")
    by_steps.legend(loc="best", fontsize=8)
    fig.tight_layout()
    return fig


def save_figure(fig, out: Path) -> Path | None:
    import matplotlib.pyplot as plt

    if fig is None:
        return None
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return Path(out)


def _algorithm(run_dir: Path) -> str:
    config = run_dir / "config.json"
    if config.exists():
        return str(json.loads(config.read_text()).get("run", {}).get("algorithm", "run"))
    return "run"


def _created_at(run_dir: Path, lines: list[dict]) -> float:
    status = run_dir / "status.json"
    if status.exists():
        return float(json.loads(status.read_text())["created_at"])
    return min(line["time"] for line in lines)


def _lines(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m halo_trainer.observe.plots", description=__doc__.splitlines()[0])
    parser.add_argument(
        "run_dir", type=Path, nargs="+", help="a run folder (var/runs/<run_id>); several: one comparison"
    )
    parser.add_argument(
        "--out", type=Path, help="PNG to write (default: <run_dir>/curve.png; needed with several runs)"
    )
    parser.add_argument("--chance", type=float, help="draw this chance rate on the evaluation plot")
    parser.add_argument("--minutes", action="store_true", help="wall-clock minutes on the x axes")
    parser.add_argument(
        "--methods", action="store_true", help="pool each algorithm's runs: against env steps and wall-clock minutes"
    )
    parser.add_argument("--milestone", help="with --methods: the share of greedy episodes reaching this milestone")
    args = parser.parse_args(argv)
    for run_dir in args.run_dir:
        if not run_dir.is_dir():
            parser.error(f"{run_dir} is not a run folder")
    if len(args.run_dir) == 1:
        [run_dir] = args.run_dir
        target = plot_run(run_dir, args.out, args.chance, args.minutes)
        sys.stdout.write(f"{target or f'nothing to plot in {run_dir} (no eval.jsonl or metrics.jsonl lines yet)'}\n")
        return
    if args.out is None:
        parser.error("several run folders make one comparison plot: give its file with --out")
    if args.methods:
        target = save_figure(methods_figure(args.run_dir, args.chance, args.milestone), args.out)
    else:
        target = plot_runs(args.run_dir, args.out, args.chance, args.minutes)
    sys.stdout.write(f"{target or 'nothing to plot: no run folder has eval.jsonl lines yet'}\n")


if __name__ == "__main__":
    main()
