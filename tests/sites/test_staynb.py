"""Staynb (Airbnb-like clone): its local eval scripts on hand-made /finish states (fast tier, through
agisdk's WebCloneEvaluator), and the site itself in real Chromium (slow tier): a whole search and
booking flow's state and milestones, byte-identical screens for the same task and seed, and what
the episode seed perturbs (list order, distractors) without breaking a reference solution.

Every task's reference and wrong solutions (REAL's staynb tasks and the local ones) are replayed
through the environment service by ``test_real_offline.py`` and ``test_replay.py``.
"""

from __future__ import annotations

import json
from functools import partial

import pytest

from halo_sites.tasks import SOLUTIONS_DIR, evaluate, get_task
from tests.sites.conftest import click as _click
from tests.sites.conftest import local_task_success, open_site, screen_difference, settled_screenshot
from tests.sites.conftest import site_state as _state
from tests.sites.conftest import type_into as _type

# ---- hand-made /finish states ---------------------------------------------------------------------


def stay(sid: str) -> dict:
    return {"id": sid, "title": f"title of {sid}", "rooms": {"bedrooms": 2, "beds": 2, "bathrooms": 1}}


def booking(sid: str, start: str, end: str, adults: int, card: str = "4242") -> dict:
    return {
        "id": "1",
        "stayId": sid,
        "startDate": f"{start}T00:00:00.000Z",
        "endDate": f"{end}T00:00:00.000Z",
        "guests": {"Adults": adults, "Children": 0, "Infants": 0, "Pets": 0},
        "cardLast4": card,
    }


def finish(wishlists: list | None = None, bookings: list | None = None) -> dict:
    return {
        "site": "staynb",
        "initialfinaldiff": {"added": {}, "updated": {}, "deleted": {}},
        "differences": {
            "wishlists": {"added": wishlists or [], "updated": [], "deleted": []},
            "bookings": {"added": bookings or [], "updated": [], "deleted": []},
            "shares": {"added": [], "updated": [], "deleted": []},
        },
        "progress": {},
    }


success = partial(local_task_success, "staynb")


def test_wishlist_task_needs_the_name_and_exactly_the_stay() -> None:
    assert success(1, finish([{"id": "1", "name": "Lisbon 2024", "stays": [stay("lis2")]}])) is True
    assert success(1, finish([{"id": "1", "name": " lisbon  2024", "stays": [stay("lis2")]}])) is True
    assert success(1, finish([{"id": "1", "name": "Lisbon 2024", "stays": [stay("lis1")]}])) is False
    assert success(1, finish([{"id": "1", "name": "Lisbon", "stays": [stay("lis2")]}])) is False
    assert success(1, finish([{"id": "1", "name": "Lisbon 2024", "stays": [stay("lis2"), stay("lis1")]}])) is False
    assert success(1, finish()) is False


def test_booking_task_checks_stay_dates_guests_and_card() -> None:
    assert success(2, finish(bookings=[booking("kyo3", "2024-08-12", "2024-08-16", 2)])) is True
    assert success(2, finish(bookings=[booking("kyo3", "2024-08-12", "2024-08-15", 2)])) is False
    assert success(2, finish(bookings=[booking("kyo1", "2024-08-12", "2024-08-16", 2)])) is False
    assert success(2, finish(bookings=[booking("kyo3", "2024-08-12", "2024-08-16", 3)])) is False
    assert success(2, finish(bookings=[booking("kyo3", "2024-08-12", "2024-08-16", 2, card="1111")])) is False
    assert success(2, finish()) is False


def test_retrieval_answer_is_normalised_to_digits() -> None:
    assert success(3, finish(), answer="$106") is True
    assert success(3, finish(), answer="106 USD per night") is True
    assert success(3, finish(), answer="$144") is False
    assert success(3, finish(), answer=None) is False


# ---- the site in Chromium ---------------------------------------------------------------------------


async def _ids(page, prefix: str) -> list[str]:
    return await page.evaluate(
        "p => Array.from(document.querySelectorAll('[data-halo-id^=\"' + p + '\"]')).map(e => e.getAttribute('data-halo-id'))",
        prefix,
    )


async def _stay_ids(page) -> list[str]:
    return await page.evaluate("HALO.site().stays().map(s => s.id)")


