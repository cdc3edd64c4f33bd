"""experiments/learning_probe.py: the run it asks the trainer's loop for, and the lines it reads from the run folder."""

from __future__ import annotations

import argparse

import pytest

from halo.schemas import GroupMode
from halo.settings.trainer import TrainerSettings
from tests.script_module import load_script


@pytest.fixture(scope="module")
def probe():
    return load_script("experiments/learning_probe.py")


def args(**over) -> argparse.Namespace:
    values = dict(
        updates=3,
        groups=2,
        num_generations=4,
        lr=0.001,
        temperature=None,
        eval_episodes=4,
        full_weights="vision",
        full_weights_lr=None,
        lora_r=None,
        lora_alpha=None,
    )
    return argparse.Namespace(**{**values, **over})


def test_the_run_is_the_trainers_own_config_set_for_a_first_click(probe):
    settings = TrainerSettings(target="cpu")
    cfg = probe.run_config(args(), "local.playground-2", "probe-x", settings)
    assert cfg.tasks == ["local.playground-2"] and cfg.profile == "tiny"
    assert cfg.group_mode is GroupMode.STEP and cfg.max_steps == 1
    assert (cfg.episodes, cfg.jobs_per_update, cfg.num_generations) == (6, 2, 4)
    assert (cfg.eval_every, cfg.eval_episodes, cfg.prefetch_updates, cfg.record_episodes_every) == (1, 4, 0, 1)
    assert cfg.learning_rate == 0.001 and list(cfg.full_weights) == ["vision"]
    # unset: the profile's values
    assert (cfg.lora_r, cfg.temperature, cfg.full_weights_lr) == (8, 1.0, 1e-3)
    assert probe.run_config(args(lora_r=4), "local.playground-2", "probe-x", settings).lora_r == 4


def candidate(success: bool, advantage: float, milestones=(), total: float = 0.3) -> dict:
    return {
        "action_text": "left_click(500, 500)",
        "task_success": success,
        "advantage": advantage,
        "milestones": list(milestones),
        "reward": {"total": total},
    }


def episode(job: str, purpose: str, update: int, version: int, candidates: list[dict], success=None) -> dict:
    return {
        "episode_id": f"{job}-e",
        "job_id": job,
        "purpose": purpose,
        "update": update,
        "policy_version": version,
        "success": success,
        "steps": [{"step": 0, "screenshot": "0" * 64, "candidates": candidates}],
    }


def test_a_versions_line_reads_its_evaluation_its_samples_and_the_update_they_made(probe):
    seeds = {"r-eval0-a-0": 1_000_000, "r-eval0-a-1": 1_000_001, "r-j0": 0, "r-j1": 1, "r-j2": 2}
    episodes = [
        episode("r-eval0-a-1", "eval", 0, 0, [{**candidate(True, 0.0), "action_text": "left_click(1, 2)"}], True),
        episode("r-eval0-a-0", "eval", 0, 0, [candidate(False, 0.0)], False),
        # version 0's groups: one mixes a hit and misses, one has no signal
        episode("r-j1", "train", 0, 0, [candidate(False, 0.0), candidate(False, 0.0)]),
        episode(
            "r-j0",
            "train",
            0,
            0,
            [candidate(True, 7.5, ["submitted"], 10.6), candidate(False, -2.5), candidate(False, -5.0, ["submitted"])],
        ),
        episode("r-j2", "train", 1, 1, [candidate(False, 0.0)]),  # version 1's: not this line's
    ]
    evals = [{"update": 0, "eval/success_rate": 0.5, "eval/ci_low": 0.09, "eval/ci_high": 0.91}]
    metrics = [
        {
            "update": 1,
            "rollout/sample_success_rate": 0.2,
            "rollout/mean_reward": 2.46,
            "train/loss": 0.1,
            "train/grad_norm": 0.7,
            "train/update_s": 1.234,
        }
    ]
    line = probe.probe_line(0, evals=evals, metrics=metrics, episodes=episodes, seeds=seeds)
    assert line["greedy"] == ["left_click(500, 500)", "left_click(1, 2)"]  # in seed order
    assert (line["greedy_layouts_solved"], line["layouts"]) == (1, 2)
    assert line["checked_seeds"] == [1_000_000, 1_000_001] and line["solved_seeds"] == [1_000_001]
    assert line["train_seeds"] == [0, 1] and line["group_hits"] == [1, 0]
    assert line["groups_without_signal"] == 1 and line["hit_signal_share"] == 1.0
    assert line["sampled_button_rate"] == pytest.approx(2 / 5)
    assert (line["sampled_hit_rate"], line["mean_reward"], line["loss"], line["update_s"]) == (0.2, 2.46, 0.1, 1.23)
    # the last version: its evaluation only
    last = probe.probe_line(
        1, evals=[*evals, {**evals[0], "update": 1}], metrics=metrics, episodes=episodes[4:], seeds=seeds
    )
    assert "loss" not in last and "group_hits" in last and last["layouts"] == 0
