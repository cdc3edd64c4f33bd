"""``python -m halo_cluster up|status|down|scale|join|supervise``: what `halo cluster ...` runs
(docs/cluster.md). ``supervise`` is the head's supervision loop, started by ``up``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import redis
import typer
from rich.table import Table

from halo.cli.output import console, fail
from halo.logging import setup_logging
from halo.settings.cluster import ClusterSettings
from halo_cluster import head
from halo_cluster.ray_auth import auth_env, token_path

app = typer.Typer(help="The Ray cluster layer: rollout nodes on every node that joins.", no_args_is_help=True)


@app.command()
def up() -> None:
    """Start the Ray head and the supervisor on this machine (Redis must be reachable)."""
    settings = ClusterSettings()
    try:
        join = head.up(settings, say=console.print)
    except head.HeadError as exc:
        fail(str(exc))
    console.print(f"[green]cluster head up[/green]; on each rollout node:\n  {join}\n(or `halo cluster join`)")


@app.command()
def down() -> None:
    """Stop the supervisor (and the rollout nodes it placed) and the Ray head this machine started."""
    head.down(ClusterSettings(), say=console.print)


@app.command()
def status(as_json: bool = typer.Option(False, "--json", help="The raw status record")) -> None:
    """Each rollout node's state, address and processes; exit 1 when one is not running."""
    settings = ClusterSettings()
    try:
        record = head.read_status(settings)
    except redis.RedisError as exc:
        fail(f"Redis is not reachable at {settings.redis_url}: {exc}")
    if record is None:
        fail("no cluster status in Redis: the head is not up (`halo cluster up`)")
    if as_json:
        console.print_json(record.model_dump_json())
    age = time.time() - record.updated_at
    table = Table("node", "state", "address", "processes alive", "restarts", "why")
    for node in record.nodes:
        alive = sum(p.alive for p in node.processes)
        restarts = sum(p.restarts for p in node.processes) + node.actor_restarts
        table.add_row(
            node.name, node.state, node.address or "-", f"{alive}/{len(node.processes)}", str(restarts), node.reason
        )
    if not as_json:
        console.print(
            f"Ray {record.ray_address}: {record.ray_nodes_alive} node(s) alive, {record.wanted_nodes} rollout node(s) wanted"
        )
        console.print(table)
    stale = age > max(10.0, 5 * settings.supervise_every_s)
    if stale:
        console.print(f"[red]the supervisor has not reported for {age:.0f} s[/red] (head down? see its log)")
    if stale or any(n.state != "running" for n in record.nodes):
        raise typer.Exit(1)


@app.command()
def scale(nodes: int = typer.Argument(..., min=0, help="Rollout nodes wanted")) -> None:
    """Change how many rollout nodes the running head places (no restart)."""
    settings = ClusterSettings()
    from halo_cluster.supervisor import wanted_key

    try:
        redis.Redis.from_url(settings.redis_url, socket_connect_timeout=2).set(wanted_key(settings), nodes)
    except redis.RedisError as exc:
        fail(f"Redis is not reachable at {settings.redis_url}: {exc}")
    console.print(f"{nodes} rollout node(s) wanted; `halo cluster status` shows them placed")


@app.command()
def join(
    address: str = typer.Option(..., help="The head's Ray address, host:port"),
    node_ip: str = typer.Option("", help="This node's address as the others reach it (default: Ray's guess)"),
    attempts: int = typer.Option(3, min=1, help="`ray start` tries before giving up"),
) -> None:
    """Join this machine to the cluster as a rollout node (`ray start` with the cluster's token)."""
    settings = ClusterSettings()
    token = os.environ.get("RAY_AUTH_TOKEN", "")
    if not token and token_path(settings.data_dir).exists():
        token = token_path(settings.data_dir).read_text().strip()
    if not token:
        fail(f"no Ray token: set RAY_AUTH_TOKEN to the head's ({token_path(settings.data_dir)} on the head)")
    argv = [head.ray_command(), "start", f"--address={address}", f"--resources={json.dumps({'rollout_node': 1})}"]
    argv += [f"--node-ip-address={node_ip}"] if node_ip else []
    # Ray gives a joining raylet 30 s to register with the head (fixed in its node.py): on a loaded
    # node, or with several nodes joining at once, it can miss that and leave nothing running, so
    # this node would never be placed. Seen on the Slurm cluster of network namespaces: one of two
    # nodes, joining together while the head was busy. A new try starts a new raylet.
    code = 0
    for attempt in range(1, attempts + 1):
        code = subprocess.run(argv, env={**os.environ, **auth_env(token)}).returncode
        if code == 0:
            return
        if attempt < attempts:
            console.print(f"`ray start` failed (exit {code}); try {attempt + 1} of {attempts} in 5 s")
            time.sleep(5)
    fail(f"this node did not join the cluster at {address}: `ray start` failed {attempts} times (last exit {code})")


