"""The clones in real Chromium: /config and /finish, seeding, diffs, milestones, exact forks."""

from __future__ import annotations

import json

import pytest

from tests.sites.conftest import click as _click
from tests.sites.conftest import fork_page, open_site, screen_difference, settled_screenshot

pytestmark = [pytest.mark.slow, pytest.mark.browser]


async def _finish_page(context, sites_url: str, site: str) -> dict:
    """What REAL's backend reads: /finish in a second page of the same context."""
    page = await context.new_page()
    await page.goto(f"{sites_url}/{site}/finish")
    text = await page.locator("pre").inner_text()
    await page.close()
    return json.loads(text)


async def test_config_then_finish_has_reals_shape_and_an_empty_diff(browser, sites_url: str) -> None:
    context, page = await open_site(browser, sites_url, "gomail", "local.gomail-1", seed=3)
    assert page.url.endswith("/gomail/")
    state = await _finish_page(context, sites_url, "gomail")
    assert state["site"] == "gomail" and state["task_id"] == "local.gomail-1" and state["seed"] == 3
    assert state["initialfinaldiff"] == {"added": {}, "updated": {}, "deleted": {}}
    assert state["differences"] == {"emails": {"added": [], "updated": [], "deleted": []}}
    assert state["progress"] == {}
    assert await page.evaluate("window.__HALO__.finish()") == state
    assert await page.evaluate("window.__HALO__.site") == "gomail"
    assert page.errors == []
    await context.close()


async def test_gomail_diff_paths_and_milestones(browser, sites_url: str) -> None:
    context, page = await open_site(browser, sites_url, "gomail")
    await _click(page, "email-e01")  # opening reads it
    await _click(page, "delete")
    await _click(page, "compose")
    await page.keyboard.type("sam.lee@acme.com")
    await _click(page, "subject")
    await page.keyboard.type("Hello")
    await _click(page, "send")
    state = await page.evaluate("window.__HALO__.finish()")
    updated = state["initialfinaldiff"]["updated"]
    assert updated["email"]["emails"]["e01"] == {"isRead": True, "trash": True}
    assert updated["ui"]["snackbar"]["message"] == "Message sent"
    sent = state["initialfinaldiff"]["added"]["email"]["emails"]["new-1"]
    assert sent["to"] == ["sam.lee@acme.com"] and sent["subject"] == "Hello" and sent["sent"] is True
    assert [e["id"] for e in state["differences"]["emails"]["added"]] == ["new-1"]
    assert [e["id"] for e in state["differences"]["emails"]["updated"]] == ["e01"]
    assert list(state["progress"]) == [
        "email_deleted",
        "compose_opened",
        "recipient_filled",
        "subject_filled",
        "send_clicked",
        "message_sent",
    ]
    # Milestones are never unset within an episode; /config clears them.
    await _click(page, "compose")
    await _click(page, "discard")
    assert len((await page.evaluate("window.__HALO__.finish()"))["progress"]) == 6
    await page.goto(f"{sites_url}/gomail/config")
    await page.wait_for_url(f"{sites_url}/gomail/")
    assert (await page.evaluate("window.__HALO__.finish()"))["progress"] == {}
    assert page.errors == []
    await context.close()


async def test_gocalendar_delete_and_create_show_in_differences(browser, sites_url: str) -> None:
    context, page = await open_site(browser, sites_url, "gocalendar")
    await _click(page, "event-ev06")
    await _click(page, "delete-event")
    await _click(page, "create")
    await page.keyboard.type("Gym")
    await page.locator('[data-halo-id="event-start"]').click(click_count=3)
    await page.keyboard.type("7am")
    await page.locator('[data-halo-id="event-end"]').click(click_count=3)
    await page.keyboard.type("8:00 AM")
    await _click(page, "save-event")
    state = await _finish_page(context, sites_url, "gocalendar")
    events = state["differences"]["events"]
    assert [e["id"] for e in events["deleted"]] == ["ev06"]
    assert events["added"][0]["title"] == "Gym"
    assert events["added"][0]["start"] == "2024-07-15T07:00:00" and events["added"][0]["end"] == "2024-07-15T08:00:00"
    assert state["initialfinaldiff"]["deleted"]["calendar"]["events"]["ev06"]["title"] == "Dentist appointment"
    assert set(state["progress"]) == {
        "event_opened",
        "event_deleted",
        "create_clicked",
        "title_entered",
        "datetime_set",
        "save_clicked",
        "event_created",
    }
    assert await page.locator(".snackbar").inner_text() == "Event created"
    assert page.errors == []
    await context.close()


