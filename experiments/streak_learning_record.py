"""What the pre-registered learning comparison on the streak task measures, read from its run folders
(notebook/2026-11-28-preregistration-learning-pg13.md): per run, greedy held-out success and the greedy episodes
that reached each stage at every evaluation, with the env steps and wall minutes at that point; for
GRPO runs the share of sampled actions that pressed the button, the first 3 updates against the
last 3; for MCTS runs the preference pairs, the searches that saw a success and, where the run's
search trees are in its folder, what the searches did below a step that paid a stage; and per
method the pooled greedy success at the last evaluation with its 95 % Wilson interval.

    .venv/bin/python experiments/streak_learning_record.py var/runs/pg13-* \\
        --out notebook/data/pg13_learning.json --plot notebook/img/learning/mcts_vs_grpo_pg13.png

Run folders stay on the machine that ran them; ``--keep`` carries an earlier record's runs whose
folders are not given (a run of the same algorithm and seed among the folders replaces it), so a
comparison finished on another machine is recorded and drawn whole:

    .venv/bin/python experiments/streak_learning_record.py var/runs/pg13-mcts-s2-* \\
        --keep notebook/data/pg13_learning.json --out notebook/data/pg13_learning.json \\
        --plot notebook/img/learning/mcts_vs_grpo_pg13.png

A press is a sampled action whose transition was paid a ``pressed_k`` milestone (every press pays
the next stage: a miss resets the count, and the episode goes on). Env steps are counted as the
viewer and ``halo_trainer.observe.plots`` count them. Reads the folders only; nothing runs.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from halo_trainer.mcts.tree import load_tree
from halo_trainer.observe.metrics import wilson_interval
from halo_trainer.observe.plots import Round, draw_methods, env_steps_by_update, paid_milestones, save_figure
from halo_trainer.observe.viewer.folders import whole_records

STAGES = ("pressed_1", "pressed_2", "pressed_3")
WINDOW = 3  # updates counted as the first and the last (the pre-registration's)


def press_share(episodes: list[dict], updates: list[int]) -> dict:
    """Sampled training actions in ``updates`` that pressed the button, with their Wilson interval."""
    presses = tried = 0
    for ep in episodes:
        if ep.get("purpose") == "eval" or int(ep["update"]) not in updates:
            continue
        for step in ep["steps"]:
            for cand in step["candidates"]:
                tried += 1
                presses += any(m.startswith("pressed_") for m in cand.get("milestones") or [])
    low, high = wilson_interval(presses, tried) if tried else (0.0, 1.0)
    return {"updates": updates, "presses": presses, "actions": tried, "wilson95": [round(low, 4), round(high, 4)]}


def record(run_dir: Path) -> dict:
    """One run's measures (see the module's docstring)."""
    config = json.loads((run_dir / "config.json").read_text())["run"]
    created = float(json.loads((run_dir / "status.json").read_text())["created_at"])
    metrics = whole_records(run_dir / "metrics.jsonl")
    episodes = whole_records(run_dir / "episodes.jsonl")
    steps = env_steps_by_update(metrics)
    # An update that trained (the training episodes an update's jobs wrote are tagged with it).
    trained = sorted({int(ep["update"]) for ep in episodes if ep.get("purpose") != "eval"})
    evaluations = []
    for e in whole_records(run_dir / "eval.jsonl"):
        update = int(e["update"])
        greedy = [paid_milestones(ep) for ep in episodes if ep.get("purpose") == "eval" and int(ep["update"]) == update]
        n = round(e.get("eval/episodes", len(greedy)))
        evaluations.append(
            {
                "update": update,
                "env_steps": steps.get(update, max(steps.values())),
                "minutes": round((e["time"] - created) / 60, 1),
                "successes": round(e["eval/success_rate"] * n),
                "episodes": n,
                "reached": {s: sum(s in paid for paid in greedy) for s in STAGES},
            }
        )
    out = {
        "run_id": run_dir.name,
        "algorithm": config["algorithm"],
        "seed": config.get("seed"),
        "updates": len(metrics),
        "evaluations": evaluations,
    }
    if config["algorithm"] == "grpo":
        out["sampled_presses_first"] = press_share(episodes, trained[:WINDOW])
        out["sampled_presses_last"] = press_share(episodes, trained[-WINDOW:])
    else:
        out["pairs_per_iteration"] = [m.get("dpo/pairs", 0.0) for m in metrics]
        out["searches_that_saw_a_success"] = [
            round(m.get("mcts/success_found", 0.0) * m.get("mcts/searches", 0.0)) for m in metrics
        ]
        if (run_dir / "trees").is_dir():
            out["tree_focus"] = tree_focus(run_dir / "trees", config["mcts"]["theta"], config["jobs_per_update"])
    return out


# A search step that paid a stage: the Playground pays each `pressed_k` 0.3 (configs/rewards/playground.yaml)
# on top of a valid step's 0.1, and no other step earns more than 0.3 (valid 0.1 + novelty 0.2).
PROGRESS_PAID = 0.4


def tree_focus(trees: Path, theta: float, searches_per_iteration: int) -> dict:
    """What an MCTS run's searches did with a stage once they found one, read from the trees its
    searches saved: the searches whose tree holds a step that paid a stage, such steps, those with
    such a step above them (two stages on one path), the nodes expanded below them, and the share of
    the root's visits that went through them; and per iteration (its searches, by job number) the
    preference pairs at ``theta`` whose chosen action paid no stage (preferred for what the search
    backed up below it, a success in a rollout)."""
    found = paid = second = below = 0
    shares: list[float] = []
    pairs: dict[int, list[int]] = {}
    files = sorted(trees.glob("*.json"))
    for path in files:
        job = int(path.stem.rsplit("-j", 1)[1])  # the loop's search ids: <run_id>-j<job>
        tree = load_tree(path)
        counts = pairs.setdefault(job // searches_per_iteration + 1, [0, 0])
        for pref in tree.preference_pairs(theta):
            counts[0] += 1
            counts[1] += tree.node(pref.chosen).reward < PROGRESS_PAID
        nodes = tree.record.nodes
        progress = {n.id for n in nodes if n.parent is not None and n.reward >= PROGRESS_PAID}
        if not progress:
            continue
        found += 1
        paid += len(progress)
        above = {n.id: set(tree.path(n.id)[:-1]) for n in nodes}  # each node's ancestors
        tops = {i for i in progress if not progress & above[i]}
        second += len(progress - tops)
        below += sum(1 for n in nodes if tops & above[n.id])
        shares.append(sum(tree.node(i).visits for i in tops) / max(tree.root.visits, 1))
    return {
        "searches": len(files),
        "with_a_stage": found,
        "steps_that_paid_a_stage": paid,
        "of_them_below_another": second,
        "nodes_below_the_first": below,
        "root_visits_through_it": [round(x, 3) for x in shares],
        "pairs_per_iteration": [pairs[i][0] for i in sorted(pairs)],
        "pairs_chosen_without_a_stage": [pairs[i][1] for i in sorted(pairs)],
    }


def pooled_last(runs: list[dict]) -> dict[str, dict]:
    """Per method: greedy successes and episodes at each run's last evaluation, pooled, with Wilson."""
    by_method: dict[str, list[dict]] = {}
    for run in runs:
        if run["evaluations"]:
            by_method.setdefault(run["algorithm"], []).append(run["evaluations"][-1])
    pooled = {}
    for method, lasts in sorted(by_method.items()):
        hits, n = sum(e["successes"] for e in lasts), sum(e["episodes"] for e in lasts)
        low, high = wilson_interval(hits, n) if n else (0.0, 1.0)
        pooled[method] = {
            "runs": len(lasts),
            "successes": hits,
            "episodes": n,
            "wilson95": [round(low, 3), round(high, 3)],
            "runs_at_or_above_half": sum(e["successes"] >= e["episodes"] / 2 for e in lasts),
            "runs_reaching_pressed_1": sum(e["reached"]["pressed_1"] > 0 for e in lasts),
        }
    return pooled


