"""Fixtures of the env tests: the fixture site and one env service per module (real Chromium)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.env.fixtures import EnvServer, FixtureBackend, FixtureSite, client, settings_for


@pytest.fixture(scope="module")
def site() -> Iterator[FixtureSite]:
    with FixtureSite() as s:
        yield s


@pytest.fixture(scope="module")
def env(site: FixtureSite, tmp_path_factory: pytest.TempPathFactory) -> Iterator[EnvServer]:
    from halo_env.backends.real import RealBackend

    settings = settings_for(Path(tmp_path_factory.mktemp("env")), real_base_url=site.url)
    with EnvServer(settings, [FixtureBackend(site.url), RealBackend(settings)]) as server:
        yield server


@pytest.fixture
def http(env: EnvServer) -> Iterator[httpx.Client]:
    with client(env) as c:
        yield c
        for info in c.get("/sessions").json():  # leave the pool empty for the next test
            c.delete(f"/sessions/{info['session_id']}")
