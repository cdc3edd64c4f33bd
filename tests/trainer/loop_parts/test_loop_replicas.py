"""A run over several policy replicas (``HALO_TRAINER_POLICY_REPLICAS``): the real loop, learner and
publisher, real replica processes (tests/cluster/stub_replica.py) and rollouts played by the real
``run_job`` through the env and reward stand-ins. Each version reaches every replica before the
workers sample it, versions outside the staleness window and, at the end, every version of the run
leave every replica; answers from another version are replaced jobs, counted in the run's metrics.
And what the replicas cannot serve is refused at ``POST /runs``."""

from __future__ import annotations

import json

import httpx
import pytest
import redis.asyncio as aioredis

from halo.policy_replicated import ReplicatedPolicyClient
from halo.schemas.cluster import ReplicaRecord
from halo.screenshots import ScreenshotStore
from halo.settings.trainer import TrainerSettings
from halo_trainer.api.app import create_app
from halo_trainer.api.runs import RunManager
from halo_trainer.rollout.play import run_job
from halo_trainer.rollout.services import policy_client
from halo_trainer.streams import current_policy_reader
from tests.cluster.replicas import StubReplica, start_replicas
from tests.trainer.loop_harness import RUN, make_loop, run_with_worker
from tests.trainer.stand_ins import EnvStandIn, RewardStandIn, services

pytestmark = pytest.mark.slow  # replica processes and a learner: seconds, more under load

PREFIX = "replicas-test:"


@pytest.fixture
def stubs():
    started: list[StubReplica] = []
    yield started
    for stub in started:
        stub.kill()


def served(stub: StubReplica) -> set[str]:
    return {m["id"] for m in httpx.get(f"{stub.url}/v1/models", timeout=10).json()["data"]}


async def test_a_run_publishes_to_every_replica_retires_from_every_one_and_never_keeps_a_wrong_answer(
    clean_redis, base_model, tmp_path, stubs
) -> None:
    # Sequential jobs all start on the least loaded replica, the first by id: the one that answers
    # every second request from another version.
    [bad] = start_replicas(
        1, "--latency-ms", "5", "--base", "halo-base", "--answer-as", "old-v0", "--wrong-every", "2", prefix="bad"
    )
    stubs += [bad, *start_replicas(2, "--latency-ms", "5", "--load-ms", "20", "--base", "halo-base")]
    settings = TrainerSettings(_env_file=None, redis_url=clean_redis, policy_replicas=PREFIX)
    policy = policy_client(settings)
    assert isinstance(policy, ReplicatedPolicyClient)
    for stub in stubs:
        await policy.fanout.join(ReplicaRecord(replica_id=stub.replica_id, url=stub.url, max_loras=4))
    r = aioredis.Redis.from_url(clean_redis)
    loop = make_loop(r, tmp_path / "run", "http://127.0.0.1:9", base_model, episodes=8, max_staleness=1, policy=policy)
    svc = services(EnvStandIn(), reward=RewardStandIn(), current=current_policy_reader(r))
    svc.policy = policy
    asked: list[str] = []

    async def play(job):
        asked.append((await svc.current_policy(job.run_id)).adapter_name)
        result = await run_job(svc, job)
        # The harness's learner has no processor: the rollout's episodes count, its transitions stay out.
        return result.model_copy(update={"transitions": []})

    outcome, _ = await run_with_worker(loop, play)
    assert outcome == "finished" and loop.c.version == 4
    wrong = (await policy.infra_counters(RUN)).get("wrong_adapter", 0)
    assert wrong >= 1 and loop.c.infra_failed_jobs == wrong, "a wrong answer was kept, or a failure not counted"
    assert {f"{RUN}-v{k}" for k in (1, 2, 3)} <= set(asked)  # the workers sampled each published version
    # max_staleness 1 keeps the current version and the one before it, on every replica alike.
    assert all(served(stub) == {"halo-base", f"{RUN}-v3", f"{RUN}-v4"} for stub in stubs)
    lines = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert all(line["policy/replicas_live"] == 3 for line in lines)
    assert lines[-1]["policy/wrong_adapter"] >= 1 and loop.status().metrics["policy/wrong_adapter"] >= 1
    await loop.release_weights()  # the run's end
    assert all(served(stub) == {"halo-base"} for stub in stubs) and await policy.fanout.versions() == {}
    await policy.aclose()
    await r.aclose()


async def test_what_the_live_replicas_cannot_serve_is_refused_at_submit_naming_the_setting(
    clean_redis, tmp_path
) -> None:
    settings = TrainerSettings(_env_file=None, data_dir=tmp_path, redis_url=clean_redis, policy_replicas=PREFIX)
    r = aioredis.from_url(clean_redis)
    policy = policy_client(settings)
    assert isinstance(policy, ReplicatedPolicyClient)
    env = EnvStandIn({"local.playground-1": True})
    manager = RunManager(settings, r, policy, ScreenshotStore(tmp_path / "shots"), env)
    app = create_app(settings)  # its lifespan is not started: no workers, no resume
    app.state.manager = manager
    for replica_id in ("gpu0", "gpu1"):
        await policy.registry.register(ReplicaRecord(replica_id=replica_id, url="http://127.0.0.1:9", max_loras=4))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://trainer") as api:
        response = await api.post("/runs", json={"domain": "playground", "full_weights": ["vision_merger"]})
        assert response.status_code == 409, response.text
        error = response.json()["error"]
        assert "2 live policy replicas (gpu0, gpu1" in error and "HALO_TRAINER_POLICY_REPLICAS" in error, error
        # The run's staleness window (the tiny profile's 2) needs more adapters at once than a replica holds.
        await policy.registry.register(ReplicaRecord(replica_id="gpu0", url="http://127.0.0.1:9", max_loras=3))
        response = await api.post("/runs", json={"domain": "playground"})
        assert response.status_code == 409, response.text
        error = response.json()["error"]
        assert "max_staleness 2 keeps 4 adapters" in error and "replica gpu0 holds at most 3" in error, error
    assert await manager.registry.all() == [] and not settings.runs_dir.exists()
    await manager.shutdown()
    await policy.aclose()
    await r.aclose()
