"""Offline-safe default task sets: the real env service probes each site origin once, and the
trainer's run creation keeps only the tasks whose site answered (named tasks are always kept)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from halo.clients import EnvClient
from halo.schemas import RunSpec
from halo_env.backends.local import LocalCloneBackend
from halo_env.backends.real import RealBackend
from halo_env.registry import load_real_tasks
from halo_trainer.api.task_sets import TaskSetError, choose_tasks
from halo_trainer.evaluation.pool import suite_pool
from tests.conftest import free_port
from tests.env.fixtures import EnvServer, settings_for
from tests.http_stub import OkHandler, ServedInThread

# Tasks on the offline clone's origin: its own local.omnizon-* tasks and REAL's v2 tasks it supports
# offline (real-offline.omnizon-*, docs/sites.md).
LOCAL_OMNIZON = 12 + 9
REAL_IDS = sorted(t.id for t in load_real_tasks("omnizon"))  # agisdk's registry: 10 v2.omnizon-* tasks
REAL_OMNIZON = len(REAL_IDS)


class CountingSite(ServedInThread):
    """A site origin that answers every GET with 200 and counts the requests it got."""

    def __init__(self) -> None:
        site = self
        self.hits = 0

        class Handler(OkHandler):
            body = b"ok"

            def do_GET(self) -> None:
                site.hits += 1
                super().do_GET()

        super().__init__(Handler)


def _env(tmp: Path, sites_url: str, real_url: str) -> EnvServer:
    # REAL's hosted sites moved to a closed local port: "unreachable" must not depend on this
    # machine having no internet.
    settings = settings_for(tmp, sites_url=sites_url, real_base_url=real_url)
    return EnvServer(settings, [LocalCloneBackend(settings.sites_url), RealBackend(settings)])


@pytest.fixture(scope="module")
def site() -> Iterator[CountingSite]:
    with CountingSite() as s:
        yield s


@pytest.fixture(scope="module")
def closed_url() -> str:
    return f"http://127.0.0.1:{free_port()}"  # nothing listens there


@pytest.fixture(scope="module")
def env(site: CountingSite, closed_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[EnvServer]:
    with _env(tmp_path_factory.mktemp("env"), site.url, closed_url) as server:
        yield server


async def test_reachability_probes_each_origin_once(env: EnvServer, site: CountingSite, closed_url: str) -> None:
    before = site.hits
    rows = httpx.get(f"{env.url}/tasks/reachability", params={"domain": "omnizon"}, timeout=60).json()
    assert site.hits - before == 1  # one probe for all the clone's tasks on that origin
    local = [r for r in rows if r["task_id"].startswith(("local.", "real-offline."))]
    real = [r for r in rows if r["task_id"].startswith("v2.")]
    assert len(local) == LOCAL_OMNIZON and len(real) == REAL_OMNIZON == 10
    assert all(r["reachable"] and r["backend"] == "local" and r["origin"] == site.url for r in local)
    assert all(not r["reachable"] and r["origin"] == closed_url and "ConnectError" in r["reason"] for r in real)


@pytest.mark.parametrize(
    ("params", "field"),
    [({}, "domain"), ({"domain": "Omni zon"}, "domain"), ({"domain": "omnizon", "timeout_s": "0"}, "timeout_s")],
)
def test_reachability_rejects_bad_queries_with_4xx(env: EnvServer, params: dict, field: str) -> None:
    response = httpx.get(f"{env.url}/tasks/reachability", params=params, timeout=30)
    assert response.status_code == 422
    assert field in response.json()["error"]


async def test_default_task_set_leaves_out_unreachable_tasks_with_a_note(env: EnvServer, closed_url: str) -> None:
    async with EnvClient(env.url) as client:
        chosen = await choose_tasks(client, RunSpec(domain="omnizon"))
    assert len(chosen.tasks) == LOCAL_OMNIZON
    assert all(t.startswith(("local.omnizon-", "real-offline.omnizon-")) for t in chosen.tasks)
    assert sorted(r.task_id for r in chosen.left_out) == REAL_IDS
    assert chosen.note is not None
    assert chosen.note.startswith(f"left out {REAL_OMNIZON} of {LOCAL_OMNIZON + REAL_OMNIZON} omnizon tasks")
    assert closed_url in chosen.note and "--task" in chosen.note


async def test_named_tasks_are_kept_even_when_unreachable_with_a_warning(env: EnvServer) -> None:
    async with EnvClient(env.url) as client:
        chosen = await choose_tasks(client, RunSpec(domain="omnizon", tasks=[REAL_IDS[0], "local.omnizon-1"]))
        reachable_only = await choose_tasks(client, RunSpec(domain="omnizon", tasks=["local.omnizon-2"]))
    assert chosen.tasks == [REAL_IDS[0], "local.omnizon-1"]
    assert chosen.note is not None and chosen.note.startswith("warning: 1 named task kept")
    assert REAL_IDS[0] in chosen.note and "local.omnizon-1" not in chosen.note
    assert reachable_only.tasks == ["local.omnizon-2"] and reachable_only.note is None


async def test_unknown_named_task_is_a_422(env: EnvServer) -> None:
    async with EnvClient(env.url) as client:
        with pytest.raises(TaskSetError) as err:
            await choose_tasks(client, RunSpec(domain="omnizon", tasks=["local.omnizon-999"]))
    assert err.value.status == 422 and "local.omnizon-999" in str(err.value)


async def test_a_domain_without_tasks_is_a_422_naming_every_domain_there_is(env: EnvServer) -> None:
    """`make train DOMAIN=nonexistent`: the answer lists the domains the env's task registry has."""
    from halo_sites.tasks import load_tasks

    registry = sorted({t.domain for t in load_tasks()} | {t.domain for t in load_real_tasks()})
    assert len(registry) == 12 and "playground" in registry and "omnizon" in registry
    async with EnvClient(env.url) as client:
        with pytest.raises(TaskSetError) as err:
            await choose_tasks(client, RunSpec(domain="nonexistent"))
    assert err.value.status == 422
    assert str(err.value) == f"no tasks for domain 'nonexistent'; the domains are {', '.join(registry)}"


async def test_no_reachable_task_is_a_503_naming_the_origins(tmp_path: Path, closed_url: str) -> None:
    with _env(tmp_path, closed_url, closed_url) as server:
        async with EnvClient(server.url) as client:
            with pytest.raises(TaskSetError) as err:
                await choose_tasks(client, RunSpec(domain="omnizon"))
    assert err.value.status == 503
    assert f"{closed_url}: ConnectError" in str(err.value)


async def test_the_real_v2_offline_suite_is_every_supported_task_and_names_the_rest(env: EnvServer) -> None:
    async with EnvClient(env.url) as client:
        pool, notes, left_out = await suite_pool(client)
    assert pool and all(t.startswith("real-offline.") for t in pool)
    assert len(pool) + len(left_out) == len(load_real_tasks()) == 121  # every REAL v2 task is in one or the other
    assert {"v2." + t.removeprefix("real-offline.") for t in pool}.isdisjoint(t["task_id"] for t in left_out)
    reasons = {t["task_id"]: t["reason"] for t in left_out}
    assert "eval_omnizon_28.py" in reasons["v2.omnizon-28"]  # the clone's own reason, not a generic one
    assert notes == [f"REAL v2 offline: {len(pool)} of 121 tasks; {len(left_out)} left out (left_out.json)"]
