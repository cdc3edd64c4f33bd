"""UDriver (Uber-like clone): its local eval scripts on hand-made /finish states (fast tier, through
agisdk's WebCloneEvaluator), and the site itself in real Chromium (slow tier): a booking's state
and milestones, credits that do not cover a ride, byte-identical screens for the same task and
seed, and what the episode seed perturbs (list order) while reference solutions still pass.

Every task's reference solution (SUCCESS), wrong solution (FAILURE) and FAILURE at reset are
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
    play_solution,
    screen_difference,
    settled_screenshot,
    site_state,
    type_into,
)

# ---- hand-made /finish states ---------------------------------------------------------------------


def place(pid: int, name: str) -> dict:
    return {"id": pid, "name": name}


def trip(
    pickup: int,
    dest: int,
    car: str,
    pay: str,
    status: str = "completed",
    date: str = "7/15/2024",
    time: str = "10:30 AM",
) -> dict:
    return {
        "id": "trip-4",
        "pickup": place(pickup, "p"),
        "destination": place(dest, "d"),
        "car": {"type": car, "finalPrice": 16.31},
        "paymentMethod": {"id": pay, "type": pay},
        "date": date,
        "time": time,
        "status": status,
    }


def finish(trips: list | None = None, scheduled: list | None = None) -> dict:
    empty = {"added": [], "updated": [], "deleted": []}
    return {
        "site": "udriver",
        "initialfinaldiff": {"added": {}, "updated": {}, "deleted": {}},
        "differences": {
            "trips": {**empty, "added": trips or []},
            "scheduled": {**empty, "added": scheduled or []},
            "transactions": empty,
            "paymentMethods": empty,
        },
        "progress": {},
    }


def test_scheduled_comfort_ride_to_oracle_park() -> None:
    ok = trip(101, 102, "UdriverComfort", "wallet", "scheduled", "7/20/2024", "9:00 AM")
    assert local_task_success("udriver", 1, finish(scheduled=[ok])) is True
    assert local_task_success("udriver", 1, finish(scheduled=[{**ok, "time": "9:30 AM"}])) is False
    assert local_task_success("udriver", 1, finish(scheduled=[{**ok, "car": {"type": "UdriverX"}}])) is False
    # Taken now instead of scheduled.
    assert local_task_success("udriver", 1, finish(trips=[{**ok, "status": "completed"}])) is False
    assert local_task_success("udriver", 1, finish()) is False


def test_cheapest_ride_paid_in_cash() -> None:
    ok = trip(103, 105, "UdriverComfort", "cash")
    assert local_task_success("udriver", 2, finish(trips=[ok])) is True
    assert local_task_success("udriver", 2, finish(trips=[{**ok, "car": {"type": "UdriverX"}}])) is False
    assert local_task_success("udriver", 2, finish(trips=[{**ok, "paymentMethod": {"type": "wallet"}}])) is False
    assert local_task_success("udriver", 2, finish(trips=[trip(105, 103, "UdriverComfort", "cash")])) is False
    assert local_task_success("udriver", 2, finish(trips=[ok, ok])) is False


def test_price_of_the_july_9_ride() -> None:
    for answer in ("$16.60", "16.6", "It was $16.60."):
        assert local_task_success("udriver", 3, finish(), answer) is True, answer
    for answer in ("$16.31", "", "sixteen"):
        assert local_task_success("udriver", 3, finish(), answer) is False, answer


# ---- the site in Chromium ---------------------------------------------------------------------------


async def choose(page, field: str, text: str, place_id: int) -> None:
    await type_into(page, field, text)
    await click(page, f"suggestion-{place_id}")


async def replay_in_page(page, task_id: str) -> None:
    """A reference solution's element-id actions, played with Playwright (the env does the same)."""
    await play_solution(page, json.loads((SOLUTIONS_DIR / f"{task_id}.json").read_text()))


@pytest.mark.slow
@pytest.mark.browser
async def test_booking_records_real_state_and_credits_must_cover_the_ride(browser, sites_url: str) -> None:
    context, page = await open_site(browser, sites_url, "udriver", "real-offline.udriver-11")
    await choose(page, "pickup", "Club X", 201)
    await choose(page, "dropoff", "Fox Plaza", 723)
    await click(page, "search-rides")
    # UdriverX costs $26.40 and the credits are $25.50: refused, nothing booked.
    await click(page, "request-ride")
    assert "Not enough Udriver Credits" in await page.locator(".err").inner_text()
    state = await site_state(page)
    assert state["initialfinaldiff"]["added"]["ride"]["trip"] is None
    await click(page, "ride-UdriverComfort")
    await click(page, "request-ride")
    state = await site_state(page)
    added = state["initialfinaldiff"]["added"]
    booked = added["ride"]["trip"]
    assert (booked["pickup"]["id"], booked["destination"]["id"], booked["car"]["type"]) == (201, 723, "UdriverComfort")
    assert booked["car"]["finalPrice"] == 24.75 and booked["status"] == "completed"
    assert added["user"]["wallet"]["balance"] == 0.75
    assert added["user"]["wallet"]["transactions"][-1]["description"] == "Trip to Fox Plaza Apartments"
    assert list(state["progress"]) == ["pickup_set", "dropoff_set", "prices_shown", "ride_selected", "ride_requested"]
    assert evaluate(get_task("real-offline.udriver-11"), state).success is True
    assert page.errors == []
    await context.close()


@pytest.mark.slow
@pytest.mark.browser
async def test_same_seed_same_screens_other_seeds_reorder_and_solutions_still_pass(browser, sites_url: str) -> None:
    shots, orders = [], {}
    for seed in (0, 0, 1):
        context, page = await open_site(browser, sites_url, "udriver", "real-offline.udriver-20", seed=seed)
        await click(page, "pickup")
        orders[seed] = await page.locator(".sugg-row").evaluate_all("rows => rows.map(r => r.dataset.haloId)")
        await choose(page, "pickup", "Club 26", 254)
        await choose(page, "dropoff", "100 Van Ness", 717)
        await click(page, "search-rides")
        shots.append(await settled_screenshot(page))
        await context.close()
    assert screen_difference(shots[0], shots[1]) is None
    assert shots[0] != shots[2]
    assert sorted(orders[0]) == sorted(orders[1]) and orders[0] != orders[1]
    for seed in (1, 2):
        for task_id in ("real-offline.udriver-20",):
            context, page = await open_site(browser, sites_url, "udriver", task_id, seed=seed)
            await replay_in_page(page, task_id)
            assert evaluate(get_task(task_id), await site_state(page)).success is True, (task_id, seed)
            await context.close()
