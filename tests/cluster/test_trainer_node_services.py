"""The trainer on a cluster (``HALO_TRAINER_CLUSTER_NODES``) lists and probes a run's tasks, and
checks readiness, on any running rollout node's env and reward, read from the supervisor's status
in Redis each time: a node that died, restarted on other ports or never ran does not stop new runs
while another node runs. Real env and reward services, real Redis; the status record is the one
the supervisor writes (``ClusterStatus``)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis

from halo.cluster_nodes import status_key
from halo.schemas import RunSpec
from halo.schemas.cluster import ClusterStatus, RolloutNodeStatus
from halo.settings.reward import RewardSettings
from halo.settings.trainer import TrainerSettings
from halo.transport import CallError, ServiceUnavailable
from halo_env.backends.local import LocalCloneBackend
from halo_reward.app import create_app as create_reward
from halo_trainer.api.node_services import NodeTaskProbe, node_ready_check
from halo_trainer.api.task_sets import TaskSetError, choose_tasks
from tests.conftest import free_port
from tests.env.fixtures import EnvServer, ThreadServer, settings_for
from tests.http_stub import OkHandler, ServedInThread


class Site(ServedInThread):
    def __init__(self) -> None:
        class Handler(OkHandler):
            body = b"ok"

        super().__init__(Handler)


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EnvServer]:
    with Site() as site:
        settings = settings_for(Path(tmp_path_factory.mktemp("env")), sites_url=site.url)
        with EnvServer(settings, [LocalCloneBackend(settings.sites_url)]) as server:
            yield server


@pytest.fixture
def reward(redis_url: str, key_prefix: str) -> Iterator[ThreadServer]:
    port = free_port()
    app = create_reward(RewardSettings(redis_url=redis_url, key_prefix=f"{key_prefix}:reward:", port=port))
    with ThreadServer(app, "127.0.0.1", port) as server:
        yield server


def closed() -> str:
    return f"http://127.0.0.1:{free_port()}"  # nothing listens there


def publish(redis_url: str, prefix: str, nodes: list[tuple[str, dict[str, str]]]) -> None:
    """The supervisor's status record: each node as (state, its service URLs)."""
    status = ClusterStatus(
        updated_at=time.time(),
        ray_address="127.0.0.1:6380",
        wanted_nodes=len(nodes),
        nodes=[RolloutNodeStatus(name=f"halo-rollout-{i}", state=s, urls=urls) for i, (s, urls) in enumerate(nodes)],
    )
    redis.Redis.from_url(redis_url).set(status_key(prefix), status.model_dump_json())


async def test_tasks_are_probed_on_a_running_node_that_answers(env, aredis, redis_url, key_prefix) -> None:
    prefix = f"{key_prefix}:"
    probe = NodeTaskProbe(aredis, prefix, timeout_s=30)
    # The first running node is gone; the restarting one is not tried even though its URL answers.
    publish(
        redis_url,
        prefix,
        [("running", {"env": closed()}), ("restarting", {"env": env.url}), ("running", {"env": env.url})],
    )
    chosen = await choose_tasks(probe, RunSpec(domain="omnizon"))
    assert chosen.tasks and all(t.startswith(("local.omnizon-", "real-offline.omnizon-")) for t in chosen.tasks)
    # a domain without tasks is answered with the domains the node's env has
    with pytest.raises(TaskSetError) as unknown:
        await choose_tasks(probe, RunSpec(domain="nonexistent"))
    assert unknown.value.status == 422 and "; the domains are " in str(unknown.value)
    assert {"omnizon", "playground"} <= set(str(unknown.value).split("the domains are ")[1].split(", "))


