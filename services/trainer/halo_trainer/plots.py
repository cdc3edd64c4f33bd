"""Learning curves of a run folder as PNG: held-out success with its 95% interval, and train reward."""

from __future__ import annotations

import json
from pathlib import Path


def plot_run(run_dir: Path, out: Path | None = None, chance: float | None = None) -> Path | None:
    """Write ``curve.png`` from ``eval.jsonl`` and ``metrics.jsonl``; None when there is nothing to plot."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    run_dir = Path(run_dir)
    evals = _lines(run_dir / "eval.jsonl")
    train = _lines(run_dir / "metrics.jsonl")
    if not evals and not train:
        return None
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    if evals:
        x = [e["update"] for e in evals]
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
        ax1.set_xlabel("learner updates")
        ax1.set_ylabel("success rate")
        ax1.set_title(f"evaluation ({int(evals[-1]['eval/episodes'])} episodes per point)")
        ax1.legend(loc="lower right")
    if train:
        x = [m["update"] for m in train]
        ax2.plot(x, [m.get("rollout/mean_reward") for m in train], label="mean step reward")
        ax2.plot(x, [m.get("rollout/success_rate") for m in train], label="train episodes' success")
        if any("rollout/sample_success_rate" in m for m in train):
            sampled = [m.get("rollout/sample_success_rate", float("nan")) for m in train]
            ax2.plot(x, sampled, label="successful sampled actions")
        ax2.set_xlabel("learner updates")
        ax2.set_title("rollouts")
        ax2.legend()
    fig.suptitle(run_dir.name)
    fig.tight_layout()
    target = out or run_dir / "curve.png"
    fig.savefig(target, dpi=100)
    plt.close(fig)
    return target


def _lines(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