def kept(earlier: list[dict], runs: list[dict]) -> list[dict]:
    """The runs of an earlier record that none of ``runs`` replaces (same algorithm and seed)."""
    fresh = {(r["algorithm"], r["seed"]) for r in runs}
    return [r for r in earlier if (r["algorithm"], r["seed"]) not in fresh]


def rounds(runs: list[dict]) -> dict[str, list[list[Round]]]:
    """The record's greedy evaluations as the method figure's rounds."""
    by_method: dict[str, list[list[Round]]] = {}
    for run in runs:
        by_method.setdefault(run["algorithm"], []).append(
            [
                Round(e["update"], e["successes"], e["episodes"], e["env_steps"], e["minutes"])
                for e in run["evaluations"]
            ]
        )
    return by_method


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path, nargs="+", help="run folders (var/runs/<run_id>)")
    parser.add_argument("--out", type=Path, help="write the record here as JSON")
    parser.add_argument("--keep", type=Path, help="an earlier record whose runs are kept unless a folder replaces them")
    parser.add_argument("--plot", type=Path, help="draw the methods' pooled greedy success here (PNG)")
    args = parser.parse_args(argv)
    for run_dir in args.run_dir:
        if not (run_dir / "config.json").is_file():
            parser.error(f"{run_dir} is not a run folder (no config.json)")
    runs = [record(d) for d in args.run_dir]
    if args.keep:
        try:
            earlier = json.loads(args.keep.read_text())["runs"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            parser.error(f"--keep {args.keep}: not a record this script wrote ({exc})")
        carried = kept(earlier, runs)
        print(f"kept from {args.keep}: {', '.join(r['run_id'] for r in carried) or 'none'}")
        runs = sorted(carried + runs, key=lambda r: (r["algorithm"], r["seed"] if r["seed"] is not None else -1))
    result = {"runs": runs, "pooled_at_last_evaluation": pooled_last(runs)}
    for run in runs:
        curve = " ".join(
            f"u{e['update']}:{e['successes']}/{e['episodes']}(p1 {e['reached']['pressed_1']})@{e['env_steps']:.0f}st,{e['minutes']}m"
            for e in run["evaluations"]
        )
        extra = (
            f" presses first {run['sampled_presses_first']['presses']}/{run['sampled_presses_first']['actions']}"
            f" last {run['sampled_presses_last']['presses']}/{run['sampled_presses_last']['actions']}"
            if run["algorithm"] == "grpo"
            else f" pairs {sum(run['pairs_per_iteration']):.0f}, success seen in {sum(run['searches_that_saw_a_success'])} searches"
        )
        if focus := run.get("tree_focus"):
            extra += (
                f"; a stage paid in {focus['with_a_stage']} of {focus['searches']} trees,"
                f" {focus['of_them_below_another']} below another, {focus['nodes_below_the_first']} nodes below;"
                f" {sum(focus['pairs_chosen_without_a_stage'])} of {sum(focus['pairs_per_iteration'])} pairs chose"
                " a step that paid no stage"
            )
        print(f"{run['run_id']} ({run['algorithm']}, seed {run['seed']}): {curve};{extra}")
    for method, p in result["pooled_at_last_evaluation"].items():
        print(f"{method}: {p}")
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    if args.plot and save_figure(draw_methods(rounds(runs), "held-out success (greedy)"), args.plot):
        print(f"wrote {args.plot}")


if __name__ == "__main__":
    main()
