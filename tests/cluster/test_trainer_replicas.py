"""The trainer's policy client over policy replicas (``HALO_TRAINER_POLICY_REPLICAS``), against real
replica processes (tests/cluster/stub_replica.py) and the real Redis: a rollout's samples stay on
their job's replica and fail over, an answer from another version fails the job as infrastructure
(nothing to train on, counted for the run), and a version reaches the policy only when every live
replica lists it, and leaves every one."""

from __future__ import annotations

import httpx
import pytest

from halo.policy_replicated import ReplicatedPolicyClient
from halo.schemas.cluster import ReplicaRecord
from halo.settings.trainer import TrainerSettings
from halo.transport import ServiceUnavailable
from halo_trainer.rollout.play import run_job
from halo_trainer.rollout.services import policy_client
from tests.cluster.replicas import StubReplica, start_replicas
from tests.trainer.stand_ins import EnvStandIn, RewardStandIn, fixed_policy, job_for, services, version0

pytestmark = pytest.mark.slow  # each test starts server processes: seconds, more under load

BASE = "halo-base"  # the trainer's policy_model_name; the stand-ins serve their base under it


@pytest.fixture
async def client(redis_url: str, key_prefix: str):
    settings = TrainerSettings(_env_file=None, redis_url=redis_url, policy_replicas=f"{key_prefix}:")
    policy = policy_client(settings)
    assert isinstance(policy, ReplicatedPolicyClient)
    yield policy
    await policy.aclose()


@pytest.fixture
def stubs():
    started: list[StubReplica] = []
    yield started
    for stub in started:
        stub.kill()


async def join(client: ReplicatedPolicyClient, replicas: list[StubReplica]) -> None:
    """What each replica's sidecar does before it registers (halo_cluster.replica_sidecar)."""
    for stub in replicas:
        await client.fanout.join(ReplicaRecord(replica_id=stub.replica_id, url=stub.url, max_loras=4))


async def ask(client: ReplicatedPolicyClient, job_id: str, model: str = BASE, run_id: str = "run-a"):
    return await client.sample_actions(b"\x89PNG ", "click", n=2, model=model, job_id=job_id, run_id=run_id)


async def test_a_jobs_samples_stay_on_its_replica_and_fail_over_when_it_dies(client, stubs) -> None:
    stubs += start_replicas(3, "--latency-ms", "10", "--base", BASE)
    await join(client, stubs)
    first = await ask(client, "run-a-j0")
    assert first.replica in {s.replica_id for s in stubs} and first.model == BASE
    assert len(first.candidates) == 2 and first.candidates[0].token_ids == [7, 8]
    assert first.prompt_token_ids == [1, 2, 3]
    assert [(await ask(client, "run-a-j0")).replica for _ in range(3)] == [first.replica] * 3, "not sticky"
    next(s for s in stubs if s.replica_id == first.replica).kill()
    moved = await ask(client, "run-a-j0")  # no error reaches the rollout
    assert moved.replica != first.replica and moved.model == BASE
    assert (await ask(client, "run-a-j0")).replica == moved.replica, "not sticky after the failover"
    assert await client.infra_counters("run-a") == {"failover_down": 1}
    assert await client.infra_counters("run-b") == {}
    assert await client.replica_count() == 2


async def test_a_searchs_critique_goes_to_its_jobs_replica(client, stubs) -> None:
    """The MCTS self-critique (``complete``) with the search's job id is answered by the replica the
    job samples from, also after the job moved on a failover; without a job id, by a live one."""
    stubs += start_replicas(3, "--latency-ms", "5", "--base", BASE)
    await join(client, stubs)
    critique = [{"role": "user", "content": "rank"}]

    def answered() -> dict[str, int]:
        live = [s for s in stubs if s.proc is not None and s.proc.poll() is None]
        return {s.replica_id: httpx.get(f"{s.url}/answered", timeout=10).json()["answered"] for s in live}

    async def critic_replica(job_id: str | None) -> set[str]:
        before = answered()
        assert await client.complete(critique, max_tokens=8, model=BASE, job_id=job_id, run_id="run-a") == "click(1)"
        return {rid for rid, n in answered().items() if n != before.get(rid, 0)}

    first = (await ask(client, "run-a-j1")).replica
    for _ in range(3):
        assert await critic_replica("run-a-j1") == {first}
    next(s for s in stubs if s.replica_id == first).kill()
    moved = await critic_replica("run-a-j1")  # the critique itself fails over, and the job stays there
    assert len(moved) == 1 and first not in moved
    assert {(await ask(client, "run-a-j1")).replica} == moved
    assert len(await critic_replica(None)) == 1


