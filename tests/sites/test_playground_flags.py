"""The Playground's form flags are the form's real state (a review found the defect `boxes_checked` had
in two more flags): `field_filled` and `option_selected` were set once and never unset, so a field
typed past its target or another option picked afterwards kept them paid, shown to the progress
critic as progress the page no longer held."""

from __future__ import annotations

import pytest

from tests.sites.conftest import click, open_site, type_into

pytestmark = [pytest.mark.slow, pytest.mark.browser]


async def progress(page) -> dict:
    return (await page.evaluate("window.__HALO__.finish()"))["progress"]


async def test_field_filled_follows_the_fields(browser, sites_url: str) -> None:
    context, page = await open_site(browser, sites_url, "playground", "local.playground-6")
    await type_into(page, "field-word", "banana")
    assert await progress(page) == {"field_filled": True}
    await page.keyboard.type("s")  # "bananas": no longer the target
    assert await progress(page) == {}
    await page.keyboard.press("Backspace")  # "banana" again
    assert await progress(page) == {"field_filled": True}
    assert page.errors == []
    await context.close()


async def test_option_selected_follows_the_selection(browser, sites_url: str) -> None:
    context, page = await open_site(browser, sites_url, "playground", "local.playground-8")
    await click(page, "dropdown")
    await click(page, "option-green")
    assert await progress(page) == {"dropdown_opened": True, "option_selected": True}
    await click(page, "dropdown")
    await click(page, "option-red")  # another option: the target is no longer selected
    assert await progress(page) == {"dropdown_opened": True}
    assert page.errors == []
    await context.close()