async def _play(page, task_id: str) -> None:
    """A reference solution's element actions, as the environment performs them."""
    for a in json.loads((SOLUTIONS_DIR / f"{task_id}.json").read_text()):
        if a["action"] in ("terminate", "answer"):
            return
        if a["action"] == "type":
            await _type(page, a["element_id"], a["text"])
        elif a["action"] == "key":
            await page.keyboard.press(a["keys"][0])
        else:
            await _click(page, a["element_id"])


@pytest.mark.slow
@pytest.mark.browser
async def test_search_filters_and_booking_record_real_state_and_milestones(browser, sites_url: str) -> None:
    context, page = await open_site(browser, sites_url, "staynb", "local.staynb-2")
    await _type(page, "destination", "Kyo")
    assert "suggest-kyoto-japan" in await _ids(page, "suggest-")
    await page.keyboard.press("Enter")
    for day in ("2024-08-12", "2024-08-16"):
        await _click(page, f"day-{day}")
    await _click(page, "search-who")
    await _click(page, "adults-plus")
    await _click(page, "adults-plus")
    await _click(page, "search-button")
    assert await _ids(page, "stay-") == ["stay-kyo1", "stay-kyo2", "stay-kyo3", "stay-kyo4"]
    await _click(page, "filters")
    await _click(page, "amenity-ac")
    await _click(page, "filters-apply")
    assert await _ids(page, "stay-") == ["stay-kyo1", "stay-kyo3", "stay-kyo4"]
    await _click(page, "stay-kyo3")
    await _click(page, "reserve")
    await _click(page, "confirm-pay")  # empty card fields: errors, no booking
    state = await _state(page)
    assert state["initialfinaldiff"]["updated"]["booking"]["errors"]["cardNumber"]
    assert state["initialfinaldiff"]["updated"]["booking"]["isBooking"] is True
    await _play_payment(page)
    state = await _state(page)
    search = state["initialfinaldiff"]["added"]["search"]
    assert search["appliedDestination"] == "Kyoto, Japan"
    assert search["appliedDates"] == {"startDate": "2024-08-12T00:00:00.000Z", "endDate": "2024-08-16T00:00:00.000Z"}
    assert search["appliedGuestCounts"] == {"Adults": 2, "Children": 0, "Infants": 0, "Pets": 0}
    assert search["appliedFilters"]["amenities"] == ["Air conditioning"]
    [made] = state["differences"]["bookings"]["added"]
    assert (made["stayId"], made["nights"], made["total"], made["cardLast4"]) == ("kyo3", 4, 144 * 4 + 50 + 81, "4242")
    assert list(state["progress"]) == [
        "destination_set",
        "dates_set",
        "guests_set",
        "search",
        "filters_applied",
        "listing_viewed",
        "reserve_clicked",
        "booking_confirmed",
    ]
    assert page.errors == []
    await context.close()


async def _play_payment(page) -> None:
    for hid, text in (
        ("card-number", "4242 4242 4242 4242"),
        ("card-expiration", "08/27"),
        ("card-cvv", "321"),
        ("card-zip", "94103"),
    ):
        await _type(page, hid, text)
    await _click(page, "confirm-pay")


@pytest.mark.slow
@pytest.mark.browser
async def test_same_task_and_seed_give_identical_screens_and_seeds_perturb_only_what_no_task_fixes(
    browser, sites_url: str
) -> None:
    context, page = await open_site(browser, sites_url, "staynb", "real-offline.staynb-6")
    base, base_stays = await _ids(page, "stay-"), await _stay_ids(page)
    await context.close()
    shots, orders, stays = [], {}, {}
    for seed in (1, 1, 2):
        context, page = await open_site(browser, sites_url, "staynb", "real-offline.staynb-6", seed=seed)
        orders[seed], stays[seed] = await _ids(page, "stay-"), await _stay_ids(page)
        await _play(page, "real-offline.staynb-6")
        if seed == 1:
            shots.append(await settled_screenshot(page))
        state = await _state(page)
        # The reference solution still saves the same stay whatever the order and the distractors.
        [wishlist] = state["differences"]["wishlists"]["added"]
        assert [s["id"] for s in wishlist["stays"]] == ["cpt2"]
        assert evaluate(get_task("real-offline.staynb-6"), state).success is True
        assert page.errors == []
        await context.close()
    assert screen_difference(shots[0], shots[1]) is None
    assert orders[1] != base and orders[2] != orders[1]
    # Seeds add distractor stays (x1, x2, ...) only; every canonical stay is still there.
    for seed in (1, 2):
        assert set(base_stays) < set(stays[seed])
        assert all(i.startswith("x") for i in set(stays[seed]) - set(base_stays))
