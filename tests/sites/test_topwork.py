"""Topwork (Upwork-like clone): its local eval scripts on hand-made /finish states (fast tier,
through agisdk's WebCloneEvaluator), and the site in real Chromium (slow tier): state and
milestones after a full flow, byte-identical screens, and what the episode seed changes.

Every task's reference solution (SUCCESS) and wrong solution (FAILURE), and FAILURE at reset, are
replayed through the environment service by ``test_replay.py`` and ``test_real_offline.py``.
"""

from __future__ import annotations

import json

import pytest

from halo_sites.tasks import SOLUTIONS_DIR, evaluate, get_task
from tests.sites.conftest import (
    click,
    local_task_success,
    open_site,
    screen_difference,
    settled_screenshot,
    site_state,
    type_into,
)

# ---- hand-made /finish states ---------------------------------------------------------------------


def finish(saved: list[str] | None = None, offers: list[dict] | None = None) -> dict:
    updated = {"saved": {"savedFreelancerIds": saved}} if saved is not None else {}
    return {
        "site": "topwork",
        "initialfinaldiff": {"added": {}, "updated": updated, "deleted": {}},
        "differences": {
            "jobs": {"added": [], "updated": [], "deleted": []},
            "contacts": {"added": [], "updated": [], "deleted": []},
            "offers": {"added": offers or [], "updated": [], "deleted": []},
        },
        "progress": {},
    }


def offer(**changes) -> dict:
    base = {
        "id": "offer-1",
        "freelancerId": "kevinwright",
        "contractTitle": "Quarterly Forecast Review",
        "hourlyRate": 60,
        "startDate": "2024-08-01",
        "status": "Pending",
    }
    return {**base, **changes}


def test_saving_needs_exactly_emily_chen() -> None:
    assert local_task_success("topwork", 1, finish(saved=["emilychen"])) is True
    assert local_task_success("topwork", 1, finish(saved=["emilychen", "priyapatel"])) is False
    assert local_task_success("topwork", 1, finish(saved=["priyapatel"])) is False
    assert local_task_success("topwork", 1, finish()) is False


def test_offer_task_checks_person_title_rate_and_start() -> None:
    assert local_task_success("topwork", 2, finish(offers=[offer()])) is True
    assert local_task_success("topwork", 2, finish(offers=[offer(contractTitle=" quarterly forecast review ")])) is True
    assert local_task_success("topwork", 2, finish(offers=[offer(hourlyRate=55)])) is False
    assert local_task_success("topwork", 2, finish(offers=[offer(freelancerId="emilychen")])) is False
    assert local_task_success("topwork", 2, finish(offers=[offer(startDate="2024-07-22")])) is False
    assert local_task_success("topwork", 2, finish(offers=[offer(), offer(id="offer-2")])) is False


def test_retrieval_answer_is_normalised() -> None:
    assert local_task_success("topwork", 3, finish(), "Backend Developer for Social Media Platform") is True
    assert local_task_success("topwork", 3, finish(), "backend developer for social media platform.") is True
    assert local_task_success("topwork", 3, finish(), "Full-Stack Developer for Meal Planning App") is False
    assert local_task_success("topwork", 3, finish(), None) is False


# ---- Chromium ------------------------------------------------------------------------------------


async def _replay(page, actions: list[dict]) -> str | None:
    """The environment's element-id actions (click the centre, then type), without the service."""
    answer = None
    for a in actions:
        if "element_id" in a:
            await click(page, a["element_id"])
        if a["action"] == "type":
            await page.keyboard.type(a["text"])
        elif a["action"] == "key":
            await page.keyboard.press("+".join("Control" if k == "ctrl" else k for k in a["keys"]))
        elif a["action"] == "answer":
            answer = a["text"]
    return answer


@pytest.mark.slow
@pytest.mark.browser
async def test_invite_message_offer_and_save_record_state_and_milestones(browser, sites_url: str) -> None:
    context, page = await open_site(browser, sites_url, "topwork", "real-offline.topwork-4")
    await click(page, "nav-talent")
    await type_into(page, "talent-search", "full stack")
    await page.keyboard.press("Enter")
    assert await page.locator(".tcard").count() == 2  # Brandon Martinez, James Wilson
    await click(page, "save-brandonmartinez")
    await click(page, "invite-jameswilson")
    await click(page, "invite-job-job-4")
    await click(page, "send-invite")
    await click(page, "nav-messages")
    await click(page, "contact-alexrodriguez")
    await type_into(page, "message-input", "Happy to help you get set up!")
    await page.keyboard.press("Enter")
    await click(page, "chat-hire")
    await click(page, "send-offer")  # no contract title: refused
    assert "contract title" in await page.locator(".formerr").inner_text()
    await type_into(page, "offer-title", "Project Lead")
    await type_into(page, "offer-description", "Lead the app launch.")
    await click(page, "send-offer")
    state = await site_state(page)
    added, updated = state["initialfinaldiff"]["added"], state["initialfinaldiff"]["updated"]
    james = added["messages"]["contactList"]["jameswilson"]
    assert james["job"] == "Full Stack Engineer" and james["messages"]["0"]["author"] == "Client"
    assert james["messages"]["0"]["jobTitle"] == "Mobile App Developer (React Native)"
    assert added["messages"]["selectedChatId"] == "alexrodriguez"
    alex = added["messages"]["contactList"]["alexrodriguez"]["messages"]
    assert alex["2"]["author"] == "Sarah Johnson" and alex["3"]["offer"]["contractTitle"] == "Project Lead"
    assert updated["messages"]["contactList"]["alexrodriguez"]["unread"] is False
    assert updated["saved"]["savedFreelancerIds"] == ["brandonmartinez"]
    assert [o["status"] for o in state["differences"]["offers"]["added"]] == ["Pending"]
    assert list(state["progress"]) == [
        "talent_search",
        "freelancer_saved",
        "invite_opened",
        "invite_sent",
        "chat_opened",
        "message_sent",
        "offer_form_opened",
        "offer_sent",
    ]
    assert page.errors == []
    await context.close()


@pytest.mark.slow
@pytest.mark.browser
async def test_seed_reorders_and_adds_people_and_screens_are_byte_identical(browser, sites_url: str) -> None:
    orders, shots = {}, []
    for seed in (0, 1, 1):
        context, page = await open_site(browser, sites_url, "topwork", "real-offline.topwork-14", seed=seed)
        await click(page, "nav-talent")
        orders[seed] = await page.locator(".tcard .pname").all_inner_texts()
        if seed == 1:
            shots.append(await settled_screenshot(page))
        await context.close()
    assert orders[0][:3] == ["Ashley Campbell", "Brandon Martinez", "James Wilson"] and len(orders[0]) == 16
    assert orders[1] != orders[0] and set(orders[0]) < set(orders[1])
    assert screen_difference(shots[0], shots[1]) is None


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.parametrize(("task_id", "seed"), [("real-offline.topwork-8", 1), ("local.topwork-3", 2)])
async def test_reference_solutions_pass_under_other_seeds(browser, sites_url: str, task_id: str, seed: int) -> None:
    context, page = await open_site(browser, sites_url, "topwork", task_id, seed=seed)
    actions = json.loads((SOLUTIONS_DIR / f"{task_id}.json").read_text())
    answer = await _replay(page, actions)
    assert evaluate(get_task(task_id), await site_state(page), answer).success, (task_id, seed)
    await context.close()
