"""Which task each training job plays: in turn, or drawn where the updates found signal (no model)."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict

import pytest

from halo.schemas import GroupMode, RunSpec, TaskSampling
from halo_trainer.config import load_defaults, resolve
from halo_trainer.grpo.task_schedule import FLOOR, task_of_job, task_weights, update_signal
from halo_trainer.learner.batching import advantages
from halo_trainer.loop_parts.state import Counters
from tests.trainer.learner.test_batching import tr

TASKS = ["local.playground-1", "local.playground-6", "local.playground-8"]


def config(profile: str | None = "tiny", **spec):
    return resolve(RunSpec(domain="playground", **spec), "r", TASKS, load_defaults("configs/rl_config.yaml"), profile)


def test_the_tiny_profile_draws_by_signal_and_the_gpu_default_goes_in_turn():
    assert config().task_sampling is TaskSampling.SIGNAL
    assert config(profile=None).task_sampling is TaskSampling.ROUND_ROBIN
    in_turn = config(task_sampling="round_robin")
    assert [task_of_job(in_turn, i, {TASKS[0]: 5.0}) for i in range(6)] == TASKS * 2  # the signal is not read


def test_weights_keep_a_floor_and_follow_the_signal():
    flat = task_weights(TASKS, {TASKS[0]: 0.3, TASKS[1]: 0.0, TASKS[2]: 0.0})
    assert flat[1] == flat[2] == pytest.approx(FLOOR / 3)  # never dropped
    assert flat[0] == pytest.approx(FLOOR / 3 + 1 - FLOOR)
    assert sum(flat) == pytest.approx(1.0)
    # not yet played: as promising as the best task seen; nothing seen, or nothing anywhere: evenly
    assert task_weights(TASKS, {TASKS[0]: 0.3}) == pytest.approx([1 / 3] * 3)
    assert task_weights(TASKS, {}) == task_weights(TASKS, dict.fromkeys(TASKS, 0.0)) == pytest.approx([1 / 3] * 3)


def test_draws_are_repeatable_per_job_and_follow_the_weights():
    cfg = config(seed=7)
    signal = {TASKS[0]: 0.3, TASKS[1]: 0.0, TASKS[2]: 0.0}
    drawn = [task_of_job(cfg, i, signal) for i in range(3000)]
    assert drawn == [task_of_job(cfg, i, dict(signal)) for i in range(3000)]  # a restart maps a job the same way
    share = Counter(drawn)[TASKS[0]] / len(drawn)
    assert share == pytest.approx(FLOOR / 3 + 1 - FLOOR, abs=0.03)
    assert drawn != [task_of_job(config(seed=8), i, signal) for i in range(3000)]  # the run's seed matters


def test_the_signal_is_each_tasks_mean_absolute_advantage_averaged_over_updates():
    varied = [tr("g1", "e", r, i=i) for i, r in enumerate([1.0, 0.0, 0.0, 3.0])]  # playground-1
    flat = [tr("g2", "e", 0.5, i=10 + i).model_copy(update={"task_id": TASKS[1]}) for i in range(4)]
    groups = [varied, flat]
    adv = advantages(groups, GroupMode.STEP, "dr_grpo")
    first = update_signal({}, groups, adv)
    assert first == {TASKS[0]: pytest.approx(1.0), TASKS[1]: 0.0}  # |A| of 0, -1, -1, 2
    second = update_signal({**first, TASKS[2]: 0.4}, [flat], advantages([flat], GroupMode.STEP, "dr_grpo"))
    assert second == {TASKS[0]: pytest.approx(1.0), TASKS[1]: 0.0, TASKS[2]: 0.4}  # unplayed tasks keep theirs
    third = update_signal(second, [varied], advantages([varied], GroupMode.STEP, "dr_grpo"))
    assert third[TASKS[0]] == pytest.approx(1.0)
    zero = [tr("g3", "e", 0.0, i=20 + i) for i in range(4)]  # playground-1's groups agree once it is learned
    assert update_signal(third, [zero], advantages([zero], GroupMode.STEP, "dr_grpo"))[TASKS[0]] == pytest.approx(0.5)


def test_the_signal_travels_with_the_checkpointed_counters():
    saved = json.loads(json.dumps(asdict(Counters(updates=3, task_signal={TASKS[0]: 0.25}))))
    restored = Counters()
    restored.restore(saved)
    assert restored.task_signal == {TASKS[0]: 0.25} and restored.updates == 3
    older = {k: v for k, v in saved.items() if k != "task_signal"}  # a checkpoint from before the knob
    restored.restore(older)
    assert restored.task_signal == {}


def test_an_unknown_task_sampling_is_refused_with_the_choices_named():
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="'round_robin' or 'signal'"):
        RunSpec(domain="playground", task_sampling="sometimes")
