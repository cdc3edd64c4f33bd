"""The cluster's deployment files, resolved as their tools read them (none is run here): the head's
and a node's Compose files through `docker-compose config` (every image, network, command and
environment value they resolve to), the KubeRay files' environments as the kubelet would resolve
them (their schemas: test_kuberay_schema.py), the Slurm example parsed, and every `halo` command the
sbatch runs, with its options, checked against the CLI."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.shared.compose_stack import render

pytestmark = pytest.mark.slow  # each test runs docker-compose or the CLI as processes
ROOT = Path(__file__).resolve().parents[2]
HEAD = ROOT / "docker-compose.cluster-head.yml"
NODE = ROOT / "docker-compose.cluster-node.yml"
VARIABLES = {
    "HALO_CLUSTER_HEAD_IP": "10.0.0.1",
    "HALO_CLUSTER_TOKEN": "cluster-token",
    "HALO_REDIS_PASSWORD": "redis-pass",
    "HALO_TRAINER_API_TOKEN": "api-token",
    "HALO_CLUSTER_POLICY_URL": "http://10.0.0.2:8000",
    "HALO_NODE_IP": "10.0.0.2",
    "HALO_NODE_NAME": "node2",
    "HALO_CLUSTER_REDIS_URL": "redis://:redis-pass@10.0.0.1:6379/0",
}
PREFIX = "halo:cluster:"  # the replica registry's, on the head and every node


def config(tmp_path: Path, file: Path, **variables: str) -> dict:
    result = render(tmp_path, file, variables={**VARIABLES, **variables})
    assert result.returncode == 0, result.stderr
    return yaml.safe_load(result.stdout)["services"]


def env(service: dict) -> dict[str, str]:
    raw = service.get("environment", {})
    return dict(item.split("=", 1) for item in raw) if isinstance(raw, list) else {k: str(v) for k, v in raw.items()}


def command(service: dict) -> list[str]:
    raw = service["command"]
    return raw if isinstance(raw, list) else raw.split()


def test_the_head_file_resolves_to_redis_the_ray_head_its_supervisor_and_the_trainer(tmp_path: Path) -> None:
    services = config(tmp_path, HEAD)
    assert sorted(services) == ["data-server", "ray-head", "redis", "supervisor", "trainer"]
    assert {n: s.get("profiles") for n, s in services.items() if s.get("profiles")} == {"data-server": ["http-store"]}
    assert {s.get("network_mode") for s in services.values()} == {"host"}
    assert services["redis"]["image"] == "redis:7-alpine"
    assert (
        config(tmp_path, HEAD, HALO_REDIS_IMAGE="mirror.example/redis:7")["redis"]["image"] == "mirror.example/redis:7"
    )
    assert command(services["redis"])[:6] == ["redis-server", "--bind", "10.0.0.1", "--port", "6379", "--requirepass"]
    assert "redis-pass" in command(services["redis"])
    for name in ("ray-head", "supervisor", "trainer"):
        assert services[name]["build"]["dockerfile"] == "Dockerfile.trainer", name
        e = env(services[name])
        assert e["HALO_REDIS_URL"] == "redis://:redis-pass@10.0.0.1:6379/0", name
        assert e["RAY_AUTH_MODE"] == "token" and e["RAY_AUTH_TOKEN"] == "cluster-token", name
        assert e["HALO_DATA_DIR"] == "/data", name
        assert "/srv/halo/data:/data" in _volumes(services[name]), name
    assert command(services["ray-head"]) == [
        "ray",
        "start",
        "--head",
        "--block",
        "--port=6380",
        "--node-ip-address=10.0.0.1",
        '--resources={"halo_head": 1}',
        "--include-dashboard=false",
        "--disable-usage-stats",
    ]
    sup = env(services["supervisor"])
    assert command(services["supervisor"]) == ["python", "-m", "halo_cluster", "supervise"]
    assert (sup["HALO_CLUSTER_HEAD_IP"], sup["HALO_CLUSTER_RAY_PORT"]) == ("10.0.0.1", "6380")
    # A Ray driver beside the Ray head's container: it shares its processes and its /tmp/ray.
    assert services["supervisor"]["pid"] == "service:ray-head"
    for name in ("ray-head", "supervisor"):
        assert "ray-tmp:/tmp/ray" in _volumes(services[name]), name
    assert (sup["HALO_CLUSTER_ROLLOUT_NODES"], sup["HALO_CLUSTER_WORKERS_PER_NODE"]) == ("2", "4")
    # The nodes' workers and the trainer sample from the replicas the node files register, under one prefix.
    assert (sup["HALO_CLUSTER_POLICY_REPLICAS"], sup["HALO_CLUSTER_KEY_PREFIX"]) == ("true", PREFIX)
    assert (sup["HALO_STORE_BACKEND"], sup["HALO_STORE_HEAD_URL"]) == ("shared_fs", "http://10.0.0.1:6381")
    trainer = env(services["trainer"])
    assert (trainer["HALO_TRAINER_HOST"], trainer["HALO_TRAINER_PORT"]) == ("10.0.0.1", "8400")
    assert trainer["HALO_TRAINER_API_TOKEN"] == "api-token"
    assert trainer["HALO_TRAINER_POLICY_REPLICAS"] == PREFIX
    # The head runs no env or reward: the trainer finds them on the running nodes, under the same prefix.
    assert trainer["HALO_TRAINER_CLUSTER_NODES"] == PREFIX and "HALO_TRAINER_ENV_URL" not in trainer
    assert trainer["HALO_TRAINER_ROLLOUT_WORKERS"] == "0"
    _settings_accept(sup, "halo.settings.cluster", "ClusterSettings")
    _settings_accept(sup, "halo.settings.store", "StoreSettings")
    _settings_accept(trainer, "halo.settings.trainer", "TrainerSettings")


def test_the_head_serves_its_data_with_the_cluster_token_in_the_http_profile(tmp_path: Path) -> None:
    server = config(tmp_path, HEAD)["data-server"]
    assert command(server) == ["python", "-m", "halo.store", "serve"]
    e = env(server)
    assert (e["HALO_STORE_HOST"], e["HALO_STORE_PORT"], e["HALO_STORE_TOKEN"]) == ("10.0.0.1", "6381", "cluster-token")
    _settings_accept(e, "halo.settings.store", "StoreSettings")


def test_the_node_file_resolves_to_a_ray_worker_and_a_policy_replica_that_starts_its_sidecar(tmp_path: Path) -> None:
    services = config(tmp_path, NODE)
    assert sorted(services) == ["policy", "rollout-node"]
    assert {s.get("network_mode") for s in services.values()} == {"host"}
    node = services["rollout-node"]
    assert node["build"]["dockerfile"] == "Dockerfile.env"
    assert node["build"]["args"]["BASE_IMAGE"] == "halo-gpu-base:latest"
    assert node["build"]["args"]["CHROMIUM_PATH"] == ""  # Playwright downloads its Chromium
    local = config(tmp_path, NODE, HALO_NODE_BASE_IMAGE="base:local", HALO_NODE_CHROMIUM_PATH="/usr/bin/chromium")
    args = local["rollout-node"]["build"]["args"]
    assert (args["BASE_IMAGE"], args["CHROMIUM_PATH"]) == ("base:local", "/usr/bin/chromium")
    assert command(node) == [
        "ray",
        "start",
        "--block",
        "--address=10.0.0.1:6380",
        "--node-ip-address=10.0.0.2",
        '--resources={"rollout_node": 1}',
        "--disable-usage-stats",
    ]
    assert env(node) == {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": "cluster-token"}
    assert _volumes(node) == ["/srv/halo/data:/data"]
    policy = env(services["policy"])
    assert services["policy"]["build"]["dockerfile"] == "Dockerfile.vllm"
    assert (policy["HALO_POLICY_HOST"], policy["HALO_POLICY_PORT"], policy["HALO_POLICY_TARGET"]) == (
        "10.0.0.2",
        "8000",
        "gpu",
    )
    assert policy["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] == "1"
    _settings_accept(policy, "halo.settings.policy", "PolicySettings")
    # The launcher starts the sidecar itself: the plan it makes from exactly these values.
    assert (policy["HALO_POLICY_REPLICA_ID"], policy["HALO_POLICY_REPLICA_PREFIX"]) == ("node2-gpu0", PREFIX)
    assert policy["HALO_REDIS_URL"] == "redis://:redis-pass@10.0.0.1:6379/0"
    argv, sidecar_env = _planned_sidecar(policy)
    assert argv[1:] == [
        "-m",
        "halo_cluster",
        "replica",
        "--id",
        "node2-gpu0",
        "--url",
        "http://10.0.0.2:8000",
        "--max-loras",
        "4",
    ]
    assert sidecar_env["HALO_REDIS_URL"] == "redis://:redis-pass@10.0.0.1:6379/0"
    assert sidecar_env["HALO_CLUSTER_KEY_PREFIX"] == PREFIX
    _cli_accepts([sys.executable, "-m", "halo_cluster", "replica"], argv[4:])
    _settings_accept(sidecar_env, "halo.settings.cluster", "ClusterSettings")
    other = env(config(tmp_path, NODE, HALO_NODE_POLICY_GPU="3", HALO_NODE_MAX_LORAS="6")["policy"])
    assert (other["HALO_POLICY_REPLICA_ID"], other["HALO_POLICY_MAX_LORAS"]) == ("node2-gpu3", "6")
    # The sidecar's store: the mounted folder by default, the head's data server with the http backend.
    assert sidecar_env["HALO_STORE_BACKEND"] == "shared_fs"
    _, fetching = _planned_sidecar(env(config(tmp_path, NODE, HALO_STORE_BACKEND="http")["policy"]))
    assert (fetching["HALO_STORE_BACKEND"], fetching["HALO_STORE_HEAD_URL"]) == ("http", "http://10.0.0.1:6381")
    assert (fetching["HALO_STORE_TOKEN"], fetching["HALO_DATA_DIR"]) == ("cluster-token", "/data")
    _settings_accept(fetching, "halo.settings.store", "StoreSettings")


@pytest.mark.parametrize(
    ("file", "missing", "named"),
    [
        (HEAD, "HALO_CLUSTER_TOKEN", "set HALO_CLUSTER_TOKEN"),
        (HEAD, "HALO_REDIS_PASSWORD", "set HALO_REDIS_PASSWORD"),
        (NODE, "HALO_NODE_IP", "set HALO_NODE_IP"),
        (NODE, "HALO_CLUSTER_HEAD_IP", "set HALO_CLUSTER_HEAD_IP"),
    ],
)
def test_a_file_without_its_required_values_is_refused_naming_them(tmp_path, file, missing, named) -> None:
    result = render(tmp_path, file, variables={k: v for k, v in VARIABLES.items() if k != missing})
    assert result.returncode != 0 and named in result.stderr, result.stderr


def test_the_raycluster_manifest_has_a_head_a_rollout_group_and_token_auth() -> None:
    manifest = _kube("raycluster.yaml")[0]
    assert (manifest["apiVersion"], manifest["kind"]) == ("ray.io/v1", "RayCluster")
    assert manifest["metadata"]["name"]
    lock = (ROOT / "requirements/lock.txt").read_text()
    assert f"ray=={manifest['spec']['rayVersion']}\n" in lock
    head = manifest["spec"]["headGroupSpec"]
    containers = {c["name"]: c for c in head["template"]["spec"]["containers"]}
    assert containers["supervisor"]["command"] == ["python", "-m", "halo_cluster", "supervise"]
    (group,) = manifest["spec"]["workerGroupSpecs"]
    assert yaml.safe_load(yaml.safe_load(group["rayStartParams"]["resources"])) == {"rollout_node": 1}
    assert group["replicas"] >= group["minReplicas"] >= 1
    (node,) = group["template"]["spec"]["containers"]
    for container in [*containers.values(), node]:
        names = {e["name"]: e for e in container["env"]}
        assert names["RAY_AUTH_MODE"]["value"] == "token", container["name"]
        assert "secretKeyRef" in names["RAY_AUTH_TOKEN"]["valueFrom"], container["name"]
        assert names["HALO_DATA_DIR"]["value"] == "/data", container["name"]
        assert {"name": "halo-data", "mountPath": "/data"} in container["volumeMounts"], container["name"]
    sup = _pod_env(containers["supervisor"])
    _settings_accept(sup, "halo.settings.cluster", "ClusterSettings")
    assert sup["HALO_CLUSTER_ROLLOUT_NODES"] == str(group["replicas"])
    # The nodes' workers sample from the replicas services.yaml's policy pods register, under one prefix.
    assert (sup["HALO_CLUSTER_POLICY_REPLICAS"], sup["HALO_CLUSTER_KEY_PREFIX"]) == ("true", PREFIX)
    assert "HALO_CLUSTER_POLICY_URL" not in sup
    # The supervisor is a Ray driver: it attaches to the head's raylet by the pod's IP, found in the
    # shared process table, through the raylet's sockets in the shared /tmp/ray.
    head_ip = next(e for e in containers["supervisor"]["env"] if e["name"] == "HALO_CLUSTER_HEAD_IP")
    assert head_ip["valueFrom"] == {"fieldRef": {"fieldPath": "status.podIP"}}
    assert head["template"]["spec"]["shareProcessNamespace"] is True
    for name in ("ray-head", "supervisor"):
        assert {"name": "ray-tmp", "mountPath": "/tmp/ray"} in containers[name]["volumeMounts"], name
    assert {"name": "ray-tmp", "emptyDir": {}} in head["template"]["spec"]["volumes"]


def test_the_kuberay_policy_replicas_start_their_sidecar_and_the_trainer_uses_them() -> None:
    objects = {(d["kind"], d["metadata"]["name"]): d for d in _kube("services.yaml")}
    (policy,) = objects["Deployment", "halo-policy"]["spec"]["template"]["spec"]["containers"]
    e = _pod_env(policy, pod_name="halo-policy-7d4b9-x2x4q", pod_ip="10.1.0.7")
    _settings_accept(e, "halo.settings.policy", "PolicySettings")
    assert (e["HALO_POLICY_REPLICA_PREFIX"], e["HALO_POLICY_TARGET"]) == (PREFIX, "gpu")
    # The launcher's plan from exactly the pod's environment: the pod's name and address registered.
    argv, sidecar_env = _planned_sidecar(e)
    assert argv[1:] == [
        "-m",
        "halo_cluster",
        "replica",
        "--id",
        "halo-policy-7d4b9-x2x4q",
        "--url",
        "http://10.1.0.7:8000",
        "--max-loras",
        "4",
    ]
    assert sidecar_env["HALO_REDIS_URL"] == SECRET["redis-url"]
    assert (sidecar_env["HALO_CLUSTER_KEY_PREFIX"], sidecar_env["HALO_STORE_BACKEND"]) == (PREFIX, "shared_fs")
    _cli_accepts([sys.executable, "-m", "halo_cluster", "replica"], argv[4:])
    _settings_accept(sidecar_env, "halo.settings.cluster", "ClusterSettings")
    (trainer,) = objects["Deployment", "halo-trainer"]["spec"]["template"]["spec"]["containers"]
    t = _pod_env(trainer)
    assert (t["HALO_TRAINER_POLICY_REPLICAS"], t["HALO_TRAINER_CLUSTER_NODES"]) == (PREFIX, PREFIX)
    assert t["HALO_TRAINER_ROLLOUT_WORKERS"] == "0" and t["HALO_TRAINER_API_TOKEN"]
    _settings_accept(t, "halo.settings.trainer", "TrainerSettings")
    (redis,) = objects["Deployment", "halo-redis"]["spec"]["template"]["spec"]["containers"]
    assert redis["args"][:2] == ["--requirepass", "$(HALO_REDIS_PASSWORD)"]
    assert _pod_env(redis)["HALO_REDIS_PASSWORD"] == SECRET["redis-password"]


def test_the_kuberay_secret_command_makes_every_key_the_pods_read() -> None:
    text = (ROOT / "deploy/kuberay/raycluster.yaml").read_text()
    made = set(re.findall(r"--from-literal=([\w-]+)=", text))
    assert made == set(SECRET)
    read = {
        (ref["key"], bool(ref.get("optional")))
        for doc in _kube("raycluster.yaml") + _kube("services.yaml")
        for ref in _secret_refs(doc)
    }
    assert {key for key, optional in read if not optional} == made
    # The Redis URL the command writes names the Redis Service and its port.
    host, port = re.search(r"redis-url=redis://:\$PASS@([\w-]+):(\d+)/0", text).groups()
    (service,) = [d for d in _kube("services.yaml") if d["kind"] == "Service" and d["metadata"]["name"] == host]
    assert [p["port"] for p in service["spec"]["ports"]] == [int(port)]


def test_the_sbatch_example_runs_only_halo_commands_that_exist() -> None:
    text = (ROOT / "deploy/slurm/halo.sbatch").read_text()
    assert text.startswith("#!/bin/bash\n") and "#SBATCH --nodes=" in text
    assert subprocess.run(["bash", "-n", str(ROOT / "deploy/slurm/halo.sbatch")]).returncode == 0
    calls = re.findall(r"\bhalo (stack|cluster) ([a-z-]+)([^'\n|&;]*)", text)
    assert {(group, cmd) for group, cmd, _ in calls} == {
        ("stack", "up"),
        ("cluster", "up"),
        ("cluster", "status"),
        ("cluster", "join"),
    }
    halo = str(Path(sys.executable).parent / "halo")
    for group, cmd, rest in calls:
        _cli_accepts([halo, group, cmd], rest.split())


def _planned_sidecar(environment: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """The sidecar command and environment the policy launcher plans under ``environment`` alone."""
    import json

    code = (
        "import os, sys, json; os.environ.clear(); os.environ.update(json.loads(sys.argv[1])); "
        "from halo.settings.policy import PolicySettings; from halo_policy.replica import sidecar_plan; "
        "plan = sidecar_plan(PolicySettings(_env_file=None)); print(json.dumps([plan.argv, plan.env]))"
    )
    result = subprocess.run([sys.executable, "-c", code, json.dumps(environment)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-800:]
    argv, planned = json.loads(result.stdout)
    return argv, planned


def _cli_accepts(argv: list[str], args: list[str]) -> None:
    """The command's --help lists it and every option ``args`` uses."""
    result = subprocess.run([*argv, "--help"], capture_output=True, text=True, env=_wide(), timeout=120)
    assert result.returncode == 0, f"{argv}: {result.stderr}"
    for option in (a for a in args if a.startswith("--")):
        assert re.search(rf"{re.escape(option)}\b", result.stdout), f"{' '.join(argv)} has no {option}"


