"""What a rollout node runs, as data: process specs with placeholders the node fills in.

A plan is built on the head and shipped to each node's actor; the actor fills ``{host}`` (the
node's address), ``{port.<name>}`` (a free port it picks on its own node) and ``{index}`` (the
copy's number among ``count``) in every argv word, environment value and URL. The same plan then
works on machines with their own addresses and on a test cluster whose nodes share the loopback.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from types import SimpleNamespace


@dataclass(frozen=True)
class ProcessSpec:
    name: str
    argv: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    ready_url: str = ""  # GET answers 2xx once the process serves; empty: started is ready
    count: int = 1


@dataclass(frozen=True)
class NodePlan:
    processes: tuple[ProcessSpec, ...]
    ports: tuple[str, ...] = ()  # names of the ports each node picks for itself
    urls: dict[str, str] = field(default_factory=dict)  # what the node reports: name -> URL template
    ready_timeout_s: float = 120.0
    # The node's view of the head's data (HALO_DATA_DIR, HALO_STORE_*) and the probe the head wrote:
    # a node whose store does not show the probe refuses to start (halo_cluster.node_store).
    store: dict[str, str] = field(default_factory=dict)
    probe: str = ""


def render(template: str, host: str, ports: dict[str, int], index: int = 0) -> str:
    """``template`` with ``{host}``, ``{port.<name>}`` and ``{index}`` filled in; a placeholder the
    plan does not define is a ``ValueError`` naming it, not a ``KeyError`` from deep inside."""
    try:
        return template.format(host=host, port=SimpleNamespace(**ports), index=index)
    except (KeyError, AttributeError, IndexError) as exc:
        raise ValueError(f"node plan: {template!r} names an undefined placeholder ({exc})") from None


def services_plan(
    *,
    workers: int,
    redis_url: str,
    policy_url: str,
    data_dir: str,
    store: dict[str, str] | None = None,
    probe: str = "",
    policy_replicas: str | None = None,
    python: str = sys.executable,
) -> NodePlan:
    """The real rollout node: the clone sites, env and reward services on the node's own address,
    and ``workers`` rollout workers that use that node's env and reward (a job's forks stay on one
    env instance, its screenshots next to it). ``store``: the ``HALO_STORE_*`` that reach the head's
    data from a node (``halo.store.store_env``); ``probe``: the value the head wrote;
    ``policy_replicas``: the replica registry's key prefix, when the workers sample from replicas."""
    store = {"HALO_DATA_DIR": data_dir, **(store or {})}
    shared = {"HALO_REDIS_URL": redis_url, **store}
    sites = "http://{host}:{port.sites}"
    env_url, reward_url = "http://{host}:{port.env}", "http://{host}:{port.reward}"
    return NodePlan(
        processes=(
            ProcessSpec(
                "sites",
                (python, "-m", "halo_sites"),
                {**shared, "HALO_SITES_HOST": "{host}", "HALO_SITES_PORT": "{port.sites}"},
                sites + "/health",
            ),
            ProcessSpec(
                "env",
                (python, "-m", "halo_env"),
                {**shared, "HALO_ENV_HOST": "{host}", "HALO_ENV_PORT": "{port.env}", "HALO_ENV_SITES_URL": sites},
                env_url + "/health",
            ),
            ProcessSpec(
                "reward",
                (python, "-m", "halo_reward"),
                {**shared, "HALO_REWARD_HOST": "{host}", "HALO_REWARD_PORT": "{port.reward}"},
                reward_url + "/health",
            ),
            ProcessSpec(
                "worker",
                (python, "-m", "halo_trainer.worker"),
                {
                    **shared,
                    "HALO_WORKERS": "1",
                    "HALO_TRAINER_ENV_URL": env_url,
                    "HALO_TRAINER_REWARD_URL": reward_url,
                    "HALO_TRAINER_POLICY_URL": policy_url,
                    **({"HALO_TRAINER_POLICY_REPLICAS": policy_replicas} if policy_replicas else {}),
                },
                count=workers,
            ),
        ),
        ports=("sites", "env", "reward"),
        urls={"sites": sites, "env": env_url, "reward": reward_url},
        store=store,
        probe=probe,
    )
