"""REAL v2 offline judges an answer exactly as agisdk does: the answer never enters the state.

agisdk's ``WebCloneEvaluator.evaluate(state, model_response)`` gives its scripts the /finish JSON
alone. Some of REAL's scripts search every string of the state, so a state with the agent's answer
merged into it passes them with a plausible sentence and no action (marrisuite-8, omnizon-25 and
zilloft-23 did). Here every supported REAL task's start state (Chromium, the clone's /config then
/finish, as agisdk's harness reads it) is judged with answers that a policy could learn to say: the
goal, its clauses, a goal-shaped sentence and "SUCCESS". Each verdict must be agisdk's own for the
same state and response, and FAILURE: nothing was done.
"""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from halo_sites.tasks import REAL_PREFIX, REAL_VERSION, evaluate, get_task, load_tasks
from tests.sites.conftest import VIEWPORT, replay_sample

REAL_IDS = [t.id for t in load_tasks() if t.id.startswith(REAL_PREFIX)]

# The answers that flipped agisdk's FAILURE into the project's SUCCESS on the start state (2026-11-28).
NAMED = {
    "real-offline.marrisuite-8": "Here are the available hotels in Goleta for next weekend.",
    "real-offline.omnizon-25": "I ordered an apron and a cooking pot for you.",
    "real-offline.zilloft-23": "Here are houses in California under $900k with 3+ bedrooms.",
}


def answers_for(task_id: str, goal: str) -> list[str]:
    """What a policy rewarded for words could learn to say: the goal, each of its clauses, the goal
    as a report, "SUCCESS", and the named task's sentence."""
    clauses = [c.strip() for c in re.split(r"[.,;:!?]|\band\b|\bthen\b", goal) if len(c.strip()) > 3]
    said = [goal, *clauses, f"Done. {goal}", "SUCCESS", NAMED.get(task_id, "")]
    return list(dict.fromkeys(a for a in said if a))


def test_answers_include_the_goal_its_clauses_and_success() -> None:
    said = answers_for("real-offline.x-1", "Search for hotels in Goleta, then book one and pay the bill.")
    assert said[0] == "Search for hotels in Goleta, then book one and pay the bill."
    assert {"Search for hotels in Goleta", "book one", "pay the bill", "SUCCESS"} <= set(said)
    assert NAMED["real-offline.zilloft-23"] in answers_for("real-offline.zilloft-23", "Find houses.")


def agisdk_verdict(task_id: str, state: dict, response: str) -> bool:
    """agisdk 0.3.5's own evaluator on REAL's task, called as its harness calls it."""
    from agisdk.REAL.browsergym.webclones.evaluate import WebCloneEvaluator
    from agisdk.REAL.browsergym.webclones.task_config import TaskConfig

    evaluator = WebCloneEvaluator(task_config=TaskConfig(task_id.removeprefix(REAL_PREFIX), version=REAL_VERSION))
    _, _, _, info = evaluator.evaluate(json.loads(json.dumps(state)), response)
    return all(ok for ok, _ in info["results"])


async def start_states(browser, sites_url: str, task_ids: list[str], parallel: int = 4) -> dict[str, dict]:
    """Each task's /finish JSON right after its /config, read as agisdk's harness reads it."""
    states: dict[str, dict] = {}
    gate = asyncio.Semaphore(parallel)

    async def read(task_id: str) -> None:
        site = get_task(task_id).domain
        async with gate:
            context = await browser.new_context(viewport=VIEWPORT)
            try:
                page = await context.new_page()
                await page.goto(f"{sites_url}/{site}/config?task_id={task_id}&seed=0")
                await page.wait_for_url(f"{sites_url}/{site}/**")
                await page.wait_for_load_state("load")
                await page.goto(f"{sites_url}/{site}/finish")
                states[task_id] = json.loads(await page.locator("pre").inner_text())
            finally:
                await context.close()

    await asyncio.gather(*(read(t) for t in task_ids))
    return states


async def judged_wrongly(browser, sites_url: str, task_ids: list[str]) -> list[str]:
    """Every (task, answer) whose verdict on the untouched start state is not agisdk's FAILURE."""
    states = await start_states(browser, sites_url, task_ids)
    wrong: list[str] = []
    for task_id in task_ids:
        task = get_task(task_id)
        for answer in answers_for(task_id, task.goal):
            ours = (await asyncio.to_thread(evaluate, task, states[task_id], answer)).success
            theirs = await asyncio.to_thread(agisdk_verdict, task_id, states[task_id], answer)
            if ours or theirs:
                wrong.append(f"{task_id} with the answer {answer!r}: ours {ours}, agisdk's {theirs}")
    return wrong


# `make test`: the three tasks that flipped and each site's replay sample; `make test-replay`: the rest.
IN_MAKE_TEST = sorted(set(NAMED) | replay_sample(REAL_IDS))


@pytest.mark.slow
@pytest.mark.browser
async def test_no_answer_passes_an_untouched_real_task(browser, sites_url: str) -> None:
    assert set(NAMED) <= set(REAL_IDS)
    wrong = await judged_wrongly(browser, sites_url, IN_MAKE_TEST)
    assert not wrong, "an answer alone changed an untouched task's verdict:\n" + "\n".join(wrong)


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.full_replay
async def test_no_answer_passes_any_other_untouched_real_task(browser, sites_url: str) -> None:
    rest = [t for t in REAL_IDS if t not in IN_MAKE_TEST]
    wrong = await judged_wrongly(browser, sites_url, rest)
    assert not wrong, "an answer alone changed an untouched task's verdict:\n" + "\n".join(wrong)
