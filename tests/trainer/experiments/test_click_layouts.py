"""experiments/click_layouts.py's pure parts: the first-click reward the vision diagnostic scores answers with."""

from __future__ import annotations

import pytest

from halo.actions import from_pixels
from halo.policy_client import Candidate
from halo.schemas import Action, Viewport
from halo_sites.tasks import get_task
from tests.script_module import load_script

# local.playground-4 at seed 0, as Chromium lays it out (the buttons' bounding boxes, page pixels)
PG4_SEED0 = {
    "OK": (690.0, 367.0, 870.0, 443.0),
    "Cancel": (950.0, 367.0, 1130.0, 443.0),
    "Yes": (170.0, 367.0, 350.0, 443.0),
    "No": (430.0, 367.0, 610.0, 443.0),
}


@pytest.fixture(scope="module")
def layouts():
    return load_script("experiments/click_layouts.py")


def click_at(x: float, y: float, action: str = "left_click") -> Candidate:
    coordinate = from_pixels((x, y), Viewport())
    return Candidate(
        index=0,
        text="",
        action=Action(action=action, coordinate=coordinate),
        parse_error=None,
        token_ids=[],
        logprobs=[],
    )


def test_a_first_click_on_playground_4_pays_as_the_reward_service_does(layouts):
    reward = layouts.layout_reward(get_task("local.playground-4").config, PG4_SEED0)
    # OK: valid 0.1 + new state 0.2 + `submitted` 0.3 + success 10
    assert reward(click_at(780, 405)) == pytest.approx(10.6)
    assert reward(click_at(780, 405, "double_click")) == pytest.approx(10.6)
    # a wrong button submits too: `submitted` without success
    for label in ("Cancel", "Yes", "No"):
        x0, y0, x1, y1 = PG4_SEED0[label]
        assert reward(click_at((x0 + x1) / 2, (y0 + y1) / 2)) == pytest.approx(0.6), label
    # beside every button: the click still ends the episode (a new state), no flag (no rings on this task)
    assert reward(click_at(660, 405)) == pytest.approx(0.3)
    assert reward(click_at(780, 600)) == pytest.approx(0.3)
    # not a click: valid, nothing changes; not an action: invalid
    scroll = Candidate(
        index=0,
        text="",
        action=Action(action="scroll", coordinate=(500, 500), pixels=-300),
        parse_error=None,
        token_ids=[],
        logprobs=[],
    )
    assert reward(scroll) == pytest.approx(0.1)
    assert reward(Candidate.parse(0, "no tool call here")) == pytest.approx(-0.5)


def test_a_box_holds_its_left_and_top_edges_not_its_right_and_bottom_ones(layouts):
    # what Chromium does: measured by clicking local.playground-4's OK button at its edges
    assert layouts.button_at(PG4_SEED0, 690, 405) == "OK"
    assert layouts.button_at(PG4_SEED0, 869, 442) == "OK"
    assert layouts.button_at(PG4_SEED0, 870, 405) is None
    assert layouts.button_at(PG4_SEED0, 780, 443) is None
    assert layouts.button_at(PG4_SEED0, 689, 405) is None


def test_a_one_button_task_pays_its_rings_and_its_button_from_the_slot(layouts):
    config = get_task("local.playground-2").config  # slot 3 at (960, 560), large button, rings 600/400/250/120
    reward = layouts.make_reward(config, 3)
    # on the button: every ring, `submitted`, success
    assert reward(click_at(960, 560)) == pytest.approx(0.3 + 4 * 0.3 + 0.3 + 10)
    # 200 px left of the centre, beside the button: the 600, 400 and 250 rings
    assert reward(click_at(760, 560)) == pytest.approx(0.3 + 3 * 0.3)
    # the opposite corner: more than 600 px away
    assert reward(click_at(100, 50)) == pytest.approx(0.3)
    # layouts cycle with the slots
    assert reward(click_at(960, 560)) == layouts.make_reward(config, 7)(click_at(960, 560))
    # a one-button task without rings (local.playground-3) needs no near_radius
    nine = get_task("local.playground-3").config
    x, y = nine["slots"][0]
    assert layouts.make_reward(nine, 0)(click_at(x, y)) == pytest.approx(10.6)
