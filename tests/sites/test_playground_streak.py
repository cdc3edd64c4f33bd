"""local.playground-13, the streak task, in real Chromium: the same button pressed
three times in a row, each press a stage with its milestone, a miss resetting the count without
ending the episode; the stages paid by the reward service once per episode; a fork of a stage is
its exact screen and state. Its reference and wrong solutions are replayed in test_replay.py."""

from __future__ import annotations

import pytest

from halo.schemas import Action, StateSummary
from tests.sites.conftest import fork_page, local_task_success, open_site, screen_difference, settled_screenshot

pytestmark = [pytest.mark.slow, pytest.mark.browser]

TASK = "local.playground-13"
BUTTON = '[data-halo-id="btn-press"]'
MISS = (150, 600)  # the empty page left of the button


async def finish(page) -> dict:
    return await page.evaluate("window.__HALO__.finish()")


async def streak_text(page) -> str:
    return await page.locator('[data-halo-id="streak"]').inner_text()


async def test_each_press_is_a_stage_a_miss_resets_the_count_and_the_episode_goes_on(browser, sites_url: str) -> None:
    context, page = await open_site(browser, sites_url, "playground", TASK)
    assert await streak_text(page) == "Pressed 0 of 3 times in a row"
    await page.locator(BUTTON).click()
    await page.locator(BUTTON).click()
    state = await finish(page)
    assert state["progress"] == {"pressed_1": True, "pressed_2": True}
    assert state["done"] is False and await streak_text(page) == "Pressed 2 of 3 times in a row"

    await page.mouse.click(*MISS)  # a miss: back to no stage, the episode still open
    state = await finish(page)
    assert state["progress"] == {} and state["done"] is False
    assert await streak_text(page) == "Pressed 0 of 3 times in a row"
    assert local_task_success("playground", 13, state) is False

    for _ in range(3):
        await page.locator(BUTTON).click()
    state = await finish(page)
    assert state["done"] is True
    assert state["progress"] == {"pressed_1": True, "pressed_2": True, "pressed_3": True}
    assert state["initialfinaldiff"]["updated"]["submission"]["presses"] == 3
    assert local_task_success("playground", 13, state) is True
    assert await page.locator(BUTTON).is_disabled()  # the one submission locks the page
    assert page.errors == []
    await context.close()


async def test_a_double_or_triple_click_is_one_press_and_a_keyboard_press_is_none(browser, sites_url: str) -> None:
    """The env's double_click and triple_click are one pointer action each: were their second and
    third clicks presses, one triple click would pass the three stages at once."""
    context, page = await open_site(browser, sites_url, "playground", TASK)
    await page.locator(BUTTON).dblclick()
    assert await streak_text(page) == "Pressed 1 of 3 times in a row"
    await page.locator(BUTTON).click(click_count=3)
    assert await streak_text(page) == "Pressed 2 of 3 times in a row"
    await page.locator(BUTTON).focus()  # what Tab reaches on a fresh page
    await page.keyboard.press("Enter")
    state = await finish(page)
    assert state["done"] is False and state["progress"] == {"pressed_1": True, "pressed_2": True}
    await page.mouse.dblclick(*MISS)  # a double-clicked miss resets like a single one
    assert (await finish(page))["progress"] == {}
    assert page.errors == []
    await context.close()


async def test_a_fork_of_a_stage_is_its_exact_screen_and_state(browser, sites_url: str) -> None:
    """What exact re-entry needs: a copy of the two-press state shows the same screen, the third
    press there succeeds, and the original is left at its stage."""
    context, page = await open_site(browser, sites_url, "playground", TASK)
    await page.locator(BUTTON).click()
    one = await settled_screenshot(page)
    await page.locator(BUTTON).click()
    two = await settled_screenshot(page)
    assert screen_difference(one, two) is not None, "the stages must look different"
    fork, forked = await fork_page(browser, context, page)
    assert screen_difference(await settled_screenshot(forked), two) is None
    assert (await finish(forked))["progress"] == (await finish(page))["progress"]
    await forked.locator(BUTTON).click()
    assert local_task_success("playground", 13, await finish(forked)) is True
    state = await finish(page)
    assert state["done"] is False and await streak_text(page) == "Pressed 2 of 3 times in a row"
    assert page.errors == []
    await fork.close()
    await context.close()


async def test_the_reward_service_pays_each_stage_once_per_episode(browser, sites_url: str) -> None:
    """Dense progress: the first and the second press each pay their stage; a miss pays nothing; a
    stage reached again after a miss is not paid twice (the episode's memory); the third press pays
    its stage and the success."""
    from halo.settings import REPO_ROOT
    from halo_reward.core import EpisodeMemory, ScoringOptions, score
    from halo_reward.rules import RuleBook
    from tests.reward.helpers import request

    rules = RuleBook.load(REPO_ROOT / "configs" / "rewards").for_domain("playground")
    context, page = await open_site(browser, sites_url, "playground", TASK)
    memory = EpisodeMemory()

    async def summary() -> StateSummary:
        return StateSummary(url=page.url, site_state=await finish(page))

    async def step(act, action: Action, success: bool | None = None) -> list[str]:
        nonlocal memory
        before = await summary()
        await act()
        after = await summary()
        paid, memory = score(
            request(before, after, domain="playground", action=action, task_success=success),
            memory,
            rules,
            ScoringOptions(),
        )
        return paid.milestones

    press = Action(action="left_click", coordinate=(500, 562))
    miss = Action(action="left_click", coordinate=(117, 833))
    assert await step(lambda: page.locator(BUTTON).click(), press) == ["pressed_1"]
    assert await step(lambda: page.locator(BUTTON).click(), press) == ["pressed_2"]
    assert await step(lambda: page.mouse.click(*MISS), miss) == []
    assert await step(lambda: page.locator(BUTTON).click(), press) == []
    assert await step(lambda: page.locator(BUTTON).click(), press) == []
    assert await step(lambda: page.locator(BUTTON).click(), press, success=True) == ["pressed_3"]
    assert sorted(memory.reached) == ["pressed_1", "pressed_2", "pressed_3"]
    await context.close()