def _settings_accept(environment: dict[str, str], module: str, name: str) -> None:
    """The service's settings class takes every value the file resolves to (a typo or bad value fails)."""
    code = (
        "import os, sys, json; from importlib import import_module; "
        "os.environ.clear(); os.environ.update(json.loads(sys.argv[1])); "
        f"import_module({module!r}).{name}(_env_file=None)"
    )
    import json

    result = subprocess.run([sys.executable, "-c", code, json.dumps(environment)], capture_output=True, text=True)
    assert result.returncode == 0, f"{name} refused the file's values: {result.stderr[-800:]}"


def _volumes(service: dict) -> list[str]:
    out = []
    for v in service.get("volumes", []):
        out.append(v.removesuffix(":rw") if isinstance(v, str) else f"{v['source']}:{v['target']}")
    return out


def _wide() -> dict[str, str]:
    import os

    return {**os.environ, "COLUMNS": "300"}


# The values `kubectl create secret` (raycluster.yaml's comment) puts in the halo-cluster secret, here.
SECRET = {
    "ray-token": "cluster-token",
    "redis-password": "redis-pass",
    "redis-url": "redis://:redis-pass@halo-redis:6379/0",
    "trainer-api-token": "api-token",
}


def _kube(name: str) -> list[dict]:
    text = (ROOT / "deploy/kuberay" / name).read_text().replace("${HALO_REGISTRY}", "registry.example.com/halo")
    return [d for d in yaml.safe_load_all(text) if d]


def _pod_env(container: dict, pod_name: str = "halo-pod", pod_ip: str = "10.1.0.5") -> dict[str, str]:
    """The container's environment as the kubelet resolves it, with SECRET as the secret's values."""
    fields = {"metadata.name": pod_name, "status.podIP": pod_ip}
    out = {}
    for e in container.get("env", []):
        source = e.get("valueFrom", {})
        if "value" in e:
            out[e["name"]] = e["value"]
        elif "fieldRef" in source:
            out[e["name"]] = fields[source["fieldRef"]["fieldPath"]]
        elif source["secretKeyRef"]["key"] in SECRET:
            out[e["name"]] = SECRET[source["secretKeyRef"]["key"]]
        else:
            assert source["secretKeyRef"].get("optional"), e["name"]
    return out


def _secret_refs(node):
    if isinstance(node, dict):
        if "secretKeyRef" in node:
            yield node["secretKeyRef"]
        for v in node.values():
            yield from _secret_refs(v)
    elif isinstance(node, list):
        for v in node:
            yield from _secret_refs(v)
