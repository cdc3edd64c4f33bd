"""DashDish (DoorDash-like clone): its local eval scripts on hand-made /finish states (fast tier,
through agisdk's WebCloneEvaluator), and the site itself in real Chromium (slow tier): an order's
state and milestones, the seed's perturbations (store order, distractor stores) under which a
reference solution still passes, and byte-identical screens for the same task and seed.

Every task's reference solution (SUCCESS) and wrong solution (FAILURE), and FAILURE at reset, are
replayed through the environment service by the shared ``test_replay.py`` and
``test_real_offline.py``.
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


def order(
    restaurant: str,
    items: list[tuple[str, str, int]],
    shipping: str = "Delivery",
    speed: str | None = "Standard",
    tip: float = 3.0,
    oid: str = "DD-10004",
) -> dict:
    return {
        "id": oid,
        "orderId": oid,
        "restaurantName": restaurant,
        "cartItems": [
            {"name": n, "size": s, "quantity": q, "price": 1.0, "restaurantName": restaurant} for n, s, q in items
        ],
        "checkoutDetails": {
            "shipping": {"shippingOption": shipping, "deliveryOption": speed if shipping == "Delivery" else None},
            "charges": {"tip": tip if shipping == "Delivery" else 0, "totalAmount": 20.0},
        },
    }


def finish(*orders: dict) -> dict:
    added = {o["orderId"]: o for o in orders}
    return {
        "site": "dashdish",
        "initialfinaldiff": {"added": {"cart": {"foodOrders": added}} if added else {}, "updated": {}, "deleted": {}},
        "differences": {"foodOrders": {"added": added, "updated": {}, "deleted": {}}},
        "progress": {},
    }


def test_pickup_burger_order_needs_exactly_two_cheeseburgers_for_pickup() -> None:
    two = [("Classic Cheeseburger", "", 2)]
    assert local_task_success("dashdish", 1, finish(order("Burger Barn", two, "Pickup"))) is True
    assert local_task_success("dashdish", 1, finish(order("Burger Barn", two, "Delivery"))) is False
    assert (
        local_task_success("dashdish", 1, finish(order("Burger Barn", [("Classic Cheeseburger", "", 1)], "Pickup")))
        is False
    )
    extra = [*two, ("French Fries", "Regular", 1)]
    assert local_task_success("dashdish", 1, finish(order("Burger Barn", extra, "Pickup"))) is False
    assert local_task_success("dashdish", 1, finish()) is False


def test_latest_golden_wok_total_is_the_answer() -> None:
    assert local_task_success("dashdish", 2, finish(), answer="$34.34") is True
    assert local_task_success("dashdish", 2, finish(), answer="34.34 dollars") is True
    assert local_task_success("dashdish", 2, finish(), answer="$28.17") is False
    assert local_task_success("dashdish", 2, finish(), answer="") is False


def test_pizza_order_checks_size_speed_and_tip() -> None:
    items = [("Pepperoni Pizza", 'Large 14"', 1), ("Garlic Knots (6)", "", 1)]
    assert local_task_success("dashdish", 3, finish(order("Tony's Pizzeria", items, speed="Express", tip=5))) is True
    assert local_task_success("dashdish", 3, finish(order("Tony's Pizzeria", items, speed="Express", tip=3))) is False
    assert local_task_success("dashdish", 3, finish(order("Tony's Pizzeria", items, speed="Standard", tip=5))) is False
    medium = [("Pepperoni Pizza", 'Medium 12"', 1), ("Garlic Knots (6)", "", 1)]
    assert local_task_success("dashdish", 3, finish(order("Tony's Pizzeria", medium, speed="Express", tip=5))) is False


# ---- the site in Chromium ---------------------------------------------------------------------------


async def _store_ids(page) -> list[str]:
    return await page.eval_on_selector_all('[data-halo-id^="store-"]', "els => els.map(e => e.dataset.haloId)")


@pytest.mark.slow
@pytest.mark.browser
async def test_an_order_records_reals_shape_clears_the_cart_and_reaches_every_milestone(
    browser, sites_url: str
) -> None:
    context, page = await open_site(browser, sites_url, "dashdish", "real-offline.dashdish-26")
    await type_into(page, "search", "wingstop")
    await page.keyboard.press("Enter")
    await click(page, "store-wingstop")
    await click(page, "item-ws-1")
    await click(page, "size-1")
    await click(page, "dialog-plus")
    await click(page, "dialog-add")
    await click(page, "nav-cart")
    await click(page, "cart-minus-ws-1-s1")
    await click(page, "checkout")
    await click(page, "shipping-pickup")
    assert "Place Pickup Order" in await page.locator('[data-halo-id="place-order"]').inner_text()
    await click(page, "place-order")
    state = await site_state(page)
    orders = state["differences"]["foodOrders"]["added"]
    assert list(orders) == ["DD-10001"] and state["initialfinaldiff"]["added"]["cart"]["foodOrders"] == orders
    o = orders["DD-10001"]
    assert [(i["name"], i["size"], i["quantity"], i["restaurantName"]) for i in o["cartItems"]] == [
        ("Lemon Pepper Wings", "10 pc", 1, "Wingstop")
    ]
    assert o["checkoutDetails"]["shipping"]["shippingOption"] == "Pickup"
    # $13.99 + 10% service ($1.40) + 9% tax ($1.26); no delivery fee or tip for pickup.
    assert o["checkoutDetails"]["charges"]["totalAmount"] == 16.65
    assert "cartItems" not in json.dumps(state["initialfinaldiff"]["updated"])  # the emptied cart is no order
    assert list(state["progress"]) == [
        "search_results",
        "store_page",
        "add_to_cart",
        "cart_opened",
        "checkout",
        "order_placed",
        "order_viewed",
    ]
    assert await page.locator('[data-halo-id="nav-cart"]').inner_text() == "0"
    assert page.errors == []
    await context.close()


@pytest.mark.slow
@pytest.mark.browser
async def test_the_seed_reorders_stores_adds_distractors_and_the_reference_still_passes(
    browser, sites_url: str
) -> None:
    context, page = await open_site(browser, sites_url, "dashdish", "real-offline.dashdish-17", seed=0)
    canonical = await _store_ids(page)
    await context.close()
    solution = json.loads((SOLUTIONS_DIR / "real-offline.dashdish-17.json").read_text())
    for seed in (1, 2):
        context, page = await open_site(browser, sites_url, "dashdish", "real-offline.dashdish-17", seed=seed)
        ids = await _store_ids(page)
        assert ids != canonical and set(canonical) < set(ids) and len(ids) == len(canonical) + 2
        await play_solution(page, solution)
        assert evaluate(get_task("real-offline.dashdish-17"), await site_state(page)).success is True, seed
        assert page.errors == []
        await context.close()


@pytest.mark.slow
@pytest.mark.browser
async def test_same_task_and_seed_give_byte_identical_screens(browser, sites_url: str) -> None:
    shots = []
    for _ in range(2):
        context, page = await open_site(browser, sites_url, "dashdish", "local.dashdish-3", seed=1)
        await type_into(page, "search", "pepperoni pizza")
        await page.keyboard.press("Enter")
        await click(page, "item-tp-2")
        await click(page, "size-2")
        shots.append(await settled_screenshot(page))
        await context.close()
    assert screen_difference(shots[0], shots[1]) is None
