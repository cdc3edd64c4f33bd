"""The clone server's routes (fast tier, no browser): protocol pages, assets, errors as 4xx."""

from __future__ import annotations

import json
import re

import pytest
from fastapi.testclient import TestClient

from halo_sites.app import create_app
from halo_sites.tasks import PACKAGE_DIR


@pytest.fixture(scope="module")
def client() -> TestClient:
    return TestClient(create_app())


def _params(html: str) -> dict:
    m = re.search(r"HALO\.reset\((.*?)\);location\.replace\((.*?)\);", html)
    assert m, html
    return {"params": json.loads(m.group(1)), "start": json.loads(m.group(2))}


def test_health_ready_and_index(client: TestClient) -> None:
    assert client.get("/health").json()["status"] == "ok"
    assert client.get("/ready").json()["ready"] is True
    page = client.get("/")
    assert page.status_code == 200 and "/gomail/" in page.text


@pytest.mark.parametrize("site", ["playground", "gomail", "gocalendar"])
def test_each_site_serves_its_app_and_assets(client: TestClient, site: str) -> None:
    app = client.get(f"/{site}/")
    assert app.status_code == 200 and "/common/halo.js" in app.text
    assert app.headers["cache-control"] == "no-store"
    assert client.get(f"/{site}/static/data.js").status_code == 200
    assert client.get(f"/{site}", follow_redirects=False).headers["location"] == f"/{site}/"


def test_config_embeds_the_task_config_and_seed(client: TestClient) -> None:
    page = client.get("/playground/config", params={"task_id": "local.playground-2", "run_id": "r1", "seed": 7})
    assert page.status_code == 200
    got = _params(page.text)
    assert got["params"]["task_id"] == "local.playground-2"
    assert got["params"]["run_id"] == "r1" and got["params"]["seed"] == 7
    assert got["params"]["config"]["family"] == "click"
    assert got["start"] == "/playground/"


def test_config_without_task_is_the_default_state(client: TestClient) -> None:
    got = _params(client.get("/gomail/config").text)
    assert got["params"] == {"task_id": None, "run_id": "0", "seed": 0, "config": {}}


def test_config_escapes_script_breakers() -> None:
    from halo_sites.pages import config_page

    html = config_page("gomail", {"config": {"x": "</script><script>alert(1)</script>"}}, "/gomail/")
    assert "</script><script>alert" not in html


def test_finish_page_has_a_pre(client: TestClient) -> None:
    page = client.get("/gomail/finish")
    assert page.status_code == 200 and "<pre id='finish'>" in page.text and "__HALO__.finish()" in page.text


@pytest.mark.parametrize(
    ("url", "status", "fragment"),
    [
        ("/nosuchsite/", 404, "unknown site"),
        ("/nosuchsite/config", 404, "unknown site"),
        ("/gomail/config?task_id=local.gomail-999", 404, "unknown local task"),
        ("/gomail/config?task_id=local.playground-1", 404, "belongs to site 'playground'"),
        ("/gomail/config?seed=-1", 422, "seed"),
        ("/gomail/config?seed=abc", 422, "seed"),
        ("/api/tasks?site=nope", 404, "unknown site"),
        ("/api/tasks/local.gomail-999", 404, "unknown local task"),
        ("/gomail/static/nothing.js", 404, ""),
    ],
)
def test_bad_requests_are_clear_4xx(client: TestClient, url: str, status: int, fragment: str) -> None:
    r = client.get(url)
    assert r.status_code == status
    if fragment:
        assert fragment in r.json()["error"]


def test_task_api(client: TestClient) -> None:
    tasks = client.get("/api/tasks", params={"site": "gocalendar"}).json()
    assert len(tasks) >= 10 and all(t["website"]["id"] == "gocalendar" for t in tasks)
    assert client.get("/api/tasks/local.gomail-3").json()["id"] == "local.gomail-3"


def test_nothing_is_fetched_from_the_network() -> None:
    """No CDN, font service or analytics: every asset is served by the clone server itself."""
    for path in PACKAGE_DIR.glob("**/static/**/*"):
        if path.suffix in (".html", ".js", ".css"):
            text = path.read_text(encoding="utf-8")
            assert not re.search(r"(src|href)\s*=\s*[\"']?(https?:)?//", text), path
            assert "@import" not in text and "url(http" not in text, path
