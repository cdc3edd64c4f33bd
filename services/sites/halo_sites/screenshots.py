"""Screenshots of each clone's main pages at 1280x720 for the docs.

    python -m halo_sites.screenshots [--out docs/img/sites] [--only gomail]

Starts the clone server on a free port, opens each page in Chromium (async Playwright) and saves
``<out>/<site>-<page>.png``. A page is a task reset (``/config``), a hash route and a few clicks on
``data-halo-id`` controls, so the pictures show real states, not mock-ups.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
from pathlib import Path

from playwright.async_api import async_playwright

from halo.logging import setup_logging
from halo_sites.in_process import serving_clones

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

# (file stem, site, task id or None, hash route, [(action, halo-id, text)])
PAGES: list[tuple[str, str, str | None, str, list[tuple[str, str, str]]]] = [
    ("playground-click-fixed", "playground", "local.playground-1", "", []),
    ("playground-click-moving", "playground", "local.playground-2", "", []),
    ("playground-click-named", "playground", "local.playground-5", "", []),
    ("playground-type", "playground", "local.playground-7", "", []),
    ("playground-select", "playground", "local.playground-9", "", [("click", "dropdown", "")]),
    ("playground-check", "playground", "local.playground-10", "", []),
    ("gomail-inbox", "gomail", None, "#/inbox", []),
    ("gomail-email", "gomail", None, "#/inbox", [("click", "email-e01", "")]),
    (
        "gomail-compose",
        "gomail",
        None,
        "#/inbox",
        [("click", "compose", ""), ("fill", "to", "sam.lee@acme.com"), ("fill", "subject", "Lunch on Friday")],
    ),
    ("gomail-sent", "gomail", None, "#/sent", []),
    ("gomail-search", "gomail", None, "#/search/deals", []),
    ("gocalendar-week", "gocalendar", None, "#/week", []),
    ("gocalendar-month", "gocalendar", None, "#/month", []),
    ("gocalendar-create", "gocalendar", None, "#/week", [("click", "create", "")]),
    ("gocalendar-event", "gocalendar", None, "#/week", [("click", "event-ev01", "")]),
    ("omnizon-home", "omnizon", None, "#/", []),
    ("omnizon-search", "omnizon", None, "#/s?k=kitchen", []),
    ("omnizon-product", "omnizon", None, "#/dp/p04", [("click", "qty-plus", ""), ("click", "add-to-cart", "")]),
    ("omnizon-cart", "omnizon", "local.omnizon-8", "#/cart", []),
    (
        "omnizon-checkout",
        "omnizon",
        "local.omnizon-11",
        "#/checkout",
        [
            ("fill", "full-name", "Alex Morgan"),
            ("fill", "street", "410 Pine Street, Apt 5"),
            ("fill", "city", "Seattle"),
        ],
    ),
    ("omnizon-orders", "omnizon", None, "#/orders", []),
    ("zilloft-home", "zilloft", None, "", []),
    ("zilloft-results", "zilloft", None, "#/homes/austin-tx", []),
    ("zilloft-filters", "zilloft", None, "#/homes/denver-co", [("click", "filter-beds", ""), ("click", "beds-3", "")]),
    ("zilloft-listing", "zilloft", None, "#/homedetails/sea1", [("click", "save-home", "")]),
    ("dashdish-home", "dashdish", None, "#/", []),
    ("dashdish-store", "dashdish", None, "#/store/wingstop", [("click", "item-ws-1", ""), ("click", "size-1", "")]),
    (
        "dashdish-checkout",
        "dashdish",
        None,
        "#/store/tonys-pizzeria",
        [
            ("click", "item-tp-2", ""),
            ("click", "size-2", ""),
            ("click", "dialog-add", ""),
            ("click", "add-tp-6", ""),
            ("click", "nav-cart", ""),
            ("click", "checkout", ""),
            ("click", "delivery-express", ""),
        ],
    ),
    ("dashdish-orders", "dashdish", "local.dashdish-2", "#/orders", []),
    (
        "udriver-ride",
        "udriver",
        None,
        "#/",
        [("fill", "pickup", "Ferry Building"), ("click", "suggestion-101", ""), ("fill", "dropoff", "7/11")],
    ),
    (
        "udriver-options",
        "udriver",
        None,
        "#/",
        [
            ("fill", "pickup", "Ferry Building"),
            ("click", "suggestion-101", ""),
            ("fill", "dropoff", "Oracle Park"),
            ("click", "suggestion-102", ""),
            ("click", "search-rides", ""),
            ("click", "ride-UdriverComfort", ""),
        ],
    ),
    ("udriver-wallet", "udriver", None, "#/wallet", [("click", "add-funds", ""), ("click", "amount-50", "")]),
    ("udriver-trips", "udriver", None, "#/trips", []),
    ("opendining-home", "opendining", None, "", []),
    ("opendining-results", "opendining", None, "#/search/Italian", [("click", "time-toggle", "")]),
    (
        "opendining-restaurant",
        "opendining",
        "real-offline.opendining-20",
        "#/restaurant/evening-delight",
        [("click", "time-toggle", ""), ("click", "time-1700", "")],
    ),
    (
        "opendining-booking",
        "opendining",
        None,
        "#/restaurant/sakura-garden",
        [("click", "slot-sakura-garden-1930", ""), ("click", "occasion", ""), ("click", "occasion-anniversary", "")],
    ),
    ("networkin-feed", "networkin", None, "#/feed", []),
    ("networkin-search", "networkin", None, "#/search/all?keywords=new+york", []),
    (
        "networkin-invite",
        "networkin",
        None,
        "#/in/oliviamartinez",
        [
            ("click", "connect", ""),
            ("click", "invite-add-note", ""),
            ("fill", "invite-note", "Loved your work on design systems!"),
        ],
    ),
    ("networkin-messaging", "networkin", None, "#/messaging/sarahchen", []),
    ("marrisuite-home", "marrisuite", None, "#/", []),
    (
        "marrisuite-results",
        "marrisuite",
        None,
        "#/",
        [
            ("fill", "destination", "Goleta, California"),
            ("fill", "check-in", "2024-07-26"),
            ("fill", "check-out", "2024-07-28"),
            ("click", "find-hotels", ""),
        ],
    ),
    ("marrisuite-hotel", "marrisuite", None, "#/hotel/gol-courtfield", []),
    ("marrisuite-trips", "marrisuite", None, "#/trips", [("click", "cancel-res-1001", "")]),
    ("staynb-home", "staynb", None, "", []),
    (
        "staynb-dates",
        "staynb",
        None,
        "",
        [
            ("fill", "destination", "Paris"),
            ("click", "suggest-paris-france", ""),
            ("click", "day-2024-08-01", ""),
            ("click", "day-2024-08-05", ""),
        ],
    ),
    (
        "staynb-filters",
        "staynb",
        None,
        "",
        [
            ("fill", "destination", "Cape Town"),
            ("click", "suggest-cape-town-south-africa", ""),
            ("click", "search-button", ""),
            ("click", "filters", ""),
            ("click", "bedrooms-2", ""),
            ("click", "amenity-wifi", ""),
        ],
    ),
    ("staynb-stay", "staynb", None, "#/rooms/cpt2", []),
    ("topwork-jobs", "topwork", None, "#/jobs", []),
    ("topwork-talent", "topwork", None, "#/talent/developer", [("click", "invite-brandonmartinez", "")]),
    (
        "topwork-messages",
        "topwork",
        None,
        "#/messages/alexrodriguez",
        [("fill", "message-input", "Happy to help you get set up tomorrow!")],
    ),
    (
        "topwork-post-job",
        "topwork",
        None,
        "#/post-job",
        [
            ("fill", "job-title", "Financial Analyst"),
            ("click", "category-accounting-and-consulting", ""),
            ("click", "size-medium", ""),
        ],
    ),
]


async def shoot(out: Path, only: str | None, chromium: str) -> list[Path]:
    saved: list[Path] = []
    async with serving_clones() as base, async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=chromium or None, args=CHROMIUM_ARGS)
        for stem, site, task_id, route, steps in PAGES:
            if only and site != only:
                continue
            context = await browser.new_context(viewport={"width": 1280, "height": 720})
            page = await context.new_page()
            query = f"?task_id={task_id}&seed=0" if task_id else "?seed=0"
            await page.goto(f"{base}/{site}/config{query}")
            await page.wait_for_load_state("load")
            if route:
                await page.goto(f"{base}/{site}/{route}")
            for action, halo_id, text in steps:
                target = page.locator(f'[data-halo-id="{halo_id}"]')
                if action == "click":
                    await target.click()
                else:
                    await target.fill(text)
            path = out / f"{stem}.png"
            await page.screenshot(path=str(path))
            saved.append(path)
            await context.close()
        await browser.close()
    return saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/img/sites"))
    parser.add_argument("--only", help="one site")
    parser.add_argument("--chromium", default="/usr/bin/chromium", help="Chromium executable ('' = Playwright's)")
    args = parser.parse_args()
    setup_logging("sites", "INFO")
    args.out.mkdir(parents=True, exist_ok=True)
    for path in asyncio.run(shoot(args.out, args.only, args.chromium)):
        logging.getLogger("halo_sites.screenshots").info("saved %s", path)


if __name__ == "__main__":
    main()