async def test_a_node_restarted_on_other_ports_is_followed_without_restarting_the_trainer(
    env, aredis, redis_url, key_prefix
) -> None:
    prefix = f"{key_prefix}:"
    probe = NodeTaskProbe(aredis, prefix, timeout_s=30)
    gone = closed()
    publish(redis_url, prefix, [("running", {"env": gone})])  # the node as the trainer first saw it, now dead
    with pytest.raises(TaskSetError) as refused:
        await choose_tasks(probe, RunSpec(domain="omnizon"))
    assert refused.value.status == 503 and gone in str(refused.value)
    publish(redis_url, prefix, [("running", {"env": env.url})])  # its actor restarted: new ports
    assert (await choose_tasks(probe, RunSpec(domain="omnizon", tasks=["local.omnizon-1"]))).tasks == [
        "local.omnizon-1"
    ]


@pytest.mark.parametrize("nodes", [None, [], [("placing", {}), ("unplaceable", {})]])
async def test_no_running_node_refuses_the_run_saying_so(aredis, redis_url, key_prefix, nodes) -> None:
    prefix = f"{key_prefix}:"
    if nodes is not None:
        publish(redis_url, prefix, nodes)
    with pytest.raises(TaskSetError) as refused:
        await choose_tasks(NodeTaskProbe(aredis, prefix, timeout_s=5), RunSpec(domain="omnizon"))
    assert refused.value.status == 503
    assert "no rollout node is running" in str(refused.value) and "halo cluster status" in str(refused.value)


async def test_an_unreadable_status_refuses_the_run_saying_so(aredis, redis_url, key_prefix) -> None:
    prefix = f"{key_prefix}:"
    redis.Redis.from_url(redis_url).set(status_key(prefix), b'{"nodes": "not a list"}')
    with pytest.raises(TaskSetError) as refused:
        await choose_tasks(NodeTaskProbe(aredis, prefix, timeout_s=5), RunSpec(domain="omnizon"))
    assert refused.value.status == 503 and "cannot read the cluster status" in str(refused.value)


async def test_a_node_that_answers_with_an_error_is_the_answer(env, aredis, redis_url, key_prefix) -> None:
    """A 4xx from a node that answered is not a dead node: it is raised, not retried on the next one."""
    prefix = f"{key_prefix}:"
    publish(redis_url, prefix, [("running", {"env": env.url}), ("running", {"env": closed()})])
    with pytest.raises(CallError) as answered:
        await NodeTaskProbe(aredis, prefix, timeout_s=30).reachability("Omni zon")
    assert answered.value.status == 422 and not isinstance(answered.value, ServiceUnavailable)


async def test_readiness_passes_while_any_running_nodes_service_answers(reward, aredis, redis_url, key_prefix) -> None:
    prefix = f"{key_prefix}:"
    async with httpx.AsyncClient(timeout=10) as client:
        check = node_ready_check(aredis, prefix, "reward", client)
        publish(redis_url, prefix, [("running", {"reward": closed()}), ("running", {"reward": reward.url})])
        await check()
        dead = closed()
        publish(redis_url, prefix, [("running", {"reward": dead})])
        with pytest.raises(ServiceUnavailable, match=dead):
            await check()


def test_the_trainer_reads_its_env_and_reward_from_the_nodes(reward, env, redis_url, key_prefix, tmp_path) -> None:
    """The trainer's /ready with HALO_TRAINER_CLUSTER_NODES: env and reward are a running node's
    (its env_url and reward_url name nothing), and its run manager probes tasks on the nodes."""
    from fastapi.testclient import TestClient

    from halo_trainer.api.app import create_app

    prefix = f"{key_prefix}:"
    publish(redis_url, prefix, [("running", {"env": env.url, "reward": reward.url})])
    settings = TrainerSettings(
        _env_file=None,
        redis_url=redis_url,
        data_dir=tmp_path,
        env_url=closed(),
        reward_url=closed(),
        policy_url=closed(),
        rollout_workers=0,
        cluster_nodes=prefix,
    )
    with TestClient(create_app(settings)) as client:
        checks = client.get("/ready").json()["checks"]
        assert checks["env"] == "ok" and checks["reward"] == "ok", checks
        assert checks["policy"].startswith("failed"), checks  # nothing serves the policy here
        assert isinstance(client.app.state.manager.env, NodeTaskProbe)
