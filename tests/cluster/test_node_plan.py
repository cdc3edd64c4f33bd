"""Fast checks of the cluster layer's pure parts: a node plan filled in on a node, and the token."""

from __future__ import annotations

import sys

import pytest

from halo_cluster.node_plan import render, services_plan
from halo_cluster.ray_auth import auth_env, ensure_token, token_path


def test_a_plan_is_filled_in_with_the_nodes_address_and_ports() -> None:
    plan = services_plan(workers=3, redis_url="redis://head:6379/0", policy_url="http://head:8000", data_dir="/data")
    ports = {"sites": 9001, "env": 9002, "reward": 9003}
    env_spec = next(p for p in plan.processes if p.name == "env")
    assert {k: render(v, "10.0.0.7", ports) for k, v in env_spec.env.items()} == {
        "HALO_REDIS_URL": "redis://head:6379/0",
        "HALO_DATA_DIR": "/data",
        "HALO_ENV_HOST": "10.0.0.7",
        "HALO_ENV_PORT": "9002",
        "HALO_ENV_SITES_URL": "http://10.0.0.7:9001",
    }
    workers = next(p for p in plan.processes if p.name == "worker")
    assert workers.count == 3
    # The workers use their own node's env and reward: a job's forks stay on one env instance.
    assert render(workers.env["HALO_TRAINER_ENV_URL"], "10.0.0.7", ports) == "http://10.0.0.7:9002"
    assert render(workers.env["HALO_TRAINER_REWARD_URL"], "10.0.0.7", ports) == "http://10.0.0.7:9003"
    assert workers.argv == (sys.executable, "-m", "halo_trainer.worker")


def test_the_workers_sample_from_the_replicas_only_when_the_plan_says_so() -> None:
    """What the supervisor gives a node's workers with HALO_CLUSTER_POLICY_REPLICAS on: the registry's
    prefix, which the worker's own settings class takes as its replica pool."""
    from halo.settings.trainer import TrainerSettings

    def worker_env(**kw) -> dict[str, str]:
        plan = services_plan(workers=1, redis_url="redis://h:6379/0", policy_url="http://h:8000", data_dir="/d", **kw)
        return next(p for p in plan.processes if p.name == "worker").env

    assert "HALO_TRAINER_POLICY_REPLICAS" not in worker_env()
    env = worker_env(policy_replicas="halo:cluster:")
    assert env["HALO_TRAINER_POLICY_REPLICAS"] == "halo:cluster:"
    settings = TrainerSettings(_env_file=None, policy_replicas=env["HALO_TRAINER_POLICY_REPLICAS"])
    assert settings.policy_replicas == "halo:cluster:"


def test_an_undefined_placeholder_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"'http://\{host\}:\{port.nope\}' names an undefined placeholder"):
        render("http://{host}:{port.nope}", "h", {"env": 1})


def test_the_token_is_made_once_private_and_reused(tmp_path) -> None:
    token = ensure_token(tmp_path)
    assert len(token) == 64 and token_path(tmp_path).stat().st_mode & 0o777 == 0o600
    assert ensure_token(tmp_path) == token
    assert auth_env(token) == {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token}


def test_every_cluster_setting_is_documented_and_a_bad_value_is_clear(monkeypatch) -> None:
    from pydantic import ValidationError

    from halo.settings.cluster import ClusterSettings

    assert all(field.description for field in ClusterSettings.model_fields.values())
    monkeypatch.setenv("HALO_CLUSTER_ROLLOUT_NODES", "-1")
    with pytest.raises(ValidationError, match="rollout_nodes"):
        ClusterSettings(_env_file=None)