async def test_gocalendar_rejects_an_unreadable_time(browser, sites_url: str) -> None:
    context, page = await open_site(browser, sites_url, "gocalendar")
    await _click(page, "create")
    await page.locator('[data-halo-id="event-start"]').click(click_count=3)
    await page.keyboard.type("25:99")
    await _click(page, "save-event")
    assert "Could not read the time" in await page.locator(".ed-error").inner_text()
    state = await page.evaluate("window.__HALO__.finish()")
    assert state["differences"]["events"]["added"] == []
    assert "event_created" not in state["progress"] and "save_clicked" in state["progress"]
    await context.close()


async def _button_box(page, halo_id: str) -> tuple[float, float]:
    box = await page.locator(f'[data-halo-id="{halo_id}"]').bounding_box()
    return round(box["x"] + box["width"] / 2), round(box["y"] + box["height"] / 2)


async def test_playground_layouts_follow_the_seed(browser, sites_url: str) -> None:
    fixed, moving = set(), []
    for seed in range(4):
        context, page = await open_site(browser, sites_url, "playground", "local.playground-1", seed=seed)
        fixed.add(await _button_box(page, "btn-submit"))
        await context.close()
        context, page = await open_site(browser, sites_url, "playground", "local.playground-2", seed=seed)
        moving.append(await _button_box(page, "btn-submit"))
        await context.close()
    assert fixed == {(640, 405)}
    assert moving == [(320, 250), (960, 250), (320, 560), (960, 560)]  # slots[seed % 4]


async def test_same_task_and_seed_give_byte_identical_screenshots(browser, sites_url: str) -> None:
    for site, task in (("playground", "local.playground-5"), ("gomail", "local.gomail-1"), ("gocalendar", None)):
        shots, states = [], []
        for _ in range(2):
            context, page = await open_site(browser, sites_url, site, task, seed=11)
            shots.append(await settled_screenshot(page))
            states.append(await page.evaluate(f"localStorage.getItem('halo:{site}:initial')"))
            await context.close()
        assert screen_difference(shots[0], shots[1]) is None, site
        assert states[0] == states[1], site


async def test_snapshot_of_storage_and_url_forks_the_exact_screen(browser, sites_url: str) -> None:
    context, page = await open_site(browser, sites_url, "gomail")
    await _click(page, "compose")
    await page.keyboard.type("sam.lee@acme.com")
    await _click(page, "subject")
    await page.keyboard.type("Hel")
    before = await settled_screenshot(page)
    fork, forked = await fork_page(browser, context, page)
    assert screen_difference(await settled_screenshot(forked), before) is None
    # Typing after the fork lands in the field that had the focus.
    await forked.keyboard.type("lo")
    await page.keyboard.type("lo")
    assert screen_difference(await settled_screenshot(forked), await settled_screenshot(page)) is None
    await _click(forked, "send")
    state = await forked.evaluate("window.__HALO__.finish()")
    assert state["differences"]["emails"]["added"][0]["subject"] == "Hello"
    # The original is untouched by what the fork did.
    assert (await page.evaluate("window.__HALO__.finish()"))["differences"]["emails"]["added"] == []
    await fork.close()
    await context.close()


async def test_playground_is_one_shot(browser, sites_url: str) -> None:
    context, page = await open_site(browser, sites_url, "playground", "local.playground-4", seed=2)
    await _click(page, "btn-cancel")
    assert await page.locator('[data-halo-id="btn-ok"]').is_disabled()
    state = await page.evaluate("window.__HALO__.finish()")
    assert state["initialfinaldiff"]["updated"]["submission"]["button"] == "Cancel"
    assert state["progress"] == {"submitted": True}
    await context.close()


