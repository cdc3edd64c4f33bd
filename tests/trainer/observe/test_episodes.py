"""Episode records from real rollout results (stand-in services), their sampling, and the action drawn."""

from __future__ import annotations

import io
import json

import pytest
from PIL import Image

from halo.schemas import BranchPolicy, GroupMode
from halo.screenshots import ScreenshotStore
from halo_trainer.learner.batching import advantages_of
from halo_trainer.observe.episode_log import EpisodeLog, episode_image, read_episodes
from halo_trainer.observe.filmstrip import MARKER, draw_action, to_image_pixels
from halo_trainer.rollout.play import run_job
from tests.trainer.stand_ins import PolicyStandIn, click, job_for, services


async def test_a_step_group_record_holds_every_fork_with_its_advantage_and_the_branch_continued(tmp_path):
    job = job_for(group_size=3, max_steps=2, branch=BranchPolicy.BEST)
    result = await run_job(services(), job)
    log = EpisodeLog(tmp_path / "episodes.jsonl", 1, advantages_of(GroupMode.STEP, "dr_grpo"))
    [record] = log.write(result, update=4)

    assert record["update"] == 4 and record["purpose"] == "train" and len(record["steps"]) == 2
    for step in record["steps"]:
        rewards = [c["reward"]["total"] for c in step["candidates"]]
        assert rewards == [0.1, 0.2, 0.3]  # the stand-in pays x / 1000 for a click at x
        assert [c["advantage"] for c in step["candidates"]] == pytest.approx([-0.1, 0.0, 0.1])
        assert [c["kept"] for c in step["candidates"]] == [False, False, True]  # branch=best
        assert step["candidates"][2]["action"] == {"action": "left_click", "coordinate": [300, 500]}
    assert read_episodes(tmp_path / "episodes.jsonl") == [json.loads(json.dumps(record))]


async def test_training_jobs_are_sampled_and_evaluations_always_recorded(tmp_path):
    log = EpisodeLog(tmp_path / "episodes.jsonl", 3, advantages_of(GroupMode.EPISODE, "dr_grpo"))
    written = []
    for i in range(6):
        job = job_for(job_id=f"j{i}", group_id=f"j{i}", kind="train_episode_group", group_size=2, max_steps=1)
        written += [r["job_id"] for r in log.write(await run_job(services(), job), update=i)]
    evaluation = job_for(job_id="ev0", group_id="ev0", kind="eval")
    written += [r["job_id"] for r in log.write(await run_job(services(), evaluation), update=6)]
    assert written == ["j0", "j0", "j3", "j3", "ev0"]
    assert (
        EpisodeLog(tmp_path / "none.jsonl", 0, advantages_of(GroupMode.EPISODE, "grpo")).write(
            await run_job(services(), job_for(kind="train_episode_group", group_size=2, max_steps=1)), update=0
        )
        == []
    )


async def test_an_unparsed_answer_is_recorded_with_its_raw_text_and_parse_error(tmp_path):
    policy = PolicyStandIn(lambda n, i: [None] * n)
    result = await run_job(services(policy=policy), job_for(group_size=2, max_steps=1))
    [record] = EpisodeLog(tmp_path / "e.jsonl", 1, advantages_of(GroupMode.STEP, "dr_grpo")).write(result, update=0)
    candidate = record["steps"][0]["candidates"][0]
    assert candidate["action"] is None and candidate["raw"] == "I would click"
    assert (
        candidate["parse_error"]["reason"] == "no_tool_call" and candidate["action_text"] == "<invalid: no_tool_call>"
    )


def png(width: int, height: int) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (255, 255, 255)).save(out, format="PNG")
    return out.getvalue()


def test_the_click_marker_is_drawn_at_the_relative_coordinate():
    image = draw_action(png(640, 360), {"action": "left_click", "coordinate": [500, 750]})
    x, y = to_image_pixels((500, 750), image.size)
    assert (x, y) == (320, 270)
    r = max(6, 640 // 80)
    assert image.getpixel((x + r, y)) == MARKER  # the ring's rightmost point
    assert image.getpixel((x, y)) == (255, 255, 255)  # a ring, so the target itself stays visible


async def test_the_trackers_episode_image_has_one_frame_per_step(tmp_path):
    store = ScreenshotStore(tmp_path / "shots")
    job = job_for(group_size=2, max_steps=2)
    result = await run_job(services(), job)
    [record] = EpisodeLog(tmp_path / "e.jsonl", 1, advantages_of(GroupMode.STEP, "dr_grpo")).write(result, update=0)
    assert episode_image(record, store) is None  # no screenshot stored: nothing to draw
    for step in record["steps"]:
        real = store.put(png(1280, 720))
        step["screenshot"] = real
    image = episode_image(record, store)
    assert image is not None and image.size == (2 * 320, 180)
    assert click(100).short() in record["steps"][0]["candidates"][0]["action_text"]
