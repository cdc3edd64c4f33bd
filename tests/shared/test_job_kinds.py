"""The job stream's message (``halo.schemas.RolloutJob``): four kinds told apart by ``kind``.

Each kind round-trips through JSON as itself, the discriminator picks the class, and what a kind
cannot be (a search without its settings, an eval of several episodes or sampled hot, a field of
another kind, a message of the old untyped shape) is refused with an error naming the field.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from halo.schemas import (
    JOB_ADAPTER,
    BranchPolicy,
    EpisodeGroupJob,
    EvalJob,
    JobBase,
    PolicyVersion,
    SamplingParams,
    SearchJob,
    StepGroupJob,
    Viewport,
)
from halo.schemas.search_settings import MCTSConfig

COMMON: dict[str, Any] = {
    "job_id": "run-a-j0",
    "run_id": "run-a",
    "task_id": "local.playground-1",
    "group_id": "run-a-j0",
    "policy": PolicyVersion(run_id="run-a", version=2, adapter_name="run-a-v2", created_at=0.0),
    "temperature": 1.0,
    "seed": 7,
    "max_steps": 3,
    "sampling": SamplingParams(max_tokens=64, structured_outputs="regex", history_limit=8, viewport=Viewport()),
}
GREEDY = {k: v for k, v in COMMON.items() if k != "temperature"}
SETTINGS = MCTSConfig(simulations=4, critic="progress")

ONE_OF_EACH = [
    StepGroupJob(**COMMON, group_size=4, branch=BranchPolicy.BEST),
    EpisodeGroupJob(**COMMON, group_size=3),
    SearchJob(**COMMON, mcts=SETTINGS),
    EvalJob(**GREEDY),
]


@pytest.mark.parametrize("job", ONE_OF_EACH, ids=lambda j: j.kind)
def test_each_kind_round_trips_through_json_as_itself(job: JobBase) -> None:
    wire = job.model_dump_json()
    back = JOB_ADAPTER.validate_json(wire)
    assert type(back) is type(job) and back == job
    assert JOB_ADAPTER.dump_json(back).decode() == wire


@pytest.mark.parametrize(
    ("kind", "extra", "cls", "purpose"),
    [
        ("train_step_group", {"group_size": 2}, StepGroupJob, "train"),
        ("train_episode_group", {"group_size": 2}, EpisodeGroupJob, "train"),
        ("search", {"mcts": {"simulations": 3, "critic": "progress"}}, SearchJob, "search"),
        ("eval", {"temperature": 0.0}, EvalJob, "eval"),
    ],
)
def test_the_kind_picks_the_class_and_the_purpose_its_results_carry(kind, extra, cls, purpose) -> None:
    job = JOB_ADAPTER.validate_python({**COMMON, **extra, "kind": kind})
    assert type(job) is cls and job.kind == kind and job.purpose == purpose
    assert "purpose" not in job.model_dump()  # derived from the kind, never sent


def test_the_defaults_of_each_kind() -> None:
    step, episodes, search, evaluation = ONE_OF_EACH
    assert StepGroupJob(**COMMON, group_size=2).branch is BranchPolicy.SAMPLED
    assert isinstance(search.mcts, MCTSConfig) and search.mcts == SETTINGS
    assert (evaluation.temperature, evaluation.group_size) == (0.0, 1)  # greedy, one episode
    assert (step.kind, episodes.kind, search.kind, evaluation.kind) == (
        "train_step_group",
        "train_episode_group",
        "search",
        "eval",
    )


def _refused(data: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as caught:
        JOB_ADAPTER.validate_python(data)
    return str(caught.value)


def test_invalid_combinations_are_refused_naming_the_field() -> None:
    assert "mcts" in _refused({**COMMON, "kind": "search"})  # a search without its settings
    assert "one episode: group_size must be 1" in _refused({**GREEDY, "kind": "eval", "group_size": 2})
    assert "greedy: temperature must be 0" in _refused({**COMMON, "kind": "eval"})  # sampled at 1.0
    assert "group_size" in _refused({**COMMON, "kind": "train_step_group"})  # a group needs its size
    assert "group_size" in _refused({**COMMON, "kind": "search", "mcts": {}, "group_size": 3})  # not a search's
    assert "mcts" in _refused({**COMMON, "kind": "train_episode_group", "group_size": 2, "mcts": {}})
    assert "branch" in _refused({**COMMON, "kind": "train_episode_group", "group_size": 2, "branch": "best"})
    assert "group_size" in _refused({**COMMON, "kind": "train_step_group", "group_size": 33})
    assert "kind" in _refused({**COMMON, "kind": "train", "group_size": 2})  # no such kind
    with pytest.raises(ValidationError, match="group_size must be 1"):
        EvalJob(**GREEDY, group_size=3)
    with pytest.raises(ValidationError, match="mcts"):
        SearchJob(**COMMON)


def test_a_job_of_the_old_untyped_shape_is_refused() -> None:
    """Before the kinds: ``purpose`` and ``group_mode`` strings and no ``kind``. Such a message in a
    stream is dead-lettered by the queue, never played as some guessed kind."""
    old = {**COMMON, "group_mode": "step", "group_size": 2, "purpose": "train"}
    assert "kind" in _refused(old)
    with pytest.raises(ValidationError, match="purpose"):
        JOB_ADAPTER.validate_python({**old, "kind": "train_step_group"})