async def test_playground_near_target_rings_grade_a_miss_by_its_distance(browser, sites_url: str) -> None:
    """local.playground-1's Submit button is centred at (640, 405); rings of 600/400/250/120 px."""
    expected = {
        (1270, 710): {},  # 707 px away: outside every ring
        (1100, 405): {"near_target": True},  # 460 px
        (640, 90): {"near_target": True, "near_target_400": True},  # 315 px
        (480, 300): {"near_target": True, "near_target_400": True, "near_target_250": True},  # 191 px
        (640, 520): {f"near_target{s}": True for s in ("", "_400", "_250", "_120")},  # 115 px, below the button
    }
    for (x, y), flags in expected.items():
        context, page = await open_site(browser, sites_url, "playground", "local.playground-1")
        await page.mouse.click(x, y)
        assert (await page.evaluate("window.__HALO__.finish()"))["progress"] == flags, (x, y)
        await context.close()


@pytest.mark.parametrize("key", ["Enter", " "])
async def test_playground_click_task_ignores_a_keyboard_activation(browser, sites_url: str, key: str) -> None:
    """Tab focuses local.playground-2's only button wherever the seed draws it, so a keyboard press
    of it would pass every layout without reading the screen: it is not a click, it answers
    nothing and earns no ring, and a pointer click afterwards is still the answer."""
    for seed in range(4):
        context, page = await open_site(browser, sites_url, "playground", "local.playground-2", seed=seed)
        await page.keyboard.press("Tab")
        assert await page.evaluate("document.activeElement.getAttribute('data-halo-id')") == "btn-submit"
        await page.keyboard.press(key)
        state = await page.evaluate("window.__HALO__.finish()")
        assert state["done"] is False and state["progress"] == {}, seed
        assert "submission" not in state["initialfinaldiff"]["updated"], seed
        await _click(page, "btn-submit")
        state = await page.evaluate("window.__HALO__.finish()")
        assert state["initialfinaldiff"]["updated"]["submission"]["button"] == "Submit", seed
        assert state["progress"]["submitted"] is True, seed
        await context.close()


async def test_playground_click_miss_is_the_answer(browser, sites_url: str) -> None:
    """The first click ends a click task, a miss included: a later hit cannot repair it."""
    context, page = await open_site(browser, sites_url, "playground", "local.playground-1")
    await page.mouse.click(100, 100)  # empty page, far from the button
    await page.mouse.click(640, 405)  # the button, too late
    state = await page.evaluate("window.__HALO__.finish()")
    assert state["done"] is True
    assert state["initialfinaldiff"]["updated"]["submission"]["button"] is None
    assert state["progress"] == {}  # outside every ring, and a miss earns no submission milestone
    await context.close()


async def test_playground_boxes_checked_is_the_boxes_real_state(browser, sites_url: str) -> None:
    """Found in review: `boxes_checked` was never unset, so a double-click on the SMS box of
    local.playground-11 (checked, then unchecked, as the env's double_click does) left it paid with
    the box unchecked. It is set while exactly the targets are checked, and the reward service pays
    no milestone for a step that ends with the box unchecked."""
    from halo.schemas import Action, StateSummary
    from halo.settings import REPO_ROOT
    from halo_reward.core import EpisodeMemory, ScoringOptions, score
    from halo_reward.rules import RuleBook
    from tests.reward.helpers import request

    rules = RuleBook.load(REPO_ROOT / "configs" / "rewards").for_domain("playground")
    context, page = await open_site(browser, sites_url, "playground", "local.playground-11")
    box = page.locator('[data-halo-id="check-sms-updates"]')

    async def summary() -> StateSummary:
        return StateSummary(url=page.url, site_state=await page.evaluate("window.__HALO__.finish()"))

    before = await summary()
    at = await box.bounding_box()
    x, y = round(at["x"] + at["width"] / 2), round(at["y"] + at["height"] / 2)
    await page.mouse.dblclick(x, y)
    after = await summary()
    assert not await box.is_checked()
    assert "boxes_checked" not in after.site_state["progress"]
    paid, _ = score(
        request(before, after, domain="playground", action=Action(action="double_click", coordinate=(x, y))),
        EpisodeMemory(),
        rules,
        ScoringOptions(),
    )
    assert paid.milestones == [] and paid.progress == 0.0

    await box.click()  # checked: exactly the target
    assert (await summary()).site_state["progress"] == {"boxes_checked": True}
    await box.click()  # unchecked again: the flag follows
    assert (await summary()).site_state["progress"] == {}
    await page.locator('[data-halo-id="check-email-updates"]').click()
    await box.click()  # SMS and Email: not exactly the target
    assert (await summary()).site_state["progress"] == {}
    assert page.errors == []
    await context.close()