@app.command()
def replica(
    replica_id: str = typer.Option(..., "--id", help="This replica's name, unique in the cluster (gpu0, node2-tp0)"),
    url: str = typer.Option(..., help="The vLLM server's base URL as the workers reach it"),
    max_loras: int = typer.Option(..., min=1, help="The server's --max-loras"),
) -> None:
    """Keep one vLLM replica registered while it serves every live adapter version (its sidecar)."""
    import asyncio

    from halo.adapter_fanout import AdapterFanout
    from halo.policy_replicas import ReplicaPool, ReplicaRegistry
    from halo.schemas.cluster import ReplicaRecord
    from halo.settings.store import StoreSettings
    from halo.store import open_store
    from halo_cluster.replica_sidecar import run_sidecar

    setup_logging("halo_cluster")
    settings = ClusterSettings()
    try:
        # With the http store this machine lacks the head's folder: adapters are fetched, then loaded.
        store_settings = StoreSettings()
        store = open_store(store_settings)
    except ValueError as exc:
        fail(str(exc))
    fetches = store_settings.backend == "http"
    stopping: list[int] = []
    signal.signal(signal.SIGTERM, lambda signum, _frame: stopping.append(signum))

    async def main() -> None:
        import redis.asyncio as aioredis

        client = aioredis.from_url(settings.redis_url)
        registry = ReplicaRegistry(client, settings.key_prefix, ttl_s=settings.replica_ttl_s)
        pool = ReplicaPool(registry, api_key=settings.policy_api_key.get_secret_value())
        record = ReplicaRecord(replica_id=replica_id, url=url, max_loras=max_loras, fetches_adapters=fetches)
        fanout = AdapterFanout(pool, fetch=lambda key: asyncio.to_thread(store.local_dir, key))
        try:
            await run_sidecar(fanout, record, settings.replica_heartbeat_s, lambda: bool(stopping))
        finally:
            await pool.aclose()
            await client.aclose()

    asyncio.run(main())


@app.command(hidden=True)
def supervise() -> None:
    """The head's supervision loop (started by `up`); stops its rollout nodes on SIGTERM."""
    import ray

    from halo_cluster.node_plan import services_plan
    from halo_cluster.ray_auth import use_token_here
    from halo_cluster.supervisor import NAMESPACE, Supervisor

    setup_logging("halo_cluster")
    settings = ClusterSettings()
    use_token_here(os.environ["RAY_AUTH_TOKEN"])
    # A driver attaches to the raylet registered with its own node IP, through that raylet's sockets
    # under /tmp/ray. Ray's guess of the IP is the machine's first address: on a head with several
    # (or a container beside the Ray head's, docker-compose.cluster-head.yml) it matches no raylet.
    ray.init(
        address=head.ray_address(settings),
        namespace=NAMESPACE,
        logging_level="WARNING",
        _node_ip_address=settings.head_ip,
    )
    from halo.settings.store import StoreSettings
    from halo.store import store_env, write_probe

    plan = services_plan(
        workers=settings.workers_per_node,
        redis_url=settings.redis_url,
        policy_url=settings.policy_url,
        data_dir=str(settings.data_dir),
        store=store_env(StoreSettings(), os.environ["RAY_AUTH_TOKEN"]),
        probe=write_probe(settings.data_dir),
        policy_replicas=settings.key_prefix if settings.policy_replicas else None,
    )
    stopping: list[int] = []
    signal.signal(signal.SIGTERM, lambda signum, _frame: stopping.append(signum))
    # The nodes' logs under the head's data folder (shared by the nodes, like everything a run
    # writes), not a temporary folder that every cluster on a machine writes into.
    log_root = str(head.cluster_dir(settings) / "nodes")
    supervisor = Supervisor(settings, plan, redis.Redis.from_url(settings.redis_url), log_root=log_root)
    try:
        supervisor.run(stop=lambda: bool(stopping))
    finally:
        supervisor.shutdown()
        ray.shutdown()


if __name__ == "__main__":
    app()
