"""Re-entering a state with a focused control, through the env service in real Chromium.

Chromium draws a focus ring (``:focus-visible``) around a control focused from the keyboard, not
around one focused by a mouse press, and it remembers how focus last moved: a key pressed while a
mouse-focused button holds focus shows the ring from then on. A copy of a state must keep both, or
re-entry sees another screen. Found on local.playground-13: the env's double click on its button
leaves the new button focused by the second press, and a restore that focused it from a script
drew the ring (Go-Explore dropped the one stage it had found)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import free_port
from tests.env.fixtures import EnvServer, ThreadServer, client, settings_for
from tests.env.helpers import create, rel, step

pytestmark = [pytest.mark.slow, pytest.mark.browser]

TASK = "local.playground-13"
BUTTON = rel(640, 405)  # the centre of the task's one huge button
EMPTY = rel(150, 600)  # a miss: the page left of the button


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EnvServer]:
    pytest.importorskip("halo_sites.tasks")
    from halo.settings.sites import SitesSettings
    from halo_sites.app import create_app as create_sites

    port = free_port()
    data_dir = Path(tmp_path_factory.mktemp("env"))
    sites_app = create_sites(SitesSettings(host="127.0.0.1", port=port))
    with (
        ThreadServer(sites_app, "127.0.0.1", port) as sites,
        EnvServer(settings_for(data_dir, sites_url=sites.url)) as server,
    ):
        yield server


def _park_a_page(http, action: dict) -> None:
    """A page left at the app by another run's session: the next rewind goes into it."""
    sid = create(http, task_id=TASK, run_id="another-run")["observation"]["session_id"]
    step(http, sid, **action)
    http.delete(f"/sessions/{sid}")


def _reenter(http, sid: str, method: str) -> dict:
    """A copy of session ``sid``'s state: a fork by a page load or by a rewind, or a restore of its
    snapshot (Go-Explore's re-entry, a rewind when a page is parked)."""
    if method == "restore":
        snapshot = http.get(f"/sessions/{sid}/snapshot").json()
        restored = http.post("/sessions/restore", json=snapshot)
        assert restored.status_code == 200, restored.text
        assert restored.json()["info"]["method"] == "rewind"
        return restored.json()["observation"]
    fork = http.post(f"/sessions/{sid}/fork", json={"n": 1, "method": method})
    assert fork.status_code == 200, fork.text
    assert fork.json()["method"] == method
    return fork.json()["sessions"][0]["observation"]


def _same_from_here(http, live: str, copy: str, actions: list[dict]) -> None:
    """The same actions in both sessions give the same pixels and site state, step by step; a
    ``wait`` first, so the copy's own pixels are taken (a rewound page that reads like its source
    reuses the source's screenshot in its first observation)."""
    for action in [{"action": "wait", "time": 0}, *actions]:
        a = step(http, live, **action)["observation"]
        b = step(http, copy, **action)["observation"]
        assert b["screenshot"]["sha256"] == a["screenshot"]["sha256"], action
        assert b["site_state"] == a["site_state"], action


# Each way a parked page was left: pressed (a mouse focus there), missed, or keyboard-focused.
PARKED = {
    "pressed": {"action": "left_click", "coordinate": BUTTON},
    "missed": {"action": "left_click", "coordinate": EMPTY},
    "tabbed": {"action": "key", "keys": ["Tab"]},
}


@pytest.mark.parametrize(
    ("method", "parked"),
    [("snapshot", None), ("rewind", "pressed"), ("rewind", "tabbed"), ("restore", "missed")],
)
def test_a_button_focused_by_the_mouse_re_enters_without_a_ring_and_gets_it_from_a_key(env, method, parked):
    """The env's double click on the button: the first press re-renders the button, the second
    focuses the new one by the mouse (no ring). A copy shows the same pixels; a key pressed then
    draws the ring in both, and the next press counts in both."""
    with client(env) as http:
        sid = create(http, task_id=TASK)["observation"]["session_id"]
        live = step(http, sid, action="double_click", coordinate=BUTTON)["observation"]
        assert live["site_state"]["progress"] == {"pressed_1": True}
        focus = http.get(f"/sessions/{sid}/snapshot").json()["storage_state"]["halo_page"]["focus"]
        assert focus is not None and focus["path"].endswith("button:nth-of-type(1)"), (
            "the press left the button focused"
        )
        if parked:  # the most recently parked page is the one rewound
            _park_a_page(http, PARKED[parked])
        copy = _reenter(http, sid, method)
        copy_now = step(http, copy["session_id"], action="wait", time=0)["observation"]
        assert copy_now["screenshot"]["sha256"] == live["screenshot"]["sha256"], "the copy draws another screen"
        ringed = step(http, sid, action="key", keys=["Shift"])["observation"]
        assert ringed["screenshot"]["sha256"] != live["screenshot"]["sha256"], "a key shows the ring on the live page"
        assert (
            step(http, copy["session_id"], action="key", keys=["Shift"])["observation"]["screenshot"]["sha256"]
            == ringed["screenshot"]["sha256"]
        ), "a key after the re-entry must show the ring as on the live page"
        _same_from_here(http, sid, copy["session_id"], [{"action": "left_click", "coordinate": BUTTON}])
        for s in (sid, copy["session_id"]):
            http.delete(f"/sessions/{s}")


@pytest.mark.parametrize(("method", "parked"), [("snapshot", None), ("rewind", "pressed"), ("restore", "pressed")])
def test_a_button_focused_from_the_keyboard_re_enters_with_its_ring(env, method, parked):
    """Tab to the button: the ring shows, and a copy must show it too, also when the copy rewinds
    a page whose last focus came from a mouse press."""
    with client(env) as http:
        sid = create(http, task_id=TASK)["observation"]["session_id"]
        fresh = step(http, sid, action="wait", time=0)["observation"]
        live = step(http, sid, action="key", keys=["Tab"])["observation"]
        assert live["screenshot"]["sha256"] != fresh["screenshot"]["sha256"], "Tab rings the button"
        if parked:
            _park_a_page(http, PARKED[parked])
        copy = _reenter(http, sid, method)
        _same_from_here(
            http,
            sid,
            copy["session_id"],
            [{"action": "mouse_move", "coordinate": EMPTY}, {"action": "key", "keys": ["Tab"]}],
        )
        for s in (sid, copy["session_id"]):
            http.delete(f"/sessions/{s}")
