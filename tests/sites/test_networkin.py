"""NetworkIn (LinkedIn-like clone): its local eval scripts on hand-made /finish states (fast tier,
through agisdk's WebCloneEvaluator), and the site in real Chromium (slow tier): state and milestones
after a full flow, byte-identical screens for the same task and seed, what the seed perturbs, and
reference solutions passing under other seeds.

Every task's reference and wrong solutions (local and REAL v2) are replayed through the environment
service by the shared ``test_replay.py`` and ``test_real_offline.py``.
"""

from __future__ import annotations

import json

import pytest

from halo_sites.tasks import SOLUTIONS_DIR, evaluate, get_task
from tests.sites.conftest import (
    click,
    local_task_success,
    open_site,
    play_solution,
    screen_difference,
    settled_screenshot,
    site_state,
    type_into,
)

SITE = "networkin"


def finish(follows: dict | None = None, posts: list | None = None, chats: list | None = None) -> dict:
    added = {"ui": {"followedCompanies": follows}} if follows else {}
    return {
        "site": SITE,
        "initialfinaldiff": {"added": added, "updated": {}, "deleted": {}},
        "differences": {
            "posts": {"added": [], "updated": posts or [], "deleted": []},
            "chats": {"added": [], "updated": chats or [], "deleted": []},
        },
        "progress": {},
    }


def shared(post_id: str, author: str = "divgarg") -> dict:
    return {"id": "m-1", "authorId": author, "type": "post", "message": "", "postData": {"id": post_id}}


def test_follow_task_needs_exactly_nvidia_and_openai() -> None:
    assert local_task_success(SITE, 1, finish({"nvidia": True, "openai": True})) is True
    assert local_task_success(SITE, 1, finish({"nvidia": True})) is False
    assert local_task_success(SITE, 1, finish({"nvidia": True, "openai": True, "apple": True})) is False
    assert local_task_success(SITE, 1, finish()) is False


def test_retrieval_names_the_employer_only() -> None:
    assert local_task_success(SITE, 2, finish(), answer="Microsoft") is True
    assert local_task_success(SITE, 2, finish(), answer="She works at microsoft (Azure AI)") is True
    assert local_task_success(SITE, 2, finish(), answer="Google") is False
    assert local_task_success(SITE, 2, finish(), answer="Microsoft or Google") is False


def test_like_and_send_needs_both_on_the_right_post_and_person() -> None:
    liked = {"id": "post-3", "liked": True}
    sarah = {"id": "sarahchen", "messages": [shared("post-3")]}
    assert local_task_success(SITE, 3, finish(posts=[liked], chats=[sarah])) is True
    assert local_task_success(SITE, 3, finish(chats=[sarah])) is False
    assert (
        local_task_success(SITE, 3, finish(posts=[liked], chats=[{"id": "davidkim", "messages": [shared("post-3")]}]))
        is False
    )
    assert (
        local_task_success(SITE, 3, finish(posts=[liked], chats=[{"id": "sarahchen", "messages": [shared("post-1")]}]))
        is False
    )


# ---- Chromium ---------------------------------------------------------------------------------------


async def connect_post_and_share(page) -> None:
    await type_into(page, "search", "new york")
    await page.keyboard.press("Enter")
    await click(page, "connect-jasonpark")
    await click(page, "invite-add-note")
    await type_into(page, "invite-note", "Join my new project?")
    await click(page, "invite-send")
    await click(page, "nav-home")
    await click(page, "start-post")
    await type_into(page, "post-text", "Networking night on Friday, DM me!")
    await click(page, "post-submit")
    await click(page, "send-post-101")
    await click(page, "share-kevinlee")
    await click(page, "share-jasonpark")
    await click(page, "share-send")


@pytest.mark.slow
@pytest.mark.browser
async def test_flow_records_reals_state_and_milestones_and_screens_are_byte_identical(browser, sites_url: str) -> None:
    shots, states = [], []
    for _ in range(2):
        context, page = await open_site(browser, sites_url, SITE, "real-offline.networkin-11", seed=3)
        await connect_post_and_share(page)
        await click(page, "nav-messaging")
        await click(page, "chat-jasonpark")
        shots.append(await settled_screenshot(page))
        states.append(await site_state(page))
        assert page.errors == []
        await context.close()
    assert screen_difference(shots[0], shots[1]) is None
    added = states[0]["initialfinaldiff"]["added"]
    assert list(added["contactList"].values()) == ["jasonpark"]
    rooms = added["ui"]["messaging"]["chatroomData"]
    assert [m["type"] for m in rooms["jasonpark"]["messages"]] == ["system", "text", "system", "post"]
    assert rooms["kevinlee"]["messages"][0]["postData"]["id"] == "post-101"
    post = added["ui"]["feed"]["postDynamicData"]["post-101"]
    assert (post["type"], post["authorId"]) == ("self-post", "divgarg")
    assert added["ui"]["searchHistory"]["2"]["searchTerm"] == "new york"
    for m in (
        "search_done",
        "connect_opened",
        "connection_made",
        "post_composer_opened",
        "post_created",
        "share_opened",
        "post_shared",
        "chat_opened",
    ):
        assert states[0]["progress"].get(m) is True, m
    assert evaluate(get_task("real-offline.networkin-11"), states[0]).success


@pytest.mark.slow
@pytest.mark.browser
async def test_seed_reorders_lists_and_reference_solutions_pass_under_seeds_1_and_2(browser, sites_url: str) -> None:
    orders = {}
    for seed in (0, 1):
        context, page = await open_site(browser, sites_url, SITE, seed=seed)
        await click(page, "nav-network")
        orders[seed] = await page.eval_on_selector_all(
            ".pcard [data-halo-id^=person-]", "els => els.map(e => e.dataset.haloId)"
        )
        await context.close()
    assert orders[0] != orders[1] and set(orders[0]) <= set(orders[1])
    for seed, task_id in ((1, "local.networkin-3"), (2, "real-offline.networkin-5")):
        context, page = await open_site(browser, sites_url, SITE, task_id, seed=seed)
        actions = json.loads((SOLUTIONS_DIR / f"{task_id}.json").read_text())
        answer = await play_solution(page, actions)
        assert evaluate(get_task(task_id), await site_state(page), answer).success, (task_id, seed)
        await context.close()
