"""Marrisuite (Marriott-like clone): its local eval scripts on hand-made /finish states (fast tier,
through agisdk's WebCloneEvaluator), and the site in real Chromium (slow tier): state and milestones
after a search and a booking, byte-identical screens for the same task and seed, what the seed
perturbs, and reference solutions passing under other seeds.

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

SITE = "marrisuite"
KING = {
    "id": "res-2001",
    "hotelId": "gol-courtfield",
    "roomId": "king",
    "checkIn": "2024-07-26",
    "checkOut": "2024-07-28",
    "rooms": 1,
    "guests": 2,
    "guestName": "Jordan Lee",
    "email": "jordan.lee@example.com",
    "status": "confirmed",
}


def finish(added: list | None = None, updated: list | None = None) -> dict:
    return {
        "site": SITE,
        "initialfinaldiff": {"added": {}, "updated": {}, "deleted": {}},
        "differences": {"reservations": {"added": added or [], "updated": updated or [], "deleted": []}},
        "progress": {},
    }


def test_booking_task_checks_hotel_room_dates_guests_and_name() -> None:
    assert local_task_success(SITE, 1, finish([KING])) is True
    assert local_task_success(SITE, 1, finish([{**KING, "guestName": " jordan lee "}])) is True
    assert local_task_success(SITE, 1, finish([{**KING, "roomId": "queen2"}])) is False
    assert local_task_success(SITE, 1, finish([{**KING, "checkOut": "2024-07-27"}])) is False
    assert local_task_success(SITE, 1, finish([{**KING, "guests": 1}])) is False
    assert local_task_success(SITE, 1, finish([KING, {**KING, "id": "res-2002"}])) is False
    assert local_task_success(SITE, 1, finish()) is False


def test_cheapest_rate_answer_in_any_format() -> None:
    for answer in ("$149", "149", "$149.00 per night", "USD 149"):
        assert local_task_success(SITE, 2, finish(), answer=answer) is True, answer
    for answer in ("$169", "149 or 169", "", "one hundred"):
        assert local_task_success(SITE, 2, finish(), answer=answer) is False, answer


def test_cancel_task_needs_chicago_cancelled_and_miami_kept() -> None:
    chicago = {"id": "res-1001", "status": "cancelled"}
    assert local_task_success(SITE, 3, finish(updated=[chicago])) is True
    assert local_task_success(SITE, 3, finish(updated=[chicago, {"id": "res-1002", "status": "cancelled"}])) is False
    assert local_task_success(SITE, 3, finish(updated=[{"id": "res-1002", "status": "cancelled"}])) is False
    assert local_task_success(SITE, 3, finish([KING], [chicago])) is False


# ---- Chromium ---------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.browser
async def test_search_and_booking_record_state_and_milestones_and_screens_are_byte_identical(
    browser, sites_url: str
) -> None:
    actions = json.loads((SOLUTIONS_DIR / "local.marrisuite-1.json").read_text())
    shots, states = [], []
    for _ in range(2):
        context, page = await open_site(browser, sites_url, SITE, "local.marrisuite-1", seed=2)
        await play_solution(page, actions)
        shots.append(await settled_screenshot(page))
        states.append(await site_state(page))
        assert page.errors == []
        await context.close()
    assert screen_difference(shots[0], shots[1]) is None
    st = states[0]
    diff = st["initialfinaldiff"]
    assert diff["updated"]["search"]["destination"] == "Goleta, California, USA"
    assert diff["updated"]["router"]["location"]["pathname"] == "/reservation/confirmation.mi"
    [res] = st["differences"]["reservations"]["added"]
    assert (res["hotelId"], res["roomId"], res["nights"], res["total"]) == ("gol-courtfield", "king", 2, 378)
    assert diff["updated"]["ui"]["notification"] == "Thanks for booking! Your reservation is confirmed."
    for m in (
        "search_submitted",
        "search_results",
        "hotel_viewed",
        "room_selected",
        "booking_form",
        "reservation_confirmed",
    ):
        assert st["progress"].get(m) is True, m


@pytest.mark.slow
@pytest.mark.browser
async def test_seed_reorders_results_and_reference_solutions_pass_under_seeds_1_and_2(browser, sites_url: str) -> None:
    orders = {}
    for seed in (0, 1):
        context, page = await open_site(browser, sites_url, SITE, seed=seed)
        await type_into(page, "destination", "Goleta")
        await click(page, "find-hotels")
        orders[seed] = await page.eval_on_selector_all(
            "[data-halo-id^=hotel-]", "els => els.map(e => e.dataset.haloId)"
        )
        await context.close()
    assert orders[0] != orders[1] and sorted(orders[0]) == sorted(orders[1])
    for seed, task_id in ((1, "real-offline.marrisuite-8"), (2, "local.marrisuite-2")):
        context, page = await open_site(browser, sites_url, SITE, task_id, seed=seed)
        answer = await play_solution(page, json.loads((SOLUTIONS_DIR / f"{task_id}.json").read_text()))
        assert evaluate(get_task(task_id), await site_state(page), answer).success, (task_id, seed)
        await context.close()


@pytest.mark.slow
@pytest.mark.browser
async def test_dates_are_picked_on_a_two_month_calendar_as_on_marriott(browser, sites_url: str) -> None:
    context, page = await open_site(browser, sites_url, SITE, "real-offline.marrisuite-8")
    days = '[data-halo-id^="day-"]'

    async def field(halo_id: str) -> str:
        return await page.locator(f'[data-halo-id="{halo_id}"] b').inner_text()

    assert await page.locator('[data-halo-id="check-in"]').evaluate("e => e.tagName") == "BUTTON"
    await click(page, "check-in")
    shown = await page.eval_on_selector_all(days, "els => els.map(e => e.dataset.haloId)")
    assert shown[0] == "day-2024-07-01" and shown[-1] == "day-2024-08-31"
    assert await page.locator('[data-halo-id="day-2024-07-14"]').is_disabled()  # "today" is 2024-07-15
    assert await page.locator('[data-halo-id="cal-prev"]').is_disabled()
    for day in ("2024-07-26", "2024-07-20", "2024-07-22"):  # an earlier day starts the stay again
        await click(page, f"day-{day}")
    assert (await field("check-in"), await field("check-out")) == ("Sat, Jul 20, 2024", "Mon, Jul 22, 2024")
    await click(page, "cal-next")
    assert await page.locator(days).first.get_attribute("data-halo-id") == "day-2024-08-01"
    await click(page, "dates-clear")
    assert (await field("check-in"), await field("check-out")) == ("Add date", "Add date")
    for halo_id in ("day-2024-08-30", "day-2024-09-02", "dates-done"):
        await click(page, halo_id)
    assert await page.locator(days).count() == 0
    await type_into(page, "destination", "Goleta, California")
    await click(page, "find-hotels")
    search = (await site_state(page))["initialfinaldiff"]["updated"]["search"]
    assert (search["checkIn"], search["checkOut"]) == ("2024-08-30", "2024-09-02")
    assert page.errors == []
    await context.close()