async def test_each_transition_records_the_replica_that_answered_its_prompt(client, stubs) -> None:
    stubs += start_replicas(2, "--latency-ms", "5", "--base", BASE)
    await join(client, stubs)
    svc = services(EnvStandIn(), reward=RewardStandIn(), current=fixed_policy(version0("run-a")))
    svc.policy = client
    result = await run_job(svc, job_for("run-a", group_size=2, max_steps=2))
    assert result.infra_error is None and result.transitions, result.infra_error
    replicas = {t.prompt.replica for t in result.transitions}
    # One job stays on one replica (sticky), and the record names it.
    assert len(replicas) == 1 and replicas <= {s.replica_id for s in stubs}, replicas


async def test_an_answer_from_another_version_fails_the_job_as_infrastructure_with_nothing_to_train_on(
    client, stubs
) -> None:
    stubs += start_replicas(1, "--latency-ms", "5", "--base", BASE, "--answer-as", "run-a-v1")
    await join(client, stubs)
    env = EnvStandIn()
    svc = services(env, reward=RewardStandIn(), current=fixed_policy(version0("run-a")))
    svc.policy = client
    result = await run_job(svc, job_for("run-a", group_size=2, max_steps=2))
    assert result.infra_error is not None and "answered from 'run-a-v1', asked 'halo-base'" in result.infra_error, (
        result.infra_error
    )
    assert result.transitions == [] and result.episodes == []
    assert env.steps == [] and env.sessions == {}  # nothing was played from the wrong answer
    assert await client.infra_counters("run-a") == {"wrong_adapter": 1}


async def test_a_version_is_the_policys_only_once_every_live_replica_lists_it_and_leaves_every_one(
    client, stubs, tmp_path
) -> None:
    good = start_replicas(2, "--latency-ms", "5", "--load-ms", "50", "--base", BASE)
    [stuck] = start_replicas(1, "--base", BASE, "--fail-loads", prefix="stuck")
    stubs += [*good, stuck]
    await join(client, stubs)
    with pytest.raises(ServiceUnavailable, match="not on every live policy replica yet.*stuck0: load failed"):
        await client.publish_adapter("run-a-v1", str(tmp_path / "v1"))
    assert client.current_model == BASE
    assert "run-a-v1" not in await client.fanout.versions()  # a replica joining now would not load it
    assert {m["id"] for m in await client.models()} == {BASE}  # not served by the policy as a whole
    # The replica that cannot load it dies (its heartbeat stops): the version reaches every live one.
    stuck.kill()
    await client.registry.deregister(stuck.replica_id)
    await client.publish_adapter("run-a-v1", str(tmp_path / "v1"))
    await client.publish_adapter("run-a-v2", str(tmp_path / "v2"))
    assert client.current_model == "run-a-v2"
    assert {m["id"] for m in await client.models()} == {BASE, "run-a-v1", "run-a-v2"}
    assert (await ask(client, "run-a-j1", model="run-a-v2")).model == "run-a-v2"
    await client.unload_adapter("run-a-v1")  # retired: out of every replica and of the live set
    assert await client.served_names() == {BASE, "run-a-v2"} and await client.fanout.versions() == {
        "run-a-v2": str(tmp_path / "v2")
    }
    assert await client.unload_run_adapters("run-a") == ["run-a-v2"]  # the run's end
    assert await client.served_names() == {BASE} and await client.fanout.versions() == {}


async def test_the_trainers_readiness_asks_the_live_replicas_not_the_policy_url(redis_url, key_prefix, stubs) -> None:
    from halo_trainer.api.app import create_app

    settings = TrainerSettings(_env_file=None, redis_url=redis_url, policy_replicas=f"{key_prefix}:")
    app = create_app(settings)  # its lifespan is not started: only the routes are asked
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://trainer") as api:
        checks = (await api.get("/ready")).json()["checks"]
        assert "no policy replica is registered" in checks["policy"], checks
        stubs += start_replicas(1, "--base", BASE)
        async with policy_client(settings) as client:
            await join(client, stubs)
        assert (await api.get("/ready")).json()["checks"]["policy"] == "ok"
